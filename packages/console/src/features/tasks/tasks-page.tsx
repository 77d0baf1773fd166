import type { Task } from '@agentry/client';
import { Alert, Button, Code, CopyButton, Group, Modal, Stack, Table, Text, Title, Tooltip } from '@mantine/core';
import { useQuery, useQueryClient } from '@tanstack/react-query';
import { useNavigate } from '@tanstack/react-router';
import { useState } from 'react';
import { messageOf, useClient, useDenied } from '../../api';
import { AnchorLink } from '../../links';
import { NewTaskForm } from './new-task-form';
import { taskKeys, tasksQuery } from './queries';
import { TaskStatus } from './task-status';

export function TasksPage() {
  const client = useClient();
  const denied = useDenied()('agents:write');
  const queryClient = useQueryClient();
  const navigate = useNavigate();
  const [creating, setCreating] = useState(false);
  const [created, setCreated] = useState<Task | null>(null);
  const tasks = useQuery(tasksQuery(client));

  return (
    <Stack>
      <Group justify="space-between">
        <Title order={1} size="h2">
          Tasks
        </Title>
        <Tooltip label={denied} disabled={!denied}>
          <Button onClick={() => setCreating(true)} disabled={!!denied}>
            New task
          </Button>
        </Tooltip>
      </Group>
      {tasks.error && <Alert color="red">{messageOf(tasks.error)}</Alert>}
      <Table.ScrollContainer minWidth={700}>
        <Table striped highlightOnHover>
          <Table.Thead>
            <Table.Tr>
              <Table.Th>Name</Table.Th>
              <Table.Th>Type</Table.Th>
              <Table.Th>Schedule</Table.Th>
              <Table.Th>Status</Table.Th>
              <Table.Th>Next run</Table.Th>
              <Table.Th>Last run</Table.Th>
            </Table.Tr>
          </Table.Thead>
          <Table.Tbody>
            {(tasks.data?.items ?? []).map((task) => (
              <Table.Tr key={task.id}>
                <Table.Td>
                  <AnchorLink to="/tasks/$taskId" params={{ taskId: task.id }}>
                    {task.name}
                  </AnchorLink>
                </Table.Td>
                <Table.Td>{task.type}</Table.Td>
                <Table.Td>
                  <Text ff="monospace" size="sm">
                    {task.schedule ?? '—'}
                  </Text>
                </Table.Td>
                <Table.Td>
                  <TaskStatus task={task} />
                </Table.Td>
                <Table.Td>{task.nextRunAt ? new Date(task.nextRunAt).toLocaleString() : '—'}</Table.Td>
                <Table.Td>{task.lastRunAt ? new Date(task.lastRunAt).toLocaleString() : '—'}</Table.Td>
              </Table.Tr>
            ))}
          </Table.Tbody>
        </Table>
      </Table.ScrollContainer>
      {tasks.data?.total === 0 && <Text c="dimmed">No tasks yet.</Text>}
      <Modal opened={creating} onClose={() => setCreating(false)} title="New task" size="lg">
        <NewTaskForm
          onCreated={(task) => {
            setCreating(false);
            queryClient.invalidateQueries({ queryKey: taskKeys.all });
            if (task.trigger?.type === 'webhook' && task.trigger.secret) setCreated(task);
            else navigate({ to: '/tasks/$taskId', params: { taskId: task.id } });
          }}
        />
      </Modal>
      <Modal opened={created !== null} onClose={() => setCreated(null)} title="Webhook created" size="lg">
        {created?.trigger?.type === 'webhook' && (
          <Stack>
            <Alert color="yellow">The secret is shown this once: copy it now. Deliveries are signed with it.</Alert>
            <Text size="sm" fw={500}>
              URL
            </Text>
            <Code block>{created.trigger.url}</Code>
            <Text size="sm" fw={500}>
              Secret
            </Text>
            <Group>
              <Code data-testid="webhook-secret">{created.trigger.secret}</Code>
              <CopyButton value={created.trigger.secret ?? ''}>
                {({ copied, copy }) => (
                  <Button size="xs" variant="light" onClick={copy}>
                    {copied ? 'Copied' : 'Copy'}
                  </Button>
                )}
              </CopyButton>
            </Group>
          </Stack>
        )}
      </Modal>
    </Stack>
  );
}
