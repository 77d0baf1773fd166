import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectProblem, startApp, type TestApp } from '../helpers/app.js';

let t: TestApp;
beforeAll(async () => (t = await startApp()));
afterAll(() => t?.close());

describe('identity JSON that does not fit its schema', () => {
  it('a policy’s stored conditions are reported as damage (500), not served', async () => {
    const { key } = await t.tenant();
    const [caller, callee] = [await t.agent(key), await t.agent(key)];
    const created = await t.request('POST', '/api/v1/identity/tbac/policies', {
      key,
      body: {
        callerAgentId: caller.id,
        calleeAgentId: callee.id,
        toolName: 'search',
        conditions: { timeWindow: { start: '09:00', end: '17:00' } },
      },
    });
    expect(created.status, created.text).toBe(201);
    const read = () => t.request('GET', `/api/v1/identity/tbac/policies?callerAgentId=${caller.id}`, { key });
    expect((await read()).body.policies).toMatchObject([
      { id: created.body.id, conditions: { timeWindow: { start: '09:00', end: '17:00' } } },
    ]);

    await t.db.kysely
      .updateTable('tbac_policies')
      .set({ conditions: '{"timeWindow":{"start":9}}' })
      .where('id', '=', created.body.id)
      .execute();
    expectProblem(await read(), 500, 'internal_error');
  });

  it('an agent’s stored public key is reported as damage (500), not published', async () => {
    const { key } = await t.tenant();
    const agent = await t.agent(key);
    const rotated = await t.request('POST', `/api/v1/identity/agents/${agent.id}/keys/rotate`, { key });
    expect(rotated.status, rotated.text).toBe(201);
    const keys = () => t.request('GET', `/api/v1/identity/agents/${agent.id}/keys`, { key });
    expect((await keys()).body.keys).toHaveLength(1);
    await t.db.kysely
      .updateTable('identity_agent_keys')
      .set({ public_jwk: '{"kty":"EC","crv":"P-256","x":1}' })
      .where('agent_id', '=', agent.id)
      .execute();
    expectProblem(await keys(), 500, 'internal_error');
  });
});
