import { Alert, Badge, SimpleGrid, Stack, Text } from '@mantine/core';
import type { ReactNode } from 'react';
import { CodeCall, isCodeCall } from '../../code-call';
import { ArgumentsDiff, JsonBlock } from './arguments-diff';
import { formatCount, formatDate, formatDuration, formatUsd, inWords } from './format';
import type { Approval, TraceRow } from './trace';

/** What an expanded row of the trace shows: everything the run recorded of that step, call, wait or event. */
export function TraceDetails({ row }: { row: TraceRow }) {
  return (
    <Stack gap="xs" p="xs" data-testid="trace-details">
      {row.kind === 'model' && <ModelDetails row={row} />}
      {row.kind === 'tool' && <ToolDetails row={row} />}
      {row.kind === 'approval' && <ApprovalDetails approval={row.approval} />}
      {row.kind === 'event' && (
        <Text size="sm" style={{ whiteSpace: 'pre-wrap', wordBreak: 'break-word' }}>
          {row.detail}
        </Text>
      )}
    </Stack>
  );
}

function Fact({ label, children }: { label: string; children: ReactNode }) {
  return (
    <Stack gap={0}>
      <Text size="xs" c="dimmed">
        {label}
      </Text>
      <Text size="sm" component="div">
        {children}
      </Text>
    </Stack>
  );
}

function ModelDetails({ row }: { row: Extract<TraceRow, { kind: 'model' }> }) {
  const { step, fallbackFor } = row;
  return (
    <>
      <SimpleGrid cols={{ base: 2, sm: 4 }} spacing="xs">
        <Fact label="Model">
          <Text ff="monospace" size="sm">
            {step.model}
          </Text>
          {fallbackFor && <Text size="xs">fallback: the agent’s {fallbackFor} did not answer</Text>}
        </Fact>
        <Fact label="Latency">{formatDuration(step.durationMs)}</Fact>
        <Fact label="Tokens">
          {formatCount(step.usage.inputTokens)} in / {formatCount(step.usage.outputTokens)} out
        </Fact>
        <Fact label="Cost">{formatUsd(step.cost)}</Fact>
        <Fact label="Finish reason">{step.finishReason}</Fact>
        <Fact label="Started">{formatDate(step.startedAt)}</Fact>
        <Fact label="Tool calls">{step.toolCallIds.length}</Fact>
      </SimpleGrid>
      {step.injected.length > 0 && (
        <Fact label="Messages injected before this step">
          {step.injected.map((m, i) => (
            // biome-ignore lint/suspicious/noArrayIndexKey: the injected messages never reorder
            <Text key={i} size="sm" style={{ whiteSpace: 'pre-wrap' }}>
              {m}
            </Text>
          ))}
        </Fact>
      )}
      {step.text && (
        <Fact label="Text">
          <Text size="sm" c="dimmed" lineClamp={12} style={{ whiteSpace: 'pre-wrap', wordBreak: 'break-word' }}>
            {step.text}
          </Text>
        </Fact>
      )}
    </>
  );
}

function ToolDetails({ row }: { row: Extract<TraceRow, { kind: 'tool' }> }) {
  const { call, approval } = row;
  const edited = approval?.decision?.arguments !== undefined;
  return (
    <>
      <SimpleGrid cols={{ base: 2, sm: 4 }} spacing="xs">
        <Fact label="Tool">
          <Text ff="monospace" size="sm">
            {call.name}
          </Text>
        </Fact>
        <Fact label="Source">{call.source ?? '—'}</Fact>
        <Fact label="Duration">{formatDuration(call.durationMs)}</Fact>
        <Fact label="Outcome">
          <Badge size="sm" color={call.outcome === 'ok' ? 'green' : call.outcome === 'error' ? 'red' : 'gray'}>
            {call.outcome}
          </Badge>{' '}
          {call.errorCode && (
            <Text span ff="monospace" size="sm" data-testid="tool-error-code">
              {call.errorCode}
            </Text>
          )}
        </Fact>
      </SimpleGrid>
      {approval && <ApprovalLine approval={approval} />}
      {edited ? (
        <ArgumentsDiff model={approval!.toolCall!.arguments} approved={approval!.decision!.arguments} />
      ) : (
        <JsonBlock label="Arguments" value={call.input} />
      )}
      {call.result !== null && isCodeCall(call.name) ? (
        <CodeCall name={call.name} input={call.input} result={call.result} />
      ) : (
        <JsonBlock label="Result" value={call.result} />
      )}
    </>
  );
}

const who = (by: { type: string; id: string | null } | null | undefined) => (by ? `${by.type}${by.id ? ` ${by.id}` : ''}` : 'the server');

/** One line on who let a call run, or why it waits. */
function ApprovalLine({ approval }: { approval: Approval }) {
  const d = approval.decision;
  return (
    <Text size="sm" data-testid="approval-line">
      {d
        ? `${approval.status === 'approved' ? 'Approved' : approval.status} by ${who(d.by)} ${formatDate(d.at)}`
        : `Waiting for a person (${approval.status})`}{' '}
      · rule: {approval.reason}
    </Text>
  );
}

function ApprovalDetails({ approval }: { approval: Approval }) {
  const d = approval.decision;
  return (
    <>
      <SimpleGrid cols={{ base: 2, sm: 4 }} spacing="xs">
        <Fact label="Tool">
          <Text ff="monospace" size="sm">
            {approval.toolCall?.name}
          </Text>
        </Fact>
        <Fact label="Rule that asked">{approval.reason}</Fact>
        <Fact label="Asked">{formatDate(approval.createdAt)}</Fact>
        {d ? (
          <Fact label={approval.status === 'approved' ? 'Approved by' : `${approval.status} by`}>
            <span data-testid="decided-by">{who(d.by)}</span> · {formatDate(d.at)}
          </Fact>
        ) : (
          <Fact label="Expires">{approval.expiresAt ? `${inWords(approval.expiresAt)} (${formatDate(approval.expiresAt)})` : 'never'}</Fact>
        )}
      </SimpleGrid>
      {d?.reason && (
        <Alert color="red" title="Rejected">
          {d.reason}
        </Alert>
      )}
      {d?.arguments !== undefined && approval.toolCall ? (
        <ArgumentsDiff model={approval.toolCall.arguments} approved={d.arguments} />
      ) : (
        approval.toolCall && <JsonBlock label="Arguments" value={approval.toolCall.arguments} />
      )}
    </>
  );
}
