/**
 * What a run reads and writes of its conversation, in the runs' own transactions: the conversations
 * domain's narrow port to the runs domain (runs/ imports this, never the store itself).
 */
export {
  type ConversationRow,
  type MessageRow,
  claimConversation,
  countMessages,
  deferConversation,
  deferMessage,
  findConversation,
  findReply,
  history,
  insertMessage,
  releaseConversation,
} from './store.js';
