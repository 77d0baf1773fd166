import { Group, Text } from '@mantine/core';
import { useQuery } from '@tanstack/react-query';
import { useClient } from '../../api';
import { AnchorLink } from '../../links';
import { runQuery } from '../runs/queries';

/**
 * How a turn ended, read from its run: cost and tokens of a completed answer; a stopped or failed one
 * says so (its text is only the part written before), never a cost line that reads as finished.
 */
export function TurnCost({ runId }: { runId: string }) {
  const client = useClient();
  const run = useQuery({ ...runQuery(client, runId), staleTime: 60_000 });
  if (!run.data) return null;
  const { status, error, cost, tokenUsage } = run.data;
  const ended =
    status === 'cancelled' || status === 'failed' ? (
      <Text size="xs" c={status === 'cancelled' ? 'orange' : 'red'} data-testid="turn-cost">
        {status === 'cancelled'
          ? 'Stopped before the answer was finished'
          : `Failed: ${error?.message ?? error?.code ?? 'no reason given'}`}
        {tokenUsage ? ` · ${tokenUsage.inputTokens} in / ${tokenUsage.outputTokens} out tokens` : ''}
      </Text>
    ) : (
      <CostLine cost={cost} input={tokenUsage?.inputTokens} output={tokenUsage?.outputTokens} />
    );
  return (
    <Group gap="xs" wrap="nowrap">
      {ended}
      <AnchorLink to="/runs/$runId" params={{ runId }} size="xs" data-testid="turn-run">
        Run
      </AnchorLink>
    </Group>
  );
}

export function CostLine({ cost, input, output }: { cost?: number; input?: number; output?: number }) {
  return (
    <Text size="xs" c="dimmed" data-testid="turn-cost">
      ${(cost ?? 0).toFixed(6)} · {input ?? 0} in / {output ?? 0} out tokens
    </Text>
  );
}
