import { Alert, Button, Group, Modal, Paper, Stack, Text, Textarea, TextInput, Tooltip } from '@mantine/core';
import { useMutation, useQueryClient } from '@tanstack/react-query';
import { type DragEvent, useRef, useState } from 'react';
import { messageOf, useClient, useDenied } from '../../api';
import { placeErrors } from '../../lib/form-errors';
import { MAX_DOCUMENT_BYTES, tooLarge, uploadProblem } from './shared';

const ACCEPT = '.md,.markdown,.txt,.html,.htm,.pdf,.docx,.csv,.tsv,.json,text/*,application/pdf,application/json';

/**
 * Adds documents to a base: files dropped on the zone or chosen with its button (each uploaded on its
 * own, multipart; one too large is said in words and not sent), or a text written here (Markdown).
 */
export function AddDocuments({ baseId }: { baseId: string }) {
  const client = useClient();
  const queryClient = useQueryClient();
  const denied = useDenied()('agents:write');
  const input = useRef<HTMLInputElement>(null);
  const [dragging, setDragging] = useState(false);
  const [uploading, setUploading] = useState(0);
  const [problems, setProblems] = useState<string[]>([]);
  const [writing, setWriting] = useState(false);

  async function upload(files: File[]) {
    if (denied || !files.length) return;
    setProblems([]);
    const found: string[] = [];
    setUploading((n) => n + files.length);
    await Promise.all(
      files.map(async (file) => {
        try {
          if (file.size > MAX_DOCUMENT_BYTES) throw new Error(tooLarge(file));
          await client.knowledge.documents.upload(baseId, file);
        } catch (err) {
          found.push(uploadProblem(file, err));
        } finally {
          setUploading((n) => n - 1);
          void queryClient.invalidateQueries({ queryKey: ['knowledge', baseId] });
        }
      }),
    );
    void queryClient.invalidateQueries({ queryKey: ['knowledge', 'bases'] });
    setProblems(found);
  }

  const zone = {
    onDragOver: (e: DragEvent) => {
      if (denied || !e.dataTransfer.types.includes('Files')) return;
      e.preventDefault();
      setDragging(true);
    },
    onDragLeave: (e: DragEvent) => {
      if (!e.currentTarget.contains(e.relatedTarget as Node | null)) setDragging(false);
    },
    onDrop: (e: DragEvent) => {
      e.preventDefault();
      setDragging(false);
      void upload([...e.dataTransfer.files]);
    },
  };

  return (
    <Stack gap="xs">
      <Paper
        withBorder
        p="lg"
        role="group"
        aria-label="Add documents"
        data-testid="document-drop-zone"
        style={{ borderStyle: 'dashed', opacity: denied ? 0.6 : 1 }}
        bg={dragging ? 'var(--mantine-color-indigo-light)' : undefined}
        {...zone}
      >
        <Stack align="center" gap="xs">
          <Text size="sm">Drop files here to add them: Markdown, text, HTML, PDF, Word, CSV, JSON; at most 5 MiB each.</Text>
          {denied && (
            <Text size="xs" c="dimmed">
              Adding is off: {denied}
            </Text>
          )}
          <input
            ref={input}
            type="file"
            multiple
            hidden
            accept={ACCEPT}
            aria-label="Files to add"
            data-testid="document-file-input"
            onChange={(e) => {
              const files = [...(e.currentTarget.files ?? [])];
              e.currentTarget.value = '';
              void upload(files);
            }}
          />
          <Group gap="xs">
            <Tooltip label={denied} disabled={!denied}>
              <Button variant="light" disabled={!!denied} loading={uploading > 0} onClick={() => input.current?.click()}>
                Choose files
              </Button>
            </Tooltip>
            <Tooltip label={denied} disabled={!denied}>
              <Button variant="default" disabled={!!denied} onClick={() => setWriting(true)}>
                Add text…
              </Button>
            </Tooltip>
          </Group>
          {uploading > 0 && (
            <Text size="xs" c="dimmed">
              uploading {uploading}…
            </Text>
          )}
        </Stack>
      </Paper>
      {problems.length > 0 && (
        <Alert color="red" withCloseButton onClose={() => setProblems([])} data-testid="upload-problems">
          {problems.map((p) => (
            <Text key={p} size="sm">
              {p}
            </Text>
          ))}
        </Alert>
      )}
      <AddTextModal baseId={baseId} opened={writing} onClose={() => setWriting(false)} />
    </Stack>
  );
}

/** A document written here: a title and a Markdown body, sent as content (text/markdown). */
function AddTextModal({ baseId, opened, onClose }: { baseId: string; opened: boolean; onClose(): void }) {
  const client = useClient();
  const queryClient = useQueryClient();
  const [title, setTitle] = useState('');
  const [body, setBody] = useState('');
  const add = useMutation({
    mutationFn: () =>
      client.knowledge.documents.add(baseId, { content: body, mediaType: 'text/markdown', title: title.trim() || undefined }),
    onSuccess: () => {
      setTitle('');
      setBody('');
      void queryClient.invalidateQueries({ queryKey: ['knowledge', baseId] });
      void queryClient.invalidateQueries({ queryKey: ['knowledge', 'bases'] });
      onClose();
    },
  });
  const errors = placeErrors(add.error, { title: 'Title', content: 'Text' }).fields;
  const atField = !!(errors.title || errors.content);
  return (
    <Modal opened={opened} onClose={onClose} title="Add a text" size="lg">
      <form
        onSubmit={(e) => {
          e.preventDefault();
          add.mutate();
        }}
      >
        <Stack>
          <TextInput
            label="Title"
            maxLength={500}
            value={title}
            onChange={(e) => setTitle(e.currentTarget.value)}
            error={errors.title}
            data-autofocus
          />
          <Textarea
            label="Text (Markdown)"
            required
            autosize
            minRows={8}
            maxRows={20}
            value={body}
            onChange={(e) => setBody(e.currentTarget.value)}
            error={errors.content}
          />
          {add.error && !atField && <Alert color="red">{messageOf(add.error)}</Alert>}
          <Group justify="end">
            <Button variant="default" onClick={onClose}>
              Cancel
            </Button>
            <Button type="submit" loading={add.isPending} disabled={!body.trim()}>
              Add
            </Button>
          </Group>
        </Stack>
      </form>
    </Modal>
  );
}
