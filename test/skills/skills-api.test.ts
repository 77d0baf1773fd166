import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { paths } from '../../packages/client/src/generated/openapi.js';
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
const skillPath = (id: string) => ({ params: { path: { id } } });
const assignmentPath = (id: string, agentId: string) => ({ params: { path: { id, agentId } } });

describe('custom skills', () => {
  it('creates a skill with references and scripts, in the contract shape', async () => {
    const res = await t.api(key).POST('/api/skills', {
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
    expect(res.response.status, JSON.stringify(res.error)).toBe(201);
    expect(res.data).toEqual({
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
    const got = await t.api(key).GET('/api/skills/{id}', skillPath(res.data!.id));
    expect(got.response.status).toBe(200);
    expect(got.data).toEqual({ ...res.data, assignments: [] });
  });

  it('validates names, sizes and fields with clear 400s', async () => {
    for (const name of ['Bad', 'a--b', '-a', 'a-', 'x'.repeat(65), 'a_b', '']) {
      const res = await t.api(key).POST('/api/skills', { body: { name, description: 'd', instructions: 'i' } });
      expectProblem(res, 400, 'validation_failed');
      expect(res.error!.errors!.map((e) => e.path)).toContain('body.name');
    }
    // A missing required field and an unknown one, which the types forbid: raw.
    expectProblem(await t.raw('POST', '/api/skills', { key, body: { name: 'x', description: 'd' } }), 400, 'validation_failed');
    expectProblem(
      await t.raw('POST', '/api/skills', { key, body: { name: 'x', description: 'd', instructions: 'i', color: 'red' } }),
      400,
      'validation_failed',
    );
    const traversal = await t.api(key).POST('/api/skills', {
      body: { name: 'x', description: 'd', instructions: 'i', references: [{ name: '../etc/passwd', content: 'x' }] },
    });
    expectProblem(traversal, 400, 'validation_failed');
    expect(traversal.error!.errors![0].path).toBe('body.references.0.name');
    const dup = await t.api(key).POST('/api/skills', {
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
    const tooBig = await t.api(key).POST('/api/skills', {
      body: { name: 'x', description: 'd', instructions: 'i', references: [{ name: 'a.md', content: 'x'.repeat(600 * 1024) }] },
    });
    expectProblem(tooBig, 400, 'validation_failed');
    expect(tooBig.error!.errors![0].path).toBe('body.references.0.content');
    const big = 'x'.repeat(300 * 1024);
    const total = await t.api(key).POST('/api/skills', {
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
      await t.api(key).POST('/api/skills', { body: { name: 'dupe', description: 'd', instructions: 'i' } }),
      409,
      'skill_name_taken',
    );
    await t.api(key).DELETE('/api/skills/{id}', skillPath(first.id));
    const again = await t.api(key).POST('/api/skills', { body: { name: 'dupe', description: 'd', instructions: 'i' } });
    expectProblem(again, 409, 'skill_name_taken');
    expect(again.error!.detail).toContain('archived');
    // Another tenant may use the name.
    await createSkill(t, otherKey, { name: 'dupe' });
  });

  it('updates only the given fields; references given replace them', async () => {
    const skill = await createSkill(t, key, {
      name: 'editable',
      references: [{ name: 'a.md', content: 'A' }],
      scripts: [{ name: 's.py', content: 'x' }],
    });
    const res = await t.api(key).PATCH('/api/skills/{id}', {
      ...skillPath(skill.id),
      body: { description: 'New description', category: null, references: [{ name: 'b.md', content: 'BB' }] },
    });
    expect(res.response.status, JSON.stringify(res.error)).toBe(200);
    expect(res.data).toMatchObject({
      name: 'editable',
      description: 'New description',
      category: null,
      instructions: 'Quote list prices.',
      references: [{ name: 'b.md', size: 2 }],
      scripts: [{ name: 's.py', language: 'python', size: 1 }],
    });
    expect(res.data!.updatedAt >= skill.updatedAt).toBe(true);
    const renamed = await t.api(key).PATCH('/api/skills/{id}', { ...skillPath(skill.id), body: { name: 'onboarding' } });
    expectProblem(renamed, 409, 'skill_name_taken');
    expectProblem(
      await t.api(key).PATCH('/api/skills/{id}', { ...skillPath(skill.id), body: { name: 'No Caps' } }),
      400,
      'validation_failed',
    );
    // A field the types do not have: raw.
    expectProblem(await t.raw('PATCH', `/api/skills/${skill.id}`, { key, body: { source: 'store' } }), 400, 'validation_failed');
  });

  it('archives with DELETE (200, idempotent), hides archived skills by default, restores with PATCH', async () => {
    const skill = await createSkill(t, key, { name: 'retiring', category: 'finance' });
    const archived = await t.api(key).DELETE('/api/skills/{id}', skillPath(skill.id));
    expect(archived.response.status).toBe(200);
    expect(archived.data!.status).toBe('archived');
    const again = await t.api(key).DELETE('/api/skills/{id}', skillPath(skill.id));
    expect(again.response.status).toBe(200);
    expect(again.data!.updatedAt).toBe(archived.data!.updatedAt);

    const active = (await t.api(key).GET('/api/skills')).data!;
    expect(active.skills.map((s) => s.name)).not.toContain('retiring');
    const onlyArchived = (await t.api(key).GET('/api/skills', { params: { query: { status: 'archived' } } })).data!;
    expect(onlyArchived.skills.map((s) => s.name)).toContain('retiring');
    expect(onlyArchived.skills.every((s) => s.status === 'archived')).toBe(true);
    const all = (await t.api(key).GET('/api/skills', { params: { query: { status: 'all' } } })).data!;
    expect(all.total).toBe(active.total + onlyArchived.total);

    const restored = await t.api(key).PATCH('/api/skills/{id}', { ...skillPath(skill.id), body: { status: 'active' } });
    expect(restored.response.status).toBe(200);
    expect(restored.data!.status).toBe('active');

    const events = await t.api(key).GET('/api/v1/audit-events', { params: { query: { resourceType: 'skill', resourceId: skill.id } } });
    expect(events.data!.events.map((e) => e.action).sort()).toEqual(['skill.archived', 'skill.created', 'skill.restored']);
  });
});

describe('listing', () => {
  let t2: TestApp;
  let k: string;
  const list = (query: NonNullable<paths['/api/skills']['get']['parameters']['query']> = {}) =>
    t2.api(k).GET('/api/skills', { params: { query } });
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
    const delta = (await list({ q: 'month' })).data!.skills[0];
    await t2.api(k).DELETE('/api/skills/{id}', { params: { path: { id: delta.id } } });
  });
  afterAll(() => t2.close());

  it('answers { skills, total } with paging (default limit 50, max 200), sorted by name', async () => {
    const res = await list();
    expect(res.response.status).toBe(200);
    expect(res.data).toMatchObject({ total: 4, page: 1, limit: 50 });
    expect(res.data!.skills.map((s) => s.name)).toEqual(['alpha', 'bravo', 'charlie', 'echo']);
    expect(res.data!.skills[0]).toMatchObject({ source: 'custom', instructions: 'Quote list prices.' });
    const page2 = await list({ limit: 2, page: 2 });
    expect(page2.data).toMatchObject({ total: 4, page: 2, limit: 2 });
    expect(page2.data!.skills.map((s) => s.name)).toEqual(['charlie', 'echo']);
    expect((await list({ limit: 200 })).response.status).toBe(200);
    expectProblem(await list({ limit: 201 }), 400, 'validation_failed');
    expectProblem(await list({ limit: 0 }), 400, 'validation_failed');
    expectProblem(await list({ page: 0 }), 400, 'validation_failed');
    // A status the types do not allow: raw.
    expectProblem(await t2.raw('GET', '/api/skills?status=deleted', { key: k }), 400, 'validation_failed');
  });

  it('filters by category, source and words', async () => {
    const sales = await list({ category: 'sales' });
    expect(sales.data!.skills.map((s) => s.name)).toEqual(['alpha', 'bravo']);
    expect((await list({ source: 'store' })).data!.total).toBe(0);
    expect((await list({ source: 'custom' })).data!.total).toBe(4);
    const words = await list({ q: 'DEAL desk' });
    expect(words.data!.skills.map((s) => s.name)).toEqual(['bravo']);
    const like = await list({ q: '%' });
    expect(like.data!.total).toBe(0);
  });

  it('lists the categories of active skills', async () => {
    const res = await t2.api(k).GET('/api/skills/categories');
    expect(res.response.status).toBe(200);
    expect(res.data).toEqual({ categories: ['engineering', 'sales'] });
  });
});

describe('assignments', () => {
  it('assigns (201, enabled, assignedBy = key id), lists both ways, updates and unassigns', async () => {
    const agent = await t.agent(key, { name: 'Seller' });
    const skill = await createSkill(t, key, { name: 'negotiation' });
    const keyId = (await t.api(key).GET('/api/v1/tenant')).data;
    const res = await t.api(key).POST('/api/skills/{id}/assign', {
      ...skillPath(skill.id),
      body: { agentId: agent.id, config: { region: 'EU' }, priority: 5 },
    });
    expect(res.response.status, JSON.stringify(res.error)).toBe(201);
    expect(res.data).toEqual({
      skillId: skill.id,
      agentId: agent.id,
      enabled: true,
      priority: 5,
      config: { region: 'EU' },
      assignedBy: expect.any(String),
      createdAt: expect.any(String),
      updatedAt: expect.any(String),
    });
    expect(JSON.stringify(keyId)).toContain(res.data!.assignedBy);

    const again = await t.api(key).POST('/api/skills/{id}/assign', { ...skillPath(skill.id), body: { agentId: agent.id } });
    expectProblem(again, 400, 'already_assigned');

    const details = await t.api(key).GET('/api/skills/{id}', skillPath(skill.id));
    expect(details.data!.assignments).toEqual([{ ...res.data, agentName: 'Seller', agentStatus: 'available' }]);
    const agents = await t.api(key).GET('/api/skills/{id}/agents', skillPath(skill.id));
    expect(agents.data).toEqual({ agents: [{ ...res.data, agentName: 'Seller', agentStatus: 'available' }], total: 1 });

    const patched = await t.api(key).PATCH('/api/skills/{id}/assignments/{agentId}', {
      ...assignmentPath(skill.id, agent.id),
      body: { enabled: false, priority: 1.5 },
    });
    expect(patched.response.status, JSON.stringify(patched.error)).toBe(200);
    expect(patched.data).toMatchObject({ enabled: false, priority: 1.5, config: { region: 'EU' } });
    const reenabled = await t.api(key).PATCH('/api/skills/{id}/assignments/{agentId}', {
      ...assignmentPath(skill.id, agent.id),
      body: { enabled: true, config: {} },
    });
    expect(reenabled.data).toMatchObject({ enabled: true, priority: 1.5, config: {} });

    const ofAgent = await t.api(key).GET('/api/skills/agent/{agentId}', { params: { path: { agentId: agent.id } } });
    expect(ofAgent.response.status).toBe(200);
    expect(ofAgent.data!.total).toBe(1);
    expect(ofAgent.data!.skills[0]).toMatchObject({
      id: skill.id,
      name: 'negotiation',
      assignment: { agentId: agent.id, enabled: true, priority: 1.5 },
    });

    const gone = await t.api(key).DELETE('/api/skills/{id}/unassign/{agentId}', assignmentPath(skill.id, agent.id));
    expect(gone.response.status).toBe(204);
    expect(await gone.response.text()).toBe('');
    expectProblem(await t.api(key).DELETE('/api/skills/{id}/unassign/{agentId}', assignmentPath(skill.id, agent.id)), 404, 'not_found');
    expectProblem(
      await t.api(key).PATCH('/api/skills/{id}/assignments/{agentId}', { ...assignmentPath(skill.id, agent.id), body: { enabled: true } }),
      404,
      'not_found',
    );
    expect((await t.api(key).GET('/api/skills/agent/{agentId}', { params: { path: { agentId: agent.id } } })).data).toEqual({
      skills: [],
      total: 0,
    });

    const audit = await t.api(key).GET('/api/v1/audit-events', { params: { query: { resourceType: 'skill', resourceId: skill.id } } });
    const actions = audit.data!.events.map((e) => e.action);
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
    const res = await t.api(key).GET('/api/skills/agent/{agentId}', { params: { path: { agentId: agent.id } } });
    expect(res.data!.skills.map((s) => s.name)).toEqual(['high-prio', 'mid-prio', 'low-prio']);
  });

  it('answers 404 for a missing skill or agent, 400 for bad bodies, 409 for an archived skill', async () => {
    const agent = await t.agent(key);
    const skill = await createSkill(t, key, { name: 'assign-errors' });
    const missing = '0190f1c2-0000-7000-8000-000000000000';
    const assignTo = (skillId: string, body: { agentId: string; config?: Record<string, unknown> }) =>
      t.api(key).POST('/api/skills/{id}/assign', { ...skillPath(skillId), body });
    expectProblem(await assignTo(missing, { agentId: agent.id }), 404, 'not_found');
    const noAgent = await assignTo(skill.id, { agentId: missing });
    expectProblem(noAgent, 404, 'not_found');
    expect(noAgent.error!.detail).toContain('agent');
    // Bodies the types forbid (no agentId, a priority that is a string, a config that is a list): raw.
    expectProblem(await t.raw('POST', `/api/skills/${skill.id}/assign`, { key, body: {} }), 400, 'validation_failed');
    expectProblem(
      await t.raw('POST', `/api/skills/${skill.id}/assign`, { key, body: { agentId: agent.id, priority: '1' } }),
      400,
      'validation_failed',
    );
    expectProblem(
      await t.raw('POST', `/api/skills/${skill.id}/assign`, { key, body: { agentId: agent.id, config: [] } }),
      400,
      'validation_failed',
    );
    expectProblem(await assignTo(skill.id, { agentId: agent.id, config: { big: 'x'.repeat(17 * 1024) } }), 400, 'validation_failed');
    expectProblem(await t.api(key).GET('/api/skills/{id}/agents', skillPath(missing)), 404, 'not_found');
    expectProblem(await t.api(key).GET('/api/skills/agent/{agentId}', { params: { path: { agentId: missing } } }), 404, 'not_found');
    await t.api(key).DELETE('/api/skills/{id}', skillPath(skill.id));
    expectProblem(await assignTo(skill.id, { agentId: agent.id }), 409, 'skill_archived');
  });

  it('copies assignments when an agent is duplicated, and drops them when it is deleted', async () => {
    const agent = await t.agent(key, { name: 'Original' });
    const skill = await createSkill(t, key, { name: 'copied-skill' });
    await assign(t, key, skill.id, agent.id, { priority: 3, config: { tone: 'formal' } });
    await t.api(key).PATCH('/api/skills/{id}/assignments/{agentId}', { ...assignmentPath(skill.id, agent.id), body: { enabled: false } });
    const copy = await t.api(key).POST('/api/v1/agents/{id}/duplicate', { params: { path: { id: agent.id } }, body: {} });
    expect(copy.response.status).toBe(201);
    const copyId = copy.data!.id;
    const copied = await t.api(key).GET('/api/skills/agent/{agentId}', { params: { path: { agentId: copyId } } });
    expect(copied.data!.skills).toHaveLength(1);
    expect(copied.data!.skills[0].assignment).toMatchObject({
      agentId: copyId,
      enabled: false,
      priority: 3,
      config: { tone: 'formal' },
    });

    expect((await t.api(key).DELETE('/api/v1/agents/{id}', { params: { path: { id: agent.id } } })).response.status).toBe(204);
    const left = await t.api(key).GET('/api/skills/{id}/agents', skillPath(skill.id));
    expect(left.data!.agents.map((a) => a.agentId)).toEqual([copyId]);
  });
});

describe('permissions and tenant isolation', () => {
  it('needs skills:read to read and skills:write to change', async () => {
    const reader = await keyWith(['skills:read']);
    const agentsOnly = await keyWith(['agents:read', 'agents:write']);
    const skill = await createSkill(t, key, { name: 'guarded' });
    const agent = await t.agent(key);
    const asReader = t.api(reader);
    expect((await asReader.GET('/api/skills')).response.status).toBe(200);
    expect((await asReader.GET('/api/skills/{id}', skillPath(skill.id))).response.status).toBe(200);
    expect((await asReader.GET('/api/skills/categories')).response.status).toBe(200);
    expect((await asReader.GET('/api/skills/store')).response.status).toBe(200);
    expectProblem(await t.api(agentsOnly).GET('/api/skills'), 403, 'forbidden');
    expectProblem(await asReader.POST('/api/skills', { body: { name: 'n', description: 'd', instructions: 'i' } }), 403, 'forbidden');
    expectProblem(await asReader.PATCH('/api/skills/{id}', { ...skillPath(skill.id), body: { description: 'x' } }), 403, 'forbidden');
    expectProblem(await asReader.DELETE('/api/skills/{id}', skillPath(skill.id)), 403, 'forbidden');
    expectProblem(
      await asReader.POST('/api/skills/{id}/assign', { ...skillPath(skill.id), body: { agentId: agent.id } }),
      403,
      'forbidden',
    );
    expectProblem(await asReader.DELETE('/api/skills/{id}/unassign/{agentId}', assignmentPath(skill.id, agent.id)), 403, 'forbidden');
    expectProblem(
      await asReader.PATCH('/api/skills/{id}/assignments/{agentId}', { ...assignmentPath(skill.id, agent.id), body: {} }),
      403,
      'forbidden',
    );
    expectProblem(await asReader.POST('/api/skills/store/{id}/acquire', { params: { path: { id: 'code-review' } } }), 403, 'forbidden');
    expectProblem(await asReader.POST('/api/skills/import', { body: { skillMd: 'x' } }), 403, 'forbidden');
    expectProblem(await t.api().GET('/api/skills'), 401, 'missing_credentials');
  });

  it('never shows or touches another tenant’s skills, agents or assignments (404)', async () => {
    const mine = await createSkill(t, key, { name: 'private-skill', category: 'secret-category' });
    const myAgent = await t.agent(key);
    await assign(t, key, mine.id, myAgent.id);
    const theirAgent = await t.agent(otherKey);
    const theirs = await createSkill(t, otherKey, { name: 'their-skill' });
    const asOther = t.api(otherKey);

    expectProblem(await asOther.GET('/api/skills/{id}', skillPath(mine.id)), 404, 'not_found');
    expectProblem(await asOther.GET('/api/skills/{id}/agents', skillPath(mine.id)), 404, 'not_found');
    expectProblem(await asOther.GET('/api/skills/{id}/export', skillPath(mine.id)), 404, 'not_found');
    expectProblem(await asOther.PATCH('/api/skills/{id}', { ...skillPath(mine.id), body: { description: 'x' } }), 404, 'not_found');
    expectProblem(await asOther.DELETE('/api/skills/{id}', skillPath(mine.id)), 404, 'not_found');
    expectProblem(await asOther.GET('/api/skills/agent/{agentId}', { params: { path: { agentId: myAgent.id } } }), 404, 'not_found');
    // Their skill to my agent, my skill to their agent: both 404.
    expectProblem(
      await t.api(key).POST('/api/skills/{id}/assign', { ...skillPath(theirs.id), body: { agentId: myAgent.id } }),
      404,
      'not_found',
    );
    expectProblem(
      await t.api(key).POST('/api/skills/{id}/assign', { ...skillPath(mine.id), body: { agentId: theirAgent.id } }),
      404,
      'not_found',
    );
    expectProblem(
      await asOther.POST('/api/skills/{id}/assign', { ...skillPath(mine.id), body: { agentId: theirAgent.id } }),
      404,
      'not_found',
    );
    expectProblem(await asOther.DELETE('/api/skills/{id}/unassign/{agentId}', assignmentPath(mine.id, myAgent.id)), 404, 'not_found');
    expectProblem(
      await asOther.PATCH('/api/skills/{id}/assignments/{agentId}', { ...assignmentPath(mine.id, myAgent.id), body: { enabled: false } }),
      404,
      'not_found',
    );

    const theirList = await asOther.GET('/api/skills', { params: { query: { status: 'all', limit: 200 } } });
    expect(theirList.data!.skills.map((s) => s.id)).not.toContain(mine.id);
    expect((await asOther.GET('/api/skills/categories')).data!.categories).not.toContain('secret-category');
    // Still intact for its owner.
    expect((await t.api(key).GET('/api/skills/{id}', skillPath(mine.id))).data!.assignments).toHaveLength(1);
  });
});
