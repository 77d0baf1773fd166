import { Alert, Code, Group, Stack, Text } from '@mantine/core';
import { useQuery } from '@tanstack/react-query';
import { useClient } from '../../api';
import { AnchorLink } from '../../links';
import { ArgumentsDiff } from '../runs/arguments-diff';
import { formatDate, inWords } from '../runs/format';
import { type Approval, quotedRunQuery } from './queries';
import { everyAgentQuery } from '../agents/queries';

/**
 * The tenant's agents by id, for the cards' names (one request for the whole inbox); `settled` once
 * the list has answered, so that cards never show an agent's id for a moment before its name.
 */
export function useAgentNames(): { names: Map<string, string>; settled: boolean } {
  const client = useClient();
  const agents = useQuery(everyAgentQuery(client));
  return { names: new Map((agents.data ?? []).map((a) => [a.id, a.name])), settled: !agents.isPending };
}

const who = (by: { type: string; id: string | null } | null) => (by ? `${by.type}${by.id ? ` ${by.id}` : ''}` : 'the server');

/**
 * What a person needs to decide a tool call: whose agent, which run, what the user asked and what the
 * model said before the call, the arguments (what an approver changed, once decided), the rule that
 * asked, and when it expires; a decided one says who decided and when.
 */
export function ApprovalContext({ item, agentName }: { item: Approval; agentName: string | undefined }) {
  const call = item.toolCall;
  const decision = item.decision;
  return (
    <Stack gap={6}>
      <Group gap="xs" wrap="wrap">
        <Text size="sm">
          agent <b data-testid="approval-agent">{agentName ?? item.agentId}</b>
        </Text>
        {call && (
          <AnchorLink to="/runs/$runId" params={{ runId: call.runId }} size="sm" data-testid="approval-run">
            run {call.runId.slice(-12)}
          </AnchorLink>
        )}
        {item.status === 'pending' && item.expiresAt && (
          <Text size="sm" c="dimmed" title={formatDate(item.expiresAt)} data-testid="approval-expiry">
            expires {inWords(item.expiresAt)}
          </Text>
        )}
      </Group>
      <Text size="sm">
        <Text span c="dimmed" size="sm">
          rule:{' '}
        </Text>
        {item.reason}
      </Text>
      {call && <Excerpt runId={call.runId} callId={call.id} />}
      {call &&
        (decision?.arguments !== undefined ? (
          <ArgumentsDiff model={call.arguments} approved={decision.arguments} />
        ) : (
          <Code block>{JSON.stringify(call.arguments, null, 2)}</Code>
        ))}
      {decision && (
        <Text size="sm" data-testid="approval-decision">
          {item.status} by {who(decision.by)} {formatDate(decision.at)}
          {decision.reason ? `: ${decision.reason}` : ''}
        </Text>
      )}
    </Stack>
  );
}

/** The turn that led to the call: the user's message and what the model said in the step that asked for it. */
function Excerpt({ runId, callId }: { runId: string; callId: string }) {
  const client = useClient();
  const run = useQuery(quotedRunQuery(client, runId));
  if (!run.data) return null;
  const said = run.data.steps.find((s) => s.toolCallIds.includes(callId))?.text.trim();
  return (
    <Alert variant="light" color="gray" p="xs" data-testid="approval-excerpt">
      <Stack gap={4}>
        <Text size="sm" lineClamp={4} style={{ whiteSpace: 'pre-wrap', wordBreak: 'break-word' }}>
          <Text span fw={600} size="sm">
            User:{' '}
          </Text>
          {run.data.input}
        </Text>
        {said && (
          <Text size="sm" lineClamp={4} style={{ whiteSpace: 'pre-wrap', wordBreak: 'break-word' }}>
            <Text span fw={600} size="sm">
              Assistant:{' '}
            </Text>
            {said}
          </Text>
        )}
      </Stack>
    </Alert>
  );
}
