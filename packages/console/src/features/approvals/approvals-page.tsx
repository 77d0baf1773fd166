import { Alert, Card, Group, SegmentedControl, Stack, Text, Title } from '@mantine/core';
import { useQuery } from '@tanstack/react-query';
import { useState } from 'react';
import { messageOf, useClient } from '../../api';
import { ApprovalContext, useAgentNames } from './approval-context';
import { BulkDecisionBar } from './bulk-decision';
import { CardHead } from './card-head';
import { ApprovalCard, DecisionDialog } from './decision';
import { type Approval, decidedQuery, SHOWN, type Shown, useInbox } from './queries';

export function ApprovalsPage() {
  const inbox = useInbox();
  const [status, setStatus] = useState<Shown>('pending');
  const client = useClient();
  const decided = useQuery({ ...decidedQuery(client, status), enabled: status !== 'pending' });
  const { names, settled } = useAgentNames();
  // The cards wait for the agents' names (one request for them all), as for the inbox itself.
  const items = (settled && inbox.data?.items) || [];
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
          {inbox.data?.items.length === 0 && <Text c="dimmed">Nothing is waiting for a decision.</Text>}
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
          {settled &&
            decided.data?.map((item) => (
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
