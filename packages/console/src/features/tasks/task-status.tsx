import { Badge, Group, Text } from '@mantine/core';
import { taskStatusView } from '../../lib/task-actions';

/** A task's badge: what it does now, and for a recurring or triggered one its latest run's outcome beside it. */
export function TaskStatus({ task }: { task: { type: string; status: string; lastRunAt: string | null } }) {
  const view = taskStatusView(task);
  return (
    <Group gap={6} wrap="nowrap" data-testid="task-status">
      <Badge variant="light" color={view.color}>
        {view.label}
      </Badge>
      {view.lastRun && (
        <Text size="xs" c="dimmed">
          {view.lastRun}
        </Text>
      )}
    </Group>
  );
}
