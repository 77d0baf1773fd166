import type { SkillSummary } from '@agentry/client';
import {
  Alert,
  Badge,
  Button,
  Card,
  Code,
  Group,
  NumberInput,
  Paper,
  ScrollArea,
  Select,
  SimpleGrid,
  Stack,
  Table,
  Tabs,
  Text,
  Title,
  Tooltip,
} from '@mantine/core';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { type DragEvent, useRef, useState } from 'react';
import { messageOf, useClient, useDenied } from '../api';
import { FormErrorSummary } from '../form-error-summary';
import { placeErrors } from '../lib/form-errors.js';
import { LIMITS } from '../lib/form-limits.js';
import { apiBaseUrl, loadCredential } from '../lib/session';
import { apiPath } from '../lib/api-path.js';

/**
 * A dropped or chosen file as POST /api/skills/import takes it: a SKILL.md as text/markdown, an
 * archive (zip, tar, tar.gz) as multipart. The SDK has no multipart call, so the archive goes through
 * fetch with the same credential.
 */
async function importFile(client: ReturnType<typeof useClient>, file: File) {
  if (/\.md$/i.test(file.name)) {
    const response = await client.http.send('POST', '/api/skills/import', {
      headers: { 'content-type': 'text/markdown' },
      rawBody: await file.text(),
    });
    return response.json();
  }
  const form = new FormData();
  form.append('file', file, file.name);
  const response = await fetch(`${apiBaseUrl()}/api/skills/import`, {
    method: 'POST',
    headers: { authorization: `Bearer ${loadCredential()}` },
    body: form,
  });
  const body = await response.json();
  if (!response.ok) throw new Error(body.detail ?? `import failed (${response.status})`);
  return body;
}

function Skill({ skill }: { skill: SkillSummary }) {
  const client = useClient();
  const denied = useDenied()('skills:write');
  const agents = useQuery({ queryKey: ['agents', 'all'], queryFn: () => client.agents.list({ limit: 100 }).toArray() });
  const assigned = useQuery({
    queryKey: ['skills', skill.id, 'agents'],
    queryFn: () =>
      client.http.json<{ agents: { agentId: string; agentName: string; priority: number; enabled: boolean }[] }>(
        'GET',
        apiPath`/api/skills/${skill.id}/agents`,
      ),
  });
  const [agentId, setAgentId] = useState<string | null>(null);
  const [priority, setPriority] = useState<number | string>(0);
  const assign = useMutation({
    mutationFn: () => client.skills.assign(skill.id, { agentId: agentId!, priority: Number(priority) || 0 }),
    onSettled: () => assigned.refetch(),
  });
  const assignErrors = placeErrors(assign.error, { agentId: 'Agent', priority: 'Priority' });
  const unassign = useMutation({
    mutationFn: (id: string) => client.http.json('DELETE', apiPath`/api/skills/${skill.id}/unassign/${id}`),
    onSettled: () => assigned.refetch(),
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

/** A skill's fields as the import's errors name them (the SKILL.md front matter and body). */
const SKILL_FIELDS: Record<string, string> = {
  name: 'Name',
  description: 'Description',
  instructions: 'Instructions',
  category: 'Category',
};

export function SkillsPage() {
  const client = useClient();
  const denied = useDenied()('skills:write');
  const queryClient = useQueryClient();
  const skills = useQuery({ queryKey: ['skills'], queryFn: () => client.skills.list({ limit: 100 }).toArray() });
  const store = useQuery({
    queryKey: ['skills', 'store'],
    queryFn: () =>
      client.http.json<{ skills: { id: string; name: string; description: string; acquired?: boolean }[] }>('GET', '/api/skills/store'),
  });
  const connectors = useQuery({
    queryKey: ['connectors'],
    queryFn: () =>
      client.http.json<{ connectors: { id: string; name: string; category: string; description: string; connected: boolean }[] }>(
        'GET',
        '/api/v1/connectors',
      ),
  });
  const requests = useQuery({
    queryKey: ['connectors', 'requests'],
    queryFn: () =>
      client.http.json<{
        requests: { id: string; agentId: string; connectorId: string; reason: string; status: string; createdAt: string }[];
      }>('GET', '/api/v1/connectors/requests'),
  });
  const [selected, setSelected] = useState<string | null>(null);
  const [dragging, setDragging] = useState(false);
  const fileInput = useRef<HTMLInputElement>(null);
  const upload = useMutation({
    mutationFn: (file: File) => importFile(client, file),
    onSuccess: (skill: { id: string }) => {
      setSelected(skill.id);
      queryClient.invalidateQueries({ queryKey: ['skills'] });
    },
  });
  const acquire = useMutation({
    mutationFn: (id: string) => client.http.json('POST', apiPath`/api/skills/store/${id}/acquire`),
    onSettled: () => queryClient.invalidateQueries({ queryKey: ['skills'] }),
  });
  const onDrop = (e: DragEvent) => {
    e.preventDefault();
    setDragging(false);
    const file = e.dataTransfer.files[0];
    if (file && !denied) upload.mutate(file);
  };
  const skill = skills.data?.find((s) => s.id === selected);
  const uploadErrors = placeErrors(upload.error, SKILL_FIELDS);

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
              <Paper
                withBorder
                p="lg"
                style={{ borderStyle: 'dashed', opacity: denied ? 0.5 : 1 }}
                bg={dragging ? 'var(--mantine-color-indigo-light)' : undefined}
                onDragOver={(e) => {
                  e.preventDefault();
                  setDragging(true);
                }}
                onDragLeave={() => setDragging(false)}
                onDrop={onDrop}
              >
                <Stack align="center" gap="xs">
                  <Text size="sm">Drop a SKILL.md, a zip or a tar here to import it</Text>
                  {denied && (
                    <Text size="xs" c="dimmed">
                      Importing is off: {denied}
                    </Text>
                  )}
                  <input
                    ref={fileInput}
                    type="file"
                    hidden
                    accept=".md,.zip,.tar,.tgz,.gz"
                    onChange={(e) => {
                      const file = e.currentTarget.files?.[0];
                      if (file) upload.mutate(file);
                    }}
                  />
                  <Tooltip label={denied} disabled={!denied}>
                    <Button variant="light" disabled={!!denied} onClick={() => fileInput.current?.click()} loading={upload.isPending}>
                      Choose a file
                    </Button>
                  </Tooltip>
                </Stack>
              </Paper>
              <FormErrorSummary summary={uploadErrors.summary} title="Not imported" />
              {upload.error && !uploadErrors.summary.length && <Alert color="red">{messageOf(upload.error)}</Alert>}
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
              {skill ? <Skill skill={skill} /> : <Text c="dimmed">Choose a skill to see its content and assignments.</Text>}
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
          <Stack>
            <Table>
              <Table.Tbody>
                {(connectors.data?.connectors ?? []).map((c) => (
                  <Table.Tr key={c.id}>
                    <Table.Td>{c.name}</Table.Td>
                    <Table.Td>{c.category}</Table.Td>
                    <Table.Td>
                      <Badge color={c.connected ? 'green' : 'gray'}>{c.connected ? 'connected' : 'not connected'}</Badge>
                    </Table.Td>
                  </Table.Tr>
                ))}
              </Table.Tbody>
            </Table>
            <Title order={4}>Requests from agents</Title>
            <Table>
              <Table.Tbody>
                {(requests.data?.requests ?? []).map((r) => (
                  <Table.Tr key={r.id}>
                    <Table.Td>{r.connectorId}</Table.Td>
                    <Table.Td>{r.reason}</Table.Td>
                    <Table.Td>
                      <Badge variant="light">{r.status}</Badge>
                    </Table.Td>
                  </Table.Tr>
                ))}
              </Table.Tbody>
            </Table>
            {requests.data?.requests.length === 0 && <Text c="dimmed">No requests.</Text>}
          </Stack>
        </Tabs.Panel>
      </Tabs>
    </Stack>
  );
}
