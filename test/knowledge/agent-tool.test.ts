import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectProblem, startApp, type TestApp } from '../helpers/app.js';
import { execute as executeOn, type ExecuteBody } from '../helpers/execute.js';
import { addReadyDocument } from '../helpers/knowledge.js';
import { readSse } from '../helpers/sse.js';

/**
 * Agents search knowledge (issue 38): an agent on builtin/echo whose tools list the `knowledge` group
 * calls knowledge_search (the echo model's /tool directive); the passages come back with citations,
 * which the run records: its execute answer, its `done` event, its record. TBAC applies as to every tool.
 */

let t: TestApp;
let key: string;
let handbook: string;
let pricing: string;
const docs: Record<string, string> = {};

const tool = (name: string, input: Record<string, unknown>) => `/tool ${name} ${JSON.stringify(input)}`;
const execute = (agentId: string, body: ExecuteBody) => executeOn(t.api(key), agentId, body);

const createBase = async (name: string, description?: string) => {
  const { data, error, response } = await t.api(key).POST('/api/v1/knowledge-bases', { body: { name, description } });
  expect(response.status, JSON.stringify(error)).toBe(201);
  return data!.id;
};
const addReady = (baseId: string, title: string, content: string) => addReadyDocument(t.api(key), baseId, { title, content });

beforeAll(async () => {
  t = await startApp();
  ({ key } = await t.tenant('acme'));
  handbook = await createBase('Handbook', 'how we work');
  pricing = await createBase('Pricing');
  docs.leave = await addReady(handbook, 'Leave', 'Parental leave lasts sixteen weeks at full pay.');
  docs.remote = await addReady(handbook, 'Remote work', 'Staff may work remotely three days a week.');
  docs.plans = await addReady(pricing, 'Plans', 'The team plan costs forty euros per seat per month.');
});
afterAll(() => t?.close());

describe('knowledge_search', () => {
  it('answers passages with citations, and the run carries them (execute answer and record)', async () => {
    const agent = await t.agent(key, { name: 'Helper', tools: [{ type: 'builtin', name: 'knowledge' }] });
    const res = await execute(agent.id, { message: tool('knowledge_search', { query: 'how long is parental leave', k: 2 }) });
    expect(res.response.status, JSON.stringify(res.error)).toBe(200);
    const run = res.run!;
    expect(run.toolCalls).toHaveLength(1);
    const result = run.toolCalls[0].result as { passages: { text: string; citation: Record<string, unknown> }[]; citations: unknown[] };
    expect(result.passages.length).toBeGreaterThan(0);
    expect(result.passages.length).toBeLessThanOrEqual(2);
    expect(result.passages[0]).toMatchObject({
      text: 'Parental leave lasts sixteen weeks at full pay.',
      citation: { knowledgeBaseId: handbook, documentId: docs.leave, title: 'Leave', position: 0, headingPath: [] },
    });
    expect(run.citations).toEqual(result.citations);
    expect(run.citations[0]).toMatchObject({ knowledgeBaseId: handbook, documentId: docs.leave, title: 'Leave' });
    // The run's record keeps them.
    const recorded = await t.api(key).GET('/api/v1/agents/{id}/runs', { params: { path: { id: agent.id } } });
    expect(recorded.data!.runs[0].citations).toEqual(run.citations);
  });

  it('searches every base of the tenant without a list, and only the listed ones with one', async () => {
    const all = await t.agent(key, { name: 'All', tools: [{ type: 'builtin', name: 'knowledge' }] });
    const everywhere = await execute(all.id, { message: tool('knowledge_search', { query: 'team plan seat price' }) });
    expect(everywhere.run!.citations[0]).toMatchObject({ knowledgeBaseId: pricing, documentId: docs.plans });

    const listed = await t.agent(key, { name: 'Listed', tools: [{ type: 'builtin', name: 'knowledge', knowledgeBases: [handbook] }] });
    expect(listed.tools).toContainEqual({ type: 'builtin', name: 'knowledge', knowledgeBases: [handbook] });
    const onlyHandbook = await execute(listed.id, { message: tool('knowledge_search', { query: 'team plan seat price', k: 10 }) });
    const bases = onlyHandbook.run!.citations.map((c) => c.knowledgeBaseId);
    expect(bases.length).toBeGreaterThan(0);
    expect(new Set(bases)).toEqual(new Set([handbook]));
    const outside = await execute(listed.id, { message: tool('knowledge_search', { query: 'plan', knowledgeBaseIds: [pricing] }) });
    expect(outside.run!.toolCalls[0].result).toMatchObject({ error: { code: 'knowledge_base_not_allowed' } });
    expect(outside.run!.citations).toEqual([]);
  });

  it('never reaches another tenant’s base, even when an agent lists its id', async () => {
    const { key: otherKey } = await t.tenant('globex');
    const theirs = (await t.api(otherKey).POST('/api/v1/knowledge-bases', { body: { name: 'Theirs' } })).data!.id;
    const agent = await t.agent(key, { name: 'Nosy', tools: [{ type: 'builtin', name: 'knowledge', knowledgeBases: [theirs] }] });
    const res = await execute(agent.id, { message: tool('knowledge_search', { query: 'anything' }) });
    expect(res.response.status, JSON.stringify(res.error)).toBe(200);
    // The base is none of this tenant's: the agent has no knowledge tool (and so no tools at all: no call is made).
    expect(res.run!.toolCalls).toEqual([]);
    expect(res.run!.citations).toEqual([]);
    const details = await t.api(key).GET('/api/v1/runs/{runId}', { params: { path: { runId: res.run!.runId } } });
    expect(details.data!.warnings).toContain('knowledge: none of the knowledge bases this agent may search exists');
  });

  it('is not offered to an agent without the knowledge group', async () => {
    const agent = await t.agent(key, { name: 'Plain' });
    const res = await execute(agent.id, { message: tool('knowledge_search', { query: 'leave' }) });
    expect(res.response.status).toBe(200);
    expect(res.run!.toolCalls[0].result).toMatchObject({
      error: { code: 'invalid_tool_call', message: expect.stringContaining("unavailable tool 'knowledge_search'") },
    });
    expect(res.run!.citations).toEqual([]);
  });

  it('carries the citations in the stream’s done event', async () => {
    const agent = await t.agent(key, { name: 'Streamer', tools: [{ type: 'builtin', name: 'knowledge' }] });
    await t.listen();
    const res = await t.fetch(`/api/v1/agents/${agent.id}/stream`, key, {
      body: { message: tool('knowledge_search', { query: 'remote work days', k: 1 }) },
    });
    expect(res.status).toBe(200);
    const events = await readSse(res);
    const done = events.at(-1)!;
    expect(done.event).toBe('done');
    expect(done.data.citations).toEqual([
      expect.objectContaining({ knowledgeBaseId: handbook, documentId: docs.remote, title: 'Remote work' }),
    ]);
  });

  it('is refused by a TBAC deny', async () => {
    const agent = await t.agent(key, { name: 'Denied', tools: [{ type: 'builtin', name: 'knowledge' }] });
    const policy = await t.api(key).POST('/api/v1/identity/tbac/policies', {
      body: { callerAgentId: agent.id, calleeAgentId: agent.id, toolName: 'knowledge_search', effect: 'deny' },
    });
    expect(policy.response.status, JSON.stringify(policy.error)).toBe(201);
    const res = await execute(agent.id, { message: tool('knowledge_search', { query: 'leave' }) });
    expect(res.run!.toolCalls[0].result).toMatchObject({ error: { code: 'access_denied' } });
    expect(res.run!.citations).toEqual([]);
  });

  it('refuses a knowledgeBases list on an agent that is not a list of ids', async () => {
    const res = await t.raw('POST', '/api/v1/agents', {
      key,
      body: { name: 'Bad', appId: 'app', tools: [{ type: 'builtin', name: 'knowledge', knowledgeBases: 'all' }] },
    });
    expectProblem(res, 400, 'validation_failed');
  });
});
