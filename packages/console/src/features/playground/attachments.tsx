import type { FileInfo } from '@agentry/client';
import { Badge, Button, Group } from '@mantine/core';
import { useQuery } from '@tanstack/react-query';
import { messageOf, useClient } from '../../api';
import { sizeOf } from '../../code-call';
import { useFileDownload } from '../../lib/use-file-download';
import { fileQuery } from '../files/queries';

/** A paperclip, drawn inline: the console carries no icon font, and an emoji depends on the system's fonts. */
export function PaperclipIcon({ size = 14 }: { size?: number }) {
  return (
    <svg width={size} height={size} viewBox="0 0 24 24" fill="none" stroke="currentColor" strokeWidth="2" aria-hidden="true">
      <path d="M21 12.5l-8.5 8.5a5 5 0 0 1-7-7L14 5.5a3.5 3.5 0 0 1 5 5L10.5 19a2 2 0 0 1-3-3L15 8.5" />
    </svg>
  );
}

/** A file a sent message names: its name and size read once by id, a click downloads it. */
function Attachment({ id, known }: { id: string; known?: FileInfo }) {
  const client = useClient();
  const file = useQuery({ ...fileQuery(client, id), initialData: known });
  const { download, failed } = useFileDownload();
  if (file.error)
    return (
      <Badge color="gray">
        attachment {id.slice(0, 8)}… ({messageOf(file.error)})
      </Badge>
    );
  if (!file.data) return <Badge variant="light">attachment…</Badge>;
  const data = file.data;
  return (
    <Button
      size="compact-xs"
      variant="light"
      data-testid="attachment"
      title={failed ?? `Download ${data.name}`}
      color={failed ? 'red' : undefined}
      onClick={() => download(data)}
      leftSection={<PaperclipIcon size={12} />}
    >
      {data.name} · {sizeOf(data.size)}
    </Button>
  );
}

/** A message's attachments by id; `known` are those already read (the files just uploaded). */
export function Attachments({ ids, known = [] }: { ids: string[]; known?: FileInfo[] }) {
  if (!ids.length) return null;
  return (
    <Group gap={4} mt={4}>
      {ids.map((id) => (
        <Attachment key={id} id={id} known={known.find((f) => f.id === id)} />
      ))}
    </Group>
  );
}
