import { Alert, Button, Code, Group, Modal, Stack, Table, Tabs, Text, Title, Tooltip } from '@mantine/core';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useNavigate, useParams } from '@tanstack/react-router';
import { useState } from 'react';
import { messageOf, useClient, useDenied } from '../../api';
import { taskActionRefused } from '../../lib/task-actions';
import { AnchorLink } from '../../links';
import { formatDate, formatDuration, formatUsd } from '../runs/format';
import { StatusBadge } from '../runs/run-figures';
import { WarningsBadge } from '../runs/run-warnings';
import { CronPreviewList } from './cron-preview-list';
import { taskFiresQuery, taskKeys, taskQuery, taskRunsQuery } from './queries';
import { TaskStatus } from './task-status';

export function TaskPage() {
  const { taskId } = useParams({ from: '/app/tasks/$taskId' });
  const client = useClient();
  const denied = useDenied()('agents:write');
  const navigate = useNavigate();
  const queryClient = useQueryClient();
  const task = useQuery(taskQuery(client, taskId));
  const runs = useQuery(taskRunsQuery(client, taskId));
  const fires = useQuery(taskFiresQuery(client, taskId));
  const act = useMutation({
    mutationFn: (action: 'run' | 'cancel' | 'retry' | 'delete' | 'approve' | 'reject'): Promise<unknown> =>
      action === 'delete' ? client.tasks.delete(taskId) : client.tasks[action](taskId),
    // A deleted task's page is left (the list reads itself again on opening): asking for the task again would be a 404.
    onSuccess: (_data, action) =>
      action === 'delete' ? navigate({ to: '/tasks' }) : queryClient.invalidateQueries({ queryKey: taskKeys.task(taskId) }),
  });
  const [confirmDelete, setConfirmDelete] = useState(false);
  const t = task.data;

  return (
    <Stack maw={960}>
      <Title order={1} size="h2">
        {t?.name ?? 'Task'}
      </Title>
      {task.error && <Alert color="red">{messageOf(task.error)}</Alert>}
      {t && (
        <>
          <Group gap="lg">
            <TaskStatus task={t} />
            <Text size="sm">{t.type}</Text>
            {t.schedule && (
              <Text size="sm" ff="monospace">
                {t.schedule} ({t.timezone ?? 'UTC'})
              </Text>
            )}
            {t.nextRunAt && <Text size="sm">next {new Date(t.nextRunAt).toLocaleString()}</Text>}
          </Group>
          <Text>{t.description}</Text>
          {t.schedule && <CronPreviewList expression={t.schedule} timeZone={t.timezone ?? 'UTC'} />}
          {t.trigger?.type === 'webhook' && (
            <Text size="sm">
              Webhook: <Code>{t.trigger.url}</Code>
            </Text>
          )}
          <Group>
            {t.status === 'awaiting_approval' &&
              (['approve', 'reject'] as const).map((action) => (
                <Tooltip key={action} label={denied} disabled={!denied}>
                  <Button
                    color={action === 'approve' ? 'green' : 'red'}
                    variant={action === 'approve' ? 'filled' : 'light'}
                    disabled={!!denied || act.isPending}
                    loading={act.isPending && act.variables === action}
                    onClick={() => act.mutate(action)}
                  >
                    {action === 'approve' ? 'Approve' : 'Reject'}
                  </Button>
                </Tooltip>
              ))}
            {(['run', 'cancel', 'retry'] as const).map((action) => {
              const refused = denied ?? taskActionRefused(action, t);
              return (
                <Tooltip key={action} label={refused} disabled={!refused}>
                  <Button variant="default" disabled={!!refused} onClick={() => act.mutate(action)}>
                    {action === 'run' ? 'Run now' : action === 'cancel' ? 'Cancel' : 'Retry'}
                  </Button>
                </Tooltip>
              );
            })}
            <Button color="red" variant="light" disabled={!!denied} title={denied ?? undefined} onClick={() => setConfirmDelete(true)}>
              Delete…
            </Button>
          </Group>
          {act.error && <Alert color="red">{messageOf(act.error)}</Alert>}
        </>
      )}
      <Tabs defaultValue="runs">
        <Tabs.List>
          <Tabs.Tab value="runs">Runs</Tabs.Tab>
          <Tabs.Tab value="fires">Fire log</Tabs.Tab>
        </Tabs.List>
        <Tabs.Panel value="runs" pt="sm">
          <Table>
            <Table.Tbody>
              {(runs.data ?? []).map((run) => (
                <Table.Tr key={run.runId}>
                  <Table.Td>
                    <AnchorLink to="/runs/$runId" params={{ runId: run.runId }} ff="monospace" size="sm">
                      {run.runId.slice(-12)}
                    </AnchorLink>
                  </Table.Td>
                  <Table.Td>
                    <Group gap={6} wrap="nowrap">
                      <StatusBadge status={run.status} />
                      <WarningsBadge warnings={run.warnings} />
                    </Group>
                  </Table.Td>
                  <Table.Td>{formatDuration(run.duration)}</Table.Td>
                  <Table.Td>{formatUsd(run.cost)}</Table.Td>
                  <Table.Td>{formatDate(run.createdAt)}</Table.Td>
                </Table.Tr>
              ))}
            </Table.Tbody>
          </Table>
          {runs.data?.length === 0 && <Text c="dimmed">No runs yet.</Text>}
        </Tabs.Panel>
        <Tabs.Panel value="fires" pt="sm">
          <Table>
            <Table.Tbody>
              {(fires.data ?? []).map((fire) => (
                <Table.Tr key={fire.id}>
                  <Table.Td>{new Date(fire.decidedAt).toLocaleString()}</Table.Td>
                  <Table.Td>{fire.source}</Table.Td>
                  <Table.Td>{fire.decision}</Table.Td>
                  <Table.Td>{fire.reason ?? ''}</Table.Td>
                </Table.Tr>
              ))}
            </Table.Tbody>
          </Table>
          {fires.data?.length === 0 && <Text c="dimmed">No fires yet.</Text>}
        </Tabs.Panel>
      </Tabs>
      <Modal opened={confirmDelete} onClose={() => setConfirmDelete(false)} title="Delete task">
        <Stack>
          <Text>Delete this task? Its runs stay in the history.</Text>
          <Group justify="end">
            <Button variant="default" onClick={() => setConfirmDelete(false)}>
              Keep
            </Button>
            <Button color="red" onClick={() => act.mutate('delete')}>
              Delete
            </Button>
          </Group>
        </Stack>
      </Modal>
    </Stack>
  );
}
