import type { SkillSummary } from '@agentry/client';
import { Alert, Badge, Button, Code, Group, NumberInput, ScrollArea, Select, Stack, Table, Text, Title, Tooltip } from '@mantine/core';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { messageOf, useClient, useDenied } from '../../api';
import { FormErrorSummary } from '../../form-error-summary';
import { placeErrors } from '../../lib/form-errors.js';
import { LIMITS } from '../../lib/form-limits.js';
import { skillAgentsQuery, skillKeys } from './queries';
import { everyAgentQuery } from '../agents/queries';

/** A skill: its content, the agents it is assigned to (unassign), and assigning it to one more with a priority. */
export function SkillDetail({ skill }: { skill: SkillSummary }) {
  const client = useClient();
  const denied = useDenied()('skills:write');
  const queryClient = useQueryClient();
  const agents = useQuery(everyAgentQuery(client));
  const assigned = useQuery(skillAgentsQuery(client, skill.id));
  const [agentId, setAgentId] = useState<string | null>(null);
  const [priority, setPriority] = useState<number | string>(0);
  const assign = useMutation({
    mutationFn: () => client.skills.assign(skill.id, { agentId: agentId!, priority: Number(priority) || 0 }),
    onSettled: () => queryClient.invalidateQueries({ queryKey: skillKeys.agents(skill.id) }),
  });
  const assignErrors = placeErrors(assign.error, { agentId: 'Agent', priority: 'Priority' });
  const unassign = useMutation({
    mutationFn: (agentId: string) => client.skills.unassign(skill.id, agentId),
    onSettled: () => queryClient.invalidateQueries({ queryKey: skillKeys.agents(skill.id) }),
  });
  return (
    <Stack>
      <Group>
        <Title order={3}>{skill.name}</Title>
        <Badge variant="light">{skill.source}</Badge>
        {skill.category && <Badge variant="outline">{skill.category}</Badge>}
      </Group>
      <Text size="sm">{skill.description}</Text>
      <Text fw={600} size="sm">
        Instructions
      </Text>
      <ScrollArea.Autosize mah={320}>
        <Code block>{skill.instructions}</Code>
      </ScrollArea.Autosize>
      <Text fw={600} size="sm">
        Assigned to
      </Text>
      <Table>
        <Table.Tbody>
          {(assigned.data?.agents ?? []).map((a) => (
            <Table.Tr key={a.agentId}>
              <Table.Td>{a.agentName}</Table.Td>
              <Table.Td>priority {a.priority}</Table.Td>
              <Table.Td>
                <Tooltip label={denied} disabled={!denied}>
                  <Button size="xs" variant="subtle" color="red" disabled={!!denied} onClick={() => unassign.mutate(a.agentId)}>
                    Unassign
                  </Button>
                </Tooltip>
              </Table.Td>
            </Table.Tr>
          ))}
        </Table.Tbody>
      </Table>
      <Group align="end">
        <Select
          label="Agent"
          searchable
          data={(agents.data ?? []).map((a) => ({ value: a.id, label: a.name }))}
          value={agentId}
          onChange={setAgentId}
          error={assignErrors.fields.agentId}
        />
        <NumberInput
          label="Priority"
          value={priority}
          onChange={setPriority}
          w={110}
          min={LIMITS.assignSkill.priority.minimum}
          max={LIMITS.assignSkill.priority.maximum}
          error={assignErrors.fields.priority}
        />
        <Tooltip label={denied} disabled={!denied}>
          <Button disabled={!agentId || !!denied} onClick={() => assign.mutate()} loading={assign.isPending}>
            Assign
          </Button>
        </Tooltip>
      </Group>
      <FormErrorSummary summary={assignErrors.summary} title="Not assigned" />
      {((assign.error && !assignErrors.summary.length) || unassign.error) && (
        <Alert color="red">{messageOf(unassign.error ?? assign.error)}</Alert>
      )}
    </Stack>
  );
}
