import { parse as parseContentDisposition } from 'content-disposition';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectProblem, startApp, type TestApp } from '../helpers/app.js';

let t: TestApp;
let key: string;
let otherKey: string;
let agentId: string;

beforeAll(async () => {
  t = await startApp();
  ({ key } = await t.tenant('acme'));
  ({ key: otherKey } = await t.tenant('globex'));
  agentId = (await t.agent(key, { name: 'Helper', appId: 'support' })).id;
});
afterAll(() => t.close());

const createConversation = async (body: Record<string, unknown> = {}) => {
  const res = await t.request('POST', '/api/v1/conversations', { key, body: { agentId, ...body } });
  expect(res.status, res.text).toBe(201);
  return res.body;
};
const post = (id: string, content: string, k = key) =>
  t.request('POST', `/api/v1/conversations/${id}/messages`, { key: k, body: { content } });

describe('conversations', () => {
  it('creates, gets with participants, and lists with filters', async () => {
    const c = await createConversation({ name: 'Ticket 42', metadata: { ticket: 42, vip: true } });
    expect(c).toMatchObject({
      agentId,
      status: 'active',
      name: 'Ticket 42',
      appId: 'support',
      messageCount: 0,
      lastMessageAt: null,
      metadata: { ticket: 42, vip: true },
    });
    const got = await t.request('GET', `/api/v1/conversations/${c.id}`, { key });
    expect(got.body.participants).toEqual([
      { type: 'agent', id: agentId, name: 'Helper' },
      { type: 'user', id: expect.any(String), name: null },
    ]);
    expect(got.body.metadata).toEqual({ ticket: 42, vip: true });

    const archived = await createConversation({ name: 'old' });
    await t.request('PATCH', `/api/v1/conversations/${archived.id}`, { key, body: { status: 'archived' } });
    const active = await t.request('GET', `/api/v1/conversations?status=active&agentId=${agentId}`, { key });
    expect(active.body.conversations.map((x: { id: string }) => x.id)).toContain(c.id);
    expect(active.body.conversations.map((x: { id: string }) => x.id)).not.toContain(archived.id);
    const all = await t.request('GET', '/api/v1/conversations?limit=1', { key });
    expect(all.body).toMatchObject({ page: 1, limit: 1 });
    expect(all.body.total).toBeGreaterThanOrEqual(2);
    expect(Object.keys(all.body.conversations[0]).sort()).toEqual(
      ['agentId', 'appId', 'createdAt', 'id', 'lastMessageAt', 'messageCount', 'name', 'status', 'userId'].sort(),
    );
    expectProblem(await t.request('GET', '/api/v1/conversations?status=open', { key }), 400, 'validation_failed');
  });

  it('validates creation and refuses other tenants', async () => {
    expectProblem(await t.request('POST', '/api/v1/conversations', { key, body: {} }), 400, 'validation_failed');
    expectProblem(await t.request('POST', '/api/v1/conversations', { key: otherKey, body: { agentId } }), 404, 'not_found');
    const c = await createConversation();
    for (const [method, path, body] of [
      ['GET', `/api/v1/conversations/${c.id}`, undefined],
      ['GET', `/api/v1/conversations/${c.id}/messages`, undefined],
      ['POST', `/api/v1/conversations/${c.id}/messages`, { content: 'x' }],
      ['PATCH', `/api/v1/conversations/${c.id}`, { name: 'mine' }],
      ['DELETE', `/api/v1/conversations/${c.id}`, undefined],
      ['POST', `/api/v1/conversations/${c.id}/inject`, { content: 'x' }],
    ] as const) {
      expectProblem(await t.request(method, path, { key: otherKey, body }), 404, 'not_found');
    }
    expect((await t.request('GET', '/api/v1/conversations', { key: otherKey })).body.total).toBe(0);
  });

  it('posts messages and answers with the reply and its cost; counters follow', async () => {
    const c = await createConversation();
    const res = await post(c.id, 'what is up');
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      cost: 0,
      runId: expect.any(String),
      message: { role: 'assistant', content: 'what is up', toolCalls: [], tokenUsage: { inputTokens: 3, outputTokens: 3 } },
    });
    const got = await t.request('GET', `/api/v1/conversations/${c.id}`, { key });
    expect(got.body.messageCount).toBe(2);
    expect(got.body.lastMessageAt).toBe(res.body.message.createdAt);
    expectProblem(
      await t.request('POST', `/api/v1/conversations/${c.id}/messages`, { key, body: { content: '' } }),
      400,
      'validation_failed',
    );
  });

  it('a message with a responseFormat answers its structuredOutput; a wrong answer is 502 invalid_output, a bad schema 400', async () => {
    const c = await createConversation();
    const responseFormat = {
      type: 'json_schema',
      schema: { type: 'object', properties: { answer: { type: 'number' } }, required: ['answer'] },
    };
    const send = (content: string, format: unknown = responseFormat) =>
      t.request('POST', `/api/v1/conversations/${c.id}/messages`, { key, body: { content, responseFormat: format } });
    // builtin/echo is instructed with the schema and answers with the message.
    const ok = await send('{"answer": 42}');
    expect(ok.status, ok.text).toBe(200);
    expect(ok.body.structuredOutput).toEqual({ answer: 42 });
    expect(ok.body.message.content).toBe('{"answer": 42}');
    expect((await t.request('GET', `/api/v1/runs/${ok.body.runId}`, { key })).body.structuredOutput).toEqual({ answer: 42 });

    expectProblem(await send('no JSON here'), 502, 'invalid_output');
    const bad = await send('{"answer": 1}', { type: 'json_schema', schema: { type: 'array' } });
    expectProblem(bad, 400, 'validation_failed');
    expect(JSON.stringify(bad.body)).toContain('body.responseFormat.schema.type');
    // Without a format, no structuredOutput.
    expect((await post(c.id, '{"answer": 5}')).body).not.toHaveProperty('structuredOutput');
  });

  it('pages messages oldest first with a before cursor and hasMore', async () => {
    const c = await createConversation();
    for (let i = 1; i <= 5; i++) await post(c.id, `m${i}`);
    const newest = await t.request('GET', `/api/v1/conversations/${c.id}/messages?limit=4`, { key });
    expect(newest.body.hasMore).toBe(true);
    expect(newest.body.messages.map((m: { content: string; role: string }) => m.content)).toEqual(['m4', 'm4', 'm5', 'm5']);
    expect(newest.body.messages.map((m: { role: string }) => m.role)).toEqual(['user', 'assistant', 'user', 'assistant']);
    const older = await t.request('GET', `/api/v1/conversations/${c.id}/messages?limit=4&before=${newest.body.messages[0].id}`, { key });
    expect(older.body.messages.map((m: { content: string }) => m.content)).toEqual(['m2', 'm2', 'm3', 'm3']);
    expect(older.body.hasMore).toBe(true);
    const oldest = await t.request('GET', `/api/v1/conversations/${c.id}/messages?limit=4&before=${older.body.messages[0].id}`, { key });
    expect(oldest.body).toMatchObject({ hasMore: false });
    expect(oldest.body.messages.map((m: { content: string }) => m.content)).toEqual(['m1', 'm1']);
    const defaults = await t.request('GET', `/api/v1/conversations/${c.id}/messages`, { key });
    expect(defaults.body.messages).toHaveLength(10);
    expectProblem(await t.request('GET', `/api/v1/conversations/${c.id}/messages?limit=201`, { key }), 400, 'validation_failed');
    expectProblem(
      await t.request('GET', `/api/v1/conversations/${c.id}/messages?before=01a00000-0000-7000-8000-000000000000`, { key }),
      400,
      'validation_failed',
    );
  });

  it('moves between active, completed and archived; only active takes messages', async () => {
    const c = await createConversation();
    const done = await t.request('PATCH', `/api/v1/conversations/${c.id}`, {
      key,
      body: { status: 'completed', name: 'Resolved', metadata: { outcome: 'ok' } },
    });
    expect(done.body).toMatchObject({ status: 'completed', name: 'Resolved', metadata: { outcome: 'ok' } });
    expectProblem(await post(c.id, 'hello?'), 409, 'conversation_not_active');
    expectProblem(
      await t.request('POST', `/api/v1/agents/${agentId}/execute`, { key, body: { message: 'x', conversationId: c.id } }),
      409,
      'conversation_not_active',
    );
    await t.request('PATCH', `/api/v1/conversations/${c.id}`, { key, body: { status: 'active' } });
    expect((await post(c.id, 'back')).status).toBe(200);
    expectProblem(
      await t.request('PATCH', `/api/v1/conversations/${c.id}`, { key, body: { status: 'deleted' } }),
      400,
      'validation_failed',
    );
  });

  it('soft-deletes: gone from the API, kept in the audit trail', async () => {
    const c = await createConversation();
    await post(c.id, 'remember me');
    const del = await t.request('DELETE', `/api/v1/conversations/${c.id}`, { key });
    expect(del.status).toBe(204);
    expectProblem(await t.request('GET', `/api/v1/conversations/${c.id}`, { key }), 404, 'not_found');
    expectProblem(await t.request('GET', `/api/v1/conversations/${c.id}/messages`, { key }), 404, 'not_found');
    const list = await t.request('GET', '/api/v1/conversations?limit=100', { key });
    expect(list.body.conversations.map((x: { id: string }) => x.id)).not.toContain(c.id);
    const audit = await t.request('GET', `/api/v1/audit-events?resourceId=${c.id}`, { key });
    expect(audit.body.events.map((e: { action: string }) => e.action)).toEqual(['conversation.deleted', 'conversation.created']);
    const row = await t.db.kysely.selectFrom('messages').select('content').where('conversation_id', '=', c.id).execute();
    expect(row.map((r) => r.content)).toContain('remember me');
  });

  it('computes stats', async () => {
    const { key: k } = await t.tenant('stats');
    const a = (await t.agent(k, { name: 's', appId: 'x' })).id;
    const c1 = (await t.request('POST', '/api/v1/conversations', { key: k, body: { agentId: a } })).body.id;
    const c2 = (await t.request('POST', '/api/v1/conversations', { key: k, body: { agentId: a } })).body.id;
    await t.request('POST', '/api/v1/conversations', { key: k, body: { agentId: a } });
    await post(c1, 'one', k);
    await post(c1, 'two', k);
    await post(c2, 'three', k);
    await t.request('PATCH', `/api/v1/conversations/${c2}`, { key: k, body: { status: 'archived' } });
    const stats = await t.request('GET', '/api/v1/conversations/stats', { key: k });
    expect(stats.body).toMatchObject({
      total: 3,
      active: 2,
      completed: 0,
      archived: 1,
      totalMessages: 6,
      averageMessagesPerConversation: 2,
    });
    expect(stats.body.averageDurationMs).toBeGreaterThanOrEqual(0);
  });
});

describe('attachments', () => {
  async function upload(name: string, type: string, content: string | Buffer, k = key) {
    const form = new FormData();
    form.append('file', new Blob([content], { type }), name);
    const base = await t.listen();
    return fetch(`${base}/api/v1/files`, { method: 'POST', headers: { authorization: `Bearer ${k}` }, body: form });
  }

  it('uploads files whose text reaches the model with the message', async () => {
    const res = await upload('../../etc/notes.txt', 'text/plain', 'the secret word is banana');
    expect(res.status).toBe(201);
    const file = (await res.json()) as { id: string; name: string; size: number; contentType: string };
    expect(file).toMatchObject({ name: 'notes.txt', size: 25, contentType: 'text/plain' });
    const meta = await t.request('GET', `/api/v1/files/${file.id}`, { key });
    expect(meta.body.name).toBe('notes.txt');
    const content = await t.request('GET', `/api/v1/files/${file.id}/content`, { key });
    expect(content.text).toBe('the secret word is banana');

    const c = await createConversation();
    const reply = await t.request('POST', `/api/v1/conversations/${c.id}/messages`, {
      key,
      body: { content: 'read this', attachments: [file.id] },
    });
    expect(reply.status).toBe(200);
    // builtin/echo repeats what the model received: the message plus the attachment text.
    expect(reply.body.message.content).toContain('the secret word is banana');
    const msgs = await t.request('GET', `/api/v1/conversations/${c.id}/messages`, { key });
    expect(msgs.body.messages[0]).toMatchObject({ content: 'read this', attachments: [file.id] });

    const bin = (await (await upload('pic.png', 'image/png', Buffer.from([0x89, 0x50, 0x4e, 0x47]))).json()) as { id: string };
    const withBin = await t.request('POST', `/api/v1/conversations/${c.id}/messages`, {
      key,
      body: { content: 'and this', attachments: [bin.id] },
    });
    expect(withBin.body.message.content).toContain('[Attachment pic.png (image/png, 4 bytes): binary content not shown]');
  });

  it('downloads a file under its own name, whatever the script: RFC 6266 with an ASCII fallback and RFC 8187 filename*', async () => {
    const base = await t.listen();
    const names = [
      'отчёт 2026.pdf',
      '报告.txt',
      'a "quoted"; name.txt',
      'naïve “smart” ;quotes.txt',
      'café.txt',
      '100% done.txt',
      '🙂.txt',
      'plain.txt',
    ];
    for (const name of names) {
      const res = await upload(name, 'application/octet-stream', `content of ${name}`);
      expect(res.status, name).toBe(201);
      const file = (await res.json()) as { id: string; name: string };
      expect(file.name).toBe(name);
      const download = await fetch(`${base}/api/v1/files/${file.id}/content`, { headers: { authorization: `Bearer ${key}` } });
      expect(download.status, `${name}: ${download.status}`).toBe(200);
      expect(await download.text()).toBe(`content of ${name}`);
      const header = download.headers.get('content-disposition')!;
      // Headers are bytes: the value is plain ASCII, so no client has to guess its encoding.
      expect(header, name).toMatch(/^[\x20-\x7e]+$/);
      const parsed = parseContentDisposition(header);
      expect(parsed.type).toBe('attachment');
      expect(parsed.parameters.filename, header).toBe(name);
      if (!/^[\x20-\x7e]*$/.test(name)) {
        expect(header, name).toContain(`filename*=UTF-8''`);
        // The fallback for clients without RFC 8187: a plain filename parameter, before filename*.
        expect(header.indexOf('; filename=')).toBeLessThan(header.indexOf('; filename*='));
        expect(parseContentDisposition(header, { extended: false }).parameters.filename, header).toMatch(/^[\x20-\x7e]+$/);
      }
    }
  });

  it('deletes a file: 204, then 404 for it and its content; a message naming it keeps the id; only its tenant, with agents:write', async () => {
    const file = (await (await upload('draft.txt', 'text/plain', 'first draft')).json()) as { id: string };
    const c = await createConversation();
    const sent = await t.request('POST', `/api/v1/conversations/${c.id}/messages`, {
      key,
      body: { content: 'see', attachments: [file.id] },
    });
    expect(sent.status, sent.text).toBe(200);

    expectProblem(await t.request('DELETE', `/api/v1/files/${file.id}`, { key: otherKey }), 404, 'not_found');
    const reader = await t.key(key, ['agents:read']);
    expectProblem(await t.request('DELETE', `/api/v1/files/${file.id}`, { key: reader }), 403, 'forbidden');
    expect((await t.request('GET', `/api/v1/files/${file.id}`, { key })).status).toBe(200);

    const deleted = await t.request('DELETE', `/api/v1/files/${file.id}`, { key });
    expect(deleted.status, deleted.text).toBe(204);
    expect(deleted.text).toBe('');
    expectProblem(await t.request('GET', `/api/v1/files/${file.id}`, { key }), 404, 'not_found');
    expectProblem(await t.request('GET', `/api/v1/files/${file.id}/content`, { key }), 404, 'not_found');
    expectProblem(await t.request('DELETE', `/api/v1/files/${file.id}`, { key }), 404, 'not_found');
    const msgs = await t.request('GET', `/api/v1/conversations/${c.id}/messages`, { key });
    expect(msgs.body.messages[0]).toMatchObject({ content: 'see', attachments: [file.id] });
    const audit = await t.request('GET', `/api/v1/audit-events?resourceId=${file.id}`, { key });
    expect(audit.body.events.map((e: { action: string }) => e.action).sort()).toEqual(['file.deleted', 'file.uploaded']);
    expect(audit.body.events.find((e: { action: string }) => e.action === 'file.deleted').detail).toEqual({ name: 'draft.txt', size: 11 });
    expectProblem(await t.request('DELETE', `/api/v1/files/${'x'.repeat(65)}`, { key }), 400, 'validation_failed');
  });

  it('refuses unknown or foreign attachments, oversize files and non-multipart bodies', async () => {
    const foreign = (await (await upload('x.txt', 'text/plain', 'other', otherKey)).json()) as { id: string };
    const c = await createConversation();
    const res = await t.request('POST', `/api/v1/conversations/${c.id}/messages`, {
      key,
      body: { content: 'x', attachments: [foreign.id] },
    });
    expectProblem(res, 400, 'validation_failed');
    expect(res.body.errors).toEqual([{ path: 'body.attachments.0', message: 'names no file of this tenant' }]);
    expectProblem(await t.request('GET', `/api/v1/files/${foreign.id}`, { key }), 404, 'not_found');
    const big = await upload('big.txt', 'text/plain', Buffer.alloc(5 * 1024 * 1024 + 1, 97));
    expect(big.status).toBe(413);
    expect(((await big.json()) as { code: string }).code).toBe('payload_too_large');
    expectProblem(await t.request('POST', '/api/v1/files', { key, body: { file: 'x' } }), 415, 'unsupported_media_type');
  });
});
