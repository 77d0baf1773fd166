import type { AgentSummary } from '@agentry/client';
import { Alert, Badge, Button, Group, Menu, Modal, Pagination, Select, Stack, Table, Text, TextInput, Title, Tooltip } from '@mantine/core';
import { useDebouncedValue } from '@mantine/hooks';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useNavigate, useSearch } from '@tanstack/react-router';
import { useState } from 'react';
import { messageOf, useClient, useDenied } from '../../api';
import { AnchorLink, ButtonLink } from '../../links';
import { AGENTS_PAGE_SIZE, agentKeys, agentsPageQuery, appsQuery } from './queries';

export function AgentsPage() {
  const client = useClient();
  const denied = useDenied();
  const navigate = useNavigate({ from: '/agents' });
  const search = useSearch({ from: '/app/agents' });
  const page = search.page ?? 1;
  const [text, setText] = useState('');
  const [confirm, setConfirm] = useState<AgentSummary | null>(null);
  const queryClient = useQueryClient();

  const apps = useQuery(appsQuery(client));
  // The server searches every page (GET /api/v1/agents?q=); typing waits a moment before asking it.
  const [needle] = useDebouncedValue(text.trim().slice(0, 100), 250);
  const list = useQuery(agentsPageQuery(client, search, needle));
  const act = useMutation({
    mutationFn: async ({ action, agent }: { action: 'pause' | 'resume' | 'duplicate' | 'delete'; agent: AgentSummary }) => {
      if (action === 'pause') return client.agents.pause(agent.id);
      if (action === 'resume') return client.agents.resume(agent.id);
      if (action === 'delete') return client.agents.delete(agent.id);
      return client.agents.duplicate(agent.id, { name: `${agent.name} (copy)` });
    },
    onSettled: () => queryClient.invalidateQueries({ queryKey: agentKeys.all }),
  });

  const agents = list.data?.agents ?? [];
  const writeDenied = denied('agents:write');

  return (
    <Stack>
      <Group justify="space-between">
        <Title order={1} size="h2">
          Agents
        </Title>
        <Tooltip label={writeDenied} disabled={!writeDenied}>
          <ButtonLink to="/agents/$agentId" params={{ agentId: 'new' }} disabled={!!writeDenied}>
            New agent
          </ButtonLink>
        </Tooltip>
      </Group>
      <Group align="end">
        <TextInput
          label="Search"
          placeholder="name contains"
          maxLength={100}
          value={text}
          onChange={(e) => {
            setText(e.currentTarget.value);
            if (page !== 1) navigate({ search: { ...search, page: undefined } });
          }}
        />
        <Select
          label="Status"
          clearable
          data={['available', 'paused', 'registered']}
          value={search.status ?? null}
          onChange={(status) => navigate({ search: { ...search, status: status ?? undefined, page: undefined } })}
        />
        <Select
          label="App"
          clearable
          data={(apps.data?.apps ?? []).map((a) => ({ value: a.id, label: `${a.id} (${a.agentCount})` }))}
          value={search.appId ?? null}
          onChange={(appId) => navigate({ search: { ...search, appId: appId ?? undefined, page: undefined } })}
        />
      </Group>
      {list.error && <Alert color="red">{messageOf(list.error)}</Alert>}
      {act.error && <Alert color="red">{messageOf(act.error)}</Alert>}
      <Table.ScrollContainer minWidth={700}>
        <Table striped highlightOnHover>
          <Table.Thead>
            <Table.Tr>
              <Table.Th>Name</Table.Th>
              <Table.Th>App</Table.Th>
              <Table.Th>Model</Table.Th>
              <Table.Th>Status</Table.Th>
              <Table.Th>Created</Table.Th>
              <Table.Th />
            </Table.Tr>
          </Table.Thead>
          <Table.Tbody>
            {agents.map((agent) => (
              <Table.Tr key={agent.id}>
                <Table.Td>
                  <AnchorLink to="/agents/$agentId" params={{ agentId: agent.id }}>
                    {agent.name}
                  </AnchorLink>
                  {agent.description && (
                    <Text size="xs" c="dimmed" lineClamp={1}>
                      {agent.description}
                    </Text>
                  )}
                </Table.Td>
                <Table.Td>{agent.appId}</Table.Td>
                <Table.Td>
                  <Text size="sm" ff="monospace">
                    {agent.model}
                  </Text>
                </Table.Td>
                <Table.Td>
                  <Badge color={agent.status === 'available' ? 'green' : agent.status === 'paused' ? 'yellow' : 'gray'}>
                    {agent.status}
                  </Badge>
                </Table.Td>
                <Table.Td>{new Date(agent.createdAt).toLocaleString()}</Table.Td>
                <Table.Td>
                  <Group gap="xs" wrap="nowrap" justify="end">
                    <ButtonLink size="xs" variant="light" to="/playground" search={{ agentId: agent.id }}>
                      Chat
                    </ButtonLink>
                    <Menu position="bottom-end">
                      <Menu.Target>
                        <Button size="xs" variant="default" aria-label={`Actions for ${agent.name}`}>
                          ⋯
                        </Button>
                      </Menu.Target>
                      <Menu.Dropdown>
                        {agent.status === 'paused' ? (
                          <Menu.Item
                            disabled={!!writeDenied}
                            title={writeDenied ?? undefined}
                            onClick={() => act.mutate({ action: 'resume', agent })}
                          >
                            Resume
                          </Menu.Item>
                        ) : (
                          <Menu.Item
                            disabled={!!writeDenied}
                            title={writeDenied ?? undefined}
                            onClick={() => act.mutate({ action: 'pause', agent })}
                          >
                            Pause
                          </Menu.Item>
                        )}
                        <Menu.Item
                          disabled={!!writeDenied}
                          title={writeDenied ?? undefined}
                          onClick={() => act.mutate({ action: 'duplicate', agent })}
                        >
                          Duplicate
                        </Menu.Item>
                        <Menu.Item color="red" disabled={!!writeDenied} title={writeDenied ?? undefined} onClick={() => setConfirm(agent)}>
                          Delete…
                        </Menu.Item>
                      </Menu.Dropdown>
                    </Menu>
                  </Group>
                </Table.Td>
              </Table.Tr>
            ))}
          </Table.Tbody>
        </Table>
      </Table.ScrollContainer>
      {list.data && list.data.total === 0 && <Text c="dimmed">{needle ? 'No agent’s name contains that.' : 'No agents yet.'}</Text>}
      {list.data && list.data.total > AGENTS_PAGE_SIZE && (
        <Pagination
          total={Math.ceil(list.data.total / AGENTS_PAGE_SIZE)}
          value={page}
          onChange={(p) => navigate({ search: { ...search, page: p } })}
        />
      )}
      <Modal opened={confirm !== null} onClose={() => setConfirm(null)} title="Delete agent">
        <Stack>
          <Text>
            Delete <b>{confirm?.name}</b>? Its conversations and runs stay in the history; the agent cannot be used again.
          </Text>
          <Group justify="end">
            <Button variant="default" onClick={() => setConfirm(null)}>
              Cancel
            </Button>
            <Button
              color="red"
              onClick={() => {
                if (confirm) act.mutate({ action: 'delete', agent: confirm });
                setConfirm(null);
              }}
            >
              Delete
            </Button>
          </Group>
        </Stack>
      </Modal>
    </Stack>
  );
}
