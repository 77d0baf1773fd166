import { Agentry, type RunEvent } from '@agentry/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startProcess, type TestProcess } from '../helpers/app.js';
import { startMcpServer } from '../helpers/mcp-server.js';
import { cli, type ServerProcess, startServer } from '../helpers/process.js';
import { type Caller, endedRun, pendingOf, shoutWaits } from './helpers.js';

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

/** The helpers' caller: the SDK's typed client against a server's URL. */
const over = (baseUrl: string): Caller => ({ api: (apiKey) => new Agentry({ baseUrl, apiKey: apiKey ?? undefined }).api });

async function collect(stream: AsyncIterable<RunEvent>) {
  const events: RunEvent[] = [];
  for await (const event of stream) events.push(event);
  return events;
}

describe('a run awaiting approval when every process stopped', () => {
  it('resumes from its stored state on the next process once approved, on the same event sequence', { timeout: 120_000 }, async () => {
    const created = await cli(['tenants', 'create', 'Acme', '--json'], proc.database.env);
    expect(created.code, created.stderr).toBe(0);
    const key: string = JSON.parse(created.stdout).apiKey;
    const first = new Agentry({ baseUrl: proc.url, apiKey: key });
    const agent = await first.api.POST('/api/v1/agents', {
      body: { name: 'agent', appId: 'app', tools: [{ type: 'mcp', url: mcp.url }], configuration: shoutWaits() },
    });
    expect(agent.response.status).toBe(201);
    const run = await first.agents.execute(agent.data!.id, { message: '/tool shout {"text":"later"}' });
    expect(run.status).toBe('awaiting_approval');
    const runId = run.runId;

    // Every process stops while the call waits; nothing holds the run.
    expect(await proc.server.stop()).toBe(0);
    second = await startServer({ ...proc.database.env, MCP_ALLOWED_HOSTS: '127.0.0.1' });
    const next = new Agentry({ baseUrl: second.url, apiKey: key });
    expect((await next.runs.get(runId)).status).toBe('awaiting_approval');
    const [approval] = await pendingOf(over(second.url), key, runId);
    const follower = collect(next.runs.events(runId));
    expect((await next.approvals.approve(approval.id)).status).toBe('approved');

    const ended = await endedRun(over(second.url), key, runId);
    expect(ended).toMatchObject({ status: 'completed', toolCalls: [{ name: 'shout', input: { text: 'later' } }] });
    expect(ended.output).toContain('LATER');
    expect(mcp.state.calls.filter((c) => c.name === 'shout')).toEqual([{ name: 'shout', args: { text: 'later' } }]);
    const events = await follower;
    expect(events.map((e) => e.type).filter((e) => e !== 'token')).toEqual([
      'approval_required',
      'tool_call_start',
      'tool_call_end',
      'done',
    ]);
    expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));
  });
});
