import type { A2aRow, DelegationRow } from '../../lib/agent-form';
import { Button, Fieldset, Group, PasswordInput, Select, Stack } from '@mantine/core';
import { RowError, RowTextInput } from './row-section';

/** A delegation: another agent of the tenant, picked by name, as a tool with its name and description. */
export function DelegationRowInput({
  row,
  index,
  agents,
  errors,
  onChange,
  onRemove,
}: {
  row: DelegationRow;
  index: number;
  /** null while the tenant's agents are loading. */
  agents: { value: string; label: string }[] | null;
  errors: Record<string, string>;
  onChange: (row: DelegationRow) => void;
  onRemove: () => void;
}) {
  const at = (field: string) => errors[`${index}.${field}`];
  // An agent the list does not hold (past its first page, or deleted since) still shows by id.
  const known = agents ?? [];
  const options =
    row.agentId && !known.some((a) => a.value === row.agentId) ? [...known, { value: row.agentId, label: row.agentId }] : known;
  return (
    <Fieldset legend={`Delegation ${index + 1}`} data-testid="delegation-row">
      <Stack gap="xs">
        <RowError errors={errors} index={index} />
        <Group grow align="start">
          <Select
            label="Agent"
            placeholder={agents ? 'choose an agent' : 'loading agents…'}
            searchable
            data={options}
            value={row.agentId}
            onChange={(agentId) => onChange({ ...row, agentId })}
            error={at('agentId')}
          />
          <RowTextInput
            label="Tool name"
            description="what the model calls; empty: ask_<agent name>"
            maxLength={64}
            row={row}
            field="name"
            at={at}
            onChange={onChange}
          />
        </Group>
        <RowTextInput
          label="Description"
          description="when the model should ask this agent; empty: the agent's own description"
          maxLength={2000}
          row={row}
          field="description"
          at={at}
          onChange={onChange}
        />
        <Group>
          <Button variant="subtle" color="red" onClick={onRemove}>
            Remove delegation
          </Button>
        </Group>
      </Stack>
    </Fieldset>
  );
}

/** A remote A2A agent: its name, Agent Card URL, description and sealed credential. */
export function A2aRowInput({
  row,
  index,
  errors,
  onChange,
  onRemove,
}: {
  row: A2aRow;
  index: number;
  errors: Record<string, string>;
  onChange: (row: A2aRow) => void;
  onRemove: () => void;
}) {
  const at = (field: string) => errors[`${index}.${field}`];
  return (
    <Fieldset legend={`A2A agent ${index + 1}`} data-testid="a2a-row">
      <Stack gap="xs">
        <RowError errors={errors} index={index} />
        <Group grow align="start">
          <RowTextInput
            label="Name"
            description="the model calls a2a_<name>; letters, digits, _ and -"
            maxLength={60}
            row={row}
            field="name"
            at={at}
            onChange={onChange}
          />
          <RowTextInput
            label="Agent Card URL"
            placeholder="https://agents.example.com/.well-known/agent-card.json"
            maxLength={2048}
            row={row}
            field="cardUrl"
            at={at}
            onChange={onChange}
          />
        </Group>
        <RowTextInput label="Description" maxLength={2000} row={row} field="description" at={at} onChange={onChange} />
        {/* A bearer token: hidden unless revealed; a saved one comes back sealed, and sending that keeps it. */}
        <PasswordInput
          label="Credential"
          description="the bearer credential the remote agent expects (optional); stored sealed"
          autoComplete="off"
          visibilityToggleButtonProps={{ 'aria-label': `Show or hide A2A agent ${index + 1} credential` }}
          maxLength={8192}
          value={row.credential}
          onChange={(e) => onChange({ ...row, credential: e.currentTarget.value })}
          error={at('credential')}
        />
        <Group>
          <Button variant="subtle" color="red" onClick={onRemove}>
            Remove A2A agent
          </Button>
        </Group>
      </Stack>
    </Fieldset>
  );
}
