import { AgentryError, type MemoryBlock } from '@agentry/client';
import { Alert, Button, Group, Modal, Stack, Text, Textarea, TextInput } from '@mantine/core';
import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useEffect, useState } from 'react';
import { messageOf, useClient } from '../../api';
import { FormErrorSummary } from '../../form-error-summary';
import { placeErrors } from '../../lib/form-errors';
import { charCount, labelProblem, type MemoryScope, scopeName, valueProblem } from './limits';

/** What the editor opens on: a new block of the scope, or one to change. */
export type EditTarget = { kind: 'new' } | { kind: 'edit'; block: MemoryBlock };

/**
 * A block's text, new or changed. The server's limits (label, characters) are checked as the person
 * types; a refused save (a 400 at its field, a 409 when the block changed meanwhile or the scope is
 * full) keeps the dialog open with what was typed.
 */
export function BlockEditor({
  agentId,
  scope,
  maxChars,
  target,
  onClose,
}: {
  agentId: string;
  scope: MemoryScope;
  maxChars: number;
  target: EditTarget | null;
  onClose(): void;
}) {
  const client = useClient();
  const queryClient = useQueryClient();
  const [label, setLabel] = useState('');
  const [value, setValue] = useState('');
  const editing = target?.kind === 'edit' ? target.block : null;

  const save = useMutation({
    mutationFn: () =>
      client.agents.memory.set(agentId, editing?.label ?? label, { value, ...(editing ? { version: editing.version } : {}) }, scope),
    onSuccess: () => {
      void queryClient.invalidateQueries({ queryKey: ['memory', agentId] });
      onClose();
    },
  });

  // biome-ignore lint/correctness/useExhaustiveDependencies: a dialog opened again starts from the block, without the last refusal
  useEffect(() => {
    if (!target) return;
    save.reset();
    setLabel(target.kind === 'edit' ? target.block.label : '');
    setValue(target.kind === 'edit' ? target.block.value : '');
  }, [target]);

  const typedLabelProblem = editing ? null : label ? labelProblem(label) : null;
  const typedValueProblem = valueProblem(value, maxChars);
  const { fields: server, summary } = placeErrors(save.error, { label: 'Name', value: 'Text' });
  const conflict = save.error instanceof AgentryError && save.error.status === 409;
  const otherError = save.error && !summary.length ? messageOf(save.error) : null;
  const canSave = !typedValueProblem && !(editing ? false : labelProblem(label)) && (!editing || value !== editing.value);

  return (
    <Modal opened={target !== null} onClose={onClose} title={editing ? `Edit ${editing.label}` : 'New memory block'} size="lg">
      <form
        onSubmit={(e) => {
          e.preventDefault();
          if (canSave) save.mutate();
        }}
      >
        <Stack>
          <FormErrorSummary summary={summary} title="Not saved" />
          <Text size="sm" c="dimmed">
            Of {scopeName(scope)}. Every run of the agent{scope.userId ? ' with this user' : ''} finds it in its system prompt.
          </Text>
          {editing ? null : (
            <TextInput
              label="Name"
              description="letters, digits, _ and -, e.g. user_preferences"
              value={label}
              onChange={(e) => setLabel(e.currentTarget.value)}
              error={typedLabelProblem ?? server.label}
              data-autofocus
            />
          )}
          <Textarea
            label="Text"
            autosize
            minRows={6}
            maxRows={18}
            value={value}
            onChange={(e) => setValue(e.currentTarget.value)}
            description={`${charCount(value)} of ${maxChars} characters`}
            error={typedValueProblem ?? server.value}
          />
          {otherError && (
            <Alert color="red" title={conflict ? 'Not saved' : undefined}>
              {otherError}
              {conflict && editing ? ' Close this dialog and open the block again to see its latest text (copy yours first).' : ''}
            </Alert>
          )}
          <Group justify="end">
            <Button variant="default" onClick={onClose}>
              Cancel
            </Button>
            <Button type="submit" loading={save.isPending} disabled={!canSave}>
              Save
            </Button>
          </Group>
        </Stack>
      </form>
    </Modal>
  );
}
