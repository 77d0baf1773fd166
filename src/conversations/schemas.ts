import { Type } from 'typebox';

/** The answer when a message joined the run already answering its conversation (202): an execute's or a posted message's. */
export const InjectedResult = Type.Object({
  injected: Type.Literal(true),
  runId: Type.String(),
  messageId: Type.String(),
  conversationId: Type.String(),
});

/**
 * The end user a conversation is with, in the caller's own terms (its application's user id). An agent
 * remembers each user apart: that user's memory blocks join the agent's own in the system prompt.
 */
export const UserId = Type.String({
  minLength: 1,
  maxLength: 128,
  pattern: '^[A-Za-z0-9._:@+-]+$',
  examples: ['user-42'],
  description:
    "an end user, in your application's terms (its id for them: letters, digits and . _ : @ + -, at most 128); a conversation with one gives its runs the agent's memory blocks of that user",
});
