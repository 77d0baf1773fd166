import type { TbacPolicy } from '@agentry/client';
import { Badge, Button, Code, Group, Table, Text } from '@mantine/core';
import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useClient } from '../../api';
import { describeConditions, whyNotHolding } from '../../lib/conditions';
import { identityKeys } from './queries';

/** The tenant's TBAC policies, each with whether its conditions hold now: edit, flip allow/deny, delete. */
export function PoliciesTable({
  policies,
  names,
  settingsDenied,
  onEdit: edit,
}: {
  policies: TbacPolicy[];
  names: Map<string, string>;
  settingsDenied: string | null;
  onEdit(policy: TbacPolicy): void;
}) {
  const client = useClient();
  const queryClient = useQueryClient();
  const changePolicy = useMutation({
    mutationFn: ({ policy, action }: { policy: TbacPolicy; action: 'flip' | 'delete' }): Promise<unknown> =>
      action === 'delete'
        ? client.identity.deletePolicy(policy.id)
        : client.identity.updatePolicy(policy.id, { effect: policy.effect === 'allow' ? 'deny' : 'allow' }),
    onSettled: () => queryClient.invalidateQueries({ queryKey: identityKeys.policies() }),
  });
  return (
    <Table.ScrollContainer minWidth={700}>
      <Table striped data-testid="policies">
        <Table.Thead>
          <Table.Tr>
            <Table.Th>Caller</Table.Th>
            <Table.Th>Callee</Table.Th>
            <Table.Th>Tool</Table.Th>
            <Table.Th>Effect</Table.Th>
            <Table.Th>Description</Table.Th>
            <Table.Th>Conditions</Table.Th>
            <Table.Th />
          </Table.Tr>
        </Table.Thead>
        <Table.Tbody>
          {policies.map((p) => (
            <Table.Tr key={p.id}>
              <Table.Td>{names.get(p.callerAgentId) ?? p.callerAgentId}</Table.Td>
              <Table.Td>{names.get(p.calleeAgentId) ?? p.calleeAgentId}</Table.Td>
              <Table.Td>
                <Code>{p.toolName}</Code>
              </Table.Td>
              <Table.Td>
                <Badge color={p.effect === 'allow' ? 'green' : 'red'}>{p.effect}</Badge>
              </Table.Td>
              <Table.Td>{p.description}</Table.Td>
              <Table.Td data-testid="policy-conditions-cell">
                {p.conditions && (
                  <Group gap={4} wrap="nowrap">
                    <Text size="xs">{describeConditions(p.conditions)}</Text>
                    <Badge size="xs" variant="light" color={whyNotHolding(p.conditions, Date.now()) ? 'gray' : 'green'}>
                      {whyNotHolding(p.conditions, Date.now()) ? 'not now' : 'holds now'}
                    </Badge>
                  </Group>
                )}
              </Table.Td>
              <Table.Td>
                <Group gap="xs" justify="end" wrap="nowrap">
                  <Button size="xs" variant="subtle" disabled={!!settingsDenied} onClick={() => edit(p)} aria-label={`Edit policy ${p.id}`}>
                    Edit
                  </Button>
                  <Button
                    size="xs"
                    variant="subtle"
                    disabled={!!settingsDenied}
                    onClick={() => changePolicy.mutate({ policy: p, action: 'flip' })}
                  >
                    Make {p.effect === 'allow' ? 'deny' : 'allow'}
                  </Button>
                  <Button
                    size="xs"
                    color="red"
                    variant="subtle"
                    disabled={!!settingsDenied}
                    onClick={() => changePolicy.mutate({ policy: p, action: 'delete' })}
                  >
                    Delete
                  </Button>
                </Group>
              </Table.Td>
            </Table.Tr>
          ))}
        </Table.Tbody>
      </Table>
    </Table.ScrollContainer>
  );
}
