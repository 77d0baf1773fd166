import { Button, Fieldset, Group, Text, TextInput } from '@mantine/core';
import { type ConditionsDraft, type conditionErrorsOf, emptyConditionsDraft } from '../../lib/conditions';

/** A policy's conditions as inputs: two moments and a daily window, all UTC; errors are the server's. */
export function ConditionsFields({
  draft,
  onChange,
  errors,
}: {
  draft: ConditionsDraft;
  onChange: (draft: ConditionsDraft) => void;
  errors: ReturnType<typeof conditionErrorsOf>;
}) {
  const field = (name: keyof ConditionsDraft) => ({
    value: draft[name],
    onChange: (e: React.ChangeEvent<HTMLInputElement>) => onChange({ ...draft, [name]: e.currentTarget.value }),
    error: errors[name],
  });
  return (
    <Fieldset legend="Conditions (all must hold at decision time; UTC; empty: none)" mt="sm" data-testid="policy-conditions">
      <Group align="start" grow>
        <TextInput type="datetime-local" label="Applies from (UTC)" {...field('notBefore')} />
        <TextInput type="datetime-local" label="Expires at (UTC)" {...field('notAfter')} />
        <TextInput type="time" label="Daily window start (UTC)" {...field('windowStart')} />
        <TextInput type="time" label="Daily window end (UTC)" {...field('windowEnd')} />
      </Group>
      {errors.conditions && (
        <Text c="red" size="sm" mt={4}>
          {errors.conditions}
        </Text>
      )}
      <Button variant="subtle" size="xs" mt="xs" onClick={() => onChange(emptyConditionsDraft)}>
        Clear conditions
      </Button>
    </Fieldset>
  );
}
