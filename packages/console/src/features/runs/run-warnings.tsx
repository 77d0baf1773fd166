import { Alert, Badge, List, Text, Tooltip } from '@mantine/core';
import { useRun } from './use-run';

/** A run's warnings (a tool source that could not contribute, a setting the model ignored...), on its page. */
export function RunWarnings({ warnings }: { warnings: readonly string[] }) {
  if (!warnings.length) return null;
  return (
    <Alert color="yellow" title={warnings.length === 1 ? 'Warning' : `${warnings.length} warnings`} data-testid="run-warnings">
      <List size="sm" spacing={2}>
        {warnings.map((w) => (
          <List.Item key={w} style={{ wordBreak: 'break-word' }}>
            {w}
          </List.Item>
        ))}
      </List>
    </Alert>
  );
}

/** A run list's mark of a warned run: the count, the warnings in its tooltip. */
export function WarningsBadge({ warnings }: { warnings: readonly string[] | undefined }) {
  if (!warnings?.length) return null;
  return (
    <Tooltip
      multiline
      w={360}
      label={warnings.map((w) => (
        <Text key={w} size="xs">
          {w}
        </Text>
      ))}
    >
      <Badge
        color="yellow"
        variant="light"
        size="sm"
        data-testid="run-warnings-badge"
        aria-label={`${warnings.length} warnings: ${warnings.join('; ')}`}
      >
        ⚠ {warnings.length}
      </Badge>
    </Tooltip>
  );
}

/** Under a playground turn's answer: what its run warned about, if anything. */
export function TurnWarnings({ runId }: { runId: string }) {
  // The turn's cost line reads the same run: one request for both.
  const run = useRun(runId, { staleTime: 60_000 });
  const warnings = run.data?.warnings ?? [];
  if (!warnings.length) return null;
  return (
    <Alert color="yellow" variant="light" p={6} data-testid="turn-warnings">
      {warnings.map((w) => (
        <Text key={w} size="xs" style={{ wordBreak: 'break-word' }}>
          ⚠ {w}
        </Text>
      ))}
    </Alert>
  );
}
