import { Button, Card, Code, Group, Stack, Text, TextInput } from '@mantine/core';
import { useQueryClient } from '@tanstack/react-query';
import { useEffect, useState } from 'react';
import { messageOf, useClient, useDenied } from '../../api';
import type { ApprovalView } from '../../lib/turn';
import { approvalKeys } from '../approvals/queries';

/** A tool call of the answer under way that waits for a person: decided here or in the inbox; the chat goes on once it is. */
export function WaitingApproval({ approval }: { approval: ApprovalView }) {
  const client = useClient();
  const denied = useDenied()('agents:write');
  const queryClient = useQueryClient();
  const [reason, setReason] = useState('');
  const [decided, setDecided] = useState<string | null>(null);
  const [failure, setFailure] = useState<string | null>(null);
  // The navigation's badge counts it now rather than at its next poll.
  useEffect(() => {
    void queryClient.invalidateQueries({ queryKey: approvalKeys.all });
  }, [queryClient]);
  const decide = async (decision: 'approve' | 'reject') => {
    try {
      const id = approval.approvalId;
      await (decision === 'approve' ? client.approvals.approve(id) : client.approvals.reject(id, { reason: reason.trim() }));
      setDecided(decision === 'approve' ? 'approved' : 'rejected');
    } catch (err) {
      setFailure(messageOf(err));
    } finally {
      void queryClient.invalidateQueries({ queryKey: approvalKeys.all });
    }
  };
  return (
    <Card withBorder p="xs" data-testid="chat-approval">
      <Stack gap={4}>
        <Text size="sm" fw={600}>
          {approval.name} waits for approval: {approval.reason}
        </Text>
        <Code block>{JSON.stringify(approval.arguments, null, 2)}</Code>
        {failure && (
          <Text c="red" size="sm">
            {failure}
          </Text>
        )}
        {decided ? (
          <Text size="sm" c="dimmed">
            {decided}
          </Text>
        ) : (
          <Group gap="xs" align="end">
            <Button size="xs" color="green" disabled={!!denied} onClick={() => void decide('approve')}>
              Approve
            </Button>
            <TextInput
              size="xs"
              aria-label="Reason to reject"
              placeholder="reason"
              value={reason}
              onChange={(e) => setReason(e.currentTarget.value)}
              maxLength={1000}
            />
            <Button size="xs" color="red" variant="light" disabled={!!denied || !reason.trim()} onClick={() => void decide('reject')}>
              Reject
            </Button>
          </Group>
        )}
      </Stack>
    </Card>
  );
}
