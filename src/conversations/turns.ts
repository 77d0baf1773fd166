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
  findSummary,
  history,
  insertMessage,
  releaseConversation,
  saveSummary,
} from './store.js';
/** The newest messages of conversations this process answers in, kept true by their message count. */
export { type HistoryMessage, historyMessage, RecentMessages } from './recent-messages.js';
/** A history message's tool calls, parsed (with their ids and results since issue 25). */
export { toolCallsColumn } from './columns.js';
