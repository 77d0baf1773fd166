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
const decisions = (taskId: string) =>
  [
    ['POST', `/api/v1/approvals/${taskId}/approve`, {}],
    ['POST', `/api/v1/approvals/${taskId}/reject`, { reason: 'no' }],
    ['POST', `/api/v1/tasks/${taskId}/approve`, undefined],
    ['POST', `/api/v1/tasks/${taskId}/reject`, undefined],
  ] as const;

async function expectUndecidableBy(key: string, taskId: string, permission: string) {
  for (const [method, url, body] of decisions(taskId)) {
    const res = await t.request(method, url, { key, body });
    expectProblem(res, 403, 'forbidden');
    expect(res.body.detail, url).toContain(permission);
  }
  const task = await t.request('GET', `/api/v1/tasks/${taskId}`, { key: admin });
  expect(task.body.status).toBe('awaiting_approval');
}

const assignmentsOf = async () => (await t.request('GET', `/api/skills/agent/${agentId}`, { key: admin })).body;

describe('deciding an agent’s skill request needs skills:write', () => {
  it('the agents:write key that ran the agent cannot assign the skill by approving its request', async () => {
    const wanted = await createSkill(t, admin, { name: 'wanted' });
    const request = await callTool(t, runner, agentId, 'skill_request', { skillId: wanted.id, reason: 'need it' });
    expect(request.status).toBe('awaiting_approval');
    await expectUndecidableBy(runner, request.taskId, 'skills:write');
    expect((await assignmentsOf()).total).toBe(0);

    const approved = await t.request('POST', `/api/v1/approvals/${request.taskId}/approve`, { key: skillsApprover, body: {} });
    expect(approved.status, approved.text).toBe(200);
    const assigned = await assignmentsOf();
    expect(assigned.skills).toEqual([expect.objectContaining({ id: wanted.id, assignment: expect.objectContaining({ enabled: true }) })]);
  });

  it('nor acquire a store skill, nor re-enable an assignment an administrator disabled', async () => {
    const store = await callTool(t, runner, agentId, 'skill_request', { skillId: 'support-triage', reason: 'tickets' });
    await expectUndecidableBy(runner, store.taskId, 'skills:write');
    const catalog = await t.request('GET', '/api/skills?limit=100', { key: admin });
    expect(catalog.body.skills.some((s: { name: string }) => s.name === 'support-triage')).toBe(false);

    const paused = await createSkill(t, admin, { name: 'paused' });
    await assign(t, admin, paused.id, agentId);
    const off = await t.request('PATCH', `/api/skills/${paused.id}/assignments/${agentId}`, { key: admin, body: { enabled: false } });
    expect(off.status, off.text).toBe(200);
    const again = await callTool(t, runner, agentId, 'skill_request', { skillId: 'paused', reason: 'again' });
    await expectUndecidableBy(runner, again.taskId, 'skills:write');
    const agents = await t.request('GET', `/api/skills/${paused.id}/agents`, { key: admin });
    expect(agents.body.agents[0]).toMatchObject({ agentId, enabled: false });

    // A settings:write key is no better placed: the action is a skills one.
    expectProblem(await t.request('POST', `/api/v1/tasks/${again.taskId}/approve`, { key: settingsApprover }), 403, 'forbidden');
    const rejected = await t.request('POST', `/api/v1/tasks/${again.taskId}/reject`, { key: skillsApprover });
    expect(rejected.status, rejected.text).toBe(200);
    expect(rejected.body.status).toBe('cancelled');
  });
});

describe('deciding an agent’s connector request needs settings:write', () => {
  it('refuses agents:write and skills:write keys; a settings:write key accepts it', async () => {
    const request = await callTool(t, runner, agentId, 'connector_request', { integrationId: 'zendesk', reason: 'tickets' });
    expect(request.status).toBe('awaiting_approval');
    await expectUndecidableBy(runner, request.taskId, 'settings:write');
    await expectUndecidableBy(skillsApprover, request.taskId, 'settings:write');
    const pending = await t.request('GET', '/api/v1/connectors/requests?connectorId=zendesk', { key: admin });
    expect(pending.body.requests[0]).toMatchObject({ id: request.requestId, status: 'pending' });

    const approved = await t.request('POST', `/api/v1/approvals/${request.taskId}/approve`, { key: settingsApprover, body: {} });
    expect(approved.status, approved.text).toBe(200);
    const accepted = await t.request('GET', '/api/v1/connectors/requests?connectorId=zendesk', { key: admin });
    expect(accepted.body.requests[0]).toMatchObject({ id: request.requestId, status: 'accepted' });
  });
});
