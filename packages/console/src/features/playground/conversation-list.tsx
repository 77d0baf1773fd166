import { Button, NavLink, ScrollArea, Select, Stack } from '@mantine/core';
import { useQuery } from '@tanstack/react-query';
import { useNavigate } from '@tanstack/react-router';
import { useClient } from '../../api';
import { everyAgentQuery } from '../agents/queries';
import { conversationsQuery } from '../conversations/queries';

/** The playground's side: the agent to talk to, a new conversation, and the agent's conversations. */
export function ConversationList({ agentId, conversationId }: { agentId?: string; conversationId?: string }) {
  const client = useClient();
  const navigate = useNavigate({ from: '/playground' });
  const agents = useQuery(everyAgentQuery(client));
  const conversations = useQuery({ ...conversationsQuery(client, agentId ?? ''), enabled: !!agentId });
  return (
    <Stack gap="xs">
      <Select
        label="Agent"
        searchable
        placeholder="Choose an agent"
        data={(agents.data ?? []).map((a) => ({ value: a.id, label: a.name }))}
        value={agentId ?? null}
        onChange={(id) => navigate({ search: { agentId: id ?? undefined, conversationId: undefined } })}
      />
      {agentId && (
        <Button variant="light" onClick={() => navigate({ search: { agentId, conversationId: undefined } })}>
          New conversation
        </Button>
      )}
      <ScrollArea.Autosize mah={{ base: 160, sm: 'calc(100vh - 260px)' } as unknown as number} type="auto">
        {(conversations.data ?? []).map((c) => (
          <NavLink
            key={c.id}
            label={c.name ?? new Date(c.createdAt).toLocaleString()}
            description={`${c.messageCount ?? 0} messages`}
            active={c.id === conversationId}
            onClick={() => navigate({ search: { agentId, conversationId: c.id } })}
          />
        ))}
      </ScrollArea.Autosize>
    </Stack>
  );
}
