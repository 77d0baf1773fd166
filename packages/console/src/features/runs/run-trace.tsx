import { ActionIcon, Badge, Box, Button, CopyButton, Group, Paper, Stack, Text, Title, Tooltip, UnstyledButton } from '@mantine/core';
import { useState } from 'react';
import { formatDuration, formatUsd } from './format';
import { TraceDetails } from './trace-details';
import type { Trace, TraceRow } from './trace';

const COLORS: Record<TraceRow['kind'], string> = { model: 'indigo', tool: 'grape', approval: 'yellow', event: 'orange' };
const KIND_LABEL: Record<TraceRow['kind'], string> = { model: 'model', tool: 'tool', approval: 'approval', event: 'event' };

/** The row's name and its few figures, as the collapsed row shows them. */
function summaryOf(row: TraceRow): { name: string; note: string } {
  switch (row.kind) {
    case 'model': {
      const { step } = row;
      const tokens = `${step.usage.inputTokens}→${step.usage.outputTokens} tok`;
      return { name: `Step ${step.index + 1} · ${step.model}`, note: `${tokens} · ${formatUsd(step.cost)} · ${step.finishReason}` };
    }
    case 'tool':
      return {
        name: row.call.name,
        note: `${row.call.outcome}${row.call.errorCode ? ` ${row.call.errorCode}` : ''}${row.approval?.decision?.arguments !== undefined ? ' · edited' : ''}`,
      };
    case 'approval':
      return { name: `Approval: ${row.approval.toolCall?.name ?? ''}`, note: row.approval.status };
    case 'event':
      return { name: row.title, note: '' };
  }
}

/**
 * The waterfall: one row a step, call, wait or event, its bar placed and sized by its start and
 * duration on the run's time axis. Rows are collapsed to one line; a click shows the row's details.
 */
export function RunTrace({ trace, traceId }: { trace: Trace; traceId: string | null }) {
  const [open, setOpen] = useState<ReadonlySet<string>>(new Set());
  const toggle = (key: string) =>
    setOpen((prev) => {
      const next = new Set(prev);
      if (!next.delete(key)) next.add(key);
      return next;
    });
  return (
    <Stack gap="xs">
      <Group justify="space-between">
        <Title order={4}>Trace</Title>
        <Group gap="xs">
          {traceId && <TraceId id={traceId} />}
          {trace.rows.length > 0 && (
            <Button
              size="compact-xs"
              variant="subtle"
              onClick={() => setOpen(open.size ? new Set() : new Set(trace.rows.map((r) => r.key)))}
            >
              {open.size ? 'Collapse all' : 'Expand all'}
            </Button>
          )}
        </Group>
      </Group>
      {trace.rows.length === 0 ? (
        <Text c="dimmed" size="sm">
          No steps recorded yet: a run’s steps are written when it ends or waits for a person.
        </Text>
      ) : (
        <Paper withBorder p={4} data-testid="run-trace">
          <Axis spanMs={trace.spanMs} />
          {trace.rows.map((row) => (
            <TraceLine key={row.key} row={row} spanMs={trace.spanMs} open={open.has(row.key)} onToggle={() => toggle(row.key)} />
          ))}
        </Paper>
      )}
    </Stack>
  );
}

const LABEL_WIDTH = '38%';
const DURATION_WIDTH = 72;

function Axis({ spanMs }: { spanMs: number }) {
  return (
    <Group gap="xs" wrap="nowrap" px={6} pb={2}>
      <Box w={LABEL_WIDTH} style={{ flexShrink: 0 }} />
      <Group justify="space-between" style={{ flex: 1 }}>
        {[0, 0.25, 0.5, 0.75, 1].map((f) => (
          <Text key={f} size="10px" c="dimmed">
            {formatDuration(spanMs * f)}
          </Text>
        ))}
      </Group>
      <Box w={DURATION_WIDTH} style={{ flexShrink: 0 }} />
    </Group>
  );
}

function TraceLine({ row, spanMs, open, onToggle }: { row: TraceRow; spanMs: number; open: boolean; onToggle: () => void }) {
  const { name, note } = summaryOf(row);
  const left = row.offsetMs === null ? 0 : Math.min(100, (row.offsetMs / spanMs) * 100);
  const width = row.durationMs === null ? 0 : Math.max(0.5, Math.min(100 - left, (row.durationMs / spanMs) * 100));
  const fallback = row.kind === 'model' && row.fallbackFor !== null;
  return (
    <Box data-testid="trace-row" data-kind={row.kind} style={{ borderTop: '1px solid var(--mantine-color-default-border)' }}>
      <UnstyledButton onClick={onToggle} aria-expanded={open} w="100%" px={6} py={3} style={{ display: 'block' }}>
        <Group gap="xs" wrap="nowrap">
          <Group gap={6} wrap="nowrap" w={LABEL_WIDTH} style={{ flexShrink: 0, overflow: 'hidden' }}>
            <Badge size="xs" variant="light" color={COLORS[row.kind]} style={{ flexShrink: 0 }}>
              {KIND_LABEL[row.kind]}
            </Badge>
            {fallback && (
              <Badge size="xs" color="orange" style={{ flexShrink: 0 }}>
                fallback
              </Badge>
            )}
            <Text size="xs" truncate="end" title={`${name}${note ? ` · ${note}` : ''}`}>
              {name}
              {note && (
                <Text span size="xs" c="dimmed">
                  {' '}
                  · {note}
                </Text>
              )}
            </Text>
          </Group>
          <Box style={{ flex: 1, position: 'relative', height: 12 }} aria-hidden>
            {row.offsetMs !== null &&
              (row.durationMs === null ? (
                <Box
                  style={{ position: 'absolute', left: `${left}%`, top: 1, width: 10, height: 10, marginLeft: -5, borderRadius: 5 }}
                  bg={`var(--mantine-color-${COLORS[row.kind]}-6)`}
                />
              ) : (
                <Box
                  data-testid="trace-bar"
                  style={{ position: 'absolute', left: `${left}%`, width: `${width}%`, top: 0, bottom: 0, borderRadius: 2 }}
                  bg={`var(--mantine-color-${row.kind === 'tool' && row.call.outcome === 'error' ? 'red' : COLORS[row.kind]}-${fallback ? 4 : 6})`}
                />
              ))}
          </Box>
          <Text size="xs" c="dimmed" w={DURATION_WIDTH} ta="right" style={{ flexShrink: 0 }}>
            {row.durationMs === null ? '' : formatDuration(row.durationMs)}
          </Text>
        </Group>
      </UnstyledButton>
      {open && <TraceDetails row={row} />}
    </Box>
  );
}

/** The trace id of the run's spans, to paste into an external tracer's search. */
function TraceId({ id }: { id: string }) {
  return (
    <CopyButton value={id}>
      {({ copied, copy }) => (
        <Tooltip label={copied ? 'Copied' : 'Copy the trace id for your tracer'}>
          <Group gap={4} wrap="nowrap">
            <Text size="xs" c="dimmed">
              trace
            </Text>
            <Text size="xs" ff="monospace" data-testid="trace-id">
              {id}
            </Text>
            <ActionIcon size="sm" variant="subtle" onClick={copy} aria-label="Copy trace id">
              {copied ? '✓' : '⧉'}
            </ActionIcon>
          </Group>
        </Tooltip>
      )}
    </CopyButton>
  );
}
