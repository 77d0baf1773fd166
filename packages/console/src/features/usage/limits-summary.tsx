import { Alert, Card, SimpleGrid, Text } from '@mantine/core';
import { useQuery } from '@tanstack/react-query';
import { messageOf, useClient } from '../../api';
import { limitsQuery } from '../settings/queries';

/** The tenant's budget and what is left of it, its rate limit and its runs running (changed on the settings page). */
export function LimitsSummary() {
  const client = useClient();
  const limits = useQuery(limitsQuery(client));
  if (limits.error) return <Alert color="gray">{messageOf(limits.error)}</Alert>;
  const l = limits.data;
  if (!l) return null;
  return (
    <SimpleGrid cols={{ base: 1, sm: 3 }}>
      <Card withBorder>
        <Text size="xs" c="dimmed">
          Budget {l.usage.month}
        </Text>
        <Text fw={600}>
          {l.monthlyBudgetUsd === null
            ? `no budget; spent $${l.usage.spentUsd.toFixed(4)}`
            : `$${l.usage.spentUsd.toFixed(4)} of $${l.monthlyBudgetUsd}, $${Math.max(0, l.monthlyBudgetUsd - l.usage.spentUsd).toFixed(4)} left`}
        </Text>
      </Card>
      <Card withBorder>
        <Text size="xs" c="dimmed">
          Rate limit
        </Text>
        <Text fw={600}>{l.rateLimitPerMinute === null ? 'server default' : `${l.rateLimitPerMinute} requests/min`}</Text>
      </Card>
      <Card withBorder>
        <Text size="xs" c="dimmed">
          Concurrent runs
        </Text>
        <Text fw={600}>
          {l.usage.runningRuns} running{l.maxConcurrentRuns !== null ? ` of ${l.maxConcurrentRuns}` : ''}
        </Text>
      </Card>
    </SimpleGrid>
  );
}
