import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectProblem, startApp, type TestApp } from '../helpers/app.js';
import { createSkill } from './helpers.js';

let t: TestApp;
beforeAll(async () => (t = await startApp()));
afterAll(() => t?.close());

describe('a skill whose stored JSON does not fit its schema', () => {
  it('is reported as damage (500), not served', async () => {
    const { key } = await t.tenant();
    const skill = await createSkill(t, key, { metadata: { version: '1.0' } });
    const read = () => t.api(key).GET('/api/skills/{id}', { params: { path: { id: skill.id } } });
    expect((await read()).data!.metadata).toEqual({ version: '1.0' });

    await t.db.kysely.updateTable('skills').set({ metadata: '{"version":1}' }).where('id', '=', skill.id).execute();
    expectProblem(await read(), 500, 'internal_error');
  });
});
