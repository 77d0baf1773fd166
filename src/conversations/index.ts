import type { FastifyPluginAsync } from 'fastify';
import { FilesService } from './files.js';
import { conversationsPlugin } from './plugin.js';
import { conversationRetention } from './retention.js';
import { type ConversationsOptions, ConversationsService } from './service.js';

export interface ConversationsDomain {
  conversations: ConversationsService;
  /** Attachments: uploaded here, read by runs for the model (the runs domain is given this service). */
  files: FilesService;
  /** The routes of conversations, messages and files; nothing runs in the background. */
  plugin: FastifyPluginAsync;
  contributions: {
    /** What the retention sweep asks of conversations and files. */
    retention: ReturnType<typeof conversationRetention>;
  };
}

/** Builds the conversations domain: conversations, their messages, and attachments. */
export function createConversationsDomain(options: ConversationsOptions): ConversationsDomain {
  const conversations = new ConversationsService(options);
  const files = new FilesService(options.db);
  return {
    conversations,
    files,
    plugin: (app) => conversationsPlugin(app, { conversations, files }),
    contributions: { retention: conversationRetention(options.db) },
  };
}
