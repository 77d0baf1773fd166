import { AgentryError } from '@agentry/client';
import { Alert, Badge, Button, Card, Code, Group, JsonInput, Modal, Stack, Text, Textarea, Title, Tooltip } from '@mantine/core';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { type Session, messageOf, useClient, useDenied, useSession } from '../api';
import { apiPath } from '../lib/api-path.js';

/** One thing waiting for a person: a task awaiting approval, or a tool call (when the server has the inbox). */
export interface Approval {
  id: string;
  kind: 'task' | 'tool_call';
  agentId: string;
  reason: string;
  createdAt: string;
  toolCall: { runId: string; name: string; arguments: unknown } | null;
  task: { id: string; name: string; description: string } | null;
}

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
      reason: t.description,
      createdAt: t.createdAt,
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

export function ApprovalsPage() {
  const client = useClient();
  const denied = useDenied()('agents:write');
  const queryClient = useQueryClient();
  const inbox = useInbox();
  const [rejecting, setRejecting] = useState<Approval | null>(null);
  const [reason, setReason] = useState('');
  const [editing, setEditing] = useState<Approval | null>(null);
  const [argsText, setArgsText] = useState('');
  const argsError = (() => {
    try {
      JSON.parse(argsText);
      return null;
    } catch (err) {
      return `not JSON: ${(err as Error).message}`;
    }
  })();
  const decide = useMutation({
    mutationFn: async ({
      item,
      decision,
      reason,
      args,
    }: {
      item: Approval;
      decision: 'approve' | 'reject';
      reason?: string;
      args?: unknown;
    }) => {
      if (inbox.data?.unified) {
        const body = decision === 'reject' ? { reason } : args === undefined ? {} : { arguments: args };
        return client.http.json('POST', apiPath`/api/v1/approvals/${item.id}/${decision}`, { body });
      }
      return client.http.json('POST', apiPath`/api/v1/tasks/${item.id}/${decision}`);
    },
    onSettled: () => queryClient.invalidateQueries({ queryKey: ['approvals'] }),
  });
  const items = inbox.data?.items ?? [];

  return (
    <Stack maw={900}>
      <Title order={2}>Approvals</Title>
      {inbox.error && <Alert color="red">{messageOf(inbox.error)}</Alert>}
      {decide.error && <Alert color="red">{messageOf(decide.error)}</Alert>}
      {inbox.data && items.length === 0 && <Text c="dimmed">Nothing is waiting for a decision.</Text>}
      {items.map((item) => (
        <Card key={item.id} withBorder data-testid="approval">
          <Stack gap="xs">
            <Group justify="space-between" wrap="wrap">
              <Group gap="xs">
                <Badge>{item.kind === 'task' ? 'task' : 'tool call'}</Badge>
                <Text fw={600}>{item.task?.name ?? item.toolCall?.name}</Text>
              </Group>
              <Text size="xs" c="dimmed">
                {new Date(item.createdAt).toLocaleString()}
              </Text>
            </Group>
            <Text size="sm">{item.reason}</Text>
            {item.toolCall && <Code block>{JSON.stringify(item.toolCall.arguments, null, 2)}</Code>}
            <Group>
              <Tooltip label={denied} disabled={!denied}>
                <Button
                  color="green"
                  disabled={!!denied}
                  loading={decide.isPending}
                  onClick={() => decide.mutate({ item, decision: 'approve' })}
                >
                  Approve
                </Button>
              </Tooltip>
              {item.toolCall && (
                <Tooltip label={denied} disabled={!denied}>
                  <Button
                    variant="light"
                    disabled={!!denied}
                    onClick={() => {
                      setArgsText(JSON.stringify(item.toolCall?.arguments ?? {}, null, 2));
                      setEditing(item);
                    }}
                  >
                    Edit arguments…
                  </Button>
                </Tooltip>
              )}
              <Tooltip label={denied} disabled={!denied}>
                <Button
                  color="red"
                  variant="light"
                  disabled={!!denied}
                  onClick={() => {
                    setReason('');
                    setRejecting(item);
                  }}
                >
                  Reject…
                </Button>
              </Tooltip>
            </Group>
          </Stack>
        </Card>
      ))}
      <Modal opened={editing !== null} onClose={() => setEditing(null)} title="Approve with edited arguments">
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
          <Group justify="end">
            <Button variant="default" onClick={() => setEditing(null)}>
              Cancel
            </Button>
            <Button
              color="green"
              disabled={argsError !== null}
              onClick={() => {
                if (editing) decide.mutate({ item: editing, decision: 'approve', args: JSON.parse(argsText) });
                setEditing(null);
              }}
            >
              Approve with these
            </Button>
          </Group>
        </Stack>
      </Modal>
      <Modal opened={rejecting !== null} onClose={() => setRejecting(null)} title="Reject">
        <Stack>
          <Textarea
            label="Reason"
            description={
              inbox.data?.unified
                ? 'a tool call’s model is told this as the tool’s result'
                : 'kept in this page only: this server records no reason for tasks'
            }
            value={reason}
            onChange={(e) => setReason(e.currentTarget.value)}
            autosize
            minRows={2}
          />
          <Group justify="end">
            <Button variant="default" onClick={() => setRejecting(null)}>
              Cancel
            </Button>
            <Button
              color="red"
              disabled={inbox.data?.unified && !reason.trim()}
              onClick={() => {
                if (rejecting) decide.mutate({ item: rejecting, decision: 'reject', reason: reason.trim() });
                setRejecting(null);
              }}
            >
              Reject
            </Button>
          </Group>
        </Stack>
      </Modal>
    </Stack>
  );
}
