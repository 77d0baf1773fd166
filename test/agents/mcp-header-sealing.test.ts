import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectProblem, startApp, type TestApp } from '../helpers/app.js';
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
    const got = await t.request('GET', `/api/v1/agents/${agent.id}`, { key });
    expect(JSON.stringify(got.body)).not.toContain('s3cret');

    const res = await t.request('POST', `/api/v1/agents/${agent.id}/execute`, { key, body: { message: '/tool add {"a":1,"b":2}' } });
    expect(res.status, res.text).toBe(200);
    expect(res.body.toolCalls[0]).toMatchObject({ name: 'add', result: { sum: 3 } });
    expect(mcp.state.headers.some((h) => h.authorization === SECRET && h['x-plain'] === 'yes')).toBe(true);
  });

  it('a sealed value sent back is kept; moved to another server origin it is refused, naming the header', async () => {
    const agent = await t.agent(key, { tools: [{ type: 'mcp', url: mcp.url, headers: { authorization: SECRET } }] });
    const sealed = (agent.tools[0] as { headers: Record<string, string> }).headers.authorization;

    const kept = await t.request('POST', `/api/v1/agents/${agent.id}`, {
      key,
      body: { tools: [{ type: 'mcp', url: mcp.url, headers: { authorization: sealed }, name: 'again' }] },
    });
    expect(kept.status, kept.text).toBe(200);
    expect(kept.body.tools[0].headers.authorization).toBe(sealed);
    mcp.state.headers.length = 0;
    const res = await t.request('POST', `/api/v1/agents/${agent.id}/execute`, { key, body: { message: '/tool again_add {"a":2,"b":2}' } });
    expect(res.status, res.text).toBe(200);
    expect(mcp.state.headers.some((h) => h.authorization === SECRET)).toBe(true);

    const moved = await t.request('POST', `/api/v1/agents/${agent.id}`, {
      key,
      body: { tools: [{ type: 'mcp', url: 'https://elsewhere.example.com/mcp', headers: { authorization: sealed } }] },
    });
    expectProblem(moved, 400, 'validation_failed');
    expect(JSON.stringify(moved.body)).toContain('body.tools.0.headers.authorization');
  });

  it('a value in clear holds at most 8,192 characters (400 naming it)', async () => {
    const res = await t.request('POST', '/api/v1/agents', {
      key,
      body: { name: 'long', appId: 'a', tools: [{ type: 'mcp', url: mcp.url, headers: { 'x-long': 'a'.repeat(8193) } }] },
    });
    expectProblem(res, 400, 'validation_failed');
    expect(JSON.stringify(res.body)).toContain('body.tools.0.headers.x-long');
  });
});
