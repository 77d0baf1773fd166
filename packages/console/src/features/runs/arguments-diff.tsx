import { Code, Group, Stack, Table, Text } from '@mantine/core';
import { diffArguments } from './json-diff';

const shown = (v: unknown) => (v === undefined ? '' : JSON.stringify(v));

/** A tool call's arguments as the model sent them and as a person approved them, with what changed between. */
export function ArgumentsDiff({ model, approved }: { model: unknown; approved: unknown }) {
  const changes = diffArguments(model, approved);
  return (
    <Stack gap={4} data-testid="arguments-diff">
      <Text size="xs" fw={600}>
        Arguments edited by the approver ({changes.length} change{changes.length === 1 ? '' : 's'})
      </Text>
      <Table withTableBorder fz="xs" verticalSpacing={2}>
        <Table.Thead>
          <Table.Tr>
            <Table.Th>Argument</Table.Th>
            <Table.Th>Model sent</Table.Th>
            <Table.Th>Approved</Table.Th>
          </Table.Tr>
        </Table.Thead>
        <Table.Tbody>
          {changes.map((c) => (
            <Table.Tr key={`${c.kind}:${c.path}`} data-change={c.kind}>
              <Table.Td ff="monospace">{c.path}</Table.Td>
              <Table.Td ff="monospace" c="red" td={c.kind === 'added' ? undefined : 'line-through'}>
                {c.kind === 'added' ? '—' : shown(c.before)}
              </Table.Td>
              <Table.Td ff="monospace" c="green">
                {c.kind === 'removed' ? '(removed)' : shown(c.after)}
              </Table.Td>
            </Table.Tr>
          ))}
        </Table.Tbody>
      </Table>
      <Group grow align="start" gap="xs">
        <JsonBlock label="As the model sent them" value={model} />
        <JsonBlock label="As approved" value={approved} />
      </Group>
    </Stack>
  );
}

export function JsonBlock({ label, value }: { label: string; value: unknown }) {
  return (
    <Stack gap={2} miw={0}>
      <Text size="xs" c="dimmed">
        {label}
      </Text>
      <Code block style={{ maxHeight: 240, overflow: 'auto', whiteSpace: 'pre-wrap', wordBreak: 'break-word' }}>
        {JSON.stringify(value, null, 2)}
      </Code>
    </Stack>
  );
}
