import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectProblem, startApp, type TestApp } from '../helpers/app.js';

let t: TestApp;
beforeAll(async () => (t = await startApp()));
afterAll(() => t?.close());

describe('a message whose stored JSON does not fit its schema', () => {
  it('is reported as damage (500), not served', async () => {
    const { key } = await t.tenant();
    const agent = await t.agent(key, { model: 'builtin/echo' });
    const res = await t.request('POST', `/api/v1/agents/${agent.id}/execute`, { key, body: { message: 'hello' } });
    expect(res.status, res.text).toBe(200);
    const messages = () => t.request('GET', `/api/v1/conversations/${res.body.conversationId}/messages`, { key });
    expect((await messages()).status).toBe(200);

    await t.db.kysely
      .updateTable('messages')
      .set({ token_usage: '{"inputTokens":"five"}' })
      .where('conversation_id', '=', res.body.conversationId)
      .execute();
    expectProblem(await messages(), 500, 'internal_error');
  });
});
