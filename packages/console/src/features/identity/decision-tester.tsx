import type { TbacPolicy } from '@agentry/client';
import { Alert, Button, Card, Code, Group, Select, Stack, Text, TextInput, Tooltip } from '@mantine/core';
import { useMutation } from '@tanstack/react-query';
import { useState } from 'react';
import { messageOf, useClient, useDenied } from '../../api';
import { candidatePolicies, describeConditions, whyNotHolding } from '../../lib/conditions';
import { type Decision, testDecision } from './decision';

/** Why the decision came out as it did: the policies that could decide, and whether their conditions held. */
function DecisionConditions({
  policies,
  decision,
  test,
}: {
  policies: TbacPolicy[];
  decision: Decision;
  test: { caller: string; callee: string; tool: string };
}) {
  const candidates = candidatePolicies(policies, test.caller, test.callee, test.tool);
  if (!candidates.length) return <Text size="sm">No policy names this caller, callee and tool: the tenant's mode decides.</Text>;
  return (
    <Stack gap={2} mt={4} data-testid="decision-conditions">
      <Text size="sm">Policies read at {new Date(decision.at).toISOString().slice(11, 16)} UTC:</Text>
      {candidates.map((p) => {
        const why = whyNotHolding(p.conditions, decision.at);
        return (
          <Text size="sm" key={p.id}>
            {p.effect} policy {p.id.slice(0, 8)}… ({p.toolName}
            {p.conditions ? `; ${describeConditions(p.conditions)}` : ''}):{' '}
            {why ? `does not apply: ${why}` : p.id === decision.policyId ? 'its conditions hold, it decided' : 'its conditions hold'}
          </Text>
        );
      })}
    </Stack>
  );
}

/** "Would this be allowed?": a caller, a callee and a tool, decided as a delegation would be. */
export function DecisionTester({ agentOptions, policies }: { agentOptions: { value: string; label: string }[]; policies: TbacPolicy[] }) {
  const client = useClient();
  const deny = useDenied();
  const [test, setTest] = useState({ caller: '', callee: '', tool: '' });
  // The request travels with the mutation: what the answer explains is what was asked, not the inputs now.
  const decide = useMutation({ mutationFn: (asked: typeof test) => testDecision(client, asked.caller, asked.callee, asked.tool) });

  return (
    <Card withBorder>
      <form
        onSubmit={(e) => {
          e.preventDefault();
          decide.mutate({ ...test });
        }}
      >
        <Text fw={600}>Would this be allowed?</Text>
        <Text size="sm" c="dimmed" mb="xs">
          Issues the caller an SVID, exchanges it for a delegation token to the callee with this tool in scope, and asks authorize.
        </Text>
        <Group align="end" grow>
          <Select
            label="Caller agent"
            data={agentOptions}
            value={test.caller || null}
            onChange={(v) => setTest({ ...test, caller: v ?? '' })}
          />
          <Select
            label="Callee agent"
            data={agentOptions}
            value={test.callee || null}
            onChange={(v) => setTest({ ...test, callee: v ?? '' })}
          />
          <TextInput label="Tool" value={test.tool} onChange={(e) => setTest({ ...test, tool: e.currentTarget.value })} />
        </Group>
        <Tooltip label={deny('agents:write')} disabled={!deny('agents:write')}>
          <Button
            type="submit"
            mt="sm"
            disabled={!test.caller || !test.callee || !test.tool || !!deny('agents:write')}
            loading={decide.isPending}
          >
            Test decision
          </Button>
        </Tooltip>
        {decide.error && (
          <Alert color="red" mt="xs">
            {messageOf(decide.error)}
          </Alert>
        )}
        {decide.data && (
          <Alert
            mt="sm"
            color={decide.data.allowed ? 'green' : 'red'}
            title={decide.data.allowed ? 'Allowed' : 'Denied'}
            data-testid="decision"
          >
            reason <Code>{decide.data.reason}</Code>
            {decide.data.policyId && <> · policy {decide.data.policyId}</>}
            {decide.data.detail && <> · {decide.data.detail}</>}
            <DecisionConditions policies={policies} decision={decide.data} test={decide.variables ?? test} />
          </Alert>
        )}
      </form>
    </Card>
  );
}
