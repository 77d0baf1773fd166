import { Type } from 'typebox';

/** The answer when a message joined the run already answering its conversation (202): an execute's or a posted message's. */
export const InjectedResult = Type.Object({
  injected: Type.Literal(true),
  runId: Type.String(),
  messageId: Type.String(),
  conversationId: Type.String(),
});
