import { Agentry, AgentryError, type RunEvent } from '@agentry/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApp, type TestApp } from '../helpers/app.js';

// The SDK (packages/client) over a real socket: a run pausing for a person as a typed event, and attachments.
let t: TestApp;
let client: Agentry;

beforeAll(async () => {
  t = await startApp();
  const { key } = await t.tenant();
  client = new Agentry({ baseUrl: await t.listen(), apiKey: key });
});
afterAll(() => t?.close());

describe('a stream that pauses for approval', () => {
  it('yields approval_required with its payload typed, stays open, and goes on to done once approved', async () => {
    const agent = await client.agents.create({
      name: 'Careful',
      appId: 'sdk-approvals',
      model: 'builtin/echo',
      tools: [{ type: 'builtin', name: 'skills' }],
      configuration: { approval: { rules: [{ tool: 'skill_discover', reason: 'look before searching' }] } },
    });
    const run = client.agents.stream(agent.id, { message: '/tool skill_discover {"query":"orders"}' });
    const events: RunEvent[] = [];
    for await (const event of run) {
      events.push(event);
      if (event.type === 'approval_required') {
        // Typed without a cast: what the console's chat and an SDK user read.
        const { approvalId, toolCall, reason, expiresAt } = event.data;
        expect(toolCall).toEqual({ id: expect.any(String), name: 'skill_discover', arguments: { query: 'orders' } });
        expect(reason).toBe('look before searching');
        expect(Date.parse(expiresAt)).toBeGreaterThan(Date.now());
        expect((await client.runs.get(await run.runId())).status).toBe('awaiting_approval');
        await client.http.json('POST', `/api/v1/approvals/${approvalId}/approve`, { body: {} });
      }
    }
    const types = events.map((e) => e.type);
    expect(types.indexOf('approval_required')).toBeGreaterThanOrEqual(0);
    expect(types.indexOf('tool_call_start')).toBeGreaterThan(types.indexOf('approval_required'));
    expect(types.at(-1)).toBe('done');
    const done = events.at(-1)!;
    if (done.type !== 'done') throw new Error('not done');
    expect(done.data.runId).toBe(await run.runId());
    expect(done.data.structuredOutput).toBeUndefined();
    expect((await client.runs.get(done.data.runId)).status).toBe('completed');

    // Replayed from the first event: the same approval_required, once.
    const replayed: RunEvent[] = [];
    for await (const event of client.runs.events(done.data.runId, { lastEventId: 0 })) replayed.push(event);
    expect(replayed.filter((e) => e.type === 'approval_required')).toEqual(events.filter((e) => e.type === 'approval_required'));
  });

  it('done carries structuredOutput when the run was asked for a responseFormat', async () => {
    const agent = await client.agents.create({ name: 'Shaped', appId: 'sdk-approvals', model: 'builtin/echo' });
    const schema = { type: 'object', properties: { city: { type: 'string' } }, required: ['city'], additionalProperties: false };
    const run = client.agents.stream(agent.id, { message: '{"city":"Lyon"}', responseFormat: { type: 'json_schema', schema } });
    let last: RunEvent | undefined;
    for await (const event of run) last = event;
    expect(last?.type).toBe('done');
    if (last?.type === 'done') expect(last.data.structuredOutput).toEqual({ city: 'Lyon' });
  });
});

describe('files', () => {
  it('uploads an attachment, reads it back, and a message names it', async () => {
    const text = 'order A-17: two mugs\n';
    const file = await client.files.upload(new Blob([text], { type: 'text/plain' }), { name: 'order.txt' });
    expect(file).toEqual({
      id: expect.any(String),
      name: 'order.txt',
      contentType: 'text/plain',
      size: text.length,
      createdAt: expect.any(String),
      // An upload: no run or tool call made it (a code execution's output names both).
      runId: null,
      toolCallId: null,
    });
    expect(await client.files.get(file.id)).toEqual(file);
    const listed: string[] = [];
    for await (const f of client.files.list()) listed.push(f.id);
    expect(listed).toContain(file.id);
    const ofNoRun: string[] = [];
    for await (const f of client.files.list({ runId: 'no-such-run' })) ofNoRun.push(f.id);
    expect(ofNoRun).toEqual([]);
    const content = await client.files.content(file.id);
    expect(await content.text()).toBe(text);
    expect(content.type).toBe('text/plain');

    // A File keeps its own name.
    const named = await client.files.upload(new File(['{"a":1}'], 'data.json', { type: 'application/json' }));
    expect(named).toMatchObject({ name: 'data.json', contentType: 'application/json', size: 7 });

    const agent = await client.agents.create({ name: 'Reader', appId: 'sdk-files', model: 'builtin/echo' });
    const answer = await client.agents.execute(agent.id, { message: 'read this', attachments: [file.id] });
    // builtin/echo repeats what the model read: the message, then the text attachment inline.
    expect(answer.output).toContain('two mugs');
    const messages = [];
    for await (const m of client.conversations.messages(answer.conversationId)) messages.push(m);
    expect(messages.find((m) => m.role === 'user')?.attachments).toEqual([file.id]);

    // Deleted: gone for the SDK too (404 as an AgentryError), a second delete as well.
    await client.files.delete(named.id);
    expect(await client.files.get(named.id).catch((err) => err)).toMatchObject({ status: 404, code: 'not_found' });
    expect(await client.files.delete(named.id).catch((err) => err)).toBeInstanceOf(AgentryError);
  });

  it('refuses a file over 5 MiB (413) and a message naming no file of the tenant (400 at its index)', async () => {
    const big = new Blob([new Uint8Array(5 * 1024 * 1024 + 1)], { type: 'application/octet-stream' });
    const tooLarge = await client.files.upload(big, { name: 'big.bin' }).catch((err) => err);
    expect(tooLarge).toBeInstanceOf(AgentryError);
    expect(tooLarge).toMatchObject({ status: 413, code: 'payload_too_large' });

    const agent = await client.agents.create({ name: 'Reader2', appId: 'sdk-files', model: 'builtin/echo' });
    const missing = await client.agents
      .execute(agent.id, { message: 'hi', attachments: ['01a00000-0000-7000-8000-000000000000'] })
      .catch((err) => err);
    expect(missing).toMatchObject({ status: 400, errors: [{ path: 'body.attachments.0', message: 'names no file of this tenant' }] });
  });
});
