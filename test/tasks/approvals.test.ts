import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { ApprovalAction, ApprovalGateway } from '../../src/tasks/approvals.js';
import type { TasksService } from '../../src/tasks/service.js';
import { expectProblem, startApp, type TestApp } from '../helpers/app.js';

/**
 * The ApprovalGateway as the skills domain uses it: `services.tasks.createApprovalTask(...)` for a
 * skill_request, the `skill.assign` approval action to perform it; approving over HTTP performs the
 * action instead of running the agent.
 */

let t: TestApp;
let gateway: ApprovalGateway;
let key: string;
let tenantId: string;
let agentId: string;
const performed: { tenantId: string; taskId: string; payload: Record<string, unknown>; decidedBy: { type: string; id: string | null } }[] =
  [];
const rejected: string[] = [];
let failNext = false;

beforeAll(async () => {
  t = await startApp({ TASK_WORKERS: '2', TASK_POLL_MS: '50' });
  gateway = t.services.tasks;
  actInstead(t.services.tasks, 'skill.assign', {
    approved: async (input) => {
      if (failNext) {
        failNext = false;
        throw new Error('the skill store is unreachable');
      }
      performed.push(input);
    },
    rejected: async ({ taskId }) => {
      rejected.push(taskId);
    },
  });
  ({ key, id: tenantId } = await t.tenant());
  agentId = (await t.agent(key, { appId: 'ops' })).id;
});
afterAll(() => t.close());

/** The tasks domain is built with the skills' approval actions: here `name`'s handlers are these tests' instead. */
function actInstead(tasks: TasksService, name: string, handlers: Omit<ApprovalAction, 'permission'>) {
  const actions = tasks.executor.actions;
  const [get, has] = [actions.get.bind(actions), actions.has.bind(actions)];
  const action = { ...get(name), ...handlers };
  vi.spyOn(actions, 'get').mockImplementation((n) => (n === name ? action : get(n)));
  vi.spyOn(actions, 'has').mockImplementation((n) => n === name || has(n));
}

const byId = (id: string) => ({ params: { path: { id } } });
const getTask = async (id: string) => (await t.api(key).GET('/api/v1/tasks/{id}', byId(id))).data!;
// The run route takes no body at all, but its generated type asks for one: {} says the same.
const run = (id: string) => t.api(key).POST('/api/v1/tasks/{id}/run', { ...byId(id), body: {} });
const approve = (id: string) => t.api(key).POST('/api/v1/tasks/{id}/approve', byId(id));

const request = (payload: Record<string, unknown>, action = 'skill.assign') =>
  gateway.createApprovalTask({
    tenantId,
    agentId,
    name: 'Skill request: invoices',
    description: 'The agent asks for the invoices skill',
    action,
    payload,
    requestedBy: { type: 'agent', id: agentId },
  });

describe('approval tasks', () => {
  it('creates an awaiting_approval task that lists as pending approval', async () => {
    const { taskId } = await request({ skillId: 'sk-1' });
    const task = await getTask(taskId);
    expect(task).toMatchObject({
      status: 'awaiting_approval',
      type: 'one_time',
      agentId,
      requiresApproval: true,
      nextRunAt: null,
      approval: {
        action: 'skill.assign',
        payload: { skillId: 'sk-1' },
        requestedBy: { type: 'agent', id: agentId },
        decision: null,
        decidedBy: null,
        decidedAt: null,
      },
    });
    const pending = await t.api(key).GET('/api/v1/tasks/pending-approval');
    expect(pending.data!.tasks.map((x) => x.id)).toContain(taskId);
    const audit = await t.api(key).GET('/api/v1/audit-events', { params: { query: { resourceId: taskId } } });
    expect(audit.data!.events[0]).toMatchObject({ action: 'task.approval_requested', actorType: 'agent', actorId: agentId });
    // Not runnable by hand.
    expectProblem(await run(taskId), 409, 'task_awaiting_approval');
  });

  it('approve answers the task as the approval left it (queued), though the dispatcher may start it at once', async () => {
    // Workers are free and poll every 50 ms: each job can be claimed and run while approve answers.
    const created = await Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        t.api(key).POST('/api/v1/tasks', { body: { name: `Gated ${i}`, description: `gated ${i}`, agentId, requiresApproval: true } }),
      ),
    );
    const ids = created.map((c) => c.data!.id);
    const answers = await Promise.all(ids.map((id) => approve(id)));
    for (const res of answers) {
      expect(res.response.status, JSON.stringify(res.error)).toBe(200);
      expect(res.data).toMatchObject({ status: 'pending', approval: { decision: 'approved', decidedBy: { type: 'api_key' } } });
      expect(res.data!.queuedAt).toEqual(expect.any(String));
    }
    await vi.waitFor(async () => expect((await Promise.all(ids.map(getTask))).map((x) => x.status)).toEqual(ids.map(() => 'completed')), {
      timeout: 30_000,
      interval: 100,
    });
  });

  it('approve performs the registered action (no agent run) and answers completed', async () => {
    const { taskId } = await request({ skillId: 'sk-2' });
    const res = await approve(taskId);
    expect(res.response.status, JSON.stringify(res.error)).toBe(200);
    expect(res.data).toMatchObject({
      status: 'completed',
      approval: { decision: 'approved', decidedBy: { type: 'api_key' } },
      lastError: null,
    });
    expect(performed.at(-1)).toEqual({
      tenantId,
      taskId,
      payload: { skillId: 'sk-2' },
      decidedBy: { type: 'api_key', id: expect.any(String) },
    });
    const runs = await t.db.kysely.selectFrom('runs').select('id').where('task_id', '=', taskId).execute();
    expect(runs).toHaveLength(0);
    expectProblem(await approve(taskId), 409, 'task_not_awaiting_approval');
    expectProblem(await run(taskId), 409, 'task_not_runnable');
  });

  it('reject cancels and tells the rejection handler; the action is not performed', async () => {
    const before = performed.length;
    const { taskId } = await request({ skillId: 'sk-3' });
    const res = await t.api(key).POST('/api/v1/tasks/{id}/reject', byId(taskId));
    expect(res.data).toMatchObject({ status: 'cancelled', approval: { decision: 'rejected' } });
    expect(rejected).toContain(taskId);
    expect(performed).toHaveLength(before);
  });

  it('a failing action leaves the task failed; retry performs it again', async () => {
    const { taskId } = await request({ skillId: 'sk-4' });
    failNext = true;
    const res = await approve(taskId);
    expect(res.response.status).toBe(200);
    expect(res.data).toMatchObject({ status: 'failed', lastError: { code: 'action_failed', message: 'the skill store is unreachable' } });
    const retried = await t.api(key).POST('/api/v1/tasks/{id}/retry', byId(taskId));
    expect(retried.response.status, JSON.stringify(retried.error)).toBe(202);
    expect(retried.data).toMatchObject({ runId: null, status: 'completed', taskId });
    expect(performed.at(-1)?.taskId).toBe(taskId);
    expect((await getTask(taskId)).status).toBe('completed');
  });

  it('an action nobody can perform is refused and the task keeps waiting', async () => {
    const { taskId } = await request({ x: 1 }, 'connector.unknown');
    expectProblem(await approve(taskId), 409, 'approval_action_unavailable');
    expect((await getTask(taskId)).status).toBe('awaiting_approval');
  });

  it('refuses an agent of another tenant', async () => {
    const { id: other } = await t.tenant('other');
    await expect(
      gateway.createApprovalTask({
        tenantId: other,
        agentId,
        name: 'x',
        description: 'x',
        action: 'skill.assign',
        payload: {},
        requestedBy: { type: 'agent', id: agentId },
      }),
    ).rejects.toMatchObject({ code: 'not_found', detail: 'agent not found' });
  });
});
