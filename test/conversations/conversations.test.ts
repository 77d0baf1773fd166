import { parse as parseContentDisposition } from 'content-disposition';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { paths } from '../../packages/client/src/generated/openapi.js';
import { expectProblem, startApp, type TestApp } from '../helpers/app.js';
import { execute } from '../helpers/execute.js';

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

type ConversationInput = NonNullable<paths['/api/v1/conversations']['post']['requestBody']>['content']['application/json'];
type MessageInput = NonNullable<paths['/api/v1/conversations/{id}/messages']['post']['requestBody']>['content']['application/json'];

const createConversation = async (body: Partial<ConversationInput> = {}, k = key) => {
  const res = await t.api(k).POST('/api/v1/conversations', { body: { agentId, ...body } });
  expect(res.response.status, JSON.stringify(res.error)).toBe(201);
  return res.data!;
};
/** Posts a message; `reply` is the agent's answer when it is one (200), not a message injected into a running run (202). */
const send = async (id: string, body: MessageInput, k = key) => {
  const res = await t.api(k).POST('/api/v1/conversations/{id}/messages', { params: { path: { id } }, body });
  return { ...res, reply: res.data && 'message' in res.data ? res.data : undefined };
};
const post = (id: string, content: string, k = key) => send(id, { content }, k);
const conversation = (id: string) => t.api(key).GET('/api/v1/conversations/{id}', { params: { path: { id } } });
const update = (
  id: string,
  body: NonNullable<paths['/api/v1/conversations/{id}']['patch']['requestBody']>['content']['application/json'],
  k = key,
) => t.api(k).PATCH('/api/v1/conversations/{id}', { params: { path: { id } }, body });
const messages = (id: string, query: paths['/api/v1/conversations/{id}/messages']['get']['parameters']['query'] = {}) =>
  t.api(key).GET('/api/v1/conversations/{id}/messages', { params: { path: { id }, query } });
const auditOf = (resourceId: string) => t.api(key).GET('/api/v1/audit-events', { params: { query: { resourceId } } });
const fileOf = (id: string, k = key) => t.api(k).GET('/api/v1/files/{id}', { params: { path: { id } } });
const fileContent = (id: string) => t.api(key).GET('/api/v1/files/{id}/content', { params: { path: { id } }, parseAs: 'text' });
const deleteFile = (id: string, k = key) => t.api(k).DELETE('/api/v1/files/{id}', { params: { path: { id } } });

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
    const got = await conversation(c.id);
    expect(got.data!.participants).toEqual([
      { type: 'agent', id: agentId, name: 'Helper' },
      { type: 'user', id: expect.any(String), name: null },
    ]);
    expect(got.data!.metadata).toEqual({ ticket: 42, vip: true });

    const archived = await createConversation({ name: 'old' });
    await update(archived.id, { status: 'archived' });
    const active = await t.api(key).GET('/api/v1/conversations', { params: { query: { status: 'active', agentId } } });
    expect(active.data!.conversations.map((x) => x.id)).toContain(c.id);
    expect(active.data!.conversations.map((x) => x.id)).not.toContain(archived.id);
    const all = await t.api(key).GET('/api/v1/conversations', { params: { query: { limit: 1 } } });
    expect(all.data).toMatchObject({ page: 1, limit: 1 });
    expect(all.data!.total).toBeGreaterThanOrEqual(2);
    expect(Object.keys(all.data!.conversations[0]).sort()).toEqual(
      ['agentId', 'appId', 'createdAt', 'id', 'lastMessageAt', 'messageCount', 'name', 'status', 'userId'].sort(),
    );
    // A status the types forbid goes raw.
    expectProblem(await t.raw('GET', '/api/v1/conversations?status=open', { key }), 400, 'validation_failed');
  });

  it('validates creation and refuses other tenants', async () => {
    // A body without its agentId (which the types require) goes raw.
    expectProblem(await t.raw('POST', '/api/v1/conversations', { key, body: {} }), 400, 'validation_failed');
    expectProblem(await t.api(otherKey).POST('/api/v1/conversations', { body: { agentId } }), 404, 'not_found');
    const c = await createConversation();
    const other = t.api(otherKey);
    const theirs = { params: { path: { id: c.id } } };
    for (const call of [
      () => other.GET('/api/v1/conversations/{id}', theirs),
      () => other.GET('/api/v1/conversations/{id}/messages', theirs),
      () => other.POST('/api/v1/conversations/{id}/messages', { ...theirs, body: { content: 'x' } }),
      () => other.PATCH('/api/v1/conversations/{id}', { ...theirs, body: { name: 'mine' } }),
      () => other.DELETE('/api/v1/conversations/{id}', theirs),
      () => other.POST('/api/v1/conversations/{id}/inject', { ...theirs, body: { content: 'x' } }),
    ]) {
      expectProblem(await call(), 404, 'not_found');
    }
    expect((await other.GET('/api/v1/conversations')).data!.total).toBe(0);
  });

  it('posts messages and answers with the reply and its cost; counters follow', async () => {
    const c = await createConversation();
    const res = await post(c.id, 'what is up');
    expect(res.response.status).toBe(200);
    expect(res.data).toMatchObject({
      cost: 0,
      runId: expect.any(String),
      message: { role: 'assistant', content: 'what is up', toolCalls: [], tokenUsage: { inputTokens: 3, outputTokens: 3 } },
    });
    const got = await conversation(c.id);
    expect(got.data!.messageCount).toBe(2);
    expect(got.data!.lastMessageAt).toBe(res.reply!.message.createdAt);
    expectProblem(await post(c.id, ''), 400, 'validation_failed');
  });

  it('a message with a responseFormat answers its structuredOutput; a wrong answer is 502 invalid_output, a bad schema 400', async () => {
    const c = await createConversation();
    const responseFormat: MessageInput['responseFormat'] = {
      type: 'json_schema',
      schema: { type: 'object', properties: { answer: { type: 'number' } }, required: ['answer'] },
    };
    const sendFormatted = (content: string, format = responseFormat) => send(c.id, { content, responseFormat: format });
    // builtin/echo is instructed with the schema and answers with the message.
    const ok = await sendFormatted('{"answer": 42}');
    expect(ok.response.status, JSON.stringify(ok.error)).toBe(200);
    expect(ok.reply!.structuredOutput).toEqual({ answer: 42 });
    expect(ok.reply!.message.content).toBe('{"answer": 42}');
    const run = await t.api(key).GET('/api/v1/runs/{runId}', { params: { path: { runId: ok.data!.runId } } });
    expect(run.data!.structuredOutput).toEqual({ answer: 42 });

    expectProblem(await sendFormatted('no JSON here'), 502, 'invalid_output');
    const bad = await sendFormatted('{"answer": 1}', { type: 'json_schema', schema: { type: 'array' } });
    expectProblem(bad, 400, 'validation_failed');
    expect(JSON.stringify(bad.error)).toContain('body.responseFormat.schema.type');
    // Without a format, no structuredOutput.
    expect((await post(c.id, '{"answer": 5}')).data).not.toHaveProperty('structuredOutput');
  });

  it('pages messages oldest first with a before cursor and hasMore', async () => {
    const c = await createConversation();
    for (let i = 1; i <= 5; i++) await post(c.id, `m${i}`);
    const newest = await messages(c.id, { limit: 4 });
    expect(newest.data!.hasMore).toBe(true);
    expect(newest.data!.messages.map((m) => m.content)).toEqual(['m4', 'm4', 'm5', 'm5']);
    expect(newest.data!.messages.map((m) => m.role)).toEqual(['user', 'assistant', 'user', 'assistant']);
    const older = await messages(c.id, { limit: 4, before: newest.data!.messages[0].id });
    expect(older.data!.messages.map((m) => m.content)).toEqual(['m2', 'm2', 'm3', 'm3']);
    expect(older.data!.hasMore).toBe(true);
    const oldest = await messages(c.id, { limit: 4, before: older.data!.messages[0].id });
    expect(oldest.data).toMatchObject({ hasMore: false });
    expect(oldest.data!.messages.map((m) => m.content)).toEqual(['m1', 'm1']);
    const defaults = await messages(c.id);
    expect(defaults.data!.messages).toHaveLength(10);
    expectProblem(await messages(c.id, { limit: 201 }), 400, 'validation_failed');
    expectProblem(await messages(c.id, { before: '01a00000-0000-7000-8000-000000000000' }), 400, 'validation_failed');
  });

  it('moves between active, completed and archived; only active takes messages', async () => {
    const c = await createConversation();
    const done = await update(c.id, { status: 'completed', name: 'Resolved', metadata: { outcome: 'ok' } });
    expect(done.data).toMatchObject({ status: 'completed', name: 'Resolved', metadata: { outcome: 'ok' } });
    expectProblem(await post(c.id, 'hello?'), 409, 'conversation_not_active');
    expectProblem(await execute(t.api(key), agentId, { message: 'x', conversationId: c.id }), 409, 'conversation_not_active');
    await update(c.id, { status: 'active' });
    expect((await post(c.id, 'back')).response.status).toBe(200);
    // A status the types forbid goes raw.
    expectProblem(await t.raw('PATCH', `/api/v1/conversations/${c.id}`, { key, body: { status: 'deleted' } }), 400, 'validation_failed');
  });

  it('soft-deletes: gone from the API, kept in the audit trail', async () => {
    const c = await createConversation();
    await post(c.id, 'remember me');
    const del = await t.api(key).DELETE('/api/v1/conversations/{id}', { params: { path: { id: c.id } } });
    expect(del.response.status).toBe(204);
    expectProblem(await conversation(c.id), 404, 'not_found');
    expectProblem(await messages(c.id), 404, 'not_found');
    const list = await t.api(key).GET('/api/v1/conversations', { params: { query: { limit: 100 } } });
    expect(list.data!.conversations.map((x) => x.id)).not.toContain(c.id);
    const audit = await auditOf(c.id);
    expect(audit.data!.events.map((e) => e.action)).toEqual(['conversation.deleted', 'conversation.created']);
    const row = await t.db.kysely.selectFrom('messages').select('content').where('conversation_id', '=', c.id).execute();
    expect(row.map((r) => r.content)).toContain('remember me');
  });

  it('computes stats', async () => {
    const { key: k } = await t.tenant('stats');
    const a = (await t.agent(k, { name: 's', appId: 'x' })).id;
    const c1 = (await createConversation({ agentId: a }, k)).id;
    const c2 = (await createConversation({ agentId: a }, k)).id;
    await createConversation({ agentId: a }, k);
    await post(c1, 'one', k);
    await post(c1, 'two', k);
    await post(c2, 'three', k);
    await update(c2, { status: 'archived' }, k);
    const stats = await t.api(k).GET('/api/v1/conversations/stats');
    expect(stats.data).toMatchObject({
      total: 3,
      active: 2,
      completed: 0,
      archived: 1,
      totalMessages: 6,
      averageMessagesPerConversation: 2,
    });
    expect(stats.data!.averageDurationMs).toBeGreaterThanOrEqual(0);
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
    const meta = await fileOf(file.id);
    expect(meta.data!.name).toBe('notes.txt');
    const content = await fileContent(file.id);
    expect(content.data).toBe('the secret word is banana');

    const c = await createConversation();
    const answer = await send(c.id, { content: 'read this', attachments: [file.id] });
    expect(answer.response.status).toBe(200);
    // builtin/echo repeats what the model received: the message plus the attachment text.
    expect(answer.reply!.message.content).toContain('the secret word is banana');
    const msgs = await messages(c.id);
    expect(msgs.data!.messages[0]).toMatchObject({ content: 'read this', attachments: [file.id] });

    const bin = (await (await upload('pic.png', 'image/png', Buffer.from([0x89, 0x50, 0x4e, 0x47]))).json()) as { id: string };
    const withBin = await send(c.id, { content: 'and this', attachments: [bin.id] });
    expect(withBin.reply!.message.content).toContain('[Attachment pic.png (image/png, 4 bytes): binary content not shown]');
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
    const sent = await send(c.id, { content: 'see', attachments: [file.id] });
    expect(sent.response.status, JSON.stringify(sent.error)).toBe(200);

    expectProblem(await deleteFile(file.id, otherKey), 404, 'not_found');
    const reader = await t.key(key, ['agents:read']);
    expectProblem(await deleteFile(file.id, reader), 403, 'forbidden');
    expect((await fileOf(file.id)).response.status).toBe(200);

    const deleted = await deleteFile(file.id);
    expect(deleted.response.status, JSON.stringify(deleted.error)).toBe(204);
    expect(await deleted.response.text()).toBe('');
    expectProblem(await fileOf(file.id), 404, 'not_found');
    expectProblem(await fileContent(file.id), 404, 'not_found');
    expectProblem(await deleteFile(file.id), 404, 'not_found');
    const msgs = await messages(c.id);
    expect(msgs.data!.messages[0]).toMatchObject({ content: 'see', attachments: [file.id] });
    const audit = await auditOf(file.id);
    expect(audit.data!.events.map((e) => e.action).sort()).toEqual(['file.deleted', 'file.uploaded']);
    expect(audit.data!.events.find((e) => e.action === 'file.deleted')!.detail).toEqual({ name: 'draft.txt', size: 11 });
    expectProblem(await deleteFile('x'.repeat(65)), 400, 'validation_failed');
  });

  it('lists the tenant’s files newest first, uploads with no run; ?runId= lists a run’s; never another tenant’s', async () => {
    const { key: k } = await t.tenant();
    const first = (await (await upload('a.txt', 'text/plain', 'first', k)).json()) as { id: string };
    const second = (await (await upload('b.csv', 'text/csv', 'x,y\n1,2\n', k)).json()) as { id: string };
    await upload('theirs.txt', 'text/plain', 'other tenant', otherKey);

    const all = await t.api(k).GET('/api/v1/files', { params: { query: {} } });
    expect(all.response.status, JSON.stringify(all.error)).toBe(200);
    expect(all.data).toMatchObject({ total: 2, page: 1, limit: 20 });
    expect(all.data!.files.map((f) => f.id)).toEqual([second.id, first.id]);
    expect(all.data!.files[0]).toEqual({
      id: second.id,
      name: 'b.csv',
      contentType: 'text/csv',
      size: 8,
      createdAt: expect.any(String),
      runId: null,
      toolCallId: null,
    });
    const paged = await t.api(k).GET('/api/v1/files', { params: { query: { limit: 1, page: 2 } } });
    expect(paged.data).toMatchObject({ total: 2, page: 2, limit: 1, files: [{ id: first.id }] });
    // Uploads belong to no run: a run's filter lists none of them.
    const byRun = await t.api(k).GET('/api/v1/files', { params: { query: { runId: '00000000-0000-7000-8000-000000000000' } } });
    expect(byRun.data).toEqual({ files: [], total: 0, page: 1, limit: 20 });
    expectProblem(await t.raw('GET', '/api/v1/files?limit=0', { key: k }), 400, 'validation_failed');
    expectProblem(await t.raw('GET', '/api/v1/files?runId=', { key: k }), 400, 'validation_failed');
    expectProblem(await t.raw('GET', '/api/v1/files?color=red', { key: k }), 400, 'validation_failed');
    expect((await fileOf(first.id, k)).data).toMatchObject({ id: first.id, runId: null, toolCallId: null });
  });

  it('refuses unknown or foreign attachments, oversize files and non-multipart bodies', async () => {
    const foreign = (await (await upload('x.txt', 'text/plain', 'other', otherKey)).json()) as { id: string };
    const c = await createConversation();
    const res = await send(c.id, { content: 'x', attachments: [foreign.id] });
    expectProblem(res, 400, 'validation_failed');
    expect(res.error!.errors).toEqual([{ path: 'body.attachments.0', message: 'names no file of this tenant' }]);
    expectProblem(await fileOf(foreign.id), 404, 'not_found');
    const big = await upload('big.txt', 'text/plain', Buffer.alloc(5 * 1024 * 1024 + 1, 97));
    expect(big.status).toBe(413);
    expect(((await big.json()) as { code: string }).code).toBe('payload_too_large');
    // A JSON body where multipart is due: a content type the typed client would not send.
    expectProblem(await t.raw('POST', '/api/v1/files', { key, body: { file: 'x' } }), 415, 'unsupported_media_type');
  });
});
