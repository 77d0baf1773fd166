import { Agentry } from '@agentry/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { paths } from '../../packages/client/src/generated/openapi.js';
import { type TestApp, type TestProcess, startApp, startProcess } from '../helpers/app.js';
import { execute } from '../helpers/execute.js';
import { cli } from '../helpers/process.js';
import { firstToolResult } from './helpers.js';

type Tools = NonNullable<NonNullable<paths['/api/v1/agents']['post']['requestBody']>['content']['application/json']['tools']>;

/**
 * Remote A2A agents as tools (`a2a_<name>`): agent A on one Agentry server calls agent B on another
 * (two processes) through the SSRF guard, with B's server's API key as the sealed credential.
 */

let remote: TestProcess;
let local: TestProcess;

/** A new tenant on `proc` (by its CLI), with the SDK's typed client on its key. */
async function tenantOf(proc: TestProcess) {
  const created = await cli(['tenants', 'create', 'A2A', '--json'], proc.database.env);
  expect(created.code, created.stderr).toBe(0);
  const parsed = JSON.parse(created.stdout);
  const key = parsed.apiKey as string;
  return { id: parsed.tenant.id as string, key, api: new Agentry({ baseUrl: proc.url, apiKey: key }).api };
}

beforeAll(async () => {
  [remote, local] = await Promise.all([
    startProcess({ LOG_LEVEL: 'silent' }),
    // The remote server listens on loopback, which the guard refuses unless allowed.
    startProcess({ LOG_LEVEL: 'silent', MCP_ALLOWED_HOSTS: '127.0.0.1' }),
  ]);
});
afterAll(async () => {
  await Promise.all([remote?.close(), local?.close()]);
});

describe('an agent calling another server’s agent over A2A', () => {
  it('sends the model’s message as a remote task and gets its streamed text back as the tool result', async () => {
    const b = await tenantOf(remote);
    const agentB = await b.api.POST('/api/v1/agents', { body: { name: 'B', appId: 'app', model: 'builtin/echo' } });
    expect(agentB.response.status).toBe(201);
    const cardUrl = `${remote.url}/a2a/${b.id}/agents/${agentB.data!.id}/.well-known/agent-card.json`;

    const a = await tenantOf(local);
    const created = await a.api.POST('/api/v1/agents', {
      body: { name: 'A', appId: 'app', model: 'builtin/echo', tools: [{ type: 'a2a', name: 'b', cardUrl, credential: b.key }] },
    });
    expect(created.response.status, JSON.stringify(created.error)).toBe(201);
    const agentA = created.data!;
    // Sealed at rest and read back sealed, never in clear.
    const [a2aTool] = agentA.tools.flatMap((tool) => (tool.type === 'a2a' ? [tool] : []));
    const credential = a2aTool.credential!;
    expect(credential).toMatch(/^v1\.mk\./);
    expect(credential).not.toContain(b.key);

    const run = await execute(a.api, agentA.id, { message: '/tool a2a_b {"message":"hello from A"}' });
    expect(run.response.status, JSON.stringify(run.error)).toBe(200);
    expect(run.run!.toolCalls).toHaveLength(1);
    expect(run.run!.toolCalls[0]).toMatchObject({ name: 'a2a_b', input: { message: 'hello from A' }, result: { output: 'hello from A' } });
    const taskId = firstToolResult(run.run).taskId!;

    // On the remote server the task is a run of B, of kind a2a.
    const remoteRun = await b.api.GET('/api/v1/runs/{runId}', { params: { path: { runId: taskId } } });
    expect(remoteRun.data).toMatchObject({ agentId: agentB.data!.id, kind: 'a2a', status: 'completed', output: 'hello from A' });

    // Sending the tools back as read keeps the sealed credential working.
    const updated = await a.api.POST('/api/v1/agents/{id}', { params: { path: { id: agentA.id } }, body: { tools: agentA.tools } });
    expect(updated.response.status, JSON.stringify(updated.error)).toBe(200);
    const again = await execute(a.api, agentA.id, { message: '/tool a2a_b {"message":"again"}' });
    expect(firstToolResult(again.run)).toMatchObject({ output: 'again' });
  });

  it('a wrong credential is the remote server’s 401, as the tool’s error', async () => {
    const b = await tenantOf(remote);
    const agentB = (await b.api.POST('/api/v1/agents', { body: { name: 'B', appId: 'app', model: 'builtin/echo' } })).data!;
    const a = await tenantOf(local);
    const agentA = await a.api.POST('/api/v1/agents', {
      body: {
        name: 'A',
        appId: 'app',
        model: 'builtin/echo',
        tools: [
          {
            type: 'a2a',
            name: 'b',
            cardUrl: `${remote.url}/a2a/${b.id}/agents/${agentB.id}/.well-known/agent-card.json`,
            credential: 'wrong',
          },
        ],
      },
    });
    const run = await execute(a.api, agentA.data!.id, { message: '/tool a2a_b {"message":"hi"}' });
    const { error } = firstToolResult(run.run);
    expect(error).toMatchObject({ code: 'remote_agent_unreachable' });
    expect(error!.message).toContain('401');
  });
});

describe('the remote agents list', () => {
  let t: TestApp;
  /** The same server before the operator closed private networks: it saved the loopback agents `t` runs. */
  let earlier: TestApp;
  let key: string;
  let tenantId: string;
  // No allowance for loopback: the SSRF guard's default.
  beforeAll(async () => {
    t = await startApp({ MCP_ALLOWED_HOSTS: '' });
    earlier = await startApp({ MCP_ALLOWED_HOSTS: '', MCP_ALLOW_PRIVATE_NETWORKS: 'true' }, { sameDatabaseAs: t });
    ({ key, id: tenantId } = await t.tenant());
  });
  afterAll(async () => {
    await earlier?.close();
    await t?.close();
  });

  it('is refused with a bad name, a URL that is not http(s), or too many entries', async () => {
    const create = (tools: Tools) => t.api(key).POST('/api/v1/agents', { body: { name: 'A', appId: 'app', tools } });
    expect((await create([{ type: 'a2a', name: 'has space', cardUrl: 'https://example.com/card.json' }])).response.status).toBe(400);
    expect((await create([{ type: 'a2a', name: 'b', cardUrl: 'ftp://example.com/card.json' }])).response.status).toBe(400);
    const many = Array.from({ length: 17 }, (_, i) => ({ type: 'a2a' as const, name: `b${i}`, cardUrl: 'https://example.com/card.json' }));
    const tooMany = await create(many);
    expect(tooMany.response.status).toBe(400);
    expect(tooMany.error!.detail).toBe('at most 16 remote A2A agents');
    const twice = await create([
      { type: 'a2a', name: 'b', cardUrl: 'https://example.com/1.json' },
      { type: 'a2a', name: 'b', cardUrl: 'https://example.com/2.json' },
    ]);
    expect(twice.response.status).toBe(400);
  });

  it('asks TBAC by the tool name first: in enforce mode a call needs a policy for a2a_<name> (callee *)', async () => {
    const caller = await earlier.agent(key, {
      model: 'builtin/echo',
      tools: [{ type: 'a2a', name: 'strict', cardUrl: 'http://127.0.0.1:9/card.json' }],
    });
    const setMode = (mode: 'audit' | 'enforce') => t.api(key).PUT('/api/v1/identity/tbac/mode', { body: { mode } });
    expect((await setMode('enforce')).response.status).toBe(200);
    try {
      const callStrict = async () =>
        firstToolResult((await execute(t.api(key), caller.id, { message: '/tool a2a_strict {"message":"hi"}' })).run);
      expect((await callStrict()).error).toMatchObject({ code: 'access_denied' });
      const policy = { callerAgentId: caller.id, calleeAgentId: '*', toolName: 'a2a_strict', effect: 'allow' as const };
      const created = await t.api(key).POST('/api/v1/identity/tbac/policies', { body: policy });
      expect(created.response.status, JSON.stringify(created.error)).toBe(201);
      // Allowed: the call goes on to the network, where the guard refuses loopback.
      expect((await callStrict()).error).toMatchObject({ code: 'remote_agent_unreachable' });
    } finally {
      await setMode('audit');
    }
  });

  it('reaches no private address through the SSRF guard unless allowed', async () => {
    const base = await t.listen();
    const target = await t.agent(key, { model: 'builtin/echo' });
    const cardUrl = `${base}/a2a/${tenantId}/agents/${target.id}/.well-known/agent-card.json`;
    // No credential: over plain http to a host the allow-list does not name it would be refused first (test/a2a/guard.test.ts).
    const caller = await earlier.agent(key, { model: 'builtin/echo', tools: [{ type: 'a2a', name: 'loop', cardUrl }] });
    const res = await execute(t.api(key), caller.id, { message: '/tool a2a_loop {"message":"hi"}' });
    expect(res.response.status, JSON.stringify(res.error)).toBe(200);
    const error = firstToolResult(res.run).error!;
    expect(error.code).toBe('remote_agent_unreachable');
    expect(error.message).toContain('loopback');
    // Nothing reached the target agent.
    const targetRuns = await t.api(key).GET('/api/v1/agents/{id}/runs', { params: { path: { id: target.id } } });
    expect(targetRuns.data!.total).toBe(0);
  });
});
