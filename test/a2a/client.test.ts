import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type TestApp, type TestProcess, startApp, startProcess } from '../helpers/app.js';
import { cli } from '../helpers/process.js';

/**
 * Remote A2A agents as tools (`a2a_<name>`): agent A on one Agentry server calls agent B on another
 * (two processes) through the SSRF guard, with B's server's API key as the sealed credential.
 */

let remote: TestProcess;
let local: TestProcess;

async function tenantOf(proc: TestProcess) {
  const created = await cli(['tenants', 'create', 'A2A', '--json'], proc.database.env);
  expect(created.code, created.stderr).toBe(0);
  const parsed = JSON.parse(created.stdout);
  return { id: parsed.tenant.id as string, key: parsed.apiKey as string };
}

async function call(proc: TestProcess, key: string, method: string, path: string, body?: unknown) {
  const res = await fetch(`${proc.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${key}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  // biome-ignore lint/suspicious/noExplicitAny: bodies of several routes, read field by field
  return { status: res.status, body: (await res.json()) as any };
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
    const agentB = await call(remote, b.key, 'POST', '/api/v1/agents', { name: 'B', appId: 'app', model: 'builtin/echo' });
    expect(agentB.status).toBe(201);
    const cardUrl = `${remote.url}/a2a/${b.id}/agents/${agentB.body.id}/.well-known/agent-card.json`;

    const a = await tenantOf(local);
    const created = await call(local, a.key, 'POST', '/api/v1/agents', {
      name: 'A',
      appId: 'app',
      model: 'builtin/echo',
      tools: [{ type: 'a2a', name: 'b', cardUrl, credential: b.key }],
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    // Sealed at rest and read back sealed, never in clear.
    const credential = created.body.tools.find((t: { type: string }) => t.type === 'a2a').credential as string;
    expect(credential).toMatch(/^v1\.mk\./);
    expect(credential).not.toContain(b.key);

    const run = await call(local, a.key, 'POST', `/api/v1/agents/${created.body.id}/execute`, {
      message: '/tool a2a_b {"message":"hello from A"}',
    });
    expect(run.status, JSON.stringify(run.body)).toBe(200);
    expect(run.body.toolCalls).toHaveLength(1);
    expect(run.body.toolCalls[0]).toMatchObject({ name: 'a2a_b', input: { message: 'hello from A' }, result: { output: 'hello from A' } });
    const taskId = run.body.toolCalls[0].result.taskId as string;

    // On the remote server the task is a run of B, of kind a2a.
    const remoteRun = await call(remote, b.key, 'GET', `/api/v1/runs/${taskId}`);
    expect(remoteRun.body).toMatchObject({ agentId: agentB.body.id, kind: 'a2a', status: 'completed', output: 'hello from A' });

    // Sending the tools back as read keeps the sealed credential working.
    const updated = await call(local, a.key, 'POST', `/api/v1/agents/${created.body.id}`, { tools: created.body.tools });
    expect(updated.status, JSON.stringify(updated.body)).toBe(200);
    const again = await call(local, a.key, 'POST', `/api/v1/agents/${created.body.id}/execute`, {
      message: '/tool a2a_b {"message":"again"}',
    });
    expect(again.body.toolCalls[0].result).toMatchObject({ output: 'again' });
  });

  it('a wrong credential is the remote server’s 401, as the tool’s error', async () => {
    const b = await tenantOf(remote);
    const agentB = await call(remote, b.key, 'POST', '/api/v1/agents', { name: 'B', appId: 'app', model: 'builtin/echo' });
    const a = await tenantOf(local);
    const agentA = await call(local, a.key, 'POST', '/api/v1/agents', {
      name: 'A',
      appId: 'app',
      model: 'builtin/echo',
      tools: [
        {
          type: 'a2a',
          name: 'b',
          cardUrl: `${remote.url}/a2a/${b.id}/agents/${agentB.body.id}/.well-known/agent-card.json`,
          credential: 'wrong',
        },
      ],
    });
    const run = await call(local, a.key, 'POST', `/api/v1/agents/${agentA.body.id}/execute`, { message: '/tool a2a_b {"message":"hi"}' });
    expect(run.body.toolCalls[0].result.error).toMatchObject({ code: 'remote_agent_unreachable' });
    expect(run.body.toolCalls[0].result.error.message).toContain('401');
  });
});

describe('the remote agents list', () => {
  let t: TestApp;
  let key: string;
  let tenantId: string;
  // No allowance for loopback: the SSRF guard's default.
  beforeAll(async () => {
    t = await startApp({ MCP_ALLOWED_HOSTS: '' });
    ({ key, id: tenantId } = await t.tenant());
  });
  afterAll(() => t?.close());

  it('is refused with a bad name, a URL that is not http(s), or too many entries', async () => {
    const create = (tools: unknown[]) => t.request('POST', '/api/v1/agents', { key, body: { name: 'A', appId: 'app', tools } });
    expect((await create([{ type: 'a2a', name: 'has space', cardUrl: 'https://example.com/card.json' }])).status).toBe(400);
    expect((await create([{ type: 'a2a', name: 'b', cardUrl: 'ftp://example.com/card.json' }])).status).toBe(400);
    const many = Array.from({ length: 17 }, (_, i) => ({ type: 'a2a', name: `b${i}`, cardUrl: 'https://example.com/card.json' }));
    const tooMany = await create(many);
    expect(tooMany.status).toBe(400);
    expect(tooMany.body.detail).toBe('at most 16 remote A2A agents');
    const twice = await create([
      { type: 'a2a', name: 'b', cardUrl: 'https://example.com/1.json' },
      { type: 'a2a', name: 'b', cardUrl: 'https://example.com/2.json' },
    ]);
    expect(twice.status).toBe(400);
  });

  it('asks TBAC by the tool name first: in enforce mode a call needs a policy for a2a_<name> (callee *)', async () => {
    const caller = await t.agent(key, {
      model: 'builtin/echo',
      tools: [{ type: 'a2a', name: 'strict', cardUrl: 'http://127.0.0.1:9/card.json' }],
    });
    const setMode = (mode: string) => t.request('PUT', '/api/v1/identity/tbac/mode', { key, body: { mode } });
    expect((await setMode('enforce')).status).toBe(200);
    try {
      const execute = () =>
        t.request('POST', `/api/v1/agents/${caller.id}/execute`, { key, body: { message: '/tool a2a_strict {"message":"hi"}' } });
      expect((await execute()).body.toolCalls[0].result.error).toMatchObject({ code: 'access_denied' });
      const policy = { callerAgentId: caller.id, calleeAgentId: '*', toolName: 'a2a_strict', effect: 'allow' };
      const created = await t.request('POST', '/api/v1/identity/tbac/policies', { key, body: policy });
      expect(created.status, created.text).toBe(201);
      // Allowed: the call goes on to the network, where the guard refuses loopback.
      expect((await execute()).body.toolCalls[0].result.error).toMatchObject({ code: 'remote_agent_unreachable' });
    } finally {
      await setMode('audit');
    }
  });

  it('reaches no private address through the SSRF guard unless allowed', async () => {
    const base = await t.listen();
    const target = await t.agent(key, { model: 'builtin/echo' });
    const cardUrl = `${base}/a2a/${tenantId}/agents/${target.id}/.well-known/agent-card.json`;
    // No credential: over plain http to a host the allow-list does not name it would be refused first (test/a2a/guard.test.ts).
    const caller = await t.agent(key, { model: 'builtin/echo', tools: [{ type: 'a2a', name: 'loop', cardUrl }] });
    const res = await t.request('POST', `/api/v1/agents/${caller.id}/execute`, {
      key,
      body: { message: '/tool a2a_loop {"message":"hi"}' },
    });
    expect(res.status, res.text).toBe(200);
    const error = res.body.toolCalls[0].result.error;
    expect(error.code).toBe('remote_agent_unreachable');
    expect(error.message).toContain('loopback');
    // Nothing reached the target agent.
    expect((await t.request('GET', `/api/v1/agents/${target.id}/runs`, { key })).body.total).toBe(0);
  });
});
