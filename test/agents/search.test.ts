import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { paths } from '../../packages/client/src/generated/openapi.js';
import { expectProblem, startApp, type TestApp } from '../helpers/app.js';

let t: TestApp;
let key: string;
let otherKey: string;

beforeAll(async () => {
  t = await startApp();
  ({ key } = await t.tenant('acme'));
  ({ key: otherKey } = await t.tenant('globex'));
  for (const name of ['Support Bot', 'support-tier2', 'Billing', '100% sure', 'under_score', 'underXscore']) {
    const res = await t.api(key).POST('/api/v1/agents', { body: { name, appId: 'app-1' } });
    expect(res.response.status, JSON.stringify(res.error)).toBe(201);
  }
  await t.api(otherKey).POST('/api/v1/agents', { body: { name: 'Support elsewhere', appId: 'app-1' } });
});
afterAll(() => t.close());

type ListQuery = NonNullable<paths['/api/v1/agents']['get']['parameters']['query']>;

const names = async (query: ListQuery) => {
  const { data, error, response } = await t.api(key).GET('/api/v1/agents', { params: { query } });
  expect(response.status, JSON.stringify(error)).toBe(200);
  return { names: data!.agents.map((a) => a.name).sort(), total: data!.total };
};

describe('GET /api/v1/agents?q=', () => {
  it('finds agents whose name contains q, case-insensitively, in the tenant only', async () => {
    expect(await names({ q: 'SUPPORT' })).toEqual({ names: ['Support Bot', 'support-tier2'], total: 2 });
    expect(await names({ q: 'bot' })).toEqual({ names: ['Support Bot'], total: 1 });
    expect(await names({ q: 'nothing' })).toEqual({ names: [], total: 0 });
  });

  it('takes % and _ literally', async () => {
    expect(await names({ q: '%' })).toEqual({ names: ['100% sure'], total: 1 });
    expect(await names({ q: 'under_' })).toEqual({ names: ['under_score'], total: 1 });
  });

  it('pages the matches and combines with other filters', async () => {
    expect(await names({ q: 'support', limit: 1, page: 2 })).toMatchObject({ total: 2 });
    expect((await names({ q: 'support', limit: 1, page: 2 })).names).toHaveLength(1);
    expect(await names({ q: 'support', status: 'paused' })).toEqual({ names: [], total: 0 });
  });

  it('refuses an empty or over-long q naming it', async () => {
    const empty = await t.api(key).GET('/api/v1/agents', { params: { query: { q: '' } } });
    expectProblem(empty, 400, 'validation_failed');
    expect(JSON.stringify(empty.error)).toContain('q');
    expectProblem(await t.api(key).GET('/api/v1/agents', { params: { query: { q: 'a'.repeat(101) } } }), 400, 'validation_failed');
  });
});
