import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { skillApprovalActions } from '../../src/skills/approvals.js';
import { announceSkills } from '../../src/skills/tools.js';
import type { Actor } from '../../src/tenancy/permissions.js';
import { expectProblem, startApp, type TestApp } from '../helpers/app.js';
import { type ExecuteBody, execute } from '../helpers/execute.js';
import { assign, callTool, createSkill, fakeGateway } from './helpers.js';

const PRICING_REFERENCE = `# Pricing

## List prices

The Team plan costs 20 EUR per seat and month. The Business plan costs 45 EUR per seat and month.

## Discounts

Annual prepayment gets a 15% discount. Nonprofits get a 30% discount on every plan.
Discounts above 30% need approval from the sales director.

## Payment terms

Invoices are due within 30 days.
`;

const SUPPORT_REFERENCE = `# Refunds

Refunds are possible within 14 days of purchase.
`;

let t: TestApp;
let key: string;
let tenantId: string;
let agent: { id: string; name: string };
let skill: { id: string; name: string };

beforeAll(async () => {
  t = await startApp();
  ({ key, id: tenantId } = await t.tenant('acme'));
  agent = await t.agent(key, { name: 'Seller', systemPrompt: 'You sell.' });
  skill = await createSkill(t, key, {
    name: 'pricing',
    description: 'Answers pricing and discount questions',
    category: 'sales',
    instructions: 'Always quote list prices first, then discounts.',
    references: [
      { name: 'pricing.md', content: PRICING_REFERENCE },
      { name: 'refunds.md', content: SUPPORT_REFERENCE },
    ],
    scripts: [{ name: 'quote.py', content: 'print("quote")' }],
  });
  await assign(t, key, skill.id, agent.id, { config: { currency: 'EUR', maxDiscount: 20 }, priority: 7 });
});
afterAll(() => t.close());

describe('skill_query', () => {
  it('answers instructions, config, ranked reference passages and file lists for an assigned skill', async () => {
    const result = await callTool(t, key, agent.id, 'skill_query', {
      skillId: skill.id,
      query: 'nonprofit discount',
      context: 'a charity asks about annual prepayment',
    });
    expect(result.skill).toEqual({
      id: skill.id,
      name: 'pricing',
      description: 'Answers pricing and discount questions',
      category: 'sales',
      source: 'custom',
    });
    expect(result.instructions).toBe('Always quote list prices first, then discounts.');
    expect(result.config).toEqual({ currency: 'EUR', maxDiscount: 20 });
    expect(result.priority).toBe(7);
    expect(result.references).toEqual([
      { name: 'pricing.md', size: Buffer.byteLength(PRICING_REFERENCE) },
      { name: 'refunds.md', size: Buffer.byteLength(SUPPORT_REFERENCE) },
    ]);
    expect(result.scripts).toEqual([{ name: 'quote.py', language: 'python', size: 14 }]);
    expect(result.matches[0]).toMatchObject({ reference: 'pricing.md', section: 'Discounts' });
    // Plurals fold to the singular: "nonprofit" finds "Nonprofits"; context words count too.
    expect(result.matches[0].matchedTerms).toEqual(['annual', 'discount', 'nonprofit', 'prepayment']);
    expect(result.matches[0].excerpt).toContain('Nonprofits get a 30% discount');
    expect(result.matches.every((m: { score: number }) => m.score > 0)).toBe(true);
    expect(result.referenceFile).toBeUndefined();
  });

  it('ranks by the query: the passage holding the asked words comes first', async () => {
    const result = await callTool(t, key, agent.id, 'skill_query', { skillId: skill.id, query: 'when are invoices due' });
    expect(result.matches[0]).toMatchObject({ reference: 'pricing.md', section: 'Payment terms', matchedTerms: ['due', 'invoice'] });
    const refunds = await callTool(t, key, agent.id, 'skill_query', { skillId: 'pricing', query: 'refunds after purchase' });
    expect(refunds.matches[0].reference).toBe('refunds.md');
  });

  it('returns one reference file (or script) whole', async () => {
    const whole = await callTool(t, key, agent.id, 'skill_query', { skillId: skill.id, query: '', referenceFile: 'pricing.md' });
    expect(whole.referenceFile).toEqual({ name: 'pricing.md', kind: 'reference', content: PRICING_REFERENCE });
    expect(whole.matches).toEqual([]);
    const prefixed = await callTool(t, key, agent.id, 'skill_query', { skillId: skill.id, query: 'x', referenceFile: 'scripts/quote.py' });
    expect(prefixed.referenceFile).toEqual({ name: 'quote.py', kind: 'script', language: 'python', content: 'print("quote")' });
    const missing = await callTool(t, key, agent.id, 'skill_query', { skillId: skill.id, query: 'x', referenceFile: 'nope.md' });
    expect(missing.error.code).toBe('reference_not_found');
    expect(missing.error.message).toContain('pricing.md');
  });

  it('refuses skills not assigned, disabled, archived, or of another tenant', async () => {
    const other = await createSkill(t, key, { name: 'unassigned-skill' });
    expect((await callTool(t, key, agent.id, 'skill_query', { skillId: other.id, query: 'x' })).error.code).toBe('skill_not_assigned');
    expect((await callTool(t, key, agent.id, 'skill_query', { skillId: 'no-such-skill', query: 'x' })).error.code).toBe(
      'skill_not_assigned',
    );

    const { key: foreignKey } = await t.tenant('globex');
    const foreign = await createSkill(t, foreignKey, { name: 'foreign' });
    const foreignResult = await callTool(t, key, agent.id, 'skill_query', { skillId: foreign.id, query: 'x' });
    expect(foreignResult).toEqual({ error: { code: 'skill_not_assigned', message: expect.any(String) } });

    const toggled = await createSkill(t, key, { name: 'toggled' });
    await assign(t, key, toggled.id, agent.id);
    const assignment = { params: { path: { id: toggled.id, agentId: agent.id } } };
    await t.api(key).PATCH('/api/skills/{id}/assignments/{agentId}', { ...assignment, body: { enabled: false } });
    expect((await callTool(t, key, agent.id, 'skill_query', { skillId: toggled.id, query: 'x' })).error.code).toBe('skill_not_assigned');
    await t.api(key).PATCH('/api/skills/{id}/assignments/{agentId}', { ...assignment, body: { enabled: true } });
    expect((await callTool(t, key, agent.id, 'skill_query', { skillId: toggled.id, query: 'x' })).instructions).toBe('Quote list prices.');
    await t.api(key).DELETE('/api/skills/{id}', { params: { path: { id: toggled.id } } });
    expect((await callTool(t, key, agent.id, 'skill_query', { skillId: toggled.id, query: 'x' })).error.code).toBe('skill_archived');
  });

  it('answers a tool error for invalid input', async () => {
    // Checked against the tool's schema by the tool loop, before the tool runs.
    const result = await callTool(t, key, agent.id, 'skill_query', { query: 'x' });
    expect(result.error).toEqual({ code: 'invalid_tool_call', message: 'Invalid input for tool skill_query: skillId is required' });
  });
});

describe('skill_discover', () => {
  it('lists metadata only, with assignedToMe, including store skills not yet acquired', async () => {
    const result = await callTool(t, key, agent.id, 'skill_discover', {});
    const pricing = result.skills.find((s: { name: string }) => s.name === 'pricing');
    expect(pricing).toEqual({
      id: skill.id,
      name: 'pricing',
      description: 'Answers pricing and discount questions',
      category: 'sales',
      source: 'custom',
      assignedToMe: true,
      acquired: true,
    });
    const unassigned = result.skills.find((s: { name: string }) => s.name === 'unassigned-skill');
    expect(unassigned).toMatchObject({ assignedToMe: false, acquired: true });
    const store = result.skills.find((s: { name: string }) => s.name === 'code-review');
    expect(store).toMatchObject({ id: 'code-review', source: 'store', assignedToMe: false, acquired: false, category: 'engineering' });
    expect(result.skills.some((s: Record<string, unknown>) => 'instructions' in s)).toBe(false);
    // Archived skills are not offered; assigned ones come first.
    expect(result.skills.map((s: { name: string }) => s.name)).not.toContain('toggled');
    expect(result.skills[0].assignedToMe).toBe(true);
    expect(result.total).toBe(result.skills.length);
  });

  it('filters by category and keyword', async () => {
    const sales = await callTool(t, key, agent.id, 'skill_discover', { category: 'sales' });
    expect(sales.skills.map((s: { name: string }) => s.name).sort()).toEqual(['pricing', 'sales-discovery', 'unassigned-skill']);
    const words = await callTool(t, key, agent.id, 'skill_discover', { query: 'incident postmortem' });
    expect(words.skills.map((s: { name: string }) => s.name)).toEqual(['incident-response']);
    const none = await callTool(t, key, agent.id, 'skill_discover', { query: 'astronomy' });
    expect(none.skills).toEqual([]);
  });
});

describe('requests', () => {
  it('checks the request before anything else', async () => {
    expect((await callTool(t, key, agent.id, 'skill_request', { skillId: skill.id, reason: 'x' })).error.code).toBe('already_assigned');
    expect((await callTool(t, key, agent.id, 'skill_request', { skillId: 'no-such-thing', reason: 'x' })).error.code).toBe(
      'skill_not_found',
    );
    expect((await callTool(t, key, agent.id, 'skill_request', { skillId: skill.id })).error.code).toBe('invalid_tool_call');
    expect((await callTool(t, key, agent.id, 'connector_request', { integrationId: 'myspace', reason: 'x' })).error.code).toBe(
      'connector_not_found',
    );
  });
});

describe('connector_discover and connector_request', () => {
  it('lists connected and available integrations with suggested skills', async () => {
    const before = await callTool(t, key, agent.id, 'connector_discover', {});
    expect(before.connected).toEqual([]);
    expect(before.available.map((c: { id: string }) => c.id)).toEqual([
      'github',
      'jira',
      'slack',
      'salesforce',
      'zendesk',
      'stripe',
      'google-drive',
      'postgres',
    ]);
    const salesforce = before.available.find((c: { id: string }) => c.id === 'salesforce');
    expect(salesforce).toMatchObject({
      name: 'Salesforce',
      category: 'sales',
      connected: false,
      myRequest: null,
      suggestedSkills: [{ name: 'sales-discovery', skillId: null, acquired: false, assignedToMe: false }],
    });

    const connected = await t.api(key).POST('/api/v1/connectors/{id}/connect', {
      params: { path: { id: 'github' } },
      body: { configuration: { accessToken: `ghp_${'a'.repeat(36)}` } },
    });
    expect(connected.response.status, JSON.stringify(connected.error)).toBe(201);
    const acquired = (await t.api(key).POST('/api/skills/store/{id}/acquire', { params: { path: { id: 'code-review' } } })).data!;
    await assign(t, key, acquired.id, agent.id);
    const after = await callTool(t, key, agent.id, 'connector_discover', { category: 'engineering' });
    expect(after.connected.map((c: { id: string }) => c.id)).toEqual(['github']);
    expect(after.available.map((c: { id: string }) => c.id)).toEqual(['jira']);
    expect(after.connected[0].suggestedSkills[0]).toEqual({
      name: 'code-review',
      skillId: acquired.id,
      acquired: true,
      assignedToMe: true,
    });
    expect(JSON.stringify(after)).not.toContain('ghp_');

    expect((await callTool(t, key, agent.id, 'connector_request', { integrationId: 'github', reason: 'x' })).error.code).toBe(
      'already_connected',
    );
  });

  it('gives an agent only the tool groups in its tools list', async () => {
    const skillsOnly = await t.agent(key, { tools: [{ type: 'builtin', name: 'skills' }] });
    const res = await execute(t.api(key), skillsOnly.id, { message: '/tool connector_discover {}' });
    expect(res.response.status).toBe(200);
    expect(res.run!.toolCalls[0].result).toMatchObject({ error: { code: 'invalid_tool_call' } });
    expect((await callTool(t, key, skillsOnly.id, 'skill_discover', {})).skills.length).toBeGreaterThan(0);

    const none = await t.agent(key, { tools: [] });
    const plain = await execute(t.api(key), none.id, { message: '/tool skill_discover {}' });
    expect(plain.run!.toolCalls).toEqual([]);
  });
});

describe('system prompt', () => {
  const words = (text: string) => text.split(/\s+/).filter(Boolean).length;
  const inputTokens = async (agentId: string, body: Partial<ExecuteBody> = {}) => {
    const res = await execute(t.api(key), agentId, { message: 'hello there', ...body });
    expect(res.response.status, JSON.stringify(res.error)).toBe(200);
    return res.run!.tokenUsage.inputTokens;
  };

  it('announces the enabled skills of active status, highest priority first, and nothing else', async () => {
    const announcer = await t.agent(key, { name: 'Announcer', systemPrompt: 'Be brief.' });
    const baseline = await inputTokens(announcer.id);
    expect(baseline).toBe(words('Be brief. hello there'));

    const first = await createSkill(t, key, { name: 'first-skill', description: 'Handles the first kind of question' });
    const second = await createSkill(t, key, { name: 'second-skill', description: 'Handles the second kind' });
    const disabled = await createSkill(t, key, { name: 'disabled-skill', description: 'Never announced' });
    await assign(t, key, first.id, announcer.id, { priority: 1 });
    await assign(t, key, second.id, announcer.id, { priority: 9 });
    await assign(t, key, disabled.id, announcer.id);
    await t.api(key).PATCH('/api/skills/{id}/assignments/{agentId}', {
      params: { path: { id: disabled.id, agentId: announcer.id } },
      body: { enabled: false },
    });

    const full = (await t.api(key).GET('/api/v1/agents/{id}', { params: { path: { id: announcer.id } } })).data!;
    const section = await t.services.skillTools.systemPrompt({ tenantId, agent: full, toolsEnabled: true });
    expect(section).toBe(
      announceSkills([
        { id: second.id, name: 'second-skill', description: 'Handles the second kind' },
        { id: first.id, name: 'first-skill', description: 'Handles the first kind of question' },
      ]),
    );
    expect(section!.indexOf('second-skill')).toBeLessThan(section!.indexOf('first-skill'));
    expect(section).not.toContain('disabled-skill');

    // Observed through the run: builtin/echo counts every word of the prompt it is given.
    expect(await inputTokens(announcer.id)).toBe(baseline + words(section!));
    // Without tools the model could not query the skills: nothing is announced.
    expect(await inputTokens(announcer.id, { enableTools: false })).toBe(baseline);
    await t.api(key).DELETE('/api/skills/{id}', { params: { path: { id: second.id } } });
    const afterArchive = await t.services.skillTools.systemPrompt({ tenantId, agent: full, toolsEnabled: true });
    expect(afterArchive).not.toContain('second-skill');
    expect(await inputTokens(announcer.id)).toBe(baseline + words(afterArchive!));
  });
});

describe('requests through an approval gateway', () => {
  let a: TestApp;
  let k: string;
  let bot: { id: string; name: string };
  let fake: ReturnType<typeof fakeGateway>;
  const approver: Actor = { type: 'api_key', id: 'approver-key' };

  beforeAll(async () => {
    a = await startApp();
    ({ key: k } = await a.tenant('approvals'));
    bot = await a.agent(k, { name: 'Bot' });
    // The request tools create their tasks through the tasks domain: the fake records them instead, and decides with the skills' actions.
    fake = fakeGateway(skillApprovalActions(a.services.skillTools));
    vi.spyOn(a.services.tasks, 'createApprovalTask').mockImplementation(fake.gateway.createApprovalTask);
  });
  afterAll(() => a.close());

  const botSkills = async () => (await a.api(k).GET('/api/skills/agent/{agentId}', { params: { path: { agentId: bot.id } } })).data!;

  it('registers one handler per action', () => {
    expect([...fake.approved.keys()].sort()).toEqual(['connector.request', 'skill.assign']);
    expect([...fake.rejected.keys()]).toEqual(['connector.request']);
  });

  it('skill_request creates an awaiting-approval task whose approval assigns the skill', async () => {
    const wanted = await createSkill(a, k, { name: 'wanted-skill' });
    const result = await callTool(a, k, bot.id, 'skill_request', { skillId: wanted.id, reason: 'customers ask about it' });
    expect(result).toMatchObject({
      status: 'awaiting_approval',
      taskId: expect.any(String),
      skill: { id: wanted.id, name: 'wanted-skill' },
    });
    const task = fake.tasks.find((x) => x.taskId === result.taskId)!;
    expect(task).toMatchObject({
      action: 'skill.assign',
      payload: { agentId: bot.id, skillId: wanted.id, reason: 'customers ask about it' },
      requestedBy: { type: 'agent', id: bot.id },
    });
    expect(task.description).toContain('customers ask about it');
    expect((await botSkills()).total).toBe(0);

    await fake.decide(result.taskId, true, approver);
    const assigned = await botSkills();
    expect(assigned.skills[0]).toMatchObject({ id: wanted.id, assignment: { enabled: true, assignedBy: 'approver-key' } });
    expect((await callTool(a, k, bot.id, 'skill_query', { skillId: wanted.id, query: 'x' })).instructions).toBe('Quote list prices.');
    // Approving twice changes nothing.
    await fake.decide(result.taskId, true, approver);
    expect((await botSkills()).total).toBe(1);
  });

  it('a request for a store skill acquires it on approval', async () => {
    const result = await callTool(a, k, bot.id, 'skill_request', { skillId: 'support-triage', reason: 'ticket volume' });
    expect(result).toMatchObject({ status: 'awaiting_approval', skill: { id: 'support-triage', name: 'support-triage' } });
    expect(fake.tasks.at(-1)!.payload).toMatchObject({ storeId: 'support-triage' });
    await fake.decide(result.taskId, true, approver);
    const skills = (await botSkills()).skills;
    expect(skills.find((s) => s.name === 'support-triage')).toMatchObject({
      source: 'store',
      storeId: 'support-triage',
      assignment: { enabled: true },
    });
  });

  it('approving a request for a disabled assignment enables it', async () => {
    const paused = await createSkill(a, k, { name: 'paused-skill' });
    await assign(a, k, paused.id, bot.id);
    await a.api(k).PATCH('/api/skills/{id}/assignments/{agentId}', {
      params: { path: { id: paused.id, agentId: bot.id } },
      body: { enabled: false },
    });
    const result = await callTool(a, k, bot.id, 'skill_request', { skillId: 'paused-skill', reason: 'need it again' });
    await fake.decide(result.taskId, true, approver);
    const got = await a.api(k).GET('/api/skills/{id}/agents', { params: { path: { id: paused.id } } });
    expect(got.data!.agents[0]).toMatchObject({ agentId: bot.id, enabled: true });
  });

  it('connector_request records a request that approval accepts and rejection rejects', async () => {
    const result = await callTool(a, k, bot.id, 'connector_request', { integrationId: 'zendesk', reason: 'to read tickets' });
    expect(result).toMatchObject({
      status: 'awaiting_approval',
      integrationId: 'zendesk',
      requestId: expect.any(String),
      taskId: expect.any(String),
    });
    const pending = await a.api(k).GET('/api/v1/connectors/requests', { params: { query: { status: 'pending' } } });
    expect(pending.data!.requests).toEqual([
      expect.objectContaining({
        id: result.requestId,
        agentId: bot.id,
        connectorId: 'zendesk',
        reason: 'to read tickets',
        status: 'pending',
        taskId: result.taskId,
      }),
    ]);
    const discovered = await callTool(a, k, bot.id, 'connector_discover', { category: 'support' });
    expect(discovered.available[0].myRequest).toEqual({ id: result.requestId, status: 'pending', taskId: result.taskId });

    await fake.decide(result.taskId, true, approver);
    const accepted = (await a.api(k).GET('/api/v1/connectors/requests', { params: { query: { connectorId: 'zendesk' } } })).data!
      .requests[0];
    expect(accepted).toMatchObject({ status: 'accepted', decidedBy: 'approver-key', decidedAt: expect.any(String) });

    const second = await callTool(a, k, bot.id, 'connector_request', { integrationId: 'stripe', reason: 'billing questions' });
    await fake.decide(second.taskId, false, approver);
    expect(
      (await a.api(k).GET('/api/v1/connectors/requests', { params: { query: { status: 'rejected' } } })).data!.requests.map(
        (r) => r.connectorId,
      ),
    ).toEqual(['stripe']);
    const audit = await a.api(k).GET('/api/v1/audit-events', { params: { query: { resourceType: 'connector_request' } } });
    expect(audit.data!.events.map((e) => e.action).sort()).toEqual([
      'connector.request_accepted',
      'connector.request_rejected',
      'connector.requested',
      'connector.requested',
    ]);
    // A status the types do not allow: raw.
    expectProblem(await a.raw('GET', '/api/v1/connectors/requests?status=maybe', { key: k }), 400, 'validation_failed');
  });
});

// The whole approval flow through the HTTP API: tasks implement the gateway the skill tools use.
describe('approval end to end through the tasks API', () => {
  it('skill_request -> pending approval task -> approve -> the skill is assigned; connector_request -> reject', async () => {
    const wanted = await createSkill(t, key, { name: 'e2e-wanted' });
    const result = await callTool(t, key, agent.id, 'skill_request', { skillId: wanted.id, reason: 'end to end' });
    expect(result.status).toBe('awaiting_approval');
    const pending = await t.api(key).GET('/api/v1/tasks/pending-approval');
    expect(pending.data!.tasks.map((x) => x.id)).toContain(result.taskId);
    const approved = await t.api(key).POST('/api/v1/tasks/{id}/approve', { params: { path: { id: result.taskId } } });
    expect(approved.response.status, JSON.stringify(approved.error)).toBe(200);
    const assigned = await t.api(key).GET('/api/skills/{id}/agents', { params: { path: { id: wanted.id } } });
    expect(assigned.data!.agents.map((x) => x.agentId)).toContain(agent.id);

    const connector = await callTool(t, key, agent.id, 'connector_request', { integrationId: 'jira', reason: 'end to end' });
    expect((await t.api(key).POST('/api/v1/tasks/{id}/reject', { params: { path: { id: connector.taskId } } })).response.status).toBe(200);
    const rejected = await t.api(key).GET('/api/v1/connectors/requests', { params: { query: { connectorId: 'jira' } } });
    expect(rejected.data!.requests[0].status).toBe('rejected');
  });
});
