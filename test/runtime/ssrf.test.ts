import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  addressRange,
  isMetadataAddress,
  isPublicAddress,
  OutboundGuard,
  OutboundRefused,
  type LookupFunction,
} from '../../src/runtime/tools/ssrf.js';
import { expectProblem, startApp, type TestApp } from '../helpers/app.js';
import { execute } from '../helpers/execute.js';
import { startMcpServer } from '../helpers/mcp-server.js';

describe('address classification', () => {
  it.each([
    // IPv4, in the spellings the URL parser and inet_aton accept
    ['127.0.0.1', 'loopback'],
    ['127.1', 'loopback'],
    ['2130706433', 'loopback'],
    ['0x7f000001', 'loopback'],
    ['0177.0.0.1', 'loopback'],
    ['10.1.2.3', 'private'],
    ['172.16.0.1', 'private'],
    ['172.31.255.255', 'private'],
    ['192.168.1.1', 'private'],
    ['169.254.169.254', 'linkLocal'],
    ['2852039166', 'linkLocal'],
    ['0xa9fea9fe', 'linkLocal'],
    ['0251.0376.0251.0376', 'linkLocal'],
    ['169.254.43518', 'linkLocal'],
    ['100.64.0.1', 'carrierGradeNat'],
    ['100.127.255.255', 'carrierGradeNat'],
    ['0.0.0.0', 'unspecified'],
    ['0.1.2.3', 'unspecified'],
    ['224.0.0.1', 'multicast'],
    ['255.255.255.255', 'broadcast'],
    ['240.0.0.1', 'reserved'],
    ['192.0.0.170', 'reserved'],
    ['198.18.0.1', 'reserved'],
    ['172.32.0.1', 'unicast'],
    ['100.128.0.1', 'unicast'],
    ['8.8.8.8', 'unicast'],
    ['93.184.216.34', 'unicast'],
    // IPv6
    ['::1', 'loopback'],
    ['::', 'unspecified'],
    ['fd00::1', 'uniqueLocal'],
    ['fc00::1', 'uniqueLocal'],
    ['fe80::1', 'linkLocal'],
    ['ff02::1', 'multicast'],
    ['2001:db8::1', 'reserved'],
    ['::7f00:1', 'reserved'],
    ['4000::1', 'reserved'],
    ['2606:4700::1111', 'unicast'],
    ['2a00:1450:4001::200e', 'unicast'],
    // IPv6 carrying IPv4: classified by the IPv4 address carried
    ['::ffff:127.0.0.1', 'loopback'],
    ['::ffff:7f00:1', 'loopback'],
    ['0:0:0:0:0:ffff:7f00:1', 'loopback'],
    ['::ffff:a9fe:a9fe', 'linkLocal'],
    ['::ffff:0:7f00:1', 'loopback'],
    ['64:ff9b::7f00:1', 'loopback'],
    ['64:ff9b::a00:1', 'private'],
    ['64:ff9b:1:7f00:0:100::', 'loopback'],
    ['2002:7f00:1::', 'loopback'],
    ['2002:a9fe:a9fe::1', 'linkLocal'],
    ['2001:0:4136:e378:8000:63bf:80ff:fffe', 'loopback'],
    ['::ffff:8.8.8.8', 'unicast'],
    ['64:ff9b::808:808', 'unicast'],
    ['2002:808:808::1', 'unicast'],
    ['2001:0:808:808:8000:63bf:f7f7:f7f7', 'unicast'],
  ])('%s is %s', (address, range) => {
    expect(addressRange(address)).toBe(range);
    expect(isPublicAddress(address)).toBe(range === 'unicast');
  });

  it.each([
    '169.254.169.254',
    '2852039166',
    '0xa9fea9fe',
    '0251.0376.0251.0376',
    '::ffff:169.254.169.254',
    '::ffff:a9fe:a9fe',
    '64:ff9b::a9fe:a9fe',
    'fd00:ec2::254',
  ])('knows the metadata address spelled %s', (address) => expect(isMetadataAddress(address)).toBe(true));
});

describe('the guarded dispatcher', () => {
  let mcp: Awaited<ReturnType<typeof startMcpServer>>;
  let port: string;
  beforeAll(async () => {
    mcp = await startMcpServer();
    port = new URL(mcp.url).port;
  });
  afterAll(() => mcp.close());

  const ping = (guard: OutboundGuard, url: string) =>
    guard.fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: '{"jsonrpc":"2.0","id":1,"method":"ping"}',
    });
  const refusedWith = async (promise: Promise<unknown>) => {
    const err = await promise.then(
      () => null,
      (e: Error) => e,
    );
    expect(err).toBeInstanceOf(Error);
    expect(err!.cause).toBeInstanceOf(OutboundRefused);
    return (err!.cause as Error).message;
  };

  it('checks the address the connection resolves, not the one a check saw (DNS rebinding)', async () => {
    // A name that answers a public address first, then loopback: the connection's own lookup decides.
    const answers = ['93.184.216.34', '127.0.0.1'];
    let asked = 0;
    const rebinding: LookupFunction = (_host, _options, callback) =>
      callback(null, [{ address: answers[Math.min(asked++, 1)], family: 4 }]);
    const guard = new OutboundGuard({ allowedHosts: [], allowPrivateNetworks: false, lookup: rebinding });
    asked = 1; // the "check" already happened; the connection now sees loopback
    const before = mcp.state.headers.length;
    expect(await refusedWith(ping(guard, `http://rebind.example:${port}/mcp`))).toMatch(/rebind\.example resolves to a loopback address/);
    expect(mcp.state.headers.length).toBe(before);
    await guard.close();
  });

  it('refuses a name when any of its addresses is not public, and never says which', async () => {
    const lookup: LookupFunction = (_host, _options, callback) =>
      callback(null, [
        { address: '93.184.216.34', family: 4 },
        { address: '10.0.0.7', family: 4 },
      ]);
    const guard = new OutboundGuard({ allowedHosts: [], allowPrivateNetworks: false, lookup });
    const message = await refusedWith(ping(guard, `http://mixed.example:${port}/mcp`));
    expect(message).toMatch(/mixed\.example resolves to a private address/);
    expect(message).not.toContain('10.0.0.7');
    await guard.close();
  });

  it('refuses, rather than fails on, a lookup answer that is not an address', async () => {
    const lookup: LookupFunction = (_host, _options, callback) => callback(null, [{ address: 'not-an-address', family: 4 }]);
    const guard = new OutboundGuard({ allowedHosts: [], allowPrivateNetworks: true, lookup });
    expect(await refusedWith(ping(guard, `http://odd.example:${port}/mcp`))).toMatch(/odd\.example resolves to not an IP address/);
    await guard.close();
  });

  it('connects only to the addresses it checked', async () => {
    // The name resolves (through the guard's lookup) to the loopback server, which private networks allow.
    const lookup: LookupFunction = (_host, _options, callback) => callback(null, [{ address: '127.0.0.1', family: 4 }]);
    const guard = new OutboundGuard({ allowedHosts: [], allowPrivateNetworks: true, lookup });
    const res = await ping(guard, `http://tools.example:${port}/mcp`);
    expect(res.status).toBe(200);
    expect(mcp.state.headers.at(-1)?.host).toBe(`tools.example:${port}`);
    await guard.close();
  });

  it.each([
    [`http://localhost:PORT/mcp`, /localhost resolves to a loopback address/],
    [`http://[::1]:PORT/mcp`, /::1 is a loopback address/],
    [`http://[::ffff:127.0.0.1]:PORT/mcp`, /::ffff:7f00:1 is a loopback address/],
    [`http://0x7f000001:PORT/mcp`, /127\.0\.0\.1 is a loopback address/],
    [`http://169.254.169.254/latest/meta-data`, /cloud metadata address/],
    [`http://[::ffff:a9fe:a9fe]/latest/meta-data`, /cloud metadata address/],
  ])('refuses %s by default', async (url, reason) => {
    const guard = new OutboundGuard({ allowedHosts: [], allowPrivateNetworks: false });
    expect(await refusedWith(ping(guard, url.replace('PORT', port)))).toMatch(reason);
    await guard.close();
  });

  it('lets MCP_ALLOWED_HOSTS open a host or a host:port, and private networks everything but the metadata address', async () => {
    for (const allowedHosts of [['127.0.0.1'], [`127.0.0.1:${port}`], [`localhost:${port}`]]) {
      const guard = new OutboundGuard({ allowedHosts, allowPrivateNetworks: false });
      const host = allowedHosts[0].startsWith('localhost') ? 'localhost' : '127.0.0.1';
      expect((await ping(guard, `http://${host}:${port}/mcp`)).status).toBe(200);
      await guard.close();
    }
    const otherPort = new OutboundGuard({ allowedHosts: ['127.0.0.1:1'], allowPrivateNetworks: false });
    expect(await refusedWith(ping(otherPort, `http://127.0.0.1:${port}/mcp`))).toMatch(/loopback/);
    await otherPort.close();
    const privateNets = new OutboundGuard({ allowedHosts: [], allowPrivateNetworks: true });
    expect((await ping(privateNets, `http://[::ffff:127.0.0.1]:${port}/mcp`)).status).toBe(200);
    expect(await refusedWith(ping(privateNets, 'http://169.254.169.254/latest/meta-data'))).toMatch(/cloud metadata address/);
    await privateNets.close();
  });
});

describe('agents cannot reach private networks by default', () => {
  let t: TestApp;
  /** The same server as it was before the operator closed private networks: agents saved then keep their URLs. */
  let earlier: TestApp;
  let mcp: Awaited<ReturnType<typeof startMcpServer>>;
  beforeAll(async () => {
    t = await startApp({ MCP_ALLOWED_HOSTS: '' });
    earlier = await startApp({ MCP_ALLOWED_HOSTS: '', MCP_ALLOW_PRIVATE_NETWORKS: 'true' }, { sameDatabaseAs: t });
    mcp = await startMcpServer();
  });
  afterAll(async () => {
    await earlier.close();
    await t.close();
    await mcp.close();
  });

  it('saving an agent whose MCP server or remote agent the server would refuse is a 400 naming the field; nothing is kept', async () => {
    const { key } = await t.tenant();
    const refused = [
      { tools: [{ type: 'mcp' as const, url: 'http://10.1.2.3/mcp' }], path: 'body.tools.0.url', why: '10.1.2.3 is a private address' },
      {
        tools: [{ type: 'mcp' as const, url: mcp.url.replace('127.0.0.1', 'localhost') }],
        path: 'body.tools.0.url',
        why: 'localhost resolves to a loopback address',
      },
      {
        tools: [
          { type: 'builtin' as const, name: 'memory' as const },
          { type: 'a2a' as const, name: 'r', cardUrl: 'http://169.254.169.254/card.json' },
        ],
        path: 'body.tools.1.cardUrl',
        why: '169.254.169.254 is the cloud metadata address',
      },
    ];
    for (const { tools, path, why } of refused) {
      const res = await t.api(key).POST('/api/v1/agents', { body: { name: 'a', appId: 'x', tools } });
      expectProblem(res, 400, 'validation_failed');
      expect(res.error!.errors).toEqual([{ path, message: expect.stringContaining(why) }]);
      expect(res.error!.errors![0].message).toMatch(/^the server does not connect there: .*MCP_ALLOWED_HOSTS/);
    }
    expect((await t.api(key).GET('/api/v1/agents', { params: { query: {} } })).data!.total).toBe(0);

    const agent = await t.agent(key, { name: 'a', appId: 'x', tools: [{ type: 'mcp', url: 'https://mcp.example.com/mcp' }] });
    const update = await t.api(key).POST('/api/v1/agents/{id}', { params: { path: { id: agent.id } }, body: { tools: refused[0].tools } });
    expectProblem(update, 400, 'validation_failed');
    const kept = await t.api(key).GET('/api/v1/agents/{id}', { params: { path: { id: agent.id } } });
    expect(kept.data!.tools).toEqual([{ type: 'mcp', url: 'https://mcp.example.com/mcp' }]);
  });

  it('does not call a loopback MCP server saved before private networks were closed, and says why on the run', async () => {
    const { key } = await t.tenant();
    const agent = await earlier.agent(key, { name: 'a', appId: 'x', tools: [{ type: 'mcp', url: mcp.url }] });
    const before = mcp.state.headers.length;
    const res = await execute(t.api(key), agent.id, { message: '/tool add {"a":1,"b":2}' });
    expect(res.run!.toolCalls).toEqual([]);
    expect(mcp.state.headers.length).toBe(before);
    const run = await t.api(key).GET('/api/v1/runs/{runId}', { params: { path: { runId: res.run!.runId } } });
    expect(run.data!.warnings[0]).toBe(
      `MCP server unavailable: ${mcp.url}: refused: 127.0.0.1 is a loopback address, not a public one; add the host:port to MCP_ALLOWED_HOSTS to allow it`,
    );
  });

  it('reaches an allowed host', async () => {
    const allowed = await startApp({ MCP_ALLOWED_HOSTS: `localhost:${new URL(mcp.url).port}` });
    try {
      const { key } = await allowed.tenant();
      const url = mcp.url.replace('127.0.0.1', 'localhost');
      const agent = await allowed.agent(key, { name: 'a', appId: 'x', tools: [{ type: 'mcp', url }] });
      const res = await execute(allowed.api(key), agent.id, { message: '/tool add {"a":1,"b":2}' });
      expect(res.run!.toolCalls[0]).toMatchObject({ name: 'add', result: { sum: 3 } });
    } finally {
      await allowed.close();
    }
  });
});

describe('IP spellings of loopback are refused under the default configuration', () => {
  let t: TestApp;
  /** The same server before private networks were closed: it saves the agents whose runs `t` makes. */
  let earlier: TestApp;
  let mcp: Awaited<ReturnType<typeof startMcpServer>>;
  let secret: { port: number; hits: number; close(): Promise<void> };
  let key: string;
  beforeAll(async () => {
    t = await startApp({ MCP_ALLOWED_HOSTS: '' });
    earlier = await startApp({ MCP_ALLOWED_HOSTS: '', MCP_ALLOW_PRIVATE_NETWORKS: 'true' }, { sameDatabaseAs: t });
    mcp = await startMcpServer();
    // A loopback service whose error body must never come back to the tenant.
    const server = http.createServer((_req, res) => {
      secret.hits++;
      res.writeHead(500, { 'content-type': 'text/plain' }).end('INTERNAL-SECRET-7f3a');
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    secret = {
      port: (server.address() as AddressInfo).port,
      hits: 0,
      close: () => new Promise<void>((r) => server.close(() => r())),
    };
    ({ key } = await t.tenant());
  });
  afterAll(async () => {
    await earlier.close();
    await t.close();
    await mcp.close();
    await secret.close();
  });

  const runWith = async (url: string) => {
    // Saved now, each would be refused (400); saved before, the run's guard refuses it all the same.
    const refusedNow = await t.api(key).POST('/api/v1/agents', { body: { name: 'a', appId: 'x', tools: [{ type: 'mcp', url }] } });
    expectProblem(refusedNow, 400, 'validation_failed');
    const agent = await earlier.api(key).POST('/api/v1/agents', { body: { name: 'a', appId: 'x', tools: [{ type: 'mcp', url }] } });
    expect(agent.response.status, JSON.stringify(agent.error)).toBe(201);
    const res = await execute(t.api(key), agent.data!.id, { message: '/tool add {"a":1,"b":2}' });
    expect(res.response.status, JSON.stringify(res.error)).toBe(200);
    const run = await t.api(key).GET('/api/v1/runs/{runId}', { params: { path: { runId: res.run!.runId } } });
    return { toolCalls: res.run!.toolCalls, warnings: run.data!.warnings };
  };

  const port = () => new URL(mcp.url).port;
  it.each([
    ['IPv4-mapped, dotted', () => `http://[::ffff:127.0.0.1]:${port()}/mcp`],
    ['IPv4-mapped, full hex', () => `http://[0:0:0:0:0:ffff:7f00:1]:${port()}/mcp`],
    ['decimal', () => `http://2130706433:${port()}/mcp`],
    ['hexadecimal', () => `http://0x7f000001:${port()}/mcp`],
    ['a name resolving to loopback', () => `http://localhost:${port()}/mcp`],
  ])('%s: the MCP server is never reached and the run says why', async (_, url) => {
    const before = mcp.state.headers.length;
    const { toolCalls, warnings } = await runWith(url());
    expect(toolCalls).toEqual([]);
    expect(mcp.state.headers.length).toBe(before);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(/^MCP server unavailable: .*loopback.*MCP_ALLOWED_HOSTS/);
  });

  it('does not reach a loopback service through a mapped address, nor return its error body', async () => {
    for (const host of ['[::ffff:127.0.0.1]', '[::ffff:7f00:1]', '[64:ff9b::7f00:1]', '[2002:7f00:1::]']) {
      const { warnings } = await runWith(`http://${host}:${secret.port}/`);
      expect(warnings.join('\n')).not.toContain('INTERNAL-SECRET');
      expect(warnings[0]).toMatch(/MCP server unavailable/);
    }
    expect(secret.hits).toBe(0);
  });
});
