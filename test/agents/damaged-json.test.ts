import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectProblem, startApp, type TestApp } from '../helpers/app.js';

let t: TestApp;
beforeAll(async () => (t = await startApp()));
afterAll(() => t?.close());

describe('an agent whose stored JSON does not fit its schema', () => {
  it('is reported as damage (500), not served', async () => {
    const { key } = await t.tenant();
    const agent = await t.agent(key);
    const read = () => t.request('GET', `/api/v1/agents/${agent.id}`, { key });
    expect((await read()).status).toBe(200);

    await t.db.kysely.updateTable('agents').set({ tools: '[{"type":"mcp"}]' }).where('id', '=', agent.id).execute();
    expectProblem(await read(), 500, 'internal_error');

    await t.db.kysely.updateTable('agents').set({ tools: '[]', configuration: '{"maxSteps":"ten"}' }).where('id', '=', agent.id).execute();
    expectProblem(await read(), 500, 'internal_error');

    await t.db.kysely.updateTable('agents').set({ configuration: '{"maxSteps":3}' }).where('id', '=', agent.id).execute();
    const repaired = await read();
    expect(repaired.status).toBe(200);
    expect(repaired.body).toMatchObject({ tools: [], configuration: { maxSteps: 3, memoryWindow: 50 } });
  });
});
