import type { Agentry } from '@agentry/client';
import { queryOptions } from '@tanstack/react-query';
import { firstPage } from '../../lib/first-page';

/** How many tasks the list shows, and a task's runs and fires (one page of the server's each). */
const TASKS_LISTED = 100;
const HISTORY_LISTED = 50;

/**
 * The tasks' query keys, under one root: a change to a task invalidates `taskKeys.all` (the list, and
 * every task's page) or `taskKeys.task(id)` (that task, its runs and fires).
 */
export const taskKeys = {
  all: ['tasks'] as const,
  list: () => [...taskKeys.all, 'list'] as const,
  task: (taskId: string) => [...taskKeys.all, taskId] as const,
  runs: (taskId: string) => [...taskKeys.task(taskId), 'runs'] as const,
  fires: (taskId: string) => [...taskKeys.task(taskId), 'fires'] as const,
};

export const tasksQuery = (client: Agentry) =>
  queryOptions({
    queryKey: taskKeys.list(),
    refetchInterval: 10_000,
    queryFn: () => firstPage(client.tasks.list({ limit: TASKS_LISTED })),
  });

export const taskQuery = (client: Agentry, taskId: string) =>
  queryOptions({ queryKey: taskKeys.task(taskId), refetchInterval: 5000, queryFn: () => client.tasks.get(taskId) });

/** The task's runs, newest first. */
export const taskRunsQuery = (client: Agentry, taskId: string) =>
  queryOptions({
    queryKey: taskKeys.runs(taskId),
    refetchInterval: 5000,
    queryFn: async () => (await firstPage(client.tasks.runs(taskId, { limit: HISTORY_LISTED }))).items,
  });

/** The task's fires (schedule ticks, webhook deliveries) and what each decided. */
export const taskFiresQuery = (client: Agentry, taskId: string) =>
  queryOptions({
    queryKey: taskKeys.fires(taskId),
    refetchInterval: 5000,
    queryFn: async () => (await firstPage(client.tasks.fires(taskId, { limit: HISTORY_LISTED }))).items,
  });
