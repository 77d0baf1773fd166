import { AgentryError, type KnowledgeBase } from '@agentry/client';
import { Alert, Autocomplete, Button, Group, Modal, Stack, Text, Textarea, TextInput } from '@mantine/core';
import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useEffect, useState } from 'react';
import { messageOf, useClient } from '../../api';
import { placeErrors } from '../../lib/form-errors';
import { DEFAULT_EMBEDDING_MODEL } from './shared';

const MODELS = [DEFAULT_EMBEDDING_MODEL, 'openai/text-embedding-3-small', 'openai/text-embedding-3-large'];

/**
 * Creates a knowledge base, or edits one (`base` given): name, description, embedding model. The
 * dialog stays open with what was typed until the server has taken it; its 400 shows under the field.
 */
export function BaseFormModal({
  opened,
  base,
  onClose,
  onSaved,
}: {
  opened: boolean;
  base?: KnowledgeBase;
  onClose(): void;
  onSaved(base: KnowledgeBase): void;
}) {
  const client = useClient();
  const queryClient = useQueryClient();
  const [name, setName] = useState('');
  const [description, setDescription] = useState('');
  const [model, setModel] = useState(DEFAULT_EMBEDDING_MODEL);
  useEffect(() => {
    if (!opened) return;
    setName(base?.name ?? '');
    setDescription(base?.description ?? '');
    setModel(base?.embeddingModel ?? DEFAULT_EMBEDDING_MODEL);
  }, [opened, base]);
  const save = useMutation({
    mutationFn: () => {
      const body = { name: name.trim(), description: description.trim() || null, embeddingModel: model.trim() };
      if (!base) return client.knowledge.create(body);
      // Only what changed: an unchanged model is not checked again (its provider may be gone since).
      return client.knowledge.update(base.id, {
        ...(body.name !== base.name ? { name: body.name } : {}),
        ...(body.description !== base.description ? { description: body.description } : {}),
        ...(body.embeddingModel !== base.embeddingModel ? { embeddingModel: body.embeddingModel } : {}),
      });
    },
    onSuccess: (saved) => {
      queryClient.setQueryData(['knowledge', saved.id], saved);
      void queryClient.invalidateQueries({ queryKey: ['knowledge'] });
      onSaved(saved);
    },
  });
  // Reset when the dialog opens again, so an old refusal does not greet the next base.
  // biome-ignore lint/correctness/useExhaustiveDependencies: on opening only
  useEffect(() => {
    if (opened) save.reset();
  }, [opened]);
  const errors = placeErrors(save.error, { name: 'Name', description: 'Description', embeddingModel: 'Embedding model' }).fields;
  // A name taken already is a 409 without field errors: said under the name all the same.
  if (save.error instanceof AgentryError && save.error.code === 'knowledge_base_exists') errors.name = save.error.detail;
  const shownAtField = Object.keys(errors).some((f) => ['name', 'description', 'embeddingModel'].includes(f));
  const modelChanges = !!base && model.trim() !== base.embeddingModel;

  return (
    <Modal opened={opened} onClose={onClose} title={base ? `Edit ${base.name}` : 'New knowledge base'}>
      <form
        onSubmit={(e) => {
          e.preventDefault();
          save.mutate();
        }}
      >
        <Stack>
          <TextInput
            label="Name"
            required
            maxLength={200}
            value={name}
            onChange={(e) => setName(e.currentTarget.value)}
            error={errors.name}
            data-autofocus
          />
          <Textarea
            label="Description"
            autosize
            minRows={2}
            maxLength={2000}
            value={description}
            onChange={(e) => setDescription(e.currentTarget.value)}
            error={errors.description}
          />
          <Autocomplete
            label="Embedding model"
            description="builtin/hash-embedding works offline; openai/… and openai-compatible/… use a configured provider"
            data={MODELS}
            value={model}
            onChange={setModel}
            error={errors.embeddingModel}
          />
          {modelChanges && (
            <Text size="sm" c="orange">
              A new embedding model indexes every document again; each stays searchable as it was until then.
            </Text>
          )}
          {save.error && !shownAtField && <Alert color="red">{messageOf(save.error)}</Alert>}
          <Group justify="end">
            <Button variant="default" onClick={onClose}>
              Cancel
            </Button>
            <Button type="submit" loading={save.isPending} disabled={!name.trim()}>
              {base ? 'Save' : 'Create'}
            </Button>
          </Group>
        </Stack>
      </form>
    </Modal>
  );
}
