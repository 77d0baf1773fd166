import type { MemoryBlock } from '@agentry/client';
import { Alert, Autocomplete, Badge, Button, Card, Code, Group, Loader, SegmentedControl, Select, Stack, Text, Title } from '@mantine/core';
import { useQuery } from '@tanstack/react-query';
import { useNavigate, useSearch } from '@tanstack/react-router';
import { useEffect, useState } from 'react';
import { messageOf, useClient, useDenied } from '../../api';
import { BlockEditor, type EditTarget } from './block-editor';
import { BlockHistory } from './block-history';
import { DeleteBlockModal } from './delete-block';
import { type MemoryScope, scopeName, USER_ID_PATTERN } from './limits';

/** Agents offered in the picker at most (the first page by the server's order); the one in the URL always is. */
const AGENTS_LISTED = 100;
/** Conversations read for the end users they name (the agent's latest). */
const CONVERSATIONS_FOR_USERS = 100;

function AgentPicker({ agentId, onPick }: { agentId?: string; onPick(id: string | null): void }) {
  const client = useClient();
  const agents = useQuery({
    queryKey: ['agents', 'picker'],
    queryFn: async () => {
      const first = await client.agents.list({ limit: AGENTS_LISTED }).pages().next();
      return first.done ? [] : first.value.items;
    },
  });
  const picked = useQuery({
    queryKey: ['agents', agentId],
    enabled: !!agentId && agents.isSuccess && !agents.data.some((a) => a.id === agentId),
    queryFn: () => client.agents.get(agentId!),
  });
  const options = [...(agents.data ?? []), ...(picked.data ? [picked.data] : [])].map((a) => ({ value: a.id, label: a.name }));
  return (
    <Select
      label="Agent"
      placeholder="Pick an agent"
      searchable
      data={options}
      value={agentId ?? null}
      onChange={onPick}
      error={agents.error ? messageOf(agents.error) : picked.error ? messageOf(picked.error) : undefined}
      w={320}
    />
  );
}

/** Agent-wide, or one end user's blocks: the user's id is typed, then shown (the URL keeps it). */
/** The end users of the agent's latest conversations (one page), offered as the user id is typed. */
function useKnownUsers(agentId: string, enabled: boolean) {
  const client = useClient();
  return useQuery({
    queryKey: ['conversations', { agentId }, 'users'],
    enabled,
    queryFn: async () => {
      const first = await client.conversations.list({ agentId, limit: CONVERSATIONS_FOR_USERS }).pages().next();
      const users = first.done ? [] : first.value.items.map((c) => c.userId).filter((u): u is string => !!u);
      return [...new Set(users)];
    },
  });
}

function ScopePicker({ agentId, scope, onScope }: { agentId: string; scope: MemoryScope; onScope(scope: MemoryScope): void }) {
  const [mode, setMode] = useState(scope.userId ? 'user' : 'agent');
  const [typed, setTyped] = useState(scope.userId ?? '');
  const users = useKnownUsers(agentId, mode === 'user');
  useEffect(() => {
    setMode(scope.userId ? 'user' : 'agent');
    setTyped(scope.userId ?? '');
  }, [scope.userId]);
  const problem = typed && !USER_ID_PATTERN.test(typed) ? 'letters, digits and . _ : @ + - only, at most 128' : null;
  return (
    <Group align="end">
      {/* A group names the choice: the control's own root is a plain div, which may not carry a label. */}
      <div role="radiogroup" aria-label="Whose memory">
        <SegmentedControl
          value={mode}
          onChange={(next) => {
            setMode(next);
            if (next === 'agent') onScope({});
          }}
          data={[
            { value: 'agent', label: 'Agent-wide' },
            { value: 'user', label: 'One user' },
          ]}
        />
      </div>
      {mode === 'user' && (
        <form
          onSubmit={(e) => {
            e.preventDefault();
            if (typed && !problem) onScope({ userId: typed });
          }}
        >
          <Group align="end">
            <Autocomplete
              label="End user id"
              placeholder="user-42"
              description="the agent’s conversations’ users, or any id"
              data={users.data ?? []}
              value={typed}
              onChange={setTyped}
              error={problem}
            />
            <Button type="submit" disabled={!typed || problem !== null}>
              Show
            </Button>
          </Group>
        </form>
      )}
    </Group>
  );
}

function BlockCard({ block, onEdit, onHistory, onDelete }: { block: MemoryBlock; onEdit(): void; onHistory(): void; onDelete(): void }) {
  const denied = useDenied()('agents:write');
  return (
    <Card withBorder data-testid="memory-block">
      <Group justify="space-between" align="start">
        <Stack gap={2}>
          <Group gap="xs">
            <Title order={2} size="h4">
              {block.label}
            </Title>
            <Badge variant="light">
              {block.chars} / {block.limit} characters
            </Badge>
            <Badge variant="outline">version {block.version}</Badge>
          </Group>
          <Text size="xs" c="dimmed">
            changed {new Date(block.updatedAt).toLocaleString()} by{' '}
            {block.updatedBy.type === 'agent' ? 'the agent' : block.updatedBy.type.replace('_', ' ')}
          </Text>
        </Stack>
        <Group gap="xs">
          <Button size="xs" variant="default" disabled={denied !== null} title={denied ?? undefined} onClick={onEdit}>
            Edit…
          </Button>
          <Button size="xs" variant="default" onClick={onHistory}>
            History…
          </Button>
          <Button size="xs" color="red" variant="light" disabled={denied !== null} title={denied ?? undefined} onClick={onDelete}>
            Delete…
          </Button>
        </Group>
      </Group>
      <Code block mt="sm" style={{ whiteSpace: 'pre-wrap' }}>
        {block.value || '(empty)'}
      </Code>
    </Card>
  );
}

/**
 * An agent's memory blocks (docs/runtime.md, "Memory"): the agent's own or one end user's, each
 * edited, its history shown and restored, or deleted after a confirmation naming it.
 */
export function MemoryPage() {
  const client = useClient();
  const denied = useDenied()('agents:write');
  const navigate = useNavigate({ from: '/memory' });
  const { agentId, userId } = useSearch({ from: '/app/memory' });
  const scope: MemoryScope = userId ? { userId } : {};
  const [editing, setEditing] = useState<EditTarget | null>(null);
  const [history, setHistory] = useState<MemoryBlock | null>(null);
  const [deleting, setDeleting] = useState<MemoryBlock | null>(null);

  const blocks = useQuery({
    queryKey: ['memory', agentId, userId ?? null],
    enabled: !!agentId,
    queryFn: () => client.agents.memory.list(agentId!, scope),
  });
  const limits = blocks.data?.limits;
  const full =
    limits && blocks.data && blocks.data.blocks.length >= limits.maxBlocks
      ? `${scopeName(scope)} already has ${limits.maxBlocks} blocks, the most a scope holds`
      : null;

  return (
    <Stack>
      <Group justify="space-between">
        <Title order={1} size="h2">
          Memory
        </Title>
        {agentId && (
          <Button
            disabled={denied !== null || full !== null || !limits}
            title={denied ?? full ?? undefined}
            onClick={() => setEditing({ kind: 'new' })}
          >
            New block…
          </Button>
        )}
      </Group>
      <Text c="dimmed" size="sm">
        Named texts in every run’s system prompt: the agent’s own, and each end user’s (a conversation with a userId). The agent changes
        them with its memory tools; here a person reads and edits them.
      </Text>
      <Group align="end">
        <AgentPicker agentId={agentId} onPick={(id) => navigate({ search: { agentId: id ?? undefined } })} />
        {agentId && (
          <ScopePicker agentId={agentId} scope={scope} onScope={(next) => navigate({ search: { agentId, userId: next.userId } })} />
        )}
      </Group>
      {!agentId && <Text c="dimmed">Pick an agent to see what it remembers.</Text>}
      {blocks.isPending && agentId && <Loader size="sm" aria-label="Loading memory" />}
      {blocks.error && <Alert color="red">{messageOf(blocks.error)}</Alert>}
      {blocks.data && (
        <>
          <Text size="sm" c="dimmed" data-testid="memory-count">
            {scopeName(scope)}: {blocks.data.blocks.length} of {blocks.data.limits.maxBlocks} blocks, {blocks.data.limits.maxChars}{' '}
            characters each at most
          </Text>
          {blocks.data.blocks.length === 0 && <Text c="dimmed">No blocks yet.</Text>}
          {blocks.data.blocks.map((b) => (
            <BlockCard
              key={b.label}
              block={b}
              onEdit={() => setEditing({ kind: 'edit', block: b })}
              onHistory={() => setHistory(b)}
              onDelete={() => setDeleting(b)}
            />
          ))}
        </>
      )}
      {agentId && limits && (
        <>
          <BlockEditor agentId={agentId} scope={scope} maxChars={limits.maxChars} target={editing} onClose={() => setEditing(null)} />
          <BlockHistory agentId={agentId} scope={scope} block={history} onClose={() => setHistory(null)} />
          <DeleteBlockModal agentId={agentId} scope={scope} block={deleting} onClose={() => setDeleting(null)} />
        </>
      )}
    </Stack>
  );
}
