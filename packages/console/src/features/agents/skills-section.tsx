import { Alert, Button, Group, NumberInput, Select, Stack, Text, Title, Tooltip } from '@mantine/core';
import { useQuery } from '@tanstack/react-query';
import { useClient } from '../../api';
import { emptySkillRow, type SkillRow } from '../../lib/agent-form';
import { skillsQuery } from '../skills/queries';

const MAX_SKILL_ROWS = 100;

/**
 * The agent's skills as rows (a skill of the tenant's catalog and its priority), assigned on save.
 * `off` says why they cannot be changed here (no permission, or the agent's skills could not be read).
 */
export function SkillsSection({
  rows,
  onRows,
  errors,
  fieldError,
  off,
  readDenied,
  loadFailed,
  denied,
}: {
  rows: SkillRow[];
  onRows: (rows: SkillRow[]) => void;
  /** The rows' errors, by `${index}.${field}`. */
  errors: Record<string, string>;
  /** An error of the skills as a whole. */
  fieldError?: string;
  off: string | null;
  readDenied: string | null;
  loadFailed: string | null;
  denied: string | null;
}) {
  const client = useClient();
  const catalog = useQuery({ ...skillsQuery(client), enabled: !readDenied });
  const skillOptions = (catalog.data ?? []).map((s) => ({ value: s.id, label: s.name }));
  // An assigned skill the catalog page does not hold (archived, or past its first 200) still shows by id.
  for (const row of rows) {
    if (row.skillId && !skillOptions.some((o) => o.value === row.skillId)) skillOptions.push({ value: row.skillId, label: row.skillId });
  }
  const change = (key: string, patch: Partial<SkillRow>) => onRows(rows.map((r) => (r.key === key ? { ...r, ...patch } : r)));
  return (
    <Stack gap="xs">
      <Title order={4}>Skills</Title>
      {loadFailed && (
        <Alert color="red" title="Skills not loaded">
          Skills cannot be changed here: {loadFailed}. Saving leaves the agent's skills as they are.
        </Alert>
      )}
      {denied && (
        <Text size="sm" c="dimmed">
          Skills cannot be assigned here: {denied}.
        </Text>
      )}
      {!off && catalog.data && catalog.data.length === 0 && rows.length === 0 && (
        <Text size="sm" c="dimmed">
          The tenant has no skills yet (import or acquire them on the Skills page).
        </Text>
      )}
      {rows.map((row, i) => (
        <Group key={row.key} align="start" data-testid="skill-row">
          <Select
            label="Skill"
            aria-label={`Skill ${i + 1}`}
            searchable
            placeholder="choose a skill"
            data={skillOptions}
            value={row.skillId}
            disabled={!!off}
            title={off ?? undefined}
            onChange={(skillId) => change(row.key, { skillId })}
            error={errors[`${i}.skillId`]}
            style={{ flex: 1 }}
          />
          <NumberInput
            label="Priority"
            aria-label={`Priority of skill ${i + 1}`}
            description="higher: used first"
            w={160}
            value={row.priority}
            disabled={!!off}
            title={off ?? undefined}
            onChange={(priority) => change(row.key, { priority })}
            error={errors[`${i}.priority`]}
          />
          <Button
            mt={24}
            variant="subtle"
            color="red"
            disabled={!!off}
            title={off ?? undefined}
            onClick={() => onRows(rows.filter((r) => r.key !== row.key))}
          >
            Remove skill
          </Button>
        </Group>
      ))}
      {fieldError && (
        <Text c="red" size="sm">
          {fieldError}
        </Text>
      )}
      <Group>
        <Tooltip label={off} disabled={!off}>
          <Button variant="default" disabled={!!off || rows.length >= MAX_SKILL_ROWS} onClick={() => onRows([...rows, emptySkillRow()])}>
            Add skill
          </Button>
        </Tooltip>
      </Group>
    </Stack>
  );
}
