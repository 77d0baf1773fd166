import type { Agentry, Message } from '@agentry/client';
import { queryOptions } from '@tanstack/react-query';

/** Messages read at most for a conversation shown (its newest). */
const MESSAGES_SHOWN = 300;

export const conversationKeys = {
  all: ['conversations'] as const,
  lists: () => [...conversationKeys.all, 'list'] as const,
  list: (agentId: string) => [...conversationKeys.lists(), { agentId }] as const,
  messages: (conversationId: string) => [...conversationKeys.all, conversationId, 'messages'] as const,
};

/** The agent's latest conversations (one page of 50). */
export const conversationsQuery = (client: Agentry, agentId: string) =>
  queryOptions({
    queryKey: conversationKeys.list(agentId),
    queryFn: async () => {
      const first = await client.conversations.list({ agentId, limit: 50 }).pages().next();
      return first.done ? [] : first.value.items;
    },
  });

/** The conversation's newest messages, oldest first. */
export const conversationMessagesQuery = (client: Agentry, conversationId: string) =>
  queryOptions({
    queryKey: conversationKeys.messages(conversationId),
    queryFn: async () => {
      const all: Message[] = [];
      for await (const message of client.conversations.messages(conversationId, { limit: 100 })) {
        all.push(message);
        if (all.length >= MESSAGES_SHOWN) break;
      }
      return all.reverse();
    },
  });
