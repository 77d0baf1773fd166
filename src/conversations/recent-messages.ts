import { LRUCache } from 'lru-cache';

/** A message of a conversation's history as a run reads it (store.ts `history`). */
export interface HistoryMessage {
  id: string;
  role: string;
  content: string;
  tool_calls: string | null;
}

interface Entry {
  /** The conversation's message_count these messages are the newest of. */
  count: number;
  /** How many of the newest messages are kept (the agent's memory window when they were read). */
  window: number;
  messages: readonly HistoryMessage[];
}

/** Characters of kept messages at most, over all conversations (least recently used out first). */
const MAX_CHARS = 32 * 1024 * 1024;
/** Conversations kept at most: most of a busy server's are one turn long, and are never read again. */
const MAX_CONVERSATIONS = 10_000;

/**
 * The newest messages of the conversations this process answers in, so that a run's start need not
 * read them again. An entry is true at one value of the conversation's `message_count`, which every
 * insert of a message moves in its own transaction (start, injection, a run's end): a start whose claim
 * finds the count the entry was kept at uses it; any other count reads the database. An entry moves
 * forward only by this process's own committed writes, each checked against the count its statement
 * returned, so a message written anywhere else (another replica, a write this process lost track of)
 * leaves the next start to read.
 */
export class RecentMessages {
  private readonly entries = new LRUCache<string, Entry>({
    max: MAX_CONVERSATIONS,
    maxSize: MAX_CHARS,
    sizeCalculation: (e) => e.messages.reduce((n, m) => n + m.content.length + (m.tool_calls?.length ?? 0) + 64, 1),
  });

  /** The newest `window` messages of the conversation while it held `count` messages, if kept. */
  find(conversationId: string, window: number, count: number): readonly HistoryMessage[] | undefined {
    const e = this.entries.get(conversationId);
    return e && e.count === count && e.window === window ? e.messages : undefined;
  }

  /** Keeps the newest `window` messages of a conversation holding `count` messages (both committed). */
  keep(conversationId: string, window: number, count: number, messages: readonly HistoryMessage[]) {
    if (window < 1) return;
    this.entries.set(conversationId, { count, window, messages: messages.slice(-window) });
  }

  /**
   * A message this process committed, and the conversation's count after it: the entry kept at the
   * count before takes it in; any other entry is forgotten. So is one whose newest message sorts after
   * it (another replica's clock ahead of this one's: the database orders by id).
   */
  added(conversationId: string, count: number, message: HistoryMessage) {
    const e = this.entries.get(conversationId);
    if (!e) return;
    const last = e.messages.at(-1);
    if (e.count !== count - 1 || (last && last.id >= message.id)) {
      this.entries.delete(conversationId);
      return;
    }
    this.keep(conversationId, e.window, count, [...e.messages, message]);
  }
}

/** A stored message's columns the history holds. */
export const historyMessage = (m: HistoryMessage): HistoryMessage => ({
  id: m.id,
  role: m.role,
  content: m.content,
  tool_calls: m.tool_calls,
});
