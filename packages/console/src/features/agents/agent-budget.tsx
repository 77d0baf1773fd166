import { Alert, Button, Group, NumberInput, Stack, Text, Title } from '@mantine/core';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { messageOf, useClient } from '../../api';
import { agentKeys, agentBudgetQuery } from './queries';

/** The agent's monthly budget and this month's spend; `denied` says why it cannot be set. */
export function AgentBudget({ agentId, denied }: { agentId: string; denied: string | null }) {
  const client = useClient();
  const queryClient = useQueryClient();
  const budget = useQuery({ ...agentBudgetQuery(client, agentId), retry: false });
  const [budgetUsd, setBudgetUsd] = useState<number | string>('');
  const saveBudget = useMutation({
    mutationFn: () => client.agents.setBudget(agentId, { monthlyBudgetUsd: budgetUsd === '' ? null : Number(budgetUsd) }),
    onSuccess: () => queryClient.invalidateQueries({ queryKey: agentKeys.budget(agentId) }),
  });
  if (!budget.data) return null;
  return (
    <Stack gap="xs">
      <Title order={4}>Budget</Title>
      <Text size="sm">
        {budget.data.month}: spent ${budget.data.spentUsd.toFixed(4)}
        {budget.data.monthlyBudgetUsd !== null
          ? ` of $${budget.data.monthlyBudgetUsd} (left $${Math.max(0, budget.data.monthlyBudgetUsd - budget.data.spentUsd).toFixed(4)})`
          : ', no monthly budget'}
      </Text>
      <Group align="end">
        <NumberInput label="Monthly budget (USD, empty: none)" min={0} decimalScale={4} value={budgetUsd} onChange={setBudgetUsd} />
        <Button variant="default" onClick={() => saveBudget.mutate()} disabled={!!denied} loading={saveBudget.isPending}>
          Set budget
        </Button>
      </Group>
      {saveBudget.error && <Alert color="red">{messageOf(saveBudget.error)}</Alert>}
    </Stack>
  );
}
