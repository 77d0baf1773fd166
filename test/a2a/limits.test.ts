import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type TestApp, startApp } from '../helpers/app.js';

/** The A2A endpoint's message size: its text parts joined are held to execute's 100,000 characters. */

let t: TestApp;
let key: string;
let tenantId: string;
beforeAll(async () => {
  t = await startApp();
  ({ key, id: tenantId } = await t.tenant());
});
afterAll(() => t?.close());

describe('message/send text size', () => {
  it('refuses parts whose joined text passes 100,000 characters (-32602 naming the limit); 100,000 passes', async () => {
    const agent = await t.agent(key, { model: 'builtin/echo' });
    const send = (parts: string[]) =>
      t.api(key).POST('/a2a/{tenantId}/agents/{agentId}', {
        params: { path: { tenantId, agentId: agent.id } },
        body: {
          jsonrpc: '2.0',
          id: 1,
          method: 'message/send',
          params: { message: { role: 'user', messageId: 'm1', parts: parts.map((text) => ({ kind: 'text', text })) } },
        },
      });
    const tooLong = await send(['a'.repeat(60_000), 'b'.repeat(60_000)]);
    expect(tooLong.response.status).toBe(200);
    expect(tooLong.data!.error?.code, JSON.stringify(tooLong.data).slice(0, 300)).toBe(-32602);
    expect(tooLong.data!.error!.message).toContain('100000');
    // Two parts are joined by a newline: 49,999 + 1 + 50,000 is exactly the limit.
    const fits = await send(['a'.repeat(49_999), 'b'.repeat(50_000)]);
    expect(fits.data!.error, JSON.stringify(fits.data).slice(0, 300)).toBeUndefined();
  });
});
