import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectProblem, startApp, type TestApp } from '../helpers/app.js';

let t: TestApp;
beforeAll(async () => (t = await startApp()));
afterAll(() => t?.close());

describe('an agent whose stored JSON does not fit its schema', () => {
  it('is reported as damage (500), not served', async () => {
    const { key } = await t.tenant();
    const agent = await t.agent(key);
    const read = () => t.api(key).GET('/api/v1/agents/{id}', { params: { path: { id: agent.id } } });
    expect((await read()).response.status).toBe(200);

    await t.db.kysely.updateTable('agents').set({ tools: '[{"type":"mcp"}]' }).where('id', '=', agent.id).execute();
    expectProblem(await read(), 500, 'internal_error');

    await t.db.kysely.updateTable('agents').set({ tools: '[]', configuration: '{"maxSteps":"ten"}' }).where('id', '=', agent.id).execute();
    expectProblem(await read(), 500, 'internal_error');

    await t.db.kysely.updateTable('agents').set({ configuration: '{"maxSteps":3}' }).where('id', '=', agent.id).execute();
    const repaired = await read();
    expect(repaired.response.status, JSON.stringify(repaired.error)).toBe(200);
    expect(repaired.data).toMatchObject({ tools: [], configuration: { maxSteps: 3, memoryWindow: 50 } });
  });
});
