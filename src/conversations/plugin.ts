import type { FastifyPluginAsync } from 'fastify';
import { type FilesService, filesRoutes } from './files.js';
import { conversationsRoutes } from './routes.js';
import type { ConversationsService } from './service.js';

export interface ConversationsPluginOptions {
  conversations: ConversationsService;
  files: FilesService;
}

/** The conversations domain: conversations and messages, and attachments (files); it runs nothing in the background. */
export const conversationsPlugin: FastifyPluginAsync<ConversationsPluginOptions> = async (app, { conversations, files }) => {
  await app.register(conversationsRoutes, { conversations });
  await app.register(filesRoutes, { files });
};
