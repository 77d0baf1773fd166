import { Button, FileButton, Group, Pill, Text, Textarea, Tooltip } from '@mantine/core';
import { sizeOf } from '../../code-call';
import { PaperclipIcon } from './attachments';
import { MAX_ATTACHMENTS, type useAttachments } from './use-attachments';

/**
 * The message being written, with its attachments (uploaded as they are chosen or dropped). While an
 * answer streams, what is sent joins it (inject), and Stop cancels its run.
 */
export function MessageComposer({
  agentId,
  draft,
  onDraft,
  streaming,
  denied,
  canAttach,
  attachments,
  onSend,
  onStop,
}: {
  agentId?: string;
  draft: string;
  onDraft: (draft: string) => void;
  streaming: boolean;
  /** Why the credential may not talk to agents, or null. */
  denied: string | null;
  canAttach: boolean;
  attachments: ReturnType<typeof useAttachments>;
  onSend: () => void;
  onStop: () => void;
}) {
  const { attached, uploading } = attachments;
  return (
    <form
      onSubmit={(e) => {
        e.preventDefault();
        onSend();
      }}
    >
      {(attached.length > 0 || uploading > 0) && (
        <Group gap={4} mb={4} data-testid="pending-attachments">
          {attached.map((f) => (
            <Pill
              key={f.id}
              withRemoveButton
              removeButtonProps={{ 'aria-label': `Remove ${f.name}` }}
              onRemove={() => attachments.remove(f)}
            >
              {f.name} · {sizeOf(f.size)}
            </Pill>
          ))}
          {uploading > 0 && (
            <Text size="xs" c="dimmed">
              uploading {uploading}…
            </Text>
          )}
        </Group>
      )}
      <Group align="end" wrap="nowrap">
        <FileButton multiple onChange={(files) => void attachments.attach(files)} disabled={!canAttach}>
          {(props) => (
            <Tooltip
              label={
                denied ??
                (streaming
                  ? 'attach to the next message, once this answer ends'
                  : `attach files (or drop them on the chat): at most ${MAX_ATTACHMENTS}, 5 MiB each`)
              }
            >
              <Button {...props} variant="default" px="xs" aria-label="Attach files" disabled={!canAttach}>
                <PaperclipIcon size={18} />
              </Button>
            </Tooltip>
          )}
        </FileButton>
        <Textarea
          style={{ flex: 1 }}
          aria-label="Message"
          placeholder={streaming ? 'Add to the answer under way (inject)…' : 'Message (Enter sends, Shift+Enter a new line)'}
          autosize
          minRows={1}
          maxRows={6}
          value={draft}
          disabled={!agentId || !!denied}
          onChange={(e) => onDraft(e.currentTarget.value)}
          onKeyDown={(e) => {
            if (e.key === 'Enter' && !e.shiftKey) {
              e.preventDefault();
              onSend();
            }
          }}
        />
        <Tooltip label={denied} disabled={!denied}>
          <Button type="submit" disabled={!agentId || !draft.trim() || !!denied || uploading > 0}>
            {streaming ? 'Inject' : 'Send'}
          </Button>
        </Tooltip>
        {streaming && (
          <Button color="red" variant="light" onClick={onStop}>
            Stop
          </Button>
        )}
      </Group>
    </form>
  );
}
