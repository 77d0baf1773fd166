import { Alert, Button, Card, Group, JsonInput, Modal, Stack, Text, Textarea, Tooltip } from '@mantine/core';
import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { messageOf, useClient, useDenied } from '../../api';
import { ApprovalContext } from './approval-context';
import { CardHead } from './card-head';
import { type Approval, approvalKeys } from './queries';

type Decision = { decision: 'approve'; args?: unknown } | { decision: 'reject'; reason: string };

/** A decision on one item, sent to the server; the inbox is read again once it is answered. */
function useDecision(item: Approval, unified: boolean, onDecided?: () => void) {
  const client = useClient();
  const queryClient = useQueryClient();
  return useMutation({
    mutationFn: async (d: Decision): Promise<unknown> => {
      if (!unified) return d.decision === 'approve' ? client.tasks.approve(item.id) : client.tasks.reject(item.id);
      if (d.decision === 'reject') return client.approvals.reject(item.id, { reason: d.reason });
      return client.approvals.approve(item.id, d.args === undefined ? {} : { arguments: d.args as Record<string, unknown> });
    },
    onSuccess: () => {
      onDecided?.();
      return queryClient.invalidateQueries({ queryKey: approvalKeys.all });
    },
  });
}

/** One item. Its Approve has its own request state: a decision under way holds this card only. */
export function ApprovalCard({
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
export function DecisionDialog({
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
    if (decide.isError) void queryClient.invalidateQueries({ queryKey: approvalKeys.all });
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
