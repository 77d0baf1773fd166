import { Agentry } from '@agentry/client';
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

/** The helpers' caller: the SDK's typed client against a server's URL. */
const over = (baseUrl: string): Caller => ({ api: (apiKey) => new Agentry({ baseUrl, apiKey: apiKey ?? undefined }).api });

it('a process killed while an approved tool runs: the interrupted run lists the call', { timeout: 120_000 }, async () => {
  const created = await cli(['tenants', 'create', 'Acme', '--json'], proc.database.env);
  expect(created.code, created.stderr).toBe(0);
  const key: string = JSON.parse(created.stdout).apiKey;
  const first = new Agentry({ baseUrl: proc.url, apiKey: key });
  const agent = await first.api.POST('/api/v1/agents', {
    body: {
      name: 'agent',
      appId: 'app',
      tools: [{ type: 'mcp', url: mcp.url }],
      configuration: { approval: { rules: [{ tool: 'slow', reason: 'slow takes a while' }] } },
    },
  });
  expect(agent.response.status).toBe(201);
  const run = await first.agents.execute(agent.data!.id, { message: '/tool slow {"ms":60000}' });
  expect(run.status).toBe('awaiting_approval');
  const [approval] = await pendingOf(over(proc.url), key, run.runId);
  expect((await first.approvals.approve(approval.id)).status).toBe('approved');

  // The tool is running when the process dies at once.
  await expect.poll(() => mcp.state.calls.filter((c) => c.name === 'slow').length, { timeout: 15_000 }).toBe(1);
  await proc.server.stop('SIGKILL');

  second = await startServer({ ...proc.database.env, ...env });
  const ended = await endedRun(over(second.url), key, run.runId);
  expect(ended).toMatchObject({
    status: 'failed',
    error: { code: 'interrupted' },
    toolCalls: [{ name: 'slow', input: { ms: 60000 }, result: null, outcome: 'unfinished' }],
  });
});
