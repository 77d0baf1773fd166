import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.js';
import { type ApiResult, expectProblem, type Response, startApp, startReplicas, type TestApp } from '../helpers/app.js';
import { type ExecuteBody, execute as executeOn } from '../helpers/execute.js';

/**
 * Memory that outlives a conversation (issue 25 part 4): an agent's memory blocks, agent-wide or one
 * end user's, in the system prompt of its runs (builtin/echo's /system directive answers with the
 * system prompt it was given), edited by the agent's memory tools and by people over HTTP, every
 * change versioned and audited.
 */

let t: TestApp;
let key: string;
let otherKey: string;
let tenantId: string;

beforeAll(async () => {
  t = await startApp();
  ({ key, id: tenantId } = await t.tenant('acme'));
  ({ key: otherKey } = await t.tenant('globex'));
});
afterAll(() => t?.close());

const MEMORY_TOOLS = [{ type: 'builtin' as const, name: 'memory' as const }];
const rememberer = () => t.agent(key, { name: 'Rememberer', tools: MEMORY_TOOLS });

const execute = (agentId: string, body: ExecuteBody, k = key) => executeOn(t.api(k), agentId, body);
/** What the model is told: builtin/echo answers /system with its system prompt. */
const systemPrompt = async (agentId: string, extra: Partial<ExecuteBody> = {}) => {
  const res = await execute(agentId, { message: '/system', ...extra });
  expect(res.response.status, JSON.stringify(res.error)).toBe(200);
  return res.run!.output;
};
const tool = (name: string, input: Record<string, unknown>) => `/tool ${name} ${JSON.stringify(input)}`;
/** The one tool call's result of an execute whose message is that call. */
const callTool = async (agentId: string, name: string, input: Record<string, unknown>, extra: Partial<ExecuteBody> = {}) => {
  const res = await execute(agentId, { message: tool(name, input), ...extra });
  expect(res.response.status, JSON.stringify(res.error)).toBe(200);
  expect(res.run!.toolCalls).toHaveLength(1);
  return res.run!.toolCalls[0].result as Record<string, unknown>;
};
/** The memory routes: an agent's own blocks, or one user's when userId is given. */
const listBlocks = (agentId: string, userId?: string, k = key) =>
  t.api(k).GET('/api/v1/agents/{id}/memory', { params: { path: { id: agentId }, query: { userId } } });
const blockParams = (agentId: string, label: string, userId?: string) => ({ params: { path: { id: agentId, label }, query: { userId } } });
const getBlock = (agentId: string, label: string, userId?: string) =>
  t.api(key).GET('/api/v1/agents/{id}/memory/{label}', blockParams(agentId, label, userId));
const putBlock = (agentId: string, label: string, body: { value: string; version?: number }, userId?: string, k = key) =>
  t.api(k).PUT('/api/v1/agents/{id}/memory/{label}', { ...blockParams(agentId, label, userId), body });
const deleteBlock = (agentId: string, label: string, userId?: string, k = key) =>
  t.api(k).DELETE('/api/v1/agents/{id}/memory/{label}', blockParams(agentId, label, userId));
const versionsOf = (agentId: string, label: string, query: { userId?: string; page?: number; limit?: number } = {}) =>
  t.api(key).GET('/api/v1/agents/{id}/memory/{label}/versions', { params: { path: { id: agentId, label }, query } });

describe('a fact told in one conversation', () => {
  it('reaches new conversations of the same user, and no other user’s', async () => {
    const agent = await rememberer();
    const told = await execute(agent.id, {
      message: tool('memory_append', { label: 'facts', text: 'Prefers answers in French.' }),
      userId: 'alice',
    });
    expect(told.response.status, JSON.stringify(told.error)).toBe(200);
    expect(told.run!.toolCalls[0]).toMatchObject({
      name: 'memory_append',
      result: { label: 'facts', scope: 'user', value: 'Prefers answers in French.', chars: 26, limit: 5000 },
    });
    const conversationId = told.run!.conversationId;
    const conversation = await t.api(key).GET('/api/v1/conversations/{id}', { params: { path: { id: conversationId } } });
    expect(conversation.data!.userId).toBe('alice');

    const alice = await systemPrompt(agent.id, { userId: 'alice' });
    expect(alice).toContain('<memory label="facts" scope="user">\nPrefers answers in French.\n</memory>');
    expect(alice).toContain('memory_append adds to a block');
    // Another user, and a conversation with no user named, are not told.
    expect(await systemPrompt(agent.id, { userId: 'bob' })).not.toContain('French');
    expect(await systemPrompt(agent.id)).not.toContain('French');
    // Nor is another agent's user of the same id.
    expect(await systemPrompt((await rememberer()).id, { userId: 'alice' })).not.toContain('French');

    // A message posted to the user's conversation is answered with the user's memory too.
    const posted = await t.api(key).POST('/api/v1/conversations/{id}/messages', {
      params: { path: { id: conversationId } },
      body: { content: '/system' },
    });
    expect(posted.response.status, JSON.stringify(posted.error)).toBe(200);
    expect(posted.data).toMatchObject({ message: { content: expect.stringContaining('Prefers answers in French.') } });

    // Streamed runs take the user as well.
    const streamed = await t.api(key).POST('/api/v1/agents/{id}/stream', {
      params: { path: { id: agent.id } },
      body: { message: '/system', userId: 'alice' },
      parseAs: 'text',
    });
    expect(streamed.response.status).toBe(200);
    expect(streamed.data).toContain('French.');
  });

  it('keeps a conversation with one user: another userId is refused, and none named keeps it', async () => {
    const agent = await rememberer();
    const first = await execute(agent.id, { message: 'hello', userId: 'carol' });
    expect(first.response.status).toBe(200);
    const { conversationId } = first.run!;
    expectProblem(await execute(agent.id, { message: 'hi', conversationId, userId: 'dave' }), 409, 'conversation_user_mismatch');
    expect((await execute(agent.id, { message: 'hi', conversationId, userId: 'carol' })).response.status).toBe(200);
    expect((await execute(agent.id, { message: 'hi', conversationId })).response.status).toBe(200);
    const noUser = await execute(agent.id, { message: 'hello' });
    expectProblem(
      await execute(agent.id, { message: 'hi', conversationId: noUser.run!.conversationId, userId: 'carol' }),
      409,
      'conversation_user_mismatch',
    );

    const listed = await t.api(key).GET('/api/v1/conversations', { params: { query: { agentId: agent.id, userId: 'carol' } } });
    expect(listed.response.status).toBe(200);
    expect(listed.data!.conversations.map((c) => c.id)).toEqual([conversationId]);
    const created = await t.api(key).POST('/api/v1/conversations', { body: { agentId: agent.id, userId: 'erin' } });
    expect(created.response.status, JSON.stringify(created.error)).toBe(201);
    expect(created.data!.userId).toBe('erin');
    expectProblem(await execute(agent.id, { message: 'hi', userId: 'has space' }), 400, 'validation_failed');
    expectProblem(await t.api(key).GET('/api/v1/conversations', { params: { query: { userId: 'a/b' } } }), 400, 'validation_failed');
  });
});

describe('the memory tools', () => {
  it('append, replace and read the user’s blocks, each change a version naming its run, and audited', async () => {
    const agent = await rememberer();
    const user = { userId: 'frank' };
    await callTool(agent.id, 'memory_append', { label: 'prefs', text: 'Likes tea.' }, user);
    const appended = await execute(agent.id, { message: tool('memory_append', { label: 'prefs', text: 'Lives in Oslo.' }), ...user });
    expect(appended.run!.toolCalls[0].result).toMatchObject({ value: 'Likes tea.\nLives in Oslo.' });
    expect(await callTool(agent.id, 'memory_replace', { label: 'prefs', old: 'tea', new: 'green tea' }, user)).toMatchObject({
      value: 'Likes green tea.\nLives in Oslo.',
    });
    expect(await callTool(agent.id, 'memory_read', {}, user)).toEqual({
      blocks: [{ label: 'prefs', scope: 'user', value: 'Likes green tea.\nLives in Oslo.', chars: 31, limit: 5000 }],
    });

    // What the model cannot do is its tool's error, for it to read.
    expect(await callTool(agent.id, 'memory_replace', { label: 'prefs', old: 'coffee', new: 'x' }, user)).toMatchObject({
      error: { code: 'text_not_found' },
    });
    expect(await callTool(agent.id, 'memory_replace', { label: 'prefs', old: 'e', new: 'x' }, user)).toMatchObject({
      error: { code: 'text_ambiguous' },
    });
    expect(await callTool(agent.id, 'memory_replace', { label: 'nothing', old: 'a', new: 'b' }, user)).toMatchObject({
      error: { code: 'not_found' },
    });
    expect(await callTool(agent.id, 'memory_read', { label: 'nothing' }, user)).toMatchObject({ error: { code: 'not_found' } });
    expect(await callTool(agent.id, 'memory_append', { label: 'bad label!', text: 'x' }, user)).toMatchObject({
      error: { code: 'invalid_tool_call' },
    });

    const block = await getBlock(agent.id, 'prefs', 'frank');
    expect(block.response.status, JSON.stringify(block.error)).toBe(200);
    expect(block.data).toMatchObject({
      label: 'prefs',
      userId: 'frank',
      value: 'Likes green tea.\nLives in Oslo.',
      version: 3,
      updatedBy: { type: 'agent', id: agent.id },
    });
    // Agent-wide, the agent has no blocks.
    expect((await listBlocks(agent.id)).data!.blocks).toEqual([]);

    const versions = await versionsOf(agent.id, 'prefs', { userId: 'frank' });
    expect(versions.response.status, JSON.stringify(versions.error)).toBe(200);
    expect(versions.data!.total).toBe(3);
    expect(versions.data!.versions.map((v) => [v.version, v.change])).toEqual([
      [3, 'replaced'],
      [2, 'appended'],
      [1, 'created'],
    ]);
    expect(versions.data!.versions[1]).toMatchObject({
      value: 'Likes tea.\nLives in Oslo.',
      previousValue: 'Likes tea.',
      actor: { type: 'agent', id: agent.id },
      runId: appended.run!.runId,
    });
    expect(versions.data!.versions[2].previousValue).toBeNull();

    const audit = await t.api(key).GET('/api/v1/audit-events', { params: { query: { resourceType: 'memory_block', actorId: agent.id } } });
    expect(audit.response.status, JSON.stringify(audit.error)).toBe(200);
    const events = audit.data!.events.filter((e) => e.detail.agentId === agent.id);
    expect(events.map((e) => e.action).sort()).toEqual(['memory_block.created', 'memory_block.updated', 'memory_block.updated']);
    expect(events.find((e) => e.detail.version === 2)).toMatchObject({
      actorType: 'agent',
      detail: { userId: 'frank', label: 'prefs', change: 'appended', runId: appended.run!.runId },
    });
  });

  it('in a user’s conversation change only that user’s blocks; without a user, the agent’s own', async () => {
    const agent = await rememberer();
    expect((await putBlock(agent.id, 'persona', { value: 'You are Rex.' })).response.status).toBe(201);
    expect(await callTool(agent.id, 'memory_append', { label: 'persona', text: 'Be kind.' }, { userId: 'gina' })).toMatchObject({
      error: { code: 'memory_block_read_only' },
    });
    expect(await callTool(agent.id, 'memory_append', { label: 'persona', text: 'Be kind.' })).toMatchObject({
      scope: 'agent',
      value: 'You are Rex.\nBe kind.',
    });
    // Every user's runs see the agent's own blocks, before the user's.
    await callTool(agent.id, 'memory_append', { label: 'about', text: 'Gina plays chess.' }, { userId: 'gina' });
    const prompt = await systemPrompt(agent.id, { userId: 'gina' });
    expect(prompt.indexOf('<memory label="persona" scope="agent">\nYou are Rex.\nBe kind.\n</memory>')).toBeGreaterThan(-1);
    expect(prompt.indexOf('scope="agent"')).toBeLessThan(prompt.indexOf('<memory label="about" scope="user">'));
    expect(await callTool(agent.id, 'memory_read', {}, { userId: 'gina' })).toMatchObject({
      blocks: [
        { label: 'persona', scope: 'agent' },
        { label: 'about', scope: 'user' },
      ],
    });
  });

  it('are offered only to agents listing the memory group, but every agent’s blocks are in its prompt', async () => {
    const plain = await t.agent(key, { name: 'Plain', systemPrompt: 'Be brief.' });
    expect(await callTool(plain.id, 'memory_append', { label: 'x', text: 'y' })).toMatchObject({ error: { code: 'invalid_tool_call' } });
    expect(await systemPrompt(plain.id)).toBe('Be brief.');
    await putBlock(plain.id, 'persona', { value: 'You are Plain.' });
    const prompt = await systemPrompt(plain.id);
    expect(prompt).toContain('Be brief.\n\n# Memory');
    expect(prompt).toContain('<memory label="persona" scope="agent">\nYou are Plain.\n</memory>');
    // Without the tools, nothing says how to change them.
    expect(prompt).not.toContain('memory_append');
    expect(await systemPrompt((await rememberer()).id)).toBe('');
  });

  it('hold a block to its size: an append past it is refused and leaves the block as it was', async () => {
    const agent = await rememberer();
    const big = 'x'.repeat(4_990);
    await callTool(agent.id, 'memory_append', { label: 'notes', text: big }, { userId: 'hank' });
    expect(await callTool(agent.id, 'memory_append', { label: 'notes', text: 'one more line' }, { userId: 'hank' })).toMatchObject({
      error: { code: 'memory_block_full', message: expect.stringContaining('5004 characters') },
    });
    expect(await callTool(agent.id, 'memory_append', { label: 'notes', text: 'y'.repeat(5_001) }, { userId: 'hank' })).toMatchObject({
      error: { code: 'invalid_tool_call' },
    });
    const block = await getBlock(agent.id, 'notes', 'hank');
    expect(block.data).toMatchObject({ value: big, version: 1, chars: 4_990 });
    // Characters are counted as people count them: an emoji is one.
    const emoji = '🙂'.repeat(5_000);
    expect((await putBlock(agent.id, 'emoji', { value: emoji })).response.status).toBe(201);
    expect(await callTool(agent.id, 'memory_append', { label: 'emoji', text: '!' })).toMatchObject({
      error: { code: 'memory_block_full' },
    });
  });

  it('lose no change when several runs write the same block at once', async () => {
    const agent = await rememberer();
    const lines = ['one', 'two', 'three', 'four'];
    const results = await Promise.all(lines.map((text) => callTool(agent.id, 'memory_append', { label: 'log', text }, { userId: 'olga' })));
    expect(results.every((r) => r.error === undefined)).toBe(true);
    const block = (await getBlock(agent.id, 'log', 'olga')).data!;
    expect(block.value.split('\n').sort()).toEqual([...lines].sort());
    expect(block.version).toBe(4);
    const versions = (await versionsOf(agent.id, 'log', { userId: 'olga' })).data!.versions;
    expect(versions.map((v) => v.version)).toEqual([4, 3, 2, 1]);
    expect(versions.map((v) => v.change).sort()).toEqual(['appended', 'appended', 'appended', 'created']);
  });

  it('are refused by a TBAC deny, changing nothing', async () => {
    const agent = await rememberer();
    const policy = await t.api(key).POST('/api/v1/identity/tbac/policies', {
      body: { callerAgentId: agent.id, calleeAgentId: agent.id, toolName: 'memory_append', effect: 'deny' },
    });
    expect(policy.response.status, JSON.stringify(policy.error)).toBe(201);
    expect(await callTool(agent.id, 'memory_append', { label: 'facts', text: 'secret' }, { userId: 'ivy' })).toMatchObject({
      error: { code: 'access_denied', message: expect.stringContaining('policy_deny') },
    });
    expectProblem(await getBlock(agent.id, 'facts', 'ivy'), 404, 'not_found');
    // Other tools, not named by the policy, still answer.
    expect(await callTool(agent.id, 'memory_read', {}, { userId: 'ivy' })).toEqual({ blocks: [] });
  });

  it('are refused by a TBAC deny only while its conditions hold on the app clock', async () => {
    const clock = new ManualClock();
    const m = await startApp({}, { clock });
    try {
      const { key: k } = await m.tenant();
      const agent = await m.agent(k, { name: 'Rememberer', tools: MEMORY_TOOLS });
      const policy = await m.api(k).POST('/api/v1/identity/tbac/policies', {
        body: {
          callerAgentId: agent.id,
          calleeAgentId: agent.id,
          toolName: 'memory_append',
          effect: 'deny',
          conditions: { notAfter: new Date(clock.now() + 60_000).toISOString() },
        },
      });
      expect(policy.response.status, JSON.stringify(policy.error)).toBe(201);
      const append = async () => {
        const res = await executeOn(m.api(k), agent.id, { message: tool('memory_append', { label: 'facts', text: 'later' }) });
        expect(res.response.status, JSON.stringify(res.error)).toBe(200);
        return res.run!.toolCalls[0].result as Record<string, unknown>;
      };
      expect(await append()).toMatchObject({ error: { code: 'access_denied', message: expect.stringContaining('policy_deny') } });
      clock.advance(120_000);
      expect((await append()).error).toBeUndefined();
    } finally {
      await m.close();
    }
  });
});

describe('/api/v1/agents/:id/memory', () => {
  it('sets, reads, versions and deletes a block; the same text again changes nothing', async () => {
    const agent = await rememberer();
    const made = await putBlock(agent.id, 'persona', { value: 'You are Ada.' });
    expect(made.response.status, JSON.stringify(made.error)).toBe(201);
    expect(made.data).toMatchObject({ label: 'persona', userId: null, value: 'You are Ada.', chars: 12, limit: 5000, version: 1 });
    expect(made.data!.updatedBy.type).toBe('api_key');
    const same = await putBlock(agent.id, 'persona', { value: 'You are Ada.' });
    expect(same.response.status).toBe(200);
    expect(same.data!.version).toBe(1);
    const changed = await putBlock(agent.id, 'persona', { value: 'You are Ada, terse.', version: 1 });
    expect(changed.response.status).toBe(200);
    expect(changed.data!.version).toBe(2);
    expectProblem(await putBlock(agent.id, 'persona', { value: 'stale', version: 1 }), 409, 'version_mismatch');
    const list = await listBlocks(agent.id);
    expect(list.data).toEqual({ blocks: [changed.data], limits: { maxBlocks: 16, maxChars: 5000 } });

    expect((await deleteBlock(agent.id, 'persona')).response.status).toBe(204);
    expectProblem(await getBlock(agent.id, 'persona'), 404, 'not_found');
    expectProblem(await deleteBlock(agent.id, 'persona'), 404, 'not_found');
    // Made again, the label's history goes on.
    const again = await putBlock(agent.id, 'persona', { value: 'You are Ada again.' });
    expect(again.response.status).toBe(201);
    expect(again.data!.version).toBe(4);
    const versions = await versionsOf(agent.id, 'persona', { limit: 2, page: 2 });
    expect(versions.data).toMatchObject({ total: 4, page: 2, limit: 2 });
    expect(versions.data!.versions).toMatchObject([
      { version: 2, change: 'set', value: 'You are Ada, terse.', previousValue: 'You are Ada.' },
      { version: 1, change: 'created', value: 'You are Ada.', previousValue: null, runId: null },
    ]);
    const deleted = (await versionsOf(agent.id, 'persona')).data!.versions[1];
    expect(deleted).toMatchObject({ version: 3, change: 'deleted', value: null, previousValue: 'You are Ada, terse.' });
    expectProblem(await versionsOf(agent.id, 'never'), 404, 'not_found');

    const audit = await t.api(key).GET('/api/v1/audit-events', {
      params: { query: { resourceType: 'memory_block', action: 'memory_block.deleted' } },
    });
    expect(audit.data!.events.some((e) => e.detail.agentId === agent.id)).toBe(true);
  });

  it('keeps each user’s blocks apart from the agent’s own', async () => {
    const agent = await rememberer();
    await putBlock(agent.id, 'prefs', { value: 'Jo: metric units.' }, 'jo');
    await putBlock(agent.id, 'prefs', { value: 'Everyone: be brief.' });
    expect((await listBlocks(agent.id, 'jo')).data!.blocks).toMatchObject([{ label: 'prefs', userId: 'jo', value: 'Jo: metric units.' }]);
    expect((await listBlocks(agent.id)).data!.blocks).toMatchObject([{ label: 'prefs', userId: null, value: 'Everyone: be brief.' }]);
    expectProblem(await getBlock(agent.id, 'prefs', 'kim'), 404, 'not_found');
    expect((await deleteBlock(agent.id, 'prefs', 'jo')).response.status).toBe(204);
    expect((await getBlock(agent.id, 'prefs')).response.status).toBe(200);
  });

  it('holds a scope to 16 blocks', async () => {
    const agent = await rememberer();
    for (let i = 0; i < 16; i++) {
      expect((await putBlock(agent.id, `b${i}`, { value: `${i}` }, 'lee')).response.status).toBe(201);
    }
    expectProblem(await putBlock(agent.id, 'b16', { value: 'x' }, 'lee'), 409, 'memory_block_limit');
    // Changing one of them is not a new block; other scopes have their own count.
    expect((await putBlock(agent.id, 'b0', { value: 'changed' }, 'lee')).response.status).toBe(200);
    expect((await putBlock(agent.id, 'b16', { value: 'x' })).response.status).toBe(201);
    expect(await callTool(agent.id, 'memory_append', { label: 'b17', text: 'x' }, { userId: 'lee' })).toMatchObject({
      error: { code: 'memory_block_limit' },
    });
  });

  it('holds a scope to 16 blocks when new blocks are created at once', async () => {
    const agent = await rememberer();
    for (let i = 0; i < 14; i++) {
      expect((await putBlock(agent.id, `b${i}`, { value: `${i}` }, 'ana')).response.status).toBe(201);
    }
    const created = await Promise.all(Array.from({ length: 10 }, (_, i) => putBlock(agent.id, `new${i}`, { value: 'x' }, 'ana')));
    const statuses = created.map((res) => res.response.status).sort();
    expect(statuses).toEqual([201, 201, ...Array(8).fill(409)]);
    for (const res of created.filter((r) => r.response.status === 409)) expectProblem(res, 409, 'memory_block_limit');
    const listed = await listBlocks(agent.id, 'ana');
    expect(listed.data!.blocks.filter((b) => b.userId === 'ana')).toHaveLength(16);
  });

  it('makes one block of a label written twice at once in a scope one short of its limit; the other write changes it', async () => {
    const agent = await rememberer();
    for (let i = 0; i < 15; i++) {
      expect((await putBlock(agent.id, `b${i}`, { value: `${i}` }, 'bo')).response.status).toBe(201);
    }
    const writes = await Promise.all(['first', 'second'].map((value) => putBlock(agent.id, 'last', { value }, 'bo')));
    expect(writes.map((res) => res.response.status).sort()).toEqual([200, 201]);
    const block = await getBlock(agent.id, 'last', 'bo');
    expect(block.data).toMatchObject({ version: 2 });
  });

  it('answers 400 naming the field, 403 without the permission, 404 for another tenant’s agent', async () => {
    const agent = await rememberer();
    const bad = async (request: Promise<Response | ApiResult>, path: string) => {
      const res = await request;
      expectProblem(res, 400, 'validation_failed');
      expect('response' in res ? JSON.stringify(res.error) : res.text).toContain(path);
    };
    await bad(putBlock(agent.id, 'per sona', { value: 'x' }), 'label');
    await bad(putBlock(agent.id, 'x'.repeat(65), { value: 'x' }), 'label');
    await bad(putBlock(agent.id, 'persona', { value: 'x'.repeat(5_001) }), 'value');
    // Bodies the types forbid (an unknown field, no value): raw.
    await bad(t.raw('PUT', `/api/v1/agents/${agent.id}/memory/persona`, { key, body: { value: 'x', extra: 1 } }), 'extra');
    await bad(t.raw('PUT', `/api/v1/agents/${agent.id}/memory/persona`, { key, body: {} }), 'value');
    await bad(putBlock(agent.id, 'persona', { value: 'x' }, 'a b'), 'userId');
    await bad(listBlocks(agent.id, 'u'.repeat(129)), 'userId');

    const reader = await t.key(key, ['agents:read']);
    expect((await listBlocks(agent.id, undefined, reader)).response.status).toBe(200);
    expectProblem(await putBlock(agent.id, 'persona', { value: 'x' }, undefined, reader), 403, 'forbidden');
    expectProblem(await deleteBlock(agent.id, 'persona', undefined, reader), 403, 'forbidden');
    const writerOnly = await t.key(key, ['skills:read']);
    expectProblem(await listBlocks(agent.id, undefined, writerOnly), 403, 'forbidden');

    expectProblem(await listBlocks(agent.id, undefined, otherKey), 404, 'not_found');
    expectProblem(await putBlock(agent.id, 'persona', { value: 'x' }, undefined, otherKey), 404, 'not_found');
    expectProblem(await listBlocks('00000000-0000-7000-8000-000000000000'), 404, 'not_found');
    expectProblem(await t.api().GET('/api/v1/agents/{id}/memory', { params: { path: { id: agent.id } } }), 401, 'missing_credentials');
  });

  it('is dropped with its agent', async () => {
    const agent = await rememberer();
    await putBlock(agent.id, 'persona', { value: 'gone soon' });
    await callTool(agent.id, 'memory_append', { label: 'facts', text: 'gone too' }, { userId: 'max' });
    expect((await t.api(key).DELETE('/api/v1/agents/{id}', { params: { path: { id: agent.id } } })).response.status).toBe(204);
    expect(await t.services.memory.forRun(tenantId, agent.id, 'max')).toEqual([]);
    expectProblem(await listBlocks(agent.id), 404, 'not_found');
  });
});

describe('across replicas', () => {
  it('a fact one replica’s run remembers is in the prompt of the next run on another, once it is told of the write', async () => {
    const { replicas, close } = await startReplicas(2);
    try {
      const call = async (i: number, url: string, k: string, body: unknown) => {
        const res = await replicas[i].app.inject({
          method: 'POST',
          url,
          headers: { authorization: `Bearer ${k}` },
          payload: body as object,
        });
        expect(res.statusCode, res.body).toBe(200);
        return JSON.parse(res.body);
      };
      const { apiKey } = await replicas[0].services.tenancy.createTenant('replicated');
      const agent = await replicas[0].app.inject({
        method: 'POST',
        url: '/api/v1/agents',
        headers: { authorization: `Bearer ${apiKey}` },
        payload: { name: 'R', appId: 'x', tools: MEMORY_TOOLS },
      });
      const agentId = JSON.parse(agent.body).id;
      const prompt = async (i: number) =>
        (await call(i, `/api/v1/agents/${agentId}/execute`, apiKey, { message: '/system', userId: 'nia' })).output;
      // Replica 1 has read (and kept) the user's memory: none yet.
      expect(await prompt(1)).toBe('');
      const stamp = replicas[1].db.changes.stamp('memory_blocks');
      await call(0, `/api/v1/agents/${agentId}/execute`, apiKey, {
        message: tool('memory_append', { label: 'facts', text: 'Nia is vegetarian.' }),
        userId: 'nia',
      });
      // PostgreSQL: the write's notification reaches replica 1; SQLite: the shared file's data_version moves.
      await expect.poll(() => replicas[1].db.changes.stamp('memory_blocks'), { timeout: 10_000, interval: 5 }).not.toBe(stamp);
      expect(await prompt(1)).toContain('<memory label="facts" scope="user">\nNia is vegetarian.\n</memory>');
    } finally {
      await close();
    }
  });
});
