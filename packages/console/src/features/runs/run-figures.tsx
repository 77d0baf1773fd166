import type { RunDetails } from '@agentry/client';
import { Badge, Group, Text } from '@mantine/core';
import { AnchorLink } from '../../links';
import { formatDate, formatDuration, formatTokens, formatUsd } from './format';

const statusColor = (s: string) =>
  s === 'completed' ? 'green' : s === 'failed' ? 'red' : s === 'cancelled' ? 'gray' : s === 'running' ? 'blue' : 'yellow';

export const StatusBadge = ({ status }: { status: string }) => <Badge color={statusColor(status)}>{status}</Badge>;

/** The run at a glance: status, kind, model, duration, tokens, cost, when, and where it belongs. */
export function RunFigures({ run }: { run: RunDetails }) {
  const fallbacks = [...new Set(run.steps.map((s) => s.model).filter((m) => m !== run.model))];
  return (
    <Group gap="lg">
      <StatusBadge status={run.status} />
      <Text size="sm">kind {run.kind}</Text>
      <Text size="sm" ff="monospace">
        {run.model}
      </Text>
      {fallbacks.length > 0 && (
        <Badge color="orange" variant="light" tt="none" data-testid="run-fallbacks">
          answered by fallback {fallbacks.join(', ')}
        </Badge>
      )}
      <Text size="sm">{run.duration !== null ? formatDuration(run.duration) : 'running'}</Text>
      <Text size="sm">{formatTokens(run.tokenUsage)}</Text>
      <Text size="sm" data-testid="run-cost">
        {formatUsd(run.cost)}
      </Text>
      <Text size="sm" c="dimmed">
        {formatDate(run.startedAt ?? run.createdAt)}
      </Text>
      {run.finishReason && <Text size="sm">finish {run.finishReason}</Text>}
      {run.conversationId && (
        <AnchorLink to="/playground" search={{ agentId: run.agentId, conversationId: run.conversationId }} size="sm">
          conversation
        </AnchorLink>
      )}
      {run.taskId && (
        <AnchorLink to="/tasks/$taskId" params={{ taskId: run.taskId }} size="sm">
          task
        </AnchorLink>
      )}
    </Group>
  );
}
