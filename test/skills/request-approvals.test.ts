import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectProblem, startApp, type TestApp } from '../helpers/app.js';
import { assign, callTool, createSkill } from './helpers.js';

/**
 * An agent's skill_request and connector_request become approval tasks; approving one performs a
 * skills:write or settings:write action. Deciding them needs that permission on every route, so the
 * agents:write key that ran the agent cannot approve its own request into a privilege it lacks.
 */

let t: TestApp;
let admin: string;
let runner: string;
let skillsApprover: string;
let settingsApprover: string;
let agentId: string;

beforeAll(async () => {
  t = await startApp({ TASK_WORKERS: '1', TASK_POLL_MS: '50' });
  ({ key: admin } = await t.tenant());
  runner = await t.key(admin, ['agents:read', 'agents:write']);
  skillsApprover = await t.key(admin, ['agents:read', 'agents:write', 'skills:read', 'skills:write']);
  settingsApprover = await t.key(admin, ['agents:read', 'agents:write', 'settings:read', 'settings:write']);
  agentId = (await t.agent(admin, { name: 'Bot' })).id;
});
afterAll(() => t.close());

/** Every route that decides an approval task, each tried with the key. */
const decisions = (key: string, taskId: string) => {
  const api = t.api(key);
  const params = { path: { id: taskId } };
  return [
    ['/api/v1/approvals/{id}/approve', () => api.POST('/api/v1/approvals/{id}/approve', { params, body: {} })],
    ['/api/v1/approvals/{id}/reject', () => api.POST('/api/v1/approvals/{id}/reject', { params, body: { reason: 'no' } })],
    ['/api/v1/tasks/{id}/approve', () => api.POST('/api/v1/tasks/{id}/approve', { params })],
    ['/api/v1/tasks/{id}/reject', () => api.POST('/api/v1/tasks/{id}/reject', { params })],
  ] as const;
};

async function expectUndecidableBy(key: string, taskId: string, permission: string) {
  for (const [route, decide] of decisions(key, taskId)) {
    const res = await decide();
    expectProblem(res, 403, 'forbidden');
    expect(res.error!.detail, route).toContain(permission);
  }
  const task = await t.api(admin).GET('/api/v1/tasks/{id}', { params: { path: { id: taskId } } });
  expect(task.data!.status).toBe('awaiting_approval');
}

const assignmentsOf = async () => (await t.api(admin).GET('/api/skills/agent/{agentId}', { params: { path: { agentId } } })).data!;

describe('deciding an agent’s skill request needs skills:write', () => {
  it('the agents:write key that ran the agent cannot assign the skill by approving its request', async () => {
    const wanted = await createSkill(t, admin, { name: 'wanted' });
    const request = await callTool(t, runner, agentId, 'skill_request', { skillId: wanted.id, reason: 'need it' });
    expect(request.status).toBe('awaiting_approval');
    await expectUndecidableBy(runner, request.taskId, 'skills:write');
    expect((await assignmentsOf()).total).toBe(0);

    const approved = await t.api(skillsApprover).POST('/api/v1/approvals/{id}/approve', {
      params: { path: { id: request.taskId } },
      body: {},
    });
    expect(approved.response.status, JSON.stringify(approved.error)).toBe(200);
    const assigned = await assignmentsOf();
    expect(assigned.skills).toEqual([expect.objectContaining({ id: wanted.id, assignment: expect.objectContaining({ enabled: true }) })]);
  });

  it('nor acquire a store skill, nor re-enable an assignment an administrator disabled', async () => {
    const store = await callTool(t, runner, agentId, 'skill_request', { skillId: 'support-triage', reason: 'tickets' });
    await expectUndecidableBy(runner, store.taskId, 'skills:write');
    const catalog = await t.api(admin).GET('/api/skills', { params: { query: { limit: 100 } } });
    expect(catalog.data!.skills.some((s) => s.name === 'support-triage')).toBe(false);

    const paused = await createSkill(t, admin, { name: 'paused' });
    await assign(t, admin, paused.id, agentId);
    const off = await t.api(admin).PATCH('/api/skills/{id}/assignments/{agentId}', {
      params: { path: { id: paused.id, agentId } },
      body: { enabled: false },
    });
    expect(off.response.status, JSON.stringify(off.error)).toBe(200);
    const again = await callTool(t, runner, agentId, 'skill_request', { skillId: 'paused', reason: 'again' });
    await expectUndecidableBy(runner, again.taskId, 'skills:write');
    const agents = await t.api(admin).GET('/api/skills/{id}/agents', { params: { path: { id: paused.id } } });
    expect(agents.data!.agents[0]).toMatchObject({ agentId, enabled: false });

    // A settings:write key is no better placed: the action is a skills one.
    expectProblem(
      await t.api(settingsApprover).POST('/api/v1/tasks/{id}/approve', { params: { path: { id: again.taskId } } }),
      403,
      'forbidden',
    );
    const rejected = await t.api(skillsApprover).POST('/api/v1/tasks/{id}/reject', { params: { path: { id: again.taskId } } });
    expect(rejected.response.status, JSON.stringify(rejected.error)).toBe(200);
    expect(rejected.data!.status).toBe('cancelled');
  });
});

describe('deciding an agent’s connector request needs settings:write', () => {
  it('refuses agents:write and skills:write keys; a settings:write key accepts it', async () => {
    const request = await callTool(t, runner, agentId, 'connector_request', { integrationId: 'zendesk', reason: 'tickets' });
    expect(request.status).toBe('awaiting_approval');
    await expectUndecidableBy(runner, request.taskId, 'settings:write');
    await expectUndecidableBy(skillsApprover, request.taskId, 'settings:write');
    const requests = () => t.api(admin).GET('/api/v1/connectors/requests', { params: { query: { connectorId: 'zendesk' } } });
    const pending = await requests();
    expect(pending.data!.requests[0]).toMatchObject({ id: request.requestId, status: 'pending' });

    const approved = await t.api(settingsApprover).POST('/api/v1/approvals/{id}/approve', {
      params: { path: { id: request.taskId } },
      body: {},
    });
    expect(approved.response.status, JSON.stringify(approved.error)).toBe(200);
    const accepted = await requests();
    expect(accepted.data!.requests[0]).toMatchObject({ id: request.requestId, status: 'accepted' });
  });
});
