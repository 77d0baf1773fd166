import { Button, Fieldset, Group, PasswordInput, Stack, TagsInput, Text, TextInput } from '@mantine/core';
import { type McpRow, rowKey } from '../../lib/agent-form';
import { RowError, RowTextInput } from './row-section';

/** An MCP server: its URL, tool prefix, allowed tools and headers (values hidden unless revealed). */
export function McpServerRow({
  row,
  index,
  errors,
  onChange,
  onRemove,
}: {
  row: McpRow;
  index: number;
  errors: Record<string, string>;
  onChange: (row: McpRow) => void;
  onRemove: () => void;
}) {
  const at = (field: string) => errors[`${index}.${field}`];
  return (
    <Fieldset legend={`MCP server ${index + 1}`} data-testid="mcp-row">
      <Stack gap="xs">
        <RowError errors={errors} index={index} />
        <Group grow align="start">
          <RowTextInput
            label="Server URL"
            description="Streamable HTTP endpoint, http(s)://"
            placeholder="https://mcp.example.com/mcp"
            maxLength={2048}
            row={row}
            field="url"
            at={at}
            onChange={onChange}
          />
          <RowTextInput
            label="Tool prefix"
            description="letters, digits, _ and -; up to 32"
            maxLength={32}
            row={row}
            field="name"
            at={at}
            onChange={onChange}
          />
        </Group>
        <TagsInput
          label="Allowed tools"
          description="only these of the server's tools (empty: all); type a name and press Enter"
          maxTags={256}
          value={row.allowedTools}
          onChange={(allowedTools) => onChange({ ...row, allowedTools })}
          error={at('allowedTools')}
        />
        {row.headers.map((h, i) => (
          <Group key={h.key} align="end" wrap="nowrap">
            <TextInput
              label={i === 0 ? 'Header' : undefined}
              aria-label={`Header ${i + 1} name`}
              placeholder="Authorization"
              maxLength={256}
              value={h.name}
              onChange={(e) =>
                onChange({ ...row, headers: row.headers.map((x) => (x.key === h.key ? { ...x, name: e.currentTarget.value } : x)) })
              }
            />
            {/* Header values are often tokens (Authorization): hidden unless revealed. */}
            <PasswordInput
              style={{ flex: 1 }}
              label={i === 0 ? 'Value' : undefined}
              aria-label={`Header ${i + 1} value`}
              autoComplete="off"
              visibilityToggleButtonProps={{ 'aria-label': `Show or hide header ${i + 1} value` }}
              maxLength={8192}
              value={h.value}
              onChange={(e) =>
                onChange({ ...row, headers: row.headers.map((x) => (x.key === h.key ? { ...x, value: e.currentTarget.value } : x)) })
              }
            />
            <Button variant="subtle" color="red" onClick={() => onChange({ ...row, headers: row.headers.filter((x) => x.key !== h.key) })}>
              Remove header
            </Button>
          </Group>
        ))}
        {at('headers') && (
          <Text c="red" size="sm">
            {at('headers')}
          </Text>
        )}
        <Group justify="space-between">
          <Button
            variant="default"
            size="xs"
            disabled={row.headers.length >= 32}
            onClick={() => onChange({ ...row, headers: [...row.headers, { key: rowKey(), name: '', value: '' }] })}
          >
            Add header
          </Button>
          <Button variant="subtle" color="red" size="xs" onClick={onRemove}>
            Remove MCP server
          </Button>
        </Group>
      </Stack>
    </Fieldset>
  );
}
