import { Alert, Button, Paper, Stack, Text, Tooltip } from '@mantine/core';
import { useMutation, useQueryClient } from '@tanstack/react-query';
import { type DragEvent, useRef, useState } from 'react';
import { messageOf, useClient, useDenied } from '../../api';
import { FormErrorSummary } from '../../form-error-summary';
import { placeErrors } from '../../lib/form-errors.js';
import { importFile } from './import-file';
import { skillKeys } from './queries';

/** A skill's fields as the import's errors name them (the SKILL.md front matter and body). */
const SKILL_FIELDS: Record<string, string> = {
  name: 'Name',
  description: 'Description',
  instructions: 'Instructions',
  category: 'Category',
};

/** Imports a skill from a file dropped here or chosen; the server's refusal is said in a summary by the skill's fields. */
export function ImportZone({ onImported }: { onImported(skillId: string): void }) {
  const client = useClient();
  const denied = useDenied()('skills:write');
  const queryClient = useQueryClient();
  const [dragging, setDragging] = useState(false);
  const fileInput = useRef<HTMLInputElement>(null);
  const upload = useMutation({
    mutationFn: (file: File) => importFile(client, file),
    onSuccess: (skill) => {
      onImported(skill.id);
      queryClient.invalidateQueries({ queryKey: skillKeys.all });
    },
  });
  const onDrop = (e: DragEvent) => {
    e.preventDefault();
    setDragging(false);
    const file = e.dataTransfer.files[0];
    if (file && !denied) upload.mutate(file);
  };
  const uploadErrors = placeErrors(upload.error, SKILL_FIELDS);
  return (
    <>
      <Paper
        withBorder
        p="lg"
        style={{ borderStyle: 'dashed', opacity: denied ? 0.5 : 1 }}
        bg={dragging ? 'var(--mantine-color-indigo-light)' : undefined}
        onDragOver={(e) => {
          e.preventDefault();
          setDragging(true);
        }}
        onDragLeave={() => setDragging(false)}
        onDrop={onDrop}
      >
        <Stack align="center" gap="xs">
          <Text size="sm">Drop a SKILL.md, a zip or a tar here to import it</Text>
          {denied && (
            <Text size="xs" c="dimmed">
              Importing is off: {denied}
            </Text>
          )}
          <input
            ref={fileInput}
            type="file"
            hidden
            accept=".md,.zip,.tar,.tgz,.gz"
            onChange={(e) => {
              const file = e.currentTarget.files?.[0];
              if (file) upload.mutate(file);
            }}
          />
          <Tooltip label={denied} disabled={!denied}>
            <Button variant="light" disabled={!!denied} onClick={() => fileInput.current?.click()} loading={upload.isPending}>
              Choose a file
            </Button>
          </Tooltip>
        </Stack>
      </Paper>
      <FormErrorSummary summary={uploadErrors.summary} title="Not imported" />
      {upload.error && !uploadErrors.summary.length && <Alert color="red">{messageOf(upload.error)}</Alert>}
    </>
  );
}
