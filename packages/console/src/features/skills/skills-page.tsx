import { Badge, Button, Card, SimpleGrid, Stack, Table, Tabs, Text, Title } from '@mantine/core';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { useClient, useDenied } from '../../api';
import { ConnectorRequests } from './connector-requests';
import { ImportZone } from './import-zone';
import { skillKeys, skillStoreQuery, skillsQuery } from './queries';
import { SkillDetail } from './skill-detail';

export function SkillsPage() {
  const client = useClient();
  const denied = useDenied()('skills:write');
  const queryClient = useQueryClient();
  const skills = useQuery(skillsQuery(client));
  const store = useQuery(skillStoreQuery(client));
  const [selected, setSelected] = useState<string | null>(null);
  const acquire = useMutation({
    mutationFn: (id: string) => client.skills.acquire(id),
    onSettled: () => queryClient.invalidateQueries({ queryKey: skillKeys.all }),
  });
  const skill = skills.data?.find((s) => s.id === selected);

  return (
    <Stack>
      <Title order={1} size="h2">
        Skills
      </Title>
      <Tabs defaultValue="mine">
        <Tabs.List>
          <Tabs.Tab value="mine">Skills</Tabs.Tab>
          <Tabs.Tab value="store">Store</Tabs.Tab>
          <Tabs.Tab value="connectors">Connectors</Tabs.Tab>
        </Tabs.List>
        <Tabs.Panel value="mine" pt="md">
          <SimpleGrid cols={{ base: 1, md: 2 }}>
            <Stack>
              <ImportZone onImported={setSelected} />
              <Table highlightOnHover>
                <Table.Tbody>
                  {(skills.data ?? []).map((s) => (
                    <Table.Tr
                      key={s.id}
                      onClick={() => setSelected(s.id)}
                      style={{ cursor: 'pointer' }}
                      bg={s.id === selected ? 'var(--mantine-color-indigo-light)' : undefined}
                    >
                      <Table.Td>
                        <Button variant="subtle" size="compact-sm" onClick={() => setSelected(s.id)}>
                          {s.name}
                        </Button>
                      </Table.Td>
                      <Table.Td>
                        <Text size="sm" lineClamp={1}>
                          {s.description}
                        </Text>
                      </Table.Td>
                      <Table.Td>
                        <Badge variant="light">{s.status}</Badge>
                      </Table.Td>
                    </Table.Tr>
                  ))}
                </Table.Tbody>
              </Table>
              {skills.data?.length === 0 && <Text c="dimmed">No skills yet: import one, or take one from the store.</Text>}
            </Stack>
            <Card withBorder>
              {skill ? <SkillDetail skill={skill} /> : <Text c="dimmed">Choose a skill to see its content and assignments.</Text>}
            </Card>
          </SimpleGrid>
        </Tabs.Panel>
        <Tabs.Panel value="store" pt="md">
          <SimpleGrid cols={{ base: 1, sm: 2, lg: 3 }}>
            {(store.data?.skills ?? []).map((s) => (
              <Card key={s.id} withBorder>
                <Text fw={600}>{s.name}</Text>
                <Text size="sm" c="dimmed" lineClamp={3}>
                  {s.description}
                </Text>
                <Button
                  mt="sm"
                  size="xs"
                  variant="light"
                  disabled={!!denied || s.acquired}
                  title={denied ?? undefined}
                  onClick={() => acquire.mutate(s.id)}
                >
                  {s.acquired ? 'Acquired' : 'Acquire'}
                </Button>
              </Card>
            ))}
          </SimpleGrid>
        </Tabs.Panel>
        <Tabs.Panel value="connectors" pt="md">
          <ConnectorRequests />
        </Tabs.Panel>
      </Tabs>
    </Stack>
  );
}
