import { Alert, Button, Group, Modal, Stack, Text, Textarea, Tooltip } from '@mantine/core';
import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { messageOf, useClient, useDenied } from '../../api';
import { approvalKeys } from './queries';

type BulkDecision = { decision: 'approve' } | { decision: 'reject'; reason: string };

/**
 * Approves or rejects the selected tool calls, each on its own request in turn: the server's refusal of one
 * (decided elsewhere meanwhile, expired) is said with its name and leaves the others decided.
 */
function useBulkDecision(onDone: (refused: string[]) => void) {
  const client = useClient();
  const queryClient = useQueryClient();
  return useMutation({
    mutationFn: async ({ ids, d }: { ids: { id: string; name: string }[]; d: BulkDecision }) => {
      // One after another: a hundred at once would meet the tenant's rate limit.
      const refused: string[] = [];
      for (const item of ids) {
        await (d.decision === 'reject' ? client.approvals.reject(item.id, { reason: d.reason }) : client.approvals.approve(item.id)).catch(
          (err) => refused.push(`${item.name}: ${messageOf(err)}`),
        );
      }
      return refused;
    },
    onSuccess: (refused) => {
      onDone(refused);
      return queryClient.invalidateQueries({ queryKey: approvalKeys.all });
    },
  });
}

/** The inbox's bar for the selected cards: approve them all, or reject them all with one reason. */
export function BulkDecisionBar({ selected, onDecided }: { selected: { id: string; name: string }[]; onDecided: () => void }) {
  const denied = useDenied()('agents:write');
  const [refused, setRefused] = useState<string[]>([]);
  const [rejecting, setRejecting] = useState(false);
  const [reason, setReason] = useState('');
  const bulk = useBulkDecision((r) => {
    setRefused(r);
    setRejecting(false);
    setReason('');
    onDecided();
  });
  const n = selected.length;
  return (
    <Stack gap="xs">
      <Group data-testid="bulk-bar">
        <Text size="sm">{n} selected</Text>
        <Tooltip label={denied} disabled={!denied}>
          <Button
            size="xs"
            color="green"
            disabled={!!denied || n === 0}
            loading={bulk.isPending && !rejecting}
            onClick={() => bulk.mutate({ ids: selected, d: { decision: 'approve' } })}
          >
            Approve selected
          </Button>
        </Tooltip>
        <Tooltip label={denied} disabled={!denied}>
          <Button size="xs" color="red" variant="light" disabled={!!denied || n === 0 || bulk.isPending} onClick={() => setRejecting(true)}>
            Reject selected…
          </Button>
        </Tooltip>
      </Group>
      {bulk.error && <Alert color="red">{messageOf(bulk.error)}</Alert>}
      {refused.length > 0 && (
        <Alert color="red" title="Some were not decided" withCloseButton onClose={() => setRefused([])}>
          {refused.map((r) => (
            <Text key={r} size="sm">
              {r}
            </Text>
          ))}
        </Alert>
      )}
      <Modal opened={rejecting} onClose={() => setRejecting(false)} title={`Reject ${n} tool call${n === 1 ? '' : 's'}`}>
        <Stack>
          <Textarea
            label="Reason"
            description="each call’s model is told this as the tool’s result"
            value={reason}
            onChange={(e) => setReason(e.currentTarget.value)}
            autosize
            minRows={2}
          />
          <Group justify="end">
            <Button variant="default" onClick={() => setRejecting(false)}>
              Cancel
            </Button>
            <Button
              color="red"
              disabled={!reason.trim()}
              loading={bulk.isPending}
              onClick={() => bulk.mutate({ ids: selected, d: { decision: 'reject', reason: reason.trim() } })}
            >
              Reject all
            </Button>
          </Group>
        </Stack>
      </Modal>
    </Stack>
  );
}
