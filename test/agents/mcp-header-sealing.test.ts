import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectProblem, startApp, type TestApp } from '../helpers/app.js';
import { execute } from '../helpers/execute.js';
import { startMcpServer } from '../helpers/mcp-server.js';

/*
 * MCP servers' header values (an Authorization token, usually) are secrets: sealed at rest with the
 * tenant and the server's origin, read back sealed, opened only to call the server.
 */

let t: TestApp;
let key: string;
let mcp: Awaited<ReturnType<typeof startMcpServer>>;
const SECRET = 'Bearer mcp-s3cret-token';

beforeAll(async () => {
  t = await startApp();
  ({ key } = await t.tenant());
  mcp = await startMcpServer();
});
afterAll(async () => {
  await t?.close();
  await mcp?.close();
});

const storedTools = async (id: string) =>
  (await t.db.kysely.selectFrom('agents').select('tools').where('id', '=', id).executeTakeFirstOrThrow()).tools as string;

describe('MCP header values', () => {
  it('are stored and read back sealed, and reach the MCP server in clear', async () => {
    const agent = await t.agent(key, { tools: [{ type: 'mcp', url: mcp.url, headers: { authorization: SECRET, 'x-plain': 'yes' } }] });
    const headers = (agent.tools[0] as { headers: Record<string, string> }).headers;
    expect(headers.authorization).toMatch(/^v1\.mk\./);
    expect(JSON.stringify(agent)).not.toContain('s3cret');
    expect(await storedTools(agent.id)).not.toContain('s3cret');
    const got = await t.api(key).GET('/api/v1/agents/{id}', { params: { path: { id: agent.id } } });
    expect(JSON.stringify(got.data)).not.toContain('s3cret');

    const res = await execute(t.api(key), agent.id, { message: '/tool add {"a":1,"b":2}' });
    expect(res.response.status, JSON.stringify(res.error)).toBe(200);
    expect(res.run!.toolCalls[0]).toMatchObject({ name: 'add', result: { sum: 3 } });
    expect(mcp.state.headers.some((h) => h.authorization === SECRET && h['x-plain'] === 'yes')).toBe(true);
  });

  it('a sealed value sent back is kept; moved to another server origin it is refused, naming the header', async () => {
    const agent = await t.agent(key, { tools: [{ type: 'mcp', url: mcp.url, headers: { authorization: SECRET } }] });
    const sealed = (agent.tools[0] as { headers: Record<string, string> }).headers.authorization;

    const byId = { params: { path: { id: agent.id } } };
    const kept = await t.api(key).POST('/api/v1/agents/{id}', {
      ...byId,
      body: { tools: [{ type: 'mcp', url: mcp.url, headers: { authorization: sealed }, name: 'again' }] },
    });
    expect(kept.response.status, JSON.stringify(kept.error)).toBe(200);
    expect((kept.data!.tools[0] as { headers: Record<string, string> }).headers.authorization).toBe(sealed);
    mcp.state.headers.length = 0;
    const res = await execute(t.api(key), agent.id, { message: '/tool again_add {"a":2,"b":2}' });
    expect(res.response.status, JSON.stringify(res.error)).toBe(200);
    expect(mcp.state.headers.some((h) => h.authorization === SECRET)).toBe(true);

    const moved = await t.api(key).POST('/api/v1/agents/{id}', {
      ...byId,
      body: { tools: [{ type: 'mcp', url: 'https://elsewhere.example.com/mcp', headers: { authorization: sealed } }] },
    });
    expectProblem(moved, 400, 'validation_failed');
    expect(JSON.stringify(moved.error)).toContain('body.tools.0.headers.authorization');
  });

  it('a value in clear holds at most 8,192 characters (400 naming it)', async () => {
    const res = await t.api(key).POST('/api/v1/agents', {
      body: { name: 'long', appId: 'a', tools: [{ type: 'mcp', url: mcp.url, headers: { 'x-long': 'a'.repeat(8193) } }] },
    });
    expectProblem(res, 400, 'validation_failed');
    expect(JSON.stringify(res.error)).toContain('body.tools.0.headers.x-long');
  });
});
