import type { FileInfo } from '@agentry/client';
import { Alert, Button, Loader, Stack, Table, Text, Title } from '@mantine/core';
import { useQuery } from '@tanstack/react-query';
import { messageOf, useClient } from '../../api';
import { sizeOf } from '../../code-call';
import { useFileDownload } from '../../lib/use-file-download';

/** Files listed at most (one page of the API): a run that made more says how many there are. */
const FILES_SHOWN = 100;

function DownloadButton({ file }: { file: FileInfo }) {
  const { download, failed } = useFileDownload();
  return (
    <>
      <Button size="compact-xs" variant="light" aria-label={`Download ${file.name}`} onClick={() => download(file)}>
        Download
      </Button>
      {failed && (
        <Text size="xs" c="red" role="alert">
          {failed}
        </Text>
      )}
    </>
  );
}

/**
 * The files a run's tools left (code executions' /output: docs/code-execution.md), from
 * `GET /api/v1/files?runId=`, each a download. Nothing shows for a run that made none.
 */
export function RunFiles({ runId }: { runId: string }) {
  const client = useClient();
  const files = useQuery({
    queryKey: ['runs', runId, 'files'],
    queryFn: async () => {
      const first = await client.files.list({ runId, limit: FILES_SHOWN }).pages().next();
      return first.done ? { items: [], total: 0 } : first.value;
    },
  });
  if (files.isPending) return <Loader size="xs" aria-label="Loading the run’s files" />;
  if (files.error) return <Alert color="red">The run’s files: {messageOf(files.error)}</Alert>;
  if (files.data.items.length === 0) return null;
  return (
    <Stack gap="xs" data-testid="run-files">
      <Title order={2} size="h3">
        Files
      </Title>
      {files.data.total > files.data.items.length && (
        <Text size="sm" c="dimmed">
          The first {files.data.items.length} of {files.data.total}.
        </Text>
      )}
      <Table>
        <Table.Thead>
          <Table.Tr>
            <Table.Th>Name</Table.Th>
            <Table.Th>Type</Table.Th>
            <Table.Th>Size</Table.Th>
            <Table.Th>Made</Table.Th>
            <Table.Th />
          </Table.Tr>
        </Table.Thead>
        <Table.Tbody>
          {files.data.items.map((f) => (
            <Table.Tr key={f.id} data-testid="run-file">
              <Table.Td ff="monospace">{f.name}</Table.Td>
              <Table.Td>{f.contentType}</Table.Td>
              <Table.Td>{sizeOf(f.size)}</Table.Td>
              <Table.Td>{new Date(f.createdAt).toLocaleString()}</Table.Td>
              <Table.Td>
                <DownloadButton file={f} />
              </Table.Td>
            </Table.Tr>
          ))}
        </Table.Tbody>
      </Table>
    </Stack>
  );
}
