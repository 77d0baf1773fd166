import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startProcess, type TestProcess } from '../helpers/app.js';
import { startMcpServer } from '../helpers/mcp-server.js';
import { cli, type ServerProcess, startServer } from '../helpers/process.js';
import { readSse } from '../helpers/sse.js';
import { endedRun, pendingOf, shoutWaits } from './helpers.js';

/** The built server as a real process: a run waits for approval, every process stops, a new one resumes it. */

let proc: TestProcess;
let second: ServerProcess | undefined;
let mcp: Awaited<ReturnType<typeof startMcpServer>>;

beforeAll(async () => {
  mcp = await startMcpServer();
  proc = await startProcess({ MCP_ALLOWED_HOSTS: '127.0.0.1' });
});
afterAll(async () => {
  await second?.stop();
  await proc?.close();
  await mcp.close();
});

/** The helpers' caller over fetch against a server's URL. */
const over = (url: () => string) => ({
  async request(method: string, path: string, options: { key?: string | null; body?: unknown } = {}) {
    const res = await fetch(`${url()}${path}`, {
      method,
      headers: { authorization: `Bearer ${options.key}`, ...(options.body !== undefined ? { 'content-type': 'application/json' } : {}) },
      body: options.body === undefined ? undefined : JSON.stringify(options.body),
    });
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : undefined, headers: Object.fromEntries(res.headers) };
  },
});

describe('a run awaiting approval when every process stopped', () => {
  it('resumes from its stored state on the next process once approved, on the same event sequence', { timeout: 120_000 }, async () => {
    const created = await cli(['tenants', 'create', 'Acme', '--json'], proc.database.env);
    expect(created.code, created.stderr).toBe(0);
    const key: string = JSON.parse(created.stdout).apiKey;
    const first = over(() => proc.url);
    const agent = await first.request('POST', '/api/v1/agents', {
      key,
      body: { name: 'agent', appId: 'app', tools: [{ type: 'mcp', url: mcp.url }], configuration: shoutWaits() },
    });
    expect(agent.status).toBe(201);
    const run = await first.request('POST', `/api/v1/agents/${agent.body.id}/execute`, {
      key,
      body: { message: '/tool shout {"text":"later"}' },
    });
    expect(run.body.status).toBe('awaiting_approval');
    const runId: string = run.body.runId;

    // Every process stops while the call waits; nothing holds the run.
    expect(await proc.server.stop()).toBe(0);
    second = await startServer({ ...proc.database.env, MCP_ALLOWED_HOSTS: '127.0.0.1' });
    const next = over(() => second!.url);
    expect((await next.request('GET', `/api/v1/runs/${runId}`, { key })).body.status).toBe('awaiting_approval');
    const [approval] = await pendingOf(next, key, runId);
    const follower = readSse(await fetch(`${second.url}/api/v1/runs/${runId}/events`, { headers: { authorization: `Bearer ${key}` } }));
    expect((await next.request('POST', `/api/v1/approvals/${approval.id}/approve`, { key })).body.status).toBe('approved');

    const ended = await endedRun(next, key, runId);
    expect(ended).toMatchObject({ status: 'completed', toolCalls: [{ name: 'shout', input: { text: 'later' } }] });
    expect(ended.output).toContain('LATER');
    expect(mcp.state.calls.filter((c) => c.name === 'shout')).toEqual([{ name: 'shout', args: { text: 'later' } }]);
    const events = await follower;
    expect(events.map((e) => e.event).filter((e) => e !== 'token')).toEqual([
      'approval_required',
      'tool_call_start',
      'tool_call_end',
      'done',
    ]);
    expect(events.map((e) => Number(e.id))).toEqual(events.map((_, i) => i + 1));
  });
});
