import type { Task } from '@agentry/client';
import { Alert, Button, Group, JsonInput, SegmentedControl, Select, Stack, Switch, Text, Textarea, TextInput } from '@mantine/core';
import { useMutation, useQuery } from '@tanstack/react-query';
import { useState } from 'react';
import { messageOf, useClient } from '../../api';
import { FormErrorSummary } from '../../form-error-summary';
import { LocalFieldErrors, placeErrors } from '../../lib/form-errors.js';
import { checkFields, LIMITS } from '../../lib/form-limits.js';
import { CronPreviewList } from './cron-preview-list';
import { everyAgentQuery } from '../agents/queries';

type TaskType = 'one_time' | 'scheduled' | 'triggered';
const browserZone = Intl.DateTimeFormat().resolvedOptions().timeZone || 'UTC';
// Browsers list canonical zones only (not always UTC itself): UTC and this browser's zone come first.
const supportedZones = (Intl as unknown as { supportedValuesOf?: (k: string) => string[] }).supportedValuesOf?.('timeZone') ?? [];
const ZONES: string[] = [...new Set(['UTC', browserZone, ...supportedZones])];

/** The task form's fields by the names the API gives them, as the form labels them. */
const TASK_FIELDS: Record<string, string> = {
  type: 'Kind',
  name: 'Name',
  description: 'Description',
  agentId: 'Agent',
  schedule: 'Cron expression',
  timezone: 'Time zone',
  dueAt: 'Due at',
  input: 'Input',
  requiresApproval: 'Requires approval',
};

export function NewTaskForm({ onCreated }: { onCreated(task: Task): void }) {
  const client = useClient();
  const agents = useQuery(everyAgentQuery(client));
  const [type, setType] = useState<TaskType>('one_time');
  const [name, setName] = useState('');
  const [description, setDescription] = useState('');
  const [agentId, setAgentId] = useState<string | null>(null);
  const [schedule, setSchedule] = useState('0 9 * * 1-5');
  const [timezone, setTimezone] = useState(browserZone);
  const [dueAt, setDueAt] = useState('');
  const [input, setInput] = useState('{}');
  const [requiresApproval, setRequiresApproval] = useState(false);
  const create = useMutation({
    mutationFn: () => {
      // The schema's limits and the input's JSON, checked before anything is sent.
      const local = checkFields({ name, description, ...(type === 'scheduled' ? { schedule, timezone } : {}) }, LIMITS.createTask);
      let parsed: Record<string, unknown> = {};
      try {
        parsed = JSON.parse(input || '{}');
        if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed))
          local.push({ path: 'body.input', message: 'must be a JSON object' });
      } catch {
        local.push({ path: 'body.input', message: 'is not valid JSON' });
      }
      if (local.length) throw new LocalFieldErrors(local);
      return client.tasks.create({
        name,
        description,
        agentId: agentId ?? '',
        type,
        input: parsed,
        requiresApproval,
        ...(type === 'scheduled' ? { schedule, timezone } : {}),
        ...(type === 'one_time' && dueAt ? { dueAt: new Date(dueAt).toISOString() } : {}),
        ...(type === 'triggered' ? { trigger: { type: 'webhook' as const } } : {}),
      });
    },
    onSuccess: onCreated,
  });
  const { fields: errors, summary } = placeErrors(create.error, TASK_FIELDS);

  return (
    <form
      onSubmit={(e) => {
        e.preventDefault();
        create.mutate();
      }}
    >
      <Stack>
        <FormErrorSummary summary={summary} title="Not created" />
        <SegmentedControl
          aria-label="Kind of task"
          value={type}
          onChange={(v) => setType(v as TaskType)}
          data={[
            { value: 'one_time', label: 'One-time' },
            { value: 'scheduled', label: 'Cron' },
            { value: 'triggered', label: 'Webhook' },
          ]}
        />
        <TextInput label="Name" required value={name} onChange={(e) => setName(e.currentTarget.value)} error={errors.name} />
        <Textarea
          label="Description (the message the agent gets)"
          required
          autosize
          minRows={2}
          value={description}
          onChange={(e) => setDescription(e.currentTarget.value)}
          error={errors.description}
        />
        <Select
          label="Agent"
          required
          searchable
          data={(agents.data ?? []).map((a) => ({ value: a.id, label: a.name }))}
          value={agentId}
          onChange={setAgentId}
          error={errors.agentId}
        />
        {type === 'scheduled' && (
          <>
            <Group grow align="start">
              <TextInput
                label="Cron expression"
                description="minute hour day-of-month month day-of-week"
                value={schedule}
                onChange={(e) => setSchedule(e.currentTarget.value)}
                error={errors.schedule}
                styles={{ input: { fontFamily: 'var(--mantine-font-family-monospace)' } }}
              />
              <Select
                label="Time zone"
                searchable
                data={ZONES}
                value={timezone}
                onChange={(z) => setTimezone(z ?? 'UTC')}
                error={errors.timezone}
              />
            </Group>
            <CronPreviewList expression={schedule} timeZone={timezone} />
          </>
        )}
        {type === 'one_time' && (
          <TextInput
            label="Due at (empty: now)"
            type="datetime-local"
            value={dueAt}
            onChange={(e) => setDueAt(e.currentTarget.value)}
            error={errors.dueAt}
          />
        )}
        {type === 'triggered' && <Text size="sm">A webhook URL and its signing secret are shown once, after creation.</Text>}
        <JsonInput
          label="Input (JSON)"
          value={input}
          onChange={setInput}
          autosize
          minRows={2}
          error={errors.input}
          // Mantine shows this instead of `error` while the text is not JSON; before a submit, only a red border
          // (a message appearing on blur would move the button from under the pointer).
          validationError={errors.input}
        />
        <Switch
          label="Requires approval before each run"
          checked={requiresApproval}
          onChange={(e) => setRequiresApproval(e.currentTarget.checked)}
        />
        {create.error && !summary.length && <Alert color="red">{messageOf(create.error)}</Alert>}
        <Button type="submit" loading={create.isPending}>
          Create task
        </Button>
      </Stack>
    </form>
  );
}
