import { Alert, Group, SegmentedControl, Select, Stack, Title, Tooltip } from '@mantine/core';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { useClient, useDenied } from '../../api';
import { AgentIdentity } from './agent-identity';
import { DecisionTester } from './decision-tester';
import { PoliciesTable } from './policies-table';
import { PolicyForm, usePolicyForm } from './policy-form';
import { identityKeys, policiesQuery, tbacModeQuery } from './queries';
import { everyAgentQuery } from '../agents/queries';

export function IdentityPage() {
  const client = useClient();
  const deny = useDenied();
  const settingsDenied = deny('settings:write');
  const queryClient = useQueryClient();
  const agents = useQuery(everyAgentQuery(client));
  const agentOptions = (agents.data ?? []).map((a) => ({ value: a.id, label: a.name }));
  const names = new Map(agentOptions.map((a) => [a.value, a.label]));
  const [agentId, setAgentId] = useState<string | null>(null);

  const mode = useQuery({ ...tbacModeQuery(client), enabled: !deny('settings:read') });
  const setMode = useMutation({
    mutationFn: (m: 'audit' | 'enforce') => client.identity.setMode({ mode: m }),
    onSettled: () => queryClient.invalidateQueries({ queryKey: identityKeys.mode() }),
  });
  const policies = useQuery({ ...policiesQuery(client), enabled: !deny('settings:read') });
  const policyForm = usePolicyForm();

  return (
    <Stack maw={1100}>
      <Title order={1} size="h2">
        Identity
      </Title>
      <Select label="Agent" searchable data={agentOptions} value={agentId} onChange={setAgentId} placeholder="Choose an agent" maw={400} />
      {agentId && <AgentIdentity agentId={agentId} />}

      <Group justify="space-between" mt="lg">
        <Title order={3}>TBAC policies</Title>
        {mode.data && (
          <Tooltip label={settingsDenied} disabled={!settingsDenied}>
            <SegmentedControl
              aria-label="Mode when no policy matches"
              disabled={!!settingsDenied}
              value={mode.data.mode}
              onChange={(m) => setMode.mutate(m as 'audit' | 'enforce')}
              data={[
                { value: 'audit', label: 'audit (allow, record)' },
                { value: 'enforce', label: 'enforce (deny)' },
              ]}
            />
          </Tooltip>
        )}
      </Group>
      {deny('settings:read') && <Alert color="gray">{deny('settings:read')}: policies are not shown.</Alert>}
      <PoliciesTable policies={policies.data ?? []} names={names} settingsDenied={settingsDenied} onEdit={policyForm.edit} />
      <PolicyForm form={policyForm} agentOptions={agentOptions} settingsDenied={settingsDenied} />
      <DecisionTester agentOptions={agentOptions} policies={policies.data ?? []} />
    </Stack>
  );
}
