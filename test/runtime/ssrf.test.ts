import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isNonPublic, UrlGuard } from '../../src/runtime/tools/ssrf.js';
import { startApp, type TestApp } from '../helpers/app.js';
import { startMcpServer } from '../helpers/mcp-server.js';

describe('address classification', () => {
  it.each([
    ['127.0.0.1', true], ['10.1.2.3', true], ['172.16.0.1', true], ['172.31.255.255', true], ['172.32.0.1', false],
    ['192.168.1.1', true], ['169.254.169.254', true], ['100.64.0.1', true], ['0.0.0.0', true], ['224.0.0.1', true],
    ['8.8.8.8', false], ['93.184.216.34', false], ['::1', true], ['::', true], ['fd00::1', true], ['fe80::1', true],
    ['::ffff:127.0.0.1', true], ['::ffff:8.8.8.8', false], ['2606:4700::1111', false],
  ])('%s non-public: %s', (ip, expected) => {
    expect(isNonPublic(ip)).toBe(expected);
  });

  it('refuses loopback names and literals unless allowed', async () => {
    const strict = new UrlGuard([], false);
    await expect(strict.check('http://localhost:3001/mcp')).rejects.toThrow(/non-public address/);
    await expect(strict.check('http://[::1]:3001/mcp')).rejects.toThrow(/non-public address/);
    await expect(strict.check('http://169.254.169.254/latest/meta-data')).rejects.toThrow(/non-public address/);
    await expect(strict.check('http://8.8.8.8/mcp')).resolves.toBeUndefined();
    await expect(new UrlGuard(['localhost:3001'], false).check('http://localhost:3001/mcp')).resolves.toBeUndefined();
    await expect(new UrlGuard(['localhost:3001'], false).check('http://localhost:3002/mcp')).rejects.toThrow();
    await expect(new UrlGuard([], true).check('http://10.0.0.5/mcp')).resolves.toBeUndefined();
  });
});

describe('agents cannot reach private networks by default', () => {
  let t: TestApp;
  let mcp: Awaited<ReturnType<typeof startMcpServer>>;
  beforeAll(async () => {
    t = await startApp({ MCP_ALLOWED_HOSTS: '' });
    mcp = await startMcpServer();
  });
  afterAll(async () => {
    await t.close();
    await mcp.close();
  });

  it('does not call a loopback MCP server and says why on the run', async () => {
    const { key } = await t.tenant();
    const agent = (await t.request('POST', '/api/v1/agents', { key, body: { name: 'a', appId: 'x', tools: [{ type: 'mcp', url: mcp.url }] } })).body;
    const before = mcp.state.headers.length;
    const res = await t.request('POST', `/api/v1/agents/${agent.id}/execute`, { key, body: { message: '/tool add {"a":1,"b":2}' } });
    expect(res.body.toolCalls).toEqual([]);
    expect(mcp.state.headers.length).toBe(before);
    const run = await t.request('GET', `/api/v1/runs/${res.body.runId}`, { key });
    expect(run.body.warnings[0]).toMatch(/non-public address \(127\.0\.0\.1\)/);
  });
});
