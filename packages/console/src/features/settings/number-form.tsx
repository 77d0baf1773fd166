import { Alert, Button, Card, Group, NumberInput, SimpleGrid, Stack, Text, Title } from '@mantine/core';
import { useMutation } from '@tanstack/react-query';
import { useEffect, useState } from 'react';
import { messageOf } from '../../api';
import { FormErrorSummary } from '../../form-error-summary';
import { placeErrors } from '../../lib/form-errors';
import { type NumberField, problemOf, type Values } from './fields';

/**
 * One group of a tenant's numeric settings as a form: each field blank for null (what null means is
 * its description), checked against the server's bounds as typed, only the fields changed sent; the
 * server's 400s show at their field and what was typed stays. Without `denied` null it is read-only,
 * saying why.
 */
export function NumberSettingsForm<K extends string>({
  title,
  description,
  fields,
  values,
  denied,
  onSave,
  testId,
}: {
  title: string;
  description: string;
  fields: NumberField<K>[];
  values: Values<K>;
  denied: string | null;
  onSave(changed: Partial<Values<K>>): Promise<unknown>;
  testId: string;
}) {
  const [typed, setTyped] = useState<Record<K, number | string>>(() => typedOf(fields, values));
  // The values from the server again (after a save, or another change): the form starts from them.
  // biome-ignore lint/correctness/useExhaustiveDependencies: the fields are the same list every render
  useEffect(() => setTyped(typedOf(fields, values)), [values]);
  const save = useMutation({ mutationFn: onSave });

  const changed: Partial<Values<K>> = {};
  const problems: Partial<Record<K, string>> = {};
  for (const f of fields) {
    const raw = typed[f.name];
    const next = raw === '' ? null : Number(raw);
    const problem = problemOf(f, next);
    if (problem) problems[f.name] = problem;
    else if (next !== values[f.name]) changed[f.name] = next;
  }
  const { fields: server, summary } = placeErrors(save.error, Object.fromEntries(fields.map((f) => [f.name, f.label])));
  const invalid = Object.keys(problems).length > 0;
  const dirty = Object.keys(changed).length > 0;
  const otherError = save.error && !summary.length ? messageOf(save.error) : null;

  return (
    <Card withBorder data-testid={testId}>
      <form
        onSubmit={(e) => {
          e.preventDefault();
          if (!invalid && dirty && !denied) save.mutate(changed);
        }}
      >
        <Stack>
          <div>
            <Title order={2} size="h3">
              {title}
            </Title>
            <Text size="sm" c="dimmed">
              {description}
            </Text>
          </div>
          {denied && (
            <Alert color="gray" title="Read-only">
              Changing these is off: {denied}.
            </Alert>
          )}
          <FormErrorSummary summary={summary} title="Not saved" />
          <fieldset disabled={denied !== null} style={{ border: 0, padding: 0, margin: 0 }}>
            <SimpleGrid cols={{ base: 1, sm: 2 }}>
              {fields.map((f) => (
                <NumberInput
                  key={f.name}
                  label={f.label}
                  description={f.description}
                  placeholder={f.blank}
                  value={typed[f.name]}
                  onChange={(v) => setTyped((t) => ({ ...t, [f.name]: v }))}
                  allowDecimal={f.decimal ?? false}
                  allowNegative={false}
                  error={problems[f.name] ?? server[f.name]}
                  readOnly={denied !== null}
                  title={denied ?? undefined}
                />
              ))}
            </SimpleGrid>
          </fieldset>
          {otherError && <Alert color="red">{otherError}</Alert>}
          {save.isSuccess && !dirty && (
            <Text size="sm" c="green" role="status">
              Saved.
            </Text>
          )}
          <Group justify="end">
            <Button type="submit" loading={save.isPending} disabled={denied !== null || invalid || !dirty} title={denied ?? undefined}>
              Save {title.toLowerCase()}
            </Button>
          </Group>
        </Stack>
      </form>
    </Card>
  );
}

function typedOf<K extends string>(fields: NumberField<K>[], values: Values<K>) {
  return Object.fromEntries(fields.map((f) => [f.name, values[f.name] ?? ''])) as Record<K, number | string>;
}
