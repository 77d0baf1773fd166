import { Badge, Checkbox, Group, Text } from '@mantine/core';
import type { Approval } from './queries';

/** A card's first line: what waits (a task, a tool call) and since when; a tool call's box ticks it for a decision in bulk. */
export function CardHead({ item, ticked }: { item: Approval; ticked?: { on: boolean; set: (on: boolean) => void } }) {
  return (
    <Group justify="space-between" wrap="wrap">
      <Group gap="xs">
        {ticked && (
          <Checkbox
            aria-label={`Select ${item.toolCall?.name ?? item.id}`}
            checked={ticked.on}
            onChange={(e) => ticked.set(e.currentTarget.checked)}
          />
        )}
        <Badge>{item.kind === 'task' ? 'task' : 'tool call'}</Badge>
        <Text fw={600}>{item.task?.name ?? item.toolCall?.name}</Text>
      </Group>
      <Text size="xs" c="dimmed">
        {new Date(item.createdAt).toLocaleString()}
      </Text>
    </Group>
  );
}
