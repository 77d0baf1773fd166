import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectProblem, startApp, type TestApp } from '../helpers/app.js';

let t: TestApp;
beforeAll(async () => (t = await startApp()));
afterAll(() => t?.close());

describe('identity JSON that does not fit its schema', () => {
  it('a policy’s stored conditions are reported as damage (500), not served', async () => {
    const { key } = await t.tenant();
    const [caller, callee] = [await t.agent(key), await t.agent(key)];
    const created = await t.api(key).POST('/api/v1/identity/tbac/policies', {
      body: {
        callerAgentId: caller.id,
        calleeAgentId: callee.id,
        toolName: 'search',
        conditions: { timeWindow: { start: '09:00', end: '17:00' } },
      },
    });
    expect(created.response.status, JSON.stringify(created.error)).toBe(201);
    const policyId = created.data!.id;
    const read = () => t.api(key).GET('/api/v1/identity/tbac/policies', { params: { query: { callerAgentId: caller.id } } });
    expect((await read()).data!.policies).toMatchObject([{ id: policyId, conditions: { timeWindow: { start: '09:00', end: '17:00' } } }]);

    await t.db.kysely.updateTable('tbac_policies').set({ conditions: '{"timeWindow":{"start":9}}' }).where('id', '=', policyId).execute();
    expectProblem(await read(), 500, 'internal_error');
  });

  it('an agent’s stored public key is reported as damage (500), not published', async () => {
    const { key } = await t.tenant();
    const agent = await t.agent(key);
    const path = { agentId: agent.id };
    const rotated = await t.api(key).POST('/api/v1/identity/agents/{agentId}/keys/rotate', { params: { path } });
    expect(rotated.response.status, JSON.stringify(rotated.error)).toBe(201);
    const keys = () => t.api(key).GET('/api/v1/identity/agents/{agentId}/keys', { params: { path } });
    expect((await keys()).data!.keys).toHaveLength(1);
    await t.db.kysely
      .updateTable('identity_agent_keys')
      .set({ public_jwk: '{"kty":"EC","crv":"P-256","x":1}' })
      .where('agent_id', '=', agent.id)
      .execute();
    expectProblem(await keys(), 500, 'internal_error');
  });
});
