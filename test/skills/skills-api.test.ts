import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectProblem, startApp, type Permission, type TestApp } from '../helpers/app.js';
import { assign, createSkill } from './helpers.js';

let t: TestApp;
let key: string;
let otherKey: string;

beforeAll(async () => {
  t = await startApp();
  ({ key } = await t.tenant('acme'));
  ({ key: otherKey } = await t.tenant('globex'));
});
afterAll(() => t.close());

const keyWith = (permissions: Permission[]) => t.key(key, permissions);

describe('custom skills', () => {
  it('creates a skill with references and scripts, in the contract shape', async () => {
    const res = await t.request('POST', '/api/skills', {
      key,
      body: {
        name: 'onboarding',
        description: 'Onboard new customers',
        category: 'support',
        instructions: '  Follow the onboarding steps.  ',
        metadata: { owner: 'cs' },
        references: [{ name: 'steps.md', content: '# Steps\nCreate the account.' }],
        scripts: [
          { name: 'check.py', content: 'print(1)' },
          { name: 'run.sh', language: 'bash', content: 'echo hi' },
        ],
      },
    });
    expect(res.status, res.text).toBe(201);
    expect(res.body).toEqual({
      id: expect.stringMatching(/^[0-9a-f-]{36}$/),
      name: 'onboarding',
      description: 'Onboard new customers',
      category: 'support',
      source: 'custom',
      storeId: null,
      status: 'active',
      instructions: 'Follow the onboarding steps.',
      metadata: { owner: 'cs' },
      references: [{ name: 'steps.md', size: 27 }],
      scripts: [
        { name: 'check.py', language: 'python', size: 8 },
        { name: 'run.sh', language: 'bash', size: 7 },
      ],
      createdAt: expect.stringMatching(/Z$/),
      updatedAt: expect.stringMatching(/Z$/),
    });
    const got = await t.request('GET', `/api/skills/${res.body.id}`, { key });
    expect(got.status).toBe(200);
    expect(got.body).toEqual({ ...res.body, assignments: [] });
  });

  it('validates names, sizes and fields with clear 400s', async () => {
    for (const name of ['Bad', 'a--b', '-a', 'a-', 'x'.repeat(65), 'a_b', '']) {
      const res = await t.request('POST', '/api/skills', { key, body: { name, description: 'd', instructions: 'i' } });
      expectProblem(res, 400, 'validation_failed');
      expect(res.body.errors.map((e: { path: string }) => e.path)).toContain('body.name');
    }
    expectProblem(await t.request('POST', '/api/skills', { key, body: { name: 'x', description: 'd' } }), 400, 'validation_failed');
    expectProblem(
      await t.request('POST', '/api/skills', { key, body: { name: 'x', description: 'd', instructions: 'i', color: 'red' } }),
      400,
      'validation_failed',
    );
    const traversal = await t.request('POST', '/api/skills', {
      key,
      body: { name: 'x', description: 'd', instructions: 'i', references: [{ name: '../etc/passwd', content: 'x' }] },
    });
    expectProblem(traversal, 400, 'validation_failed');
    expect(traversal.body.errors[0].path).toBe('body.references.0.name');
    const dup = await t.request('POST', '/api/skills', {
      key,
      body: {
        name: 'x',
        description: 'd',
        instructions: 'i',
        references: [
          { name: 'a.md', content: '1' },
          { name: 'a.md', content: '2' },
        ],
      },
    });
    expectProblem(dup, 400, 'invalid_skill_file');
    const tooBig = await t.request('POST', '/api/skills', {
      key,
      body: { name: 'x', description: 'd', instructions: 'i', references: [{ name: 'a.md', content: 'x'.repeat(600 * 1024) }] },
    });
    expectProblem(tooBig, 400, 'validation_failed');
    expect(tooBig.body.errors[0].path).toBe('body.references.0.content');
    const big = 'x'.repeat(300 * 1024);
    const total = await t.request('POST', '/api/skills', {
      key,
      body: {
        name: 'x',
        description: 'd',
        instructions: 'i',
        references: ['a', 'b', 'c', 'd'].map((n) => ({ name: `${n}.md`, content: big })),
      },
    });
    // Four 300 KiB files: each under the per-file limit, together over the 1 MiB body limit.
    expectProblem(total, 413, 'payload_too_large');
  });

  it('refuses a second skill with the same name (409), also when the first is archived', async () => {
    const first = await createSkill(t, key, { name: 'dupe' });
    expectProblem(
      await t.request('POST', '/api/skills', { key, body: { name: 'dupe', description: 'd', instructions: 'i' } }),
      409,
      'skill_name_taken',
    );
    await t.request('DELETE', `/api/skills/${first.id}`, { key });
    const again = await t.request('POST', '/api/skills', { key, body: { name: 'dupe', description: 'd', instructions: 'i' } });
    expectProblem(again, 409, 'skill_name_taken');
    expect(again.body.detail).toContain('archived');
    // Another tenant may use the name.
    await createSkill(t, otherKey, { name: 'dupe' });
  });

  it('updates only the given fields; references given replace them', async () => {
    const skill = await createSkill(t, key, {
      name: 'editable',
      references: [{ name: 'a.md', content: 'A' }],
      scripts: [{ name: 's.py', content: 'x' }],
    });
    const res = await t.request('PATCH', `/api/skills/${skill.id}`, {
      key,
      body: { description: 'New description', category: null, references: [{ name: 'b.md', content: 'BB' }] },
    });
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({
      name: 'editable',
      description: 'New description',
      category: null,
      instructions: 'Quote list prices.',
      references: [{ name: 'b.md', size: 2 }],
      scripts: [{ name: 's.py', language: 'python', size: 1 }],
    });
    expect(res.body.updatedAt >= skill.updatedAt).toBe(true);
    const renamed = await t.request('PATCH', `/api/skills/${skill.id}`, { key, body: { name: 'onboarding' } });
    expectProblem(renamed, 409, 'skill_name_taken');
    expectProblem(await t.request('PATCH', `/api/skills/${skill.id}`, { key, body: { name: 'No Caps' } }), 400, 'validation_failed');
    expectProblem(await t.request('PATCH', `/api/skills/${skill.id}`, { key, body: { source: 'store' } }), 400, 'validation_failed');
  });

  it('archives with DELETE (200, idempotent), hides archived skills by default, restores with PATCH', async () => {
    const skill = await createSkill(t, key, { name: 'retiring', category: 'finance' });
    const archived = await t.request('DELETE', `/api/skills/${skill.id}`, { key });
    expect(archived.status).toBe(200);
    expect(archived.body.status).toBe('archived');
    const again = await t.request('DELETE', `/api/skills/${skill.id}`, { key });
    expect(again.status).toBe(200);
    expect(again.body.updatedAt).toBe(archived.body.updatedAt);

    const active = await t.request('GET', '/api/skills', { key });
    expect(active.body.skills.map((s: { name: string }) => s.name)).not.toContain('retiring');
    const onlyArchived = await t.request('GET', '/api/skills?status=archived', { key });
    expect(onlyArchived.body.skills.map((s: { name: string }) => s.name)).toContain('retiring');
    expect(onlyArchived.body.skills.every((s: { status: string }) => s.status === 'archived')).toBe(true);
    const all = await t.request('GET', '/api/skills?status=all', { key });
    expect(all.body.total).toBe(active.body.total + onlyArchived.body.total);

    const restored = await t.request('PATCH', `/api/skills/${skill.id}`, { key, body: { status: 'active' } });
    expect(restored.status).toBe(200);
    expect(restored.body.status).toBe('active');

    const events = await t.request('GET', `/api/v1/audit-events?resourceType=skill&resourceId=${skill.id}`, { key });
    expect(events.body.events.map((e: { action: string }) => e.action).sort()).toEqual([
      'skill.archived',
      'skill.created',
      'skill.restored',
    ]);
  });
});

describe('listing', () => {
  let t2: TestApp;
  let k: string;
  beforeAll(async () => {
    t2 = await startApp();
    ({ key: k } = await t2.tenant('lister'));
    for (const [name, category, description] of [
      ['alpha', 'sales', 'Prospect research'],
      ['bravo', 'sales', 'Deal desk approvals'],
      ['charlie', 'engineering', 'Code review help'],
      ['delta', 'finance', 'Month end close'],
      ['echo', null, 'Uncategorised helper'],
    ] as const) {
      await createSkill(t2, k, { name, category, description });
    }
    const delta = (await t2.request('GET', '/api/skills?q=month', { key: k })).body.skills[0];
    await t2.request('DELETE', `/api/skills/${delta.id}`, { key: k });
  });
  afterAll(() => t2.close());

  it('answers { skills, total } with paging (default limit 50, max 200), sorted by name', async () => {
    const res = await t2.request('GET', '/api/skills', { key: k });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ total: 4, page: 1, limit: 50 });
    expect(res.body.skills.map((s: { name: string }) => s.name)).toEqual(['alpha', 'bravo', 'charlie', 'echo']);
    expect(res.body.skills[0]).toMatchObject({ source: 'custom', instructions: 'Quote list prices.' });
    const page2 = await t2.request('GET', '/api/skills?limit=2&page=2', { key: k });
    expect(page2.body).toMatchObject({ total: 4, page: 2, limit: 2 });
    expect(page2.body.skills.map((s: { name: string }) => s.name)).toEqual(['charlie', 'echo']);
    expect((await t2.request('GET', '/api/skills?limit=200', { key: k })).status).toBe(200);
    expectProblem(await t2.request('GET', '/api/skills?limit=201', { key: k }), 400, 'validation_failed');
    expectProblem(await t2.request('GET', '/api/skills?limit=0', { key: k }), 400, 'validation_failed');
    expectProblem(await t2.request('GET', '/api/skills?page=0', { key: k }), 400, 'validation_failed');
    expectProblem(await t2.request('GET', '/api/skills?status=deleted', { key: k }), 400, 'validation_failed');
  });

  it('filters by category, source and words', async () => {
    const sales = await t2.request('GET', '/api/skills?category=sales', { key: k });
    expect(sales.body.skills.map((s: { name: string }) => s.name)).toEqual(['alpha', 'bravo']);
    expect((await t2.request('GET', '/api/skills?source=store', { key: k })).body.total).toBe(0);
    expect((await t2.request('GET', '/api/skills?source=custom', { key: k })).body.total).toBe(4);
    const words = await t2.request('GET', '/api/skills?q=DEAL%20desk', { key: k });
    expect(words.body.skills.map((s: { name: string }) => s.name)).toEqual(['bravo']);
    const like = await t2.request('GET', '/api/skills?q=%25', { key: k });
    expect(like.body.total).toBe(0);
  });

  it('lists the categories of active skills', async () => {
    const res = await t2.request('GET', '/api/skills/categories', { key: k });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ categories: ['engineering', 'sales'] });
  });
});

describe('assignments', () => {
  it('assigns (201, enabled, assignedBy = key id), lists both ways, updates and unassigns', async () => {
    const agent = await t.agent(key, { name: 'Seller' });
    const skill = await createSkill(t, key, { name: 'negotiation' });
    const keyId = (await t.request('GET', '/api/v1/tenant', { key })).body;
    const res = await t.request('POST', `/api/skills/${skill.id}/assign`, {
      key,
      body: { agentId: agent.id, config: { region: 'EU' }, priority: 5 },
    });
    expect(res.status, res.text).toBe(201);
    expect(res.body).toEqual({
      skillId: skill.id,
      agentId: agent.id,
      enabled: true,
      priority: 5,
      config: { region: 'EU' },
      assignedBy: expect.any(String),
      createdAt: expect.any(String),
      updatedAt: expect.any(String),
    });
    expect(JSON.stringify(keyId)).toContain(res.body.assignedBy);

    const again = await t.request('POST', `/api/skills/${skill.id}/assign`, { key, body: { agentId: agent.id } });
    expectProblem(again, 400, 'already_assigned');

    const details = await t.request('GET', `/api/skills/${skill.id}`, { key });
    expect(details.body.assignments).toEqual([{ ...res.body, agentName: 'Seller', agentStatus: 'available' }]);
    const agents = await t.request('GET', `/api/skills/${skill.id}/agents`, { key });
    expect(agents.body).toEqual({ agents: [{ ...res.body, agentName: 'Seller', agentStatus: 'available' }], total: 1 });

    const patched = await t.request('PATCH', `/api/skills/${skill.id}/assignments/${agent.id}`, {
      key,
      body: { enabled: false, priority: 1.5 },
    });
    expect(patched.status, patched.text).toBe(200);
    expect(patched.body).toMatchObject({ enabled: false, priority: 1.5, config: { region: 'EU' } });
    const reenabled = await t.request('PATCH', `/api/skills/${skill.id}/assignments/${agent.id}`, {
      key,
      body: { enabled: true, config: {} },
    });
    expect(reenabled.body).toMatchObject({ enabled: true, priority: 1.5, config: {} });

    const ofAgent = await t.request('GET', `/api/skills/agent/${agent.id}`, { key });
    expect(ofAgent.status).toBe(200);
    expect(ofAgent.body.total).toBe(1);
    expect(ofAgent.body.skills[0]).toMatchObject({
      id: skill.id,
      name: 'negotiation',
      assignment: { agentId: agent.id, enabled: true, priority: 1.5 },
    });

    const gone = await t.request('DELETE', `/api/skills/${skill.id}/unassign/${agent.id}`, { key });
    expect(gone.status).toBe(204);
    expect(gone.text).toBe('');
    expectProblem(await t.request('DELETE', `/api/skills/${skill.id}/unassign/${agent.id}`, { key }), 404, 'not_found');
    expectProblem(
      await t.request('PATCH', `/api/skills/${skill.id}/assignments/${agent.id}`, { key, body: { enabled: true } }),
      404,
      'not_found',
    );
    expect((await t.request('GET', `/api/skills/agent/${agent.id}`, { key })).body).toEqual({ skills: [], total: 0 });

    const actions = (await t.request('GET', `/api/v1/audit-events?resourceType=skill&resourceId=${skill.id}`, { key })).body.events.map(
      (e: { action: string }) => e.action,
    );
    expect(actions).toEqual(expect.arrayContaining(['skill.assigned', 'skill.assignment_updated', 'skill.unassigned']));
  });

  it('orders an agent’s skills by priority, highest first (default 0)', async () => {
    const agent = await t.agent(key);
    const low = await createSkill(t, key, { name: 'low-prio' });
    const high = await createSkill(t, key, { name: 'high-prio' });
    const mid = await createSkill(t, key, { name: 'mid-prio' });
    const a = await assign(t, key, low.id, agent.id);
    expect(a.priority).toBe(0);
    await assign(t, key, high.id, agent.id, { priority: 10 });
    await assign(t, key, mid.id, agent.id, { priority: 2 });
    const res = await t.request('GET', `/api/skills/agent/${agent.id}`, { key });
    expect(res.body.skills.map((s: { name: string }) => s.name)).toEqual(['high-prio', 'mid-prio', 'low-prio']);
  });

  it('answers 404 for a missing skill or agent, 400 for bad bodies, 409 for an archived skill', async () => {
    const agent = await t.agent(key);
    const skill = await createSkill(t, key, { name: 'assign-errors' });
    const missing = '0190f1c2-0000-7000-8000-000000000000';
    expectProblem(await t.request('POST', `/api/skills/${missing}/assign`, { key, body: { agentId: agent.id } }), 404, 'not_found');
    const noAgent = await t.request('POST', `/api/skills/${skill.id}/assign`, { key, body: { agentId: missing } });
    expectProblem(noAgent, 404, 'not_found');
    expect(noAgent.body.detail).toContain('agent');
    expectProblem(await t.request('POST', `/api/skills/${skill.id}/assign`, { key, body: {} }), 400, 'validation_failed');
    expectProblem(
      await t.request('POST', `/api/skills/${skill.id}/assign`, { key, body: { agentId: agent.id, priority: '1' } }),
      400,
      'validation_failed',
    );
    expectProblem(
      await t.request('POST', `/api/skills/${skill.id}/assign`, { key, body: { agentId: agent.id, config: [] } }),
      400,
      'validation_failed',
    );
    expectProblem(
      await t.request('POST', `/api/skills/${skill.id}/assign`, {
        key,
        body: { agentId: agent.id, config: { big: 'x'.repeat(17 * 1024) } },
      }),
      400,
      'validation_failed',
    );
    expectProblem(await t.request('GET', `/api/skills/${missing}/agents`, { key }), 404, 'not_found');
    expectProblem(await t.request('GET', `/api/skills/agent/${missing}`, { key }), 404, 'not_found');
    await t.request('DELETE', `/api/skills/${skill.id}`, { key });
    expectProblem(await t.request('POST', `/api/skills/${skill.id}/assign`, { key, body: { agentId: agent.id } }), 409, 'skill_archived');
  });

  it('copies assignments when an agent is duplicated, and drops them when it is deleted', async () => {
    const agent = await t.agent(key, { name: 'Original' });
    const skill = await createSkill(t, key, { name: 'copied-skill' });
    await assign(t, key, skill.id, agent.id, { priority: 3, config: { tone: 'formal' } });
    await t.request('PATCH', `/api/skills/${skill.id}/assignments/${agent.id}`, { key, body: { enabled: false } });
    const copy = await t.request('POST', `/api/v1/agents/${agent.id}/duplicate`, { key });
    expect(copy.status).toBe(201);
    const copied = await t.request('GET', `/api/skills/agent/${copy.body.id}`, { key });
    expect(copied.body.skills).toHaveLength(1);
    expect(copied.body.skills[0].assignment).toMatchObject({
      agentId: copy.body.id,
      enabled: false,
      priority: 3,
      config: { tone: 'formal' },
    });

    expect((await t.request('DELETE', `/api/v1/agents/${agent.id}`, { key })).status).toBe(204);
    const left = await t.request('GET', `/api/skills/${skill.id}/agents`, { key });
    expect(left.body.agents.map((a: { agentId: string }) => a.agentId)).toEqual([copy.body.id]);
  });
});

describe('permissions and tenant isolation', () => {
  it('needs skills:read to read and skills:write to change', async () => {
    const reader = await keyWith(['skills:read']);
    const agentsOnly = await keyWith(['agents:read', 'agents:write']);
    const skill = await createSkill(t, key, { name: 'guarded' });
    const agent = await t.agent(key);
    expect((await t.request('GET', '/api/skills', { key: reader })).status).toBe(200);
    expect((await t.request('GET', `/api/skills/${skill.id}`, { key: reader })).status).toBe(200);
    expect((await t.request('GET', '/api/skills/categories', { key: reader })).status).toBe(200);
    expect((await t.request('GET', '/api/skills/store', { key: reader })).status).toBe(200);
    expectProblem(await t.request('GET', '/api/skills', { key: agentsOnly }), 403, 'forbidden');
    expectProblem(
      await t.request('POST', '/api/skills', { key: reader, body: { name: 'n', description: 'd', instructions: 'i' } }),
      403,
      'forbidden',
    );
    expectProblem(await t.request('PATCH', `/api/skills/${skill.id}`, { key: reader, body: { description: 'x' } }), 403, 'forbidden');
    expectProblem(await t.request('DELETE', `/api/skills/${skill.id}`, { key: reader }), 403, 'forbidden');
    expectProblem(
      await t.request('POST', `/api/skills/${skill.id}/assign`, { key: reader, body: { agentId: agent.id } }),
      403,
      'forbidden',
    );
    expectProblem(await t.request('DELETE', `/api/skills/${skill.id}/unassign/${agent.id}`, { key: reader }), 403, 'forbidden');
    expectProblem(await t.request('PATCH', `/api/skills/${skill.id}/assignments/${agent.id}`, { key: reader, body: {} }), 403, 'forbidden');
    expectProblem(await t.request('POST', '/api/skills/store/code-review/acquire', { key: reader }), 403, 'forbidden');
    expectProblem(await t.request('POST', '/api/skills/import', { key: reader, body: { skillMd: 'x' } }), 403, 'forbidden');
    expectProblem(await t.request('GET', '/api/skills'), 401, 'missing_credentials');
  });

  it('never shows or touches another tenant’s skills, agents or assignments (404)', async () => {
    const mine = await createSkill(t, key, { name: 'private-skill', category: 'secret-category' });
    const myAgent = await t.agent(key);
    await assign(t, key, mine.id, myAgent.id);
    const theirAgent = await t.agent(otherKey);
    const theirs = await createSkill(t, otherKey, { name: 'their-skill' });

    expectProblem(await t.request('GET', `/api/skills/${mine.id}`, { key: otherKey }), 404, 'not_found');
    expectProblem(await t.request('GET', `/api/skills/${mine.id}/agents`, { key: otherKey }), 404, 'not_found');
    expectProblem(await t.request('GET', `/api/skills/${mine.id}/export`, { key: otherKey }), 404, 'not_found');
    expectProblem(await t.request('PATCH', `/api/skills/${mine.id}`, { key: otherKey, body: { description: 'x' } }), 404, 'not_found');
    expectProblem(await t.request('DELETE', `/api/skills/${mine.id}`, { key: otherKey }), 404, 'not_found');
    expectProblem(await t.request('GET', `/api/skills/agent/${myAgent.id}`, { key: otherKey }), 404, 'not_found');
    // Their skill to my agent, my skill to their agent: both 404.
    expectProblem(await t.request('POST', `/api/skills/${theirs.id}/assign`, { key, body: { agentId: myAgent.id } }), 404, 'not_found');
    expectProblem(await t.request('POST', `/api/skills/${mine.id}/assign`, { key, body: { agentId: theirAgent.id } }), 404, 'not_found');
    expectProblem(
      await t.request('POST', `/api/skills/${mine.id}/assign`, { key: otherKey, body: { agentId: theirAgent.id } }),
      404,
      'not_found',
    );
    expectProblem(await t.request('DELETE', `/api/skills/${mine.id}/unassign/${myAgent.id}`, { key: otherKey }), 404, 'not_found');
    expectProblem(
      await t.request('PATCH', `/api/skills/${mine.id}/assignments/${myAgent.id}`, { key: otherKey, body: { enabled: false } }),
      404,
      'not_found',
    );

    const theirList = await t.request('GET', '/api/skills?status=all&limit=200', { key: otherKey });
    expect(theirList.body.skills.map((s: { id: string }) => s.id)).not.toContain(mine.id);
    expect((await t.request('GET', '/api/skills/categories', { key: otherKey })).body.categories).not.toContain('secret-category');
    // Still intact for its owner.
    expect((await t.request('GET', `/api/skills/${mine.id}`, { key })).body.assignments).toHaveLength(1);
  });
});
