import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectProblem, startApp, startReplicas, type TestApp } from '../helpers/app.js';

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

const execute = (agentId: string, body: Record<string, unknown>, k = key) =>
  t.request('POST', `/api/v1/agents/${agentId}/execute`, { key: k, body });
/** What the model is told: builtin/echo answers /system with its system prompt. */
const systemPrompt = async (agentId: string, extra: Record<string, unknown> = {}) => {
  const res = await execute(agentId, { message: '/system', ...extra });
  expect(res.status, res.text).toBe(200);
  return res.body.output as string;
};
const tool = (name: string, input: Record<string, unknown>) => `/tool ${name} ${JSON.stringify(input)}`;
/** The one tool call's result of an execute whose message is that call. */
const callTool = async (agentId: string, name: string, input: Record<string, unknown>, extra: Record<string, unknown> = {}) => {
  const res = await execute(agentId, { message: tool(name, input), ...extra });
  expect(res.status, res.text).toBe(200);
  expect(res.body.toolCalls).toHaveLength(1);
  return res.body.toolCalls[0].result;
};
const memoryUrl = (agentId: string, label?: string, query = '') =>
  `/api/v1/agents/${agentId}/memory${label === undefined ? '' : `/${label}`}${query}`;

describe('a fact told in one conversation', () => {
  it('reaches new conversations of the same user, and no other user’s', async () => {
    const agent = await rememberer();
    const told = await execute(agent.id, {
      message: tool('memory_append', { label: 'facts', text: 'Prefers answers in French.' }),
      userId: 'alice',
    });
    expect(told.status, told.text).toBe(200);
    expect(told.body.toolCalls[0]).toMatchObject({
      name: 'memory_append',
      result: { label: 'facts', scope: 'user', value: 'Prefers answers in French.', chars: 26, limit: 5000 },
    });
    const conversation = await t.request('GET', `/api/v1/conversations/${told.body.conversationId}`, { key });
    expect(conversation.body.userId).toBe('alice');

    const alice = await systemPrompt(agent.id, { userId: 'alice' });
    expect(alice).toContain('<memory label="facts" scope="user">\nPrefers answers in French.\n</memory>');
    expect(alice).toContain('memory_append adds to a block');
    // Another user, and a conversation with no user named, are not told.
    expect(await systemPrompt(agent.id, { userId: 'bob' })).not.toContain('French');
    expect(await systemPrompt(agent.id)).not.toContain('French');
    // Nor is another agent's user of the same id.
    expect(await systemPrompt((await rememberer()).id, { userId: 'alice' })).not.toContain('French');

    // A message posted to the user's conversation is answered with the user's memory too.
    const posted = await t.request('POST', `/api/v1/conversations/${told.body.conversationId}/messages`, {
      key,
      body: { content: '/system' },
    });
    expect(posted.status, posted.text).toBe(200);
    expect(posted.body.message.content).toContain('Prefers answers in French.');

    // Streamed runs take the user as well.
    const streamed = await t.request('POST', `/api/v1/agents/${agent.id}/stream`, { key, body: { message: '/system', userId: 'alice' } });
    expect(streamed.status).toBe(200);
    expect(streamed.text).toContain('French.');
  });

  it('keeps a conversation with one user: another userId is refused, and none named keeps it', async () => {
    const agent = await rememberer();
    const first = await execute(agent.id, { message: 'hello', userId: 'carol' });
    expect(first.status).toBe(200);
    const { conversationId } = first.body;
    expectProblem(await execute(agent.id, { message: 'hi', conversationId, userId: 'dave' }), 409, 'conversation_user_mismatch');
    expect((await execute(agent.id, { message: 'hi', conversationId, userId: 'carol' })).status).toBe(200);
    expect((await execute(agent.id, { message: 'hi', conversationId })).status).toBe(200);
    const noUser = await execute(agent.id, { message: 'hello' });
    expectProblem(
      await execute(agent.id, { message: 'hi', conversationId: noUser.body.conversationId, userId: 'carol' }),
      409,
      'conversation_user_mismatch',
    );

    const listed = await t.request('GET', `/api/v1/conversations?agentId=${agent.id}&userId=carol`, { key });
    expect(listed.status).toBe(200);
    expect(listed.body.conversations.map((c: { id: string }) => c.id)).toEqual([conversationId]);
    const created = await t.request('POST', '/api/v1/conversations', { key, body: { agentId: agent.id, userId: 'erin' } });
    expect(created.status, created.text).toBe(201);
    expect(created.body.userId).toBe('erin');
    expectProblem(await execute(agent.id, { message: 'hi', userId: 'has space' }), 400, 'validation_failed');
    expectProblem(await t.request('GET', '/api/v1/conversations?userId=a%2Fb', { key }), 400, 'validation_failed');
  });
});

describe('the memory tools', () => {
  it('append, replace and read the user’s blocks, each change a version naming its run, and audited', async () => {
    const agent = await rememberer();
    const user = { userId: 'frank' };
    await callTool(agent.id, 'memory_append', { label: 'prefs', text: 'Likes tea.' }, user);
    const appended = await execute(agent.id, { message: tool('memory_append', { label: 'prefs', text: 'Lives in Oslo.' }), ...user });
    expect(appended.body.toolCalls[0].result.value).toBe('Likes tea.\nLives in Oslo.');
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

    const block = await t.request('GET', memoryUrl(agent.id, 'prefs', '?userId=frank'), { key });
    expect(block.status, block.text).toBe(200);
    expect(block.body).toMatchObject({
      label: 'prefs',
      userId: 'frank',
      value: 'Likes green tea.\nLives in Oslo.',
      version: 3,
      updatedBy: { type: 'agent', id: agent.id },
    });
    // Agent-wide, the agent has no blocks.
    expect((await t.request('GET', memoryUrl(agent.id), { key })).body.blocks).toEqual([]);

    const versions = await t.request('GET', memoryUrl(agent.id, 'prefs', '/versions?userId=frank'), { key });
    expect(versions.status, versions.text).toBe(200);
    expect(versions.body.total).toBe(3);
    expect(versions.body.versions.map((v: { version: number; change: string }) => [v.version, v.change])).toEqual([
      [3, 'replaced'],
      [2, 'appended'],
      [1, 'created'],
    ]);
    expect(versions.body.versions[1]).toMatchObject({
      value: 'Likes tea.\nLives in Oslo.',
      previousValue: 'Likes tea.',
      actor: { type: 'agent', id: agent.id },
      runId: appended.body.runId,
    });
    expect(versions.body.versions[2].previousValue).toBeNull();

    const audit = await t.request('GET', `/api/v1/audit-events?resourceType=memory_block&actorId=${agent.id}`, { key });
    expect(audit.status, audit.text).toBe(200);
    const events = audit.body.events.filter((e: { detail: { agentId: string } }) => e.detail.agentId === agent.id);
    expect(events.map((e: { action: string }) => e.action).sort()).toEqual([
      'memory_block.created',
      'memory_block.updated',
      'memory_block.updated',
    ]);
    expect(events.find((e: { detail: { version: number } }) => e.detail.version === 2)).toMatchObject({
      actorType: 'agent',
      detail: { userId: 'frank', label: 'prefs', change: 'appended', runId: appended.body.runId },
    });
  });

  it('in a user’s conversation change only that user’s blocks; without a user, the agent’s own', async () => {
    const agent = await rememberer();
    expect((await t.request('PUT', memoryUrl(agent.id, 'persona'), { key, body: { value: 'You are Rex.' } })).status).toBe(201);
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
    await t.request('PUT', memoryUrl(plain.id, 'persona'), { key, body: { value: 'You are Plain.' } });
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
    const block = await t.request('GET', memoryUrl(agent.id, 'notes', '?userId=hank'), { key });
    expect(block.body).toMatchObject({ value: big, version: 1, chars: 4_990 });
    // Characters are counted as people count them: an emoji is one.
    const emoji = '🙂'.repeat(5_000);
    expect((await t.request('PUT', memoryUrl(agent.id, 'emoji'), { key, body: { value: emoji } })).status).toBe(201);
    expect(await callTool(agent.id, 'memory_append', { label: 'emoji', text: '!' })).toMatchObject({
      error: { code: 'memory_block_full' },
    });
  });

  it('lose no change when several runs write the same block at once', async () => {
    const agent = await rememberer();
    const lines = ['one', 'two', 'three', 'four'];
    const results = await Promise.all(lines.map((text) => callTool(agent.id, 'memory_append', { label: 'log', text }, { userId: 'olga' })));
    expect(results.every((r) => r.error === undefined)).toBe(true);
    const block = (await t.request('GET', memoryUrl(agent.id, 'log', '?userId=olga'), { key })).body;
    expect(block.value.split('\n').sort()).toEqual([...lines].sort());
    expect(block.version).toBe(4);
    const versions = (await t.request('GET', memoryUrl(agent.id, 'log', '/versions?userId=olga'), { key })).body.versions;
    expect(versions.map((v: { version: number }) => v.version)).toEqual([4, 3, 2, 1]);
    expect(versions.map((v: { change: string }) => v.change).sort()).toEqual(['appended', 'appended', 'appended', 'created']);
  });

  it('are refused by a TBAC deny, changing nothing', async () => {
    const agent = await rememberer();
    const policy = await t.request('POST', '/api/v1/identity/tbac/policies', {
      key,
      body: { callerAgentId: agent.id, calleeAgentId: agent.id, toolName: 'memory_append', effect: 'deny' },
    });
    expect(policy.status, policy.text).toBe(201);
    expect(await callTool(agent.id, 'memory_append', { label: 'facts', text: 'secret' }, { userId: 'ivy' })).toMatchObject({
      error: { code: 'access_denied', message: expect.stringContaining('policy_deny') },
    });
    expectProblem(await t.request('GET', memoryUrl(agent.id, 'facts', '?userId=ivy'), { key }), 404, 'not_found');
    // Other tools, not named by the policy, still answer.
    expect(await callTool(agent.id, 'memory_read', {}, { userId: 'ivy' })).toEqual({ blocks: [] });
  });
});

describe('/api/v1/agents/:id/memory', () => {
  it('sets, reads, versions and deletes a block; the same text again changes nothing', async () => {
    const agent = await rememberer();
    const made = await t.request('PUT', memoryUrl(agent.id, 'persona'), { key, body: { value: 'You are Ada.' } });
    expect(made.status, made.text).toBe(201);
    expect(made.body).toMatchObject({ label: 'persona', userId: null, value: 'You are Ada.', chars: 12, limit: 5000, version: 1 });
    expect(made.body.updatedBy.type).toBe('api_key');
    const same = await t.request('PUT', memoryUrl(agent.id, 'persona'), { key, body: { value: 'You are Ada.' } });
    expect(same.status).toBe(200);
    expect(same.body.version).toBe(1);
    const changed = await t.request('PUT', memoryUrl(agent.id, 'persona'), { key, body: { value: 'You are Ada, terse.', version: 1 } });
    expect(changed.status).toBe(200);
    expect(changed.body.version).toBe(2);
    expectProblem(
      await t.request('PUT', memoryUrl(agent.id, 'persona'), { key, body: { value: 'stale', version: 1 } }),
      409,
      'version_mismatch',
    );
    const list = await t.request('GET', memoryUrl(agent.id), { key });
    expect(list.body).toEqual({ blocks: [changed.body], limits: { maxBlocks: 16, maxChars: 5000 } });

    expect((await t.request('DELETE', memoryUrl(agent.id, 'persona'), { key })).status).toBe(204);
    expectProblem(await t.request('GET', memoryUrl(agent.id, 'persona'), { key }), 404, 'not_found');
    expectProblem(await t.request('DELETE', memoryUrl(agent.id, 'persona'), { key }), 404, 'not_found');
    // Made again, the label's history goes on.
    const again = await t.request('PUT', memoryUrl(agent.id, 'persona'), { key, body: { value: 'You are Ada again.' } });
    expect(again.status).toBe(201);
    expect(again.body.version).toBe(4);
    const versions = await t.request('GET', memoryUrl(agent.id, 'persona', '/versions?limit=2&page=2'), { key });
    expect(versions.body).toMatchObject({ total: 4, page: 2, limit: 2 });
    expect(versions.body.versions).toMatchObject([
      { version: 2, change: 'set', value: 'You are Ada, terse.', previousValue: 'You are Ada.' },
      { version: 1, change: 'created', value: 'You are Ada.', previousValue: null, runId: null },
    ]);
    const deleted = (await t.request('GET', memoryUrl(agent.id, 'persona', '/versions'), { key })).body.versions[1];
    expect(deleted).toMatchObject({ version: 3, change: 'deleted', value: null, previousValue: 'You are Ada, terse.' });
    expectProblem(await t.request('GET', memoryUrl(agent.id, 'never', '/versions'), { key }), 404, 'not_found');

    const audit = await t.request('GET', '/api/v1/audit-events?resourceType=memory_block&action=memory_block.deleted', { key });
    expect(audit.body.events.some((e: { detail: { agentId: string } }) => e.detail.agentId === agent.id)).toBe(true);
  });

  it('keeps each user’s blocks apart from the agent’s own', async () => {
    const agent = await rememberer();
    await t.request('PUT', memoryUrl(agent.id, 'prefs', '?userId=jo'), { key, body: { value: 'Jo: metric units.' } });
    await t.request('PUT', memoryUrl(agent.id, 'prefs'), { key, body: { value: 'Everyone: be brief.' } });
    expect((await t.request('GET', memoryUrl(agent.id, undefined, '?userId=jo'), { key })).body.blocks).toMatchObject([
      { label: 'prefs', userId: 'jo', value: 'Jo: metric units.' },
    ]);
    expect((await t.request('GET', memoryUrl(agent.id), { key })).body.blocks).toMatchObject([
      { label: 'prefs', userId: null, value: 'Everyone: be brief.' },
    ]);
    expectProblem(await t.request('GET', memoryUrl(agent.id, 'prefs', '?userId=kim'), { key }), 404, 'not_found');
    expect((await t.request('DELETE', memoryUrl(agent.id, 'prefs', '?userId=jo'), { key })).status).toBe(204);
    expect((await t.request('GET', memoryUrl(agent.id, 'prefs'), { key })).status).toBe(200);
  });

  it('holds a scope to 16 blocks', async () => {
    const agent = await rememberer();
    for (let i = 0; i < 16; i++) {
      expect((await t.request('PUT', memoryUrl(agent.id, `b${i}`, '?userId=lee'), { key, body: { value: `${i}` } })).status).toBe(201);
    }
    expectProblem(
      await t.request('PUT', memoryUrl(agent.id, 'b16', '?userId=lee'), { key, body: { value: 'x' } }),
      409,
      'memory_block_limit',
    );
    // Changing one of them is not a new block; other scopes have their own count.
    expect((await t.request('PUT', memoryUrl(agent.id, 'b0', '?userId=lee'), { key, body: { value: 'changed' } })).status).toBe(200);
    expect((await t.request('PUT', memoryUrl(agent.id, 'b16'), { key, body: { value: 'x' } })).status).toBe(201);
    expect(await callTool(agent.id, 'memory_append', { label: 'b17', text: 'x' }, { userId: 'lee' })).toMatchObject({
      error: { code: 'memory_block_limit' },
    });
  });

  it('holds a scope to 16 blocks when new blocks are created at once', async () => {
    const agent = await rememberer();
    for (let i = 0; i < 14; i++) {
      expect((await t.request('PUT', memoryUrl(agent.id, `b${i}`, '?userId=ana'), { key, body: { value: `${i}` } })).status).toBe(201);
    }
    const created = await Promise.all(
      Array.from({ length: 10 }, (_, i) => t.request('PUT', memoryUrl(agent.id, `new${i}`, '?userId=ana'), { key, body: { value: 'x' } })),
    );
    const statuses = created.map((res) => res.status).sort();
    expect(statuses).toEqual([201, 201, ...Array(8).fill(409)]);
    for (const res of created.filter((r) => r.status === 409)) expectProblem(res, 409, 'memory_block_limit');
    const listed = await t.request('GET', memoryUrl(agent.id, undefined, '?userId=ana'), { key });
    expect(listed.body.blocks.filter((b: { userId: string | null }) => b.userId === 'ana')).toHaveLength(16);
  });

  it('makes one block of a label written twice at once in a scope one short of its limit; the other write changes it', async () => {
    const agent = await rememberer();
    for (let i = 0; i < 15; i++) {
      expect((await t.request('PUT', memoryUrl(agent.id, `b${i}`, '?userId=bo'), { key, body: { value: `${i}` } })).status).toBe(201);
    }
    const writes = await Promise.all(
      ['first', 'second'].map((value) => t.request('PUT', memoryUrl(agent.id, 'last', '?userId=bo'), { key, body: { value } })),
    );
    expect(writes.map((res) => res.status).sort()).toEqual([200, 201]);
    const block = await t.request('GET', memoryUrl(agent.id, 'last', '?userId=bo'), { key });
    expect(block.body).toMatchObject({ version: 2 });
  });

  it('answers 400 naming the field, 403 without the permission, 404 for another tenant’s agent', async () => {
    const agent = await rememberer();
    const bad = async (method: string, url: string, body: unknown, path: string) => {
      const res = await t.request(method, url, { key, body });
      expectProblem(res, 400, 'validation_failed');
      expect(res.text).toContain(path);
    };
    await bad('PUT', memoryUrl(agent.id, 'per sona'), { value: 'x' }, 'label');
    await bad('PUT', memoryUrl(agent.id, 'x'.repeat(65)), { value: 'x' }, 'label');
    await bad('PUT', memoryUrl(agent.id, 'persona'), { value: 'x'.repeat(5_001) }, 'value');
    await bad('PUT', memoryUrl(agent.id, 'persona'), { value: 'x', extra: 1 }, 'extra');
    await bad('PUT', memoryUrl(agent.id, 'persona'), {}, 'value');
    await bad('PUT', memoryUrl(agent.id, 'persona', '?userId=a%20b'), { value: 'x' }, 'userId');
    await bad('GET', memoryUrl(agent.id, undefined, `?userId=${'u'.repeat(129)}`), undefined, 'userId');

    const reader = await t.key(key, ['agents:read']);
    expect((await t.request('GET', memoryUrl(agent.id), { key: reader })).status).toBe(200);
    expectProblem(await t.request('PUT', memoryUrl(agent.id, 'persona'), { key: reader, body: { value: 'x' } }), 403, 'forbidden');
    expectProblem(await t.request('DELETE', memoryUrl(agent.id, 'persona'), { key: reader }), 403, 'forbidden');
    const writerOnly = await t.key(key, ['skills:read']);
    expectProblem(await t.request('GET', memoryUrl(agent.id), { key: writerOnly }), 403, 'forbidden');

    expectProblem(await t.request('GET', memoryUrl(agent.id), { key: otherKey }), 404, 'not_found');
    expectProblem(await t.request('PUT', memoryUrl(agent.id, 'persona'), { key: otherKey, body: { value: 'x' } }), 404, 'not_found');
    expectProblem(await t.request('GET', memoryUrl('00000000-0000-7000-8000-000000000000'), { key }), 404, 'not_found');
    expectProblem(await t.request('GET', memoryUrl(agent.id), {}), 401, 'missing_credentials');
  });

  it('is dropped with its agent', async () => {
    const agent = await rememberer();
    await t.request('PUT', memoryUrl(agent.id, 'persona'), { key, body: { value: 'gone soon' } });
    await callTool(agent.id, 'memory_append', { label: 'facts', text: 'gone too' }, { userId: 'max' });
    expect((await t.request('DELETE', `/api/v1/agents/${agent.id}`, { key })).status).toBe(204);
    expect(await t.services.memory.forRun(tenantId, agent.id, 'max')).toEqual([]);
    expectProblem(await t.request('GET', memoryUrl(agent.id), { key }), 404, 'not_found');
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
      while (replicas[1].db.changes.stamp('memory_blocks') === stamp) await new Promise((r) => setTimeout(r, 5));
      expect(await prompt(1)).toContain('<memory label="facts" scope="user">\nNia is vegetarian.\n</memory>');
    } finally {
      await close();
    }
  });
});
