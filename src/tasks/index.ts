import type { FastifyPluginAsync } from 'fastify';
import type { RunFinishedListener } from '../runs/service.js';
import type { ApprovalGateway } from './approvals.js';
import { tasksPlugin } from './plugin.js';
import { TasksService, type TasksServiceOptions } from './service.js';

export interface TasksDomain {
  tasks: TasksService;
  /** The routes, the webhook triggers, and while the server runs the dispatcher, cron firing and the sweep. */
  plugin: FastifyPluginAsync;
  contributions: {
    /** Approval tasks other domains create (skills' requests). */
    approvalGateway: ApprovalGateway;
    /** A run's end settles its task's job (a finished listener of runs). */
    runFinished: RunFinishedListener;
  };
}

/** Builds the tasks domain: tasks, their scheduling and their approvals. */
export function createTasksDomain(options: TasksServiceOptions): TasksDomain {
  const tasks = new TasksService(options);
  return {
    tasks,
    plugin: (app) => tasksPlugin(app, { tasks }),
    contributions: { approvalGateway: tasks, runFinished: (run) => tasks.runFinished(run) },
  };
}
