import { AgentryError } from '@agentry/client';
import {
  Alert,
  Badge,
  Button,
  Card,
  Checkbox,
  Group,
  JsonInput,
  Modal,
  SegmentedControl,
  Stack,
  Text,
  Textarea,
  Title,
  Tooltip,
} from '@mantine/core';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { type Session, messageOf, useClient, useDenied, useSession } from '../api';
import { BulkDecisionBar } from '../features/approvals/bulk-decision';
import { ApprovalContext, type ApprovalItem, useAgentNames } from '../features/approvals/approval-context';
import { apiPath } from '../lib/api-path.js';

/** One thing waiting for a person, or decided: a task awaiting approval, or a tool call (when the server has the inbox). */
export type Approval = ApprovalItem;

interface PendingTask {
  id: string;
  name: string;
  description: string;
  agentId: string;
  createdAt: string;
}

/**
 * The inbox: GET /api/v1/approvals (tool calls and tasks) where the server has it, else the tasks
 * awaiting approval (GET /api/v1/tasks/pending-approval), which every version has.
 */
async function fetchInbox(client: Session['client']): Promise<{ items: Approval[]; unified: boolean }> {
  try {
    const page = await client.http.json<{ approvals: Approval[] }>('GET', '/api/v1/approvals', {
      query: { status: 'pending', limit: 100 },
    });
    return { items: page.approvals, unified: true };
  } catch (err) {
    if (!(err instanceof AgentryError && err.status === 404)) throw err;
  }
  const page = await client.http.json<{ tasks: PendingTask[] }>('GET', '/api/v1/tasks/pending-approval', { query: { limit: 100 } });
  return {
    unified: false,
    items: page.tasks.map((t) => ({
      id: t.id,
      kind: 'task',
      agentId: t.agentId,
      status: 'pending',
      reason: t.description,
      createdAt: t.createdAt,
      expiresAt: null,
      decision: null,
      toolCall: null,
      task: { id: t.id, name: t.name, description: t.description },
    })),
  };
}

export function useInbox() {
  const { client, me } = useSession();
  return useQuery({
    queryKey: ['approvals', 'pending'],
    enabled: me.credential.permissions.includes('agents:read'),
    refetchInterval: 10_000,
    queryFn: () => fetchInbox(client),
  });
}

const SHOWN = ['pending', 'approved', 'rejected', 'expired'] as const;
type Shown = (typeof SHOWN)[number];

/** Decided tool calls, newest first (GET /api/v1/approvals?status=): who decided what, and when. */
function useDecided(status: Shown) {
  const client = useClient();
  return useQuery({
    queryKey: ['approvals', 'decided', status],
    enabled: status !== 'pending',
    queryFn: async () =>
      (await client.http.json<{ approvals: Approval[] }>('GET', '/api/v1/approvals', { query: { status, kind: 'tool_call', limit: 100 } }))
        .approvals,
  });
}

export function ApprovalsPage() {
  const inbox = useInbox();
  const [status, setStatus] = useState<Shown>('pending');
  const decided = useDecided(status);
  const names = useAgentNames();
  const items = inbox.data?.items ?? [];
  const unified = inbox.data?.unified ?? false;
  // The open dialog holds its item itself: a refresh that drops the item (decided elsewhere) leaves the
  // dialog, what was typed and the server's answer in place until the person closes it.
  const [dialog, setDialog] = useState<{ kind: 'reject' | 'edit'; item: Approval } | null>(null);
  // Tool calls ticked for a decision in bulk; only those still in the inbox count.
  const [ticked, setTicked] = useState<ReadonlySet<string>>(new Set());
  const selected = items.filter((i) => i.toolCall && ticked.has(i.id)).map((i) => ({ id: i.id, name: i.toolCall!.name }));
  const tick = (id: string, on: boolean) =>
    setTicked((prev) => {
      const next = new Set(prev);
      if (on) next.add(id);
      else next.delete(id);
      return next;
    });

  return (
    <Stack maw={900}>
      <Group justify="space-between">
        <Title order={1} size="h2">
          Approvals
        </Title>
        {unified && <SegmentedControl size="xs" data={[...SHOWN]} value={status} onChange={(v) => setStatus(v as Shown)} />}
      </Group>
      {status === 'pending' ? (
        <>
          {inbox.error && <Alert color="red">{messageOf(inbox.error)}</Alert>}
          {inbox.data && items.length === 0 && <Text c="dimmed">Nothing is waiting for a decision.</Text>}
          {unified && items.some((i) => i.toolCall) && <BulkDecisionBar selected={selected} onDecided={() => setTicked(new Set())} />}
          {items.map((item) => (
            <ApprovalCard
              key={item.id}
              item={item}
              agentName={names.get(item.agentId)}
              unified={unified}
              onDialog={(kind) => setDialog({ kind, item })}
              ticked={unified && item.toolCall ? { on: ticked.has(item.id), set: (on) => tick(item.id, on) } : undefined}
            />
          ))}
        </>
      ) : (
        <>
          {decided.error && <Alert color="red">{messageOf(decided.error)}</Alert>}
          {decided.data?.length === 0 && <Text c="dimmed">No {status} tool calls.</Text>}
          {decided.data?.map((item) => (
            <Card key={item.id} withBorder data-testid="decided-approval">
              <Stack gap="xs">
                <CardHead item={item} />
                <ApprovalContext item={item} agentName={names.get(item.agentId)} />
              </Stack>
            </Card>
          ))}
        </>
      )}
      {dialog && <DecisionDialog {...dialog} unified={unified} onClose={() => setDialog(null)} />}
    </Stack>
  );
}

function CardHead({ item, ticked }: { item: Approval; ticked?: { on: boolean; set: (on: boolean) => void } }) {
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

type Decision = { decision: 'approve'; args?: unknown } | { decision: 'reject'; reason: string };

/** A decision on one item, sent to the server; the inbox is read again once it is answered. */
function useDecision(item: Approval, unified: boolean, onDecided?: () => void) {
  const client = useClient();
  const queryClient = useQueryClient();
  return useMutation({
    mutationFn: async (d: Decision) => {
      if (unified) {
        const body = d.decision === 'reject' ? { reason: d.reason } : d.args === undefined ? {} : { arguments: d.args };
        return client.http.json('POST', apiPath`/api/v1/approvals/${item.id}/${d.decision}`, { body });
      }
      return client.http.json('POST', apiPath`/api/v1/tasks/${item.id}/${d.decision}`);
    },
    onSuccess: () => {
      onDecided?.();
      return queryClient.invalidateQueries({ queryKey: ['approvals'] });
    },
  });
}

/** One item. Its Approve has its own request state: a decision under way holds this card only. */
function ApprovalCard({
  item,
  agentName,
  unified,
  onDialog,
  ticked,
}: {
  item: Approval;
  agentName: string | undefined;
  unified: boolean;
  onDialog: (kind: 'reject' | 'edit') => void;
  ticked?: { on: boolean; set: (on: boolean) => void };
}) {
  const denied = useDenied()('agents:write');
  const approve = useDecision(item, unified);

  return (
    <Card withBorder data-testid="approval">
      <Stack gap="xs">
        <CardHead item={item} ticked={ticked} />
        {item.toolCall ? <ApprovalContext item={item} agentName={agentName} /> : <Text size="sm">{item.reason}</Text>}
        {approve.error && <Alert color="red">{messageOf(approve.error)}</Alert>}
        <Group>
          <Tooltip label={denied} disabled={!denied}>
            <Button color="green" disabled={!!denied} loading={approve.isPending} onClick={() => approve.mutate({ decision: 'approve' })}>
              Approve
            </Button>
          </Tooltip>
          {item.toolCall && (
            <Tooltip label={denied} disabled={!denied}>
              <Button variant="light" disabled={!!denied || approve.isPending} onClick={() => onDialog('edit')}>
                Edit arguments…
              </Button>
            </Tooltip>
          )}
          <Tooltip label={denied} disabled={!denied}>
            <Button color="red" variant="light" disabled={!!denied || approve.isPending} onClick={() => onDialog('reject')}>
              Reject…
            </Button>
          </Tooltip>
        </Group>
      </Stack>
    </Card>
  );
}

/**
 * Rejecting with a reason, or approving with edited arguments: the dialog closes once the server has
 * taken the decision; a refusal (decided elsewhere meanwhile, arguments the tool refuses) is shown in
 * it, with what was typed kept.
 */
function DecisionDialog({
  kind,
  item,
  unified,
  onClose,
}: {
  kind: 'reject' | 'edit';
  item: Approval;
  unified: boolean;
  onClose: () => void;
}) {
  const queryClient = useQueryClient();
  const decide = useDecision(item, unified, onClose);
  const [reason, setReason] = useState('');
  const [argsText, setArgsText] = useState(() => JSON.stringify(item.toolCall?.arguments ?? {}, null, 2));
  const argsError = (() => {
    try {
      JSON.parse(argsText);
      return null;
    } catch (err) {
      return `not JSON: ${(err as Error).message}`;
    }
  })();
  const close = () => {
    onClose();
    // A refusal may mean the item was decided elsewhere: the inbox is read again.
    if (decide.isError) void queryClient.invalidateQueries({ queryKey: ['approvals'] });
  };

  if (kind === 'edit') {
    return (
      <Modal opened onClose={close} title="Approve with edited arguments">
        <Stack>
          <JsonInput
            label="Arguments"
            description="the tool runs with these instead of the model’s; its own schema checks them"
            value={argsText}
            onChange={setArgsText}
            error={argsError}
            autosize
            minRows={4}
            maxLength={100_000}
            data-testid="approval-arguments"
          />
          {decide.error && <Alert color="red">{messageOf(decide.error)}</Alert>}
          <Group justify="end">
            <Button variant="default" onClick={close}>
              Cancel
            </Button>
            <Button
              color="green"
              disabled={argsError !== null}
              loading={decide.isPending}
              onClick={() => decide.mutate({ decision: 'approve', args: JSON.parse(argsText) })}
            >
              Approve with these
            </Button>
          </Group>
        </Stack>
      </Modal>
    );
  }
  return (
    <Modal opened onClose={close} title="Reject">
      <Stack>
        <Textarea
          label="Reason"
          description={
            unified
              ? 'a tool call’s model is told this as the tool’s result'
              : 'kept in this page only: this server records no reason for tasks'
          }
          value={reason}
          onChange={(e) => setReason(e.currentTarget.value)}
          autosize
          minRows={2}
        />
        {decide.error && <Alert color="red">{messageOf(decide.error)}</Alert>}
        <Group justify="end">
          <Button variant="default" onClick={close}>
            Cancel
          </Button>
          <Button
            color="red"
            disabled={unified && !reason.trim()}
            loading={decide.isPending}
            onClick={() => decide.mutate({ decision: 'reject', reason: reason.trim() })}
          >
            Reject
          </Button>
        </Group>
      </Stack>
    </Modal>
  );
}
