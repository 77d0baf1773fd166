import type { FastifyPluginAsync } from 'fastify';
import { hooksRoutes, tasksRoutes } from './routes.js';
import type { TasksService } from './service.js';

export interface TasksPluginOptions {
  tasks: TasksService;
}

/**
 * The tasks domain: its routes, the webhook triggers (their own JSON parser, kept to their scope), and
 * while the server runs, the dispatcher, cron firing and the sweep (tasks/service.ts startBackground).
 */
export const tasksPlugin: FastifyPluginAsync<TasksPluginOptions> = async (app, { tasks }) => {
  app.addHook('onReady', async () => {
    tasks.startBackground();
  });
  app.addHook('onClose', async () => {
    await tasks.stop();
  });
  await app.register(tasksRoutes, { tasks });
  await app.register(hooksRoutes, { tasks });
};
