import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { type TestApp, startApp } from '../helpers/app.js';
import { execute } from '../helpers/execute.js';
import { firstToolResult } from './helpers.js';

/**
 * The A2A tool against hostile remote cards: every request (card, transport of either binding) goes
 * through the SSRF guard's fetch, the credential only to the card's origin.
 */

interface Seen {
  method: string;
  url: string;
  authorization: string | undefined;
}

async function serve(handler: (req: IncomingMessage, body: string) => { status?: number; type?: string; body: string }) {
  const seen: Seen[] = [];
  const server: Server = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      seen.push({ method: req.method ?? '', url: req.url ?? '', authorization: req.headers.authorization });
      const answer = handler(req, body);
      res.writeHead(answer.status ?? 200, { 'content-type': answer.type ?? 'application/json' });
      res.end(answer.body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return { seen, port, url: `http://127.0.0.1:${port}`, close: () => new Promise<void>((r) => server.close(() => r())) };
}

const card03 = (url: string, preferredTransport: string) =>
  JSON.stringify({
    protocolVersion: '0.3.0',
    name: 'remote',
    description: 'a remote agent',
    url,
    preferredTransport,
    version: '1.0.0',
    capabilities: { streaming: true },
    defaultInputModes: ['text/plain'],
    defaultOutputModes: ['text/plain'],
    skills: [],
  });

type Served = Awaited<ReturnType<typeof serve>>;
let t: TestApp;
let key: string;
let cards: Served;
let other: Served;
let rpc: Served;
let cardBody = '';
let hanging: Server;
let hangingPort = 0;
const hangingMethods: string[] = [];

beforeAll(async () => {
  cards = await serve(() => ({ body: cardBody }));
  other = await serve(() => ({ body: JSON.stringify({ leaked: 'secret-from-the-unallowed-port' }) }));
  rpc = await serve((req, body) => {
    if (req.url === '/send') {
      // A 0.3 JSON-RPC agent that cannot stream: message/send answers a completed task, its text in an artifact.
      const { id, method } = JSON.parse(body);
      if (method !== 'message/send') return { status: 500, body: '{}' };
      const result = {
        kind: 'task',
        id: 't2',
        contextId: 'c2',
        status: { state: 'completed' },
        artifacts: [
          {
            artifactId: 'a',
            parts: [
              { kind: 'text', text: 'the answer ' },
              { kind: 'text', text: 'from the artifact' },
            ],
          },
        ],
      };
      return { body: JSON.stringify({ jsonrpc: '2.0', id, result }) };
    }
    if (req.url === '/send-status') {
      const { id } = JSON.parse(body);
      const message = { kind: 'message', messageId: 'm1', role: 'agent', parts: [{ kind: 'text', text: 'said in the status' }] };
      const result = { kind: 'task', id: 't3', contextId: 'c3', status: { state: 'completed', message } };
      return { body: JSON.stringify({ jsonrpc: '2.0', id, result }) };
    }
    if (req.url === '/send-message') {
      const { id } = JSON.parse(body);
      const result = { kind: 'message', messageId: 'm2', role: 'agent', parts: [{ kind: 'text', text: 'a plain message' }] };
      return { body: JSON.stringify({ jsonrpc: '2.0', id, result }) };
    }
    if (req.url !== '/stream') return { status: 500, body: '{}' };
    // A 0.3 JSON-RPC agent streaming 5 chunks of 1 MiB of text, then completed.
    const id = JSON.parse(body).id;
    const event = (result: unknown) => `data: ${JSON.stringify({ jsonrpc: '2.0', id, result })}\n\n`;
    const ids = { taskId: 't1', contextId: 'c1' };
    const chunk = 'x'.repeat(1024 * 1024);
    const events = [event({ kind: 'task', id: 't1', contextId: 'c1', status: { state: 'working' } })];
    for (let i = 0; i < 5; i++)
      events.push(
        event({ kind: 'artifact-update', ...ids, append: i > 0, artifact: { artifactId: 'a', parts: [{ kind: 'text', text: chunk }] } }),
      );
    events.push(event({ kind: 'status-update', ...ids, final: true, status: { state: 'completed' } }));
    return { type: 'text/event-stream', body: events.join('') };
  });
  // A remote agent that names its task, then says nothing more until cancelled; it records the methods called.
  hanging = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      const { id, method } = JSON.parse(body || '{}');
      hangingMethods.push(method);
      if (method === 'message/stream') {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        const result = { kind: 'task', id: 'hung-task', contextId: 'c4', status: { state: 'working' } };
        res.write(`data: ${JSON.stringify({ jsonrpc: '2.0', id, result })}\n\n`);
        // On /drop the stream is cut after the task event, the remote task still working.
        if (req.url === '/drop') setTimeout(() => res.destroy(), 50);
        if (req.url === '/end') setTimeout(() => res.end(), 50);
        return;
      }
      const result = { kind: 'task', id: 'hung-task', contextId: 'c4', status: { state: 'canceled' } };
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ jsonrpc: '2.0', id, result }));
    });
  });
  await new Promise<void>((resolve) => hanging.listen(0, '127.0.0.1', resolve));
  hangingPort = (hanging.address() as AddressInfo).port;
  // Only the card server's and the rpc servers' host:port are allowed past the guard; the other loopback port is not.
  t = await startApp({ MCP_ALLOWED_HOSTS: `127.0.0.1:${cards.port},127.0.0.1:${rpc.port},127.0.0.1:${hangingPort}` });
  ({ key } = await t.tenant());
});
afterAll(async () => {
  await t?.close();
  hanging?.closeAllConnections();
  await Promise.all([cards?.close(), other?.close(), rpc?.close(), new Promise((r) => (hanging ? hanging.close(r) : r(null)))]);
});

async function callTool(tool: Record<string, unknown>) {
  const caller = await t.agent(key, {
    model: 'builtin/echo',
    tools: [{ type: 'a2a', name: 'r', cardUrl: `${cards.url}/card.json`, ...tool }],
  });
  const res = await execute(t.api(key), caller.id, { message: '/tool a2a_r {"message":"hi"}' });
  expect(res.response.status, JSON.stringify(res.error)).toBe(200);
  return firstToolResult(res.run);
}

/** Waits until the hanging remote agent has been called with `method`. */
const calledWith = (method: string) => vi.waitFor(() => expect(hangingMethods).toContain(method), { timeout: 5000, interval: 20 });

describe('a remote card naming a transport URL the guard does not allow', () => {
  it('HTTP+JSON (0.3 preferredTransport): refused by the guard, the other port gets nothing', async () => {
    cardBody = card03(`${other.url}/rest`, 'HTTP+JSON');
    other.seen.length = 0;
    const result = await callTool({});
    expect(result.error?.code, JSON.stringify(result)).toBe('remote_agent_unreachable');
    expect(JSON.stringify(result)).not.toContain('secret-from-the-unallowed-port');
    expect(other.seen).toHaveLength(0);
  });

  it('HTTP+JSON (1.0 supportedInterfaces): refused by the guard, the other port gets nothing', async () => {
    cardBody = JSON.stringify({
      name: 'remote',
      description: 'a remote agent',
      version: '1.0.0',
      supportedInterfaces: [{ url: `${other.url}/rest`, protocolBinding: 'HTTP+JSON', protocolVersion: '1.0' }],
      capabilities: { streaming: true },
      defaultInputModes: ['text/plain'],
      defaultOutputModes: ['text/plain'],
      skills: [],
    });
    other.seen.length = 0;
    const result = await callTool({});
    expect(result.error?.code, JSON.stringify(result)).toBe('remote_agent_unreachable');
    expect(JSON.stringify(result)).not.toContain('secret-from-the-unallowed-port');
    expect(other.seen).toHaveLength(0);
  });

  it('JSONRPC: refused by the guard as well', async () => {
    cardBody = card03(`${other.url}/rpc`, 'JSONRPC');
    other.seen.length = 0;
    const result = await callTool({});
    expect(result.error?.code, JSON.stringify(result)).toBe('remote_agent_unreachable');
    expect(other.seen).toHaveLength(0);
  });
});

describe('a sealed credential belongs to its card URL’s origin', () => {
  const sealedOf = (agent: { tools: unknown[] }) =>
    (agent.tools.find((x) => (x as { type: string }).type === 'a2a') as { credential: string }).credential;

  it('pairing a sealed value with another origin is refused with 400 naming the field', async () => {
    const a = await t.agent(key, {
      model: 'builtin/echo',
      tools: [{ type: 'a2a', name: 'r', cardUrl: `${cards.url}/card.json`, credential: 'tok' }],
    });
    const sealed = sealedOf(a);
    expect(sealed).toMatch(/^v1\./);
    const b = await t.agent(key, { model: 'builtin/echo' });
    const api = t.api(key);
    const moved = await api.POST('/api/v1/agents/{id}', {
      params: { path: { id: b.id } },
      body: { tools: [{ type: 'a2a', name: 'r', cardUrl: 'https://attacker.example/card.json', credential: sealed }] },
    });
    expect(moved.response.status, JSON.stringify(moved.error)).toBe(400);
    expect(JSON.stringify(moved.error)).toContain('tools.0.credential');
    const created = await api.POST('/api/v1/agents', {
      body: {
        name: 'c',
        appId: 'app',
        tools: [{ type: 'a2a', name: 'r', cardUrl: 'https://attacker.example/card.json', credential: sealed }],
      },
    });
    expect(created.response.status, JSON.stringify(created.error)).toBe(400);
    // The same origin, another path: still its own.
    const samePlace = await api.POST('/api/v1/agents/{id}', {
      params: { path: { id: b.id } },
      body: { tools: [{ type: 'a2a', name: 'r', cardUrl: `${cards.url}/other-card.json`, credential: sealed }] },
    });
    expect(samePlace.response.status, JSON.stringify(samePlace.error)).toBe(200);
  });

  it('a sealed value of another origin found at rest is not opened for this card: the tool says so, nothing is sent', async () => {
    const elsewhere = await t.agent(key, {
      model: 'builtin/echo',
      tools: [{ type: 'a2a', name: 'r', cardUrl: 'https://elsewhere.example/card.json', credential: 'tok' }],
    });
    const caller = await t.agent(key, { model: 'builtin/echo', tools: [{ type: 'a2a', name: 'r', cardUrl: `${cards.url}/card.json` }] });
    const tools = [{ type: 'a2a', name: 'r', cardUrl: `${cards.url}/card.json`, credential: sealedOf(elsewhere) }];
    // Written at rest directly, as the API refuses it.
    await t.db.kysely
      .updateTable('agents')
      .set({ tools: JSON.stringify(tools) })
      .where('id', '=', caller.id)
      .execute();
    cards.seen.length = 0;
    const res = await execute(t.api(key), caller.id, { message: '/tool a2a_r {"message":"hi"}' });
    const error = firstToolResult(res.run).error!;
    expect(error.code).toBe('credential_unusable');
    expect(error.message).toContain('does not belong to this card URL');
    expect(cards.seen).toHaveLength(0);
  });
});

describe('the credential goes only to the card URL’s origin', () => {
  it('a card on origin A naming a JSON-RPC url on origin B: A gets the credential, B does not', async () => {
    cardBody = card03(`${rpc.url}/rpc`, 'JSONRPC');
    cards.seen.length = 0;
    rpc.seen.length = 0;
    const result = await callTool({ credential: 'tok-for-a' });
    expect(result.error?.code, JSON.stringify(result)).toBe('remote_agent_unreachable');
    expect(cards.seen.length).toBeGreaterThan(0);
    expect(cards.seen.every((r) => r.authorization === 'Bearer tok-for-a')).toBe(true);
    expect(rpc.seen.length).toBeGreaterThan(0);
    expect(rpc.seen.map((r) => r.authorization)).toEqual(rpc.seen.map(() => undefined));
  });

  it('is not sent over plain http to a host the allow-list does not name', async () => {
    const caller = await t.agent(key, {
      model: 'builtin/echo',
      tools: [{ type: 'a2a', name: 'r', cardUrl: 'http://agents.example.com/card.json', credential: 'tok' }],
    });
    const res = await execute(t.api(key), caller.id, { message: '/tool a2a_r {"message":"hi"}' });
    const error = firstToolResult(res.run).error!;
    expect(error.code).toBe('credential_refused');
    expect(error.message).toContain('https');
  });
});

describe('sizes', () => {
  it('a remote agent streaming more than 4 MiB of text ends with the text truncated, marked', async () => {
    cardBody = card03(`${rpc.url}/stream`, 'JSONRPC');
    const result = await callTool({});
    expect(result.error, JSON.stringify(result.error)).toBeUndefined();
    expect(result.output!.length).toBeLessThan(4 * 1024 * 1024 + 200);
    expect(result.output!.length).toBeGreaterThan(4 * 1024 * 1024 - 1);
    expect(result.output).toMatch(/\[truncated[^\]]*4 MiB\]$/);
  });

  it('a card larger than 1 MiB is refused', async () => {
    cardBody = card03(`${rpc.url}/stream`, 'JSONRPC').replace('"a remote agent"', JSON.stringify('d'.repeat(1024 * 1024 + 10)));
    const result = await callTool({});
    expect(result.error?.code).toBe('remote_agent_unreachable');
    expect(result.error!.message).toContain('1 MiB');
    expect(result.error!.message.length).toBeLessThan(1200);
  });
});

describe('answers of every shape', () => {
  const noStream = (url: string) => card03(url, 'JSONRPC').replace('"streaming":true', '"streaming":false');

  it('a remote agent that cannot stream: its completed task’s artifact text is the result', async () => {
    cardBody = noStream(`${rpc.url}/send`);
    const result = await callTool({});
    expect(result.error, JSON.stringify(result.error)).toBeUndefined();
    expect(result).toMatchObject({ output: 'the answer from the artifact', taskId: 't2', contextId: 'c2' });
  });

  it('a task with no artifact: its status message’s text is the result', async () => {
    cardBody = noStream(`${rpc.url}/send-status`);
    const result = await callTool({});
    expect(result.error, JSON.stringify(result.error)).toBeUndefined();
    expect(result).toMatchObject({ output: 'said in the status', taskId: 't3' });
  });

  it('a plain message answered to message/send: its text is the result', async () => {
    cardBody = noStream(`${rpc.url}/send-message`);
    const result = await callTool({});
    expect(result.error, JSON.stringify(result.error)).toBeUndefined();
    expect(result.output).toBe('a plain message');
  });
});

describe('the remote task and the calling run', () => {
  it('cancelling the run mid-call cancels the remote task (tasks/cancel)', async () => {
    await t.listen();
    cardBody = card03(`http://127.0.0.1:${hangingPort}/rpc`, 'JSONRPC');
    hangingMethods.length = 0;
    const caller = await t.agent(key, {
      model: 'builtin/echo',
      tools: [{ type: 'a2a', name: 'r', cardUrl: `${cards.url}/card.json` }],
    });
    // Over a real connection, held open while the run waits and dropped after it is cancelled.
    const res = await t.fetch(`/api/v1/agents/${caller.id}/stream`, key, { body: { message: '/tool a2a_r {"message":"hi"}' } });
    await calledWith('message/stream');
    // The task event has reached the tool by now.
    await new Promise((r) => setTimeout(r, 200));
    const api = t.api(key);
    const runs = await api.GET('/api/v1/agents/{id}/runs', { params: { path: { id: caller.id } } });
    const runId = runs.data!.runs.find((r) => r.status === 'running')!.id;
    const cancelled = await api.POST('/api/v1/runs/{runId}/cancel', { params: { path: { runId } } });
    expect(cancelled.data!.status).toBe('cancelled');
    await res.body?.cancel().catch(() => {});
    await calledWith('tasks/cancel');
  });
});

describe('a stream that ends before the remote task does', () => {
  for (const how of ['drop', 'end'])
    it(`${how === 'drop' ? 'cut' : 'closed'} after the task event: the remote task is cancelled, the tool errs`, async () => {
      cardBody = card03(`http://127.0.0.1:${hangingPort}/${how}`, 'JSONRPC');
      hangingMethods.length = 0;
      const result = await callTool({});
      expect(result.error, JSON.stringify(result)).toBeDefined();
      await calledWith('tasks/cancel');
      expect(hangingMethods).toEqual(['message/stream', 'tasks/cancel']);
    });
});
