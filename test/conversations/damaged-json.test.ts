import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectProblem, startApp, type TestApp } from '../helpers/app.js';
import { execute } from '../helpers/execute.js';

let t: TestApp;
beforeAll(async () => (t = await startApp()));
afterAll(() => t?.close());

describe('a message whose stored JSON does not fit its schema', () => {
  it('is reported as damage (500), not served', async () => {
    const { key } = await t.tenant();
    const agent = await t.agent(key, { model: 'builtin/echo' });
    const res = await execute(t.api(key), agent.id, { message: 'hello' });
    expect(res.response.status, JSON.stringify(res.error)).toBe(200);
    const conversationId = res.run!.conversationId;
    const messages = () => t.api(key).GET('/api/v1/conversations/{id}/messages', { params: { path: { id: conversationId } } });
    expect((await messages()).response.status).toBe(200);

    await t.db.kysely
      .updateTable('messages')
      .set({ token_usage: '{"inputTokens":"five"}' })
      .where('conversation_id', '=', conversationId)
      .execute();
    expectProblem(await messages(), 500, 'internal_error');
  });
});
