import { afterAll, beforeAll, expect, it } from 'vitest';
import { startProcess, type TestProcess } from '../helpers/app.js';
import { startMcpServer } from '../helpers/mcp-server.js';
import { cli, type ServerProcess, startServer } from '../helpers/process.js';
import { type Caller, endedRun, pendingOf } from './helpers.js';

/**
 * A tool that ran is never lost from the record (docs/runtime.md, "Leases and recovery"): a call's
 * start is stored before the tool acts, so when the process running it dies mid-tool (after an
 * approval), the run another process declares interrupted still lists the call, unfinished.
 */

let proc: TestProcess;
let second: ServerProcess | undefined;
let mcp: Awaited<ReturnType<typeof startMcpServer>>;
const env = { MCP_ALLOWED_HOSTS: '127.0.0.1', RUN_LEASE_SECONDS: '2' };

beforeAll(async () => {
  mcp = await startMcpServer();
  proc = await startProcess(env);
});
afterAll(async () => {
  await second?.stop();
  await proc?.close();
  await mcp.close();
});

const over = (url: string): Caller => ({
  async request(method, path, options = {}) {
    const res = await fetch(`${url}${path}`, {
      method,
      headers: { authorization: `Bearer ${options.key}`, ...(options.body !== undefined ? { 'content-type': 'application/json' } : {}) },
      body: options.body === undefined ? undefined : JSON.stringify(options.body),
    });
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : undefined, headers: Object.fromEntries(res.headers) };
  },
});

it('a process killed while an approved tool runs: the interrupted run lists the call', { timeout: 120_000 }, async () => {
  const created = await cli(['tenants', 'create', 'Acme', '--json'], proc.database.env);
  expect(created.code, created.stderr).toBe(0);
  const key: string = JSON.parse(created.stdout).apiKey;
  const first = over(proc.url);
  const agent = await first.request<{ id: string }>('POST', '/api/v1/agents', {
    key,
    body: {
      name: 'agent',
      appId: 'app',
      tools: [{ type: 'mcp', url: mcp.url }],
      configuration: { approval: { rules: [{ tool: 'slow', reason: 'slow takes a while' }] } },
    },
  });
  expect(agent.status).toBe(201);
  const run = await first.request<{ status: string; runId: string }>('POST', `/api/v1/agents/${agent.body.id}/execute`, {
    key,
    body: { message: '/tool slow {"ms":60000}' },
  });
  expect(run.body.status).toBe('awaiting_approval');
  const [approval] = await pendingOf(first, key, run.body.runId);
  expect((await first.request<{ status: string }>('POST', `/api/v1/approvals/${approval.id}/approve`, { key })).body.status).toBe(
    'approved',
  );

  // The tool is running when the process dies at once.
  await expect.poll(() => mcp.state.calls.filter((c) => c.name === 'slow').length, { timeout: 15_000 }).toBe(1);
  await proc.server.stop('SIGKILL');

  second = await startServer({ ...proc.database.env, ...env });
  const ended = await endedRun(over(second.url), key, run.body.runId);
  expect(ended).toMatchObject({
    status: 'failed',
    error: { code: 'interrupted' },
    toolCalls: [{ name: 'slow', input: { ms: 60000 }, result: null, outcome: 'unfinished' }],
  });
});
