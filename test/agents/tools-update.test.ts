import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { paths } from '../../packages/client/src/generated/openapi.js';
import { expectProblem, startApp, type TestApp } from '../helpers/app.js';
import { execute } from '../helpers/execute.js';

/**
 * Updating an agent's `tools` replaces its MCP servers and delegations; the built-in groups (skills,
 * connectors) stay unless the list names built-in groups, which then are exactly the ones it names.
 * (The README's walk-through adds an MCP server and then uses skill_query: it must still be there.)
 */
let t: TestApp;
let key: string;

beforeAll(async () => {
  t = await startApp();
  ({ key } = await t.tenant('acme'));
});
afterAll(() => t.close());

type Tool = NonNullable<paths['/api/v1/agents/{id}']['post']['requestBody']['content']['application/json']['tools']>[number];

const BOTH: Tool[] = [
  { type: 'builtin', name: 'skills' },
  { type: 'builtin', name: 'connectors' },
];
const MCP: Tool = { type: 'mcp', url: 'https://mcp.example.com/mcp' };

async function agentWithDefaults() {
  const { data, error, response } = await t.api(key).POST('/api/v1/agents', { body: { name: 'Support', appId: 'support' } });
  expect(response.status, JSON.stringify(error)).toBe(201);
  expect(data!.tools).toEqual(BOTH);
  return data!.id;
}
const update = (id: string, tools: Tool[]) => t.api(key).POST('/api/v1/agents/{id}', { params: { path: { id } }, body: { tools } });

describe('updating tools', () => {
  it('adding an MCP server keeps the built-in groups, and the model still gets skill_query', async () => {
    const id = await agentWithDefaults();
    const res = await update(id, [MCP]);
    expect(res.response.status, JSON.stringify(res.error)).toBe(200);
    expect(res.data!.tools).toEqual([...BOTH, MCP]);
    expect((await t.api(key).GET('/api/v1/agents/{id}', { params: { path: { id } } })).data!.tools).toEqual([...BOTH, MCP]);

    // builtin/echo is told to call skill_query: the tool exists (an error about the skill, not about the tool).
    const run = await execute(t.api(key), id, { message: '/tool skill_query {"skillId":"pricing","query":"discount"}' });
    expect(run.response.status, JSON.stringify(run.error)).toBe(200);
    expect(run.run!.toolCalls).toEqual([
      {
        name: 'skill_query',
        input: { skillId: 'pricing', query: 'discount' },
        result: { error: expect.objectContaining({ code: 'skill_not_assigned' }) },
      },
    ]);
  });

  it('replaces MCP servers and delegations; an empty list keeps only the built-in groups', async () => {
    const id = await agentWithDefaults();
    await update(id, [MCP]);
    const other: Tool = { type: 'mcp', url: 'https://other.example.com/mcp', name: 'other' };
    expect((await update(id, [other])).data!.tools).toEqual([...BOTH, other]);
    expect((await update(id, [])).data!.tools).toEqual(BOTH);
  });

  it("a list naming built-in groups sets them: the agent's tools read back and sent again are kept as they are", async () => {
    const id = await agentWithDefaults();
    expect((await update(id, [{ type: 'builtin', name: 'connectors' }, MCP])).data!.tools).toEqual([
      { type: 'builtin', name: 'connectors' },
      MCP,
    ]);
    // not named again: kept (connectors only)
    expect((await update(id, [])).data!.tools).toEqual([{ type: 'builtin', name: 'connectors' }]);
    expect((await update(id, BOTH)).data!.tools).toEqual(BOTH);
  });

  it('turns one built-in group off with enabled: false, keeping the other', async () => {
    const id = await agentWithDefaults();
    const res = await update(id, [{ type: 'builtin', name: 'skills', enabled: false }, MCP]);
    expect(res.response.status, JSON.stringify(res.error)).toBe(200);
    expect(res.data!.tools).toEqual([{ type: 'builtin', name: 'connectors' }, MCP]);
  });

  it('turns every built-in group off only when asked to, with enabled: false', async () => {
    const id = await agentWithDefaults();
    const res = await update(id, [
      { type: 'builtin', name: 'skills', enabled: false },
      { type: 'builtin', name: 'connectors', enabled: false },
      MCP,
    ]);
    expect(res.response.status, JSON.stringify(res.error)).toBe(200);
    expect(res.data!.tools).toEqual([MCP]);
    expect((await update(id, [])).data!.tools).toEqual([]);
    const run = await execute(t.api(key), id, { message: '/tool skill_query {"skillId":"x","query":"y"}' });
    expect(run.data).toMatchObject({ output: 'no tools are available to this run', toolCalls: [] });
    // raw: enabled is a boolean
    expectProblem(
      await t.raw('POST', `/api/v1/agents/${id}`, { key, body: { tools: [{ type: 'builtin', name: 'skills', enabled: 'no' }] } }),
      400,
      'validation_failed',
    );
  });

  it('creating with tools takes the list as given; enabled: false entries are not stored', async () => {
    const res = await t.api(key).POST('/api/v1/agents', {
      body: {
        name: 'Lean',
        appId: 'a',
        tools: [{ type: 'builtin', name: 'skills', enabled: false }, { type: 'builtin', name: 'connectors', enabled: true }, MCP],
      },
    });
    expect(res.response.status, JSON.stringify(res.error)).toBe(201);
    expect(res.data!.tools).toEqual([{ type: 'builtin', name: 'connectors' }, MCP]);
  });

  it('says so in the OpenAPI document', async () => {
    // raw: the document itself is not one of its own operations
    const doc = (await t.raw('GET', '/openapi.json')).body;
    const body = (path: string, method: string) => doc.paths[path][method].requestBody.content['application/json'].schema;
    expect(body('/api/v1/agents/{id}', 'post').properties.tools.description).toContain('built-in groups are kept');
    expect(body('/api/v1/agents', 'post').properties.tools.description).toContain('as given');
  });
});
