import { Agentry, AgentryError } from '@agentry/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cli } from '../helpers/process.js';
import { expectProblem, startApp, startProcess, type TestApp, type TestProcess } from '../helpers/app.js';
import { execute as executeAgent, type ExecuteBody } from '../helpers/execute.js';
import { startMcpServer } from '../helpers/mcp-server.js';

/**
 * Every regular expression a tenant supplies runs on the linear-time engine (issue 33, item 3): a
 * pattern whose backtracking time doubles with each character (`^(a+)+$`) against 40 characters would
 * block the shared event loop for hours. Each place answers at once, and what it answers is right.
 */
const EVIL = '^(a+)+$';
const LONG = `${'a'.repeat(40)}!`;
const evilFormat = {
  type: 'json_schema' as const,
  schema: { type: 'object', properties: { s: { type: 'string', maxLength: 100, pattern: EVIL } }, required: ['s'] },
};

describe('tenant patterns in process', () => {
  let t: TestApp;
  let key: string;
  let mcp: Awaited<ReturnType<typeof startMcpServer>>;
  beforeAll(async () => {
    t = await startApp();
    ({ key } = await t.tenant());
    await t.listen();
    mcp = await startMcpServer();
  });
  afterAll(async () => {
    await t.close();
    await mcp.close();
  });
  const execute = (agentId: string, body: ExecuteBody) => executeAgent(t.api(key), agentId, body);

  it('responseFormat on execute and chat: an answer that does not match fails as invalid_output; one that does is kept', async () => {
    const agent = await t.agent(key, { model: 'builtin/echo' });
    const bad = await execute(agent.id, { message: JSON.stringify({ s: LONG }), responseFormat: evilFormat });
    expectProblem(bad, 502, 'invalid_output');
    const good = await execute(agent.id, { message: JSON.stringify({ s: 'a'.repeat(40) }), responseFormat: evilFormat });
    expect(good.response.status, JSON.stringify(good.error)).toBe(200);
    expect(good.run!.structuredOutput).toEqual({ s: 'a'.repeat(40) });
    // Each pattern of a schema is its own (the engine's compiled patterns are not mixed up).
    const twoPatterns = {
      type: 'json_schema' as const,
      schema: {
        ...evilFormat.schema,
        properties: { ...evilFormat.schema.properties, t: { type: 'string', maxLength: 9, pattern: '^b+$' } },
      },
    };
    const wrongT = await execute(agent.id, { message: JSON.stringify({ s: 'aaa', t: 'aaa' }), responseFormat: twoPatterns });
    expectProblem(wrongT, 502, 'invalid_output');
    const rightT = await execute(agent.id, { message: JSON.stringify({ s: 'aaa', t: 'bbb' }), responseFormat: twoPatterns });
    expect(rightT.run!.structuredOutput).toEqual({ s: 'aaa', t: 'bbb' });
    const chat = await t.api(key).POST('/api/v1/agents/{id}/chat', {
      params: { path: { id: agent.id } },
      body: { message: JSON.stringify({ s: LONG }), responseFormat: evilFormat },
      parseAs: 'text',
    });
    // chat answers as a stream: the run's end says how it failed.
    expect(chat.response.status).toBe(200);
    expect(chat.data).toContain('invalid_output');
    expect((await t.api().GET('/healthz')).response.status).toBe(200);
  });

  it('response_format on /v1/chat/completions', async () => {
    const agent = await t.agent(key, { model: 'builtin/echo', name: 'oai' });
    const res = await t.api(key).POST('/v1/chat/completions', {
      body: {
        model: `agent:${agent.id}`,
        messages: [{ role: 'user', content: JSON.stringify({ s: LONG }) }],
        response_format: { type: 'json_schema', json_schema: { name: 'x', schema: evilFormat.schema } },
      },
    });
    const text = JSON.stringify(res.error ?? res.data);
    expect(res.response.status, text).toBeGreaterThanOrEqual(400);
    expect(res.response.status, text).toBeLessThan(600);
    expect(text).toContain('invalid_output');
  });

  it('a pattern the linear-time engine cannot run is a 400 naming the field', async () => {
    const agent = await t.agent(key, { model: 'builtin/echo' });
    const lookahead = {
      type: 'json_schema' as const,
      schema: { type: 'object', properties: { s: { type: 'string', maxLength: 9, pattern: '^(?=a)a$' } } },
    };
    const res = await execute(agent.id, { message: '{}', responseFormat: lookahead });
    expectProblem(res, 400, 'validation_failed');
    expect(JSON.stringify(res.error)).toContain('body.responseFormat.schema');
    expect(res.error!.detail).toContain('linear-time engine');
    const policy = await t.api(key).POST('/api/v1/agents', {
      body: {
        name: 'p',
        appId: 'app',
        configuration: { approval: { rules: [{ tool: 'shout', when: [{ argument: 'text', operator: 'matches', value: '(\\w)\\1' }] }] } },
      },
    });
    expectProblem(policy, 400, 'validation_failed');
    expect(policy.error!.errors).toEqual([
      { path: 'body.configuration.approval.rules.0.when.0.value', message: expect.stringContaining('linear-time engine') },
    ]);
  });

  it('an approval rule matching with the pattern: the call waits only when its argument matches', async () => {
    const agent = await t.agent(key, {
      tools: [{ type: 'mcp', url: mcp.url }],
      configuration: { approval: { rules: [{ tool: 's*o*u*t', when: [{ argument: 'text', operator: 'matches', value: EVIL }] }] } },
    });
    const call = (text: string) => execute(agent.id, { message: `/tool shout {"text":"${text}"}` });
    const ran = await call(LONG);
    expect(ran.response.status, JSON.stringify(ran.error)).toBe(200);
    expect(ran.run!.status).toBe('completed');
    expect(mcp.state.calls.filter((c) => c.name === 'shout').map((c) => c.args)).toEqual([{ text: LONG }]);
    const waits = await call('a'.repeat(40));
    expect(waits.response.status, JSON.stringify(waits.error)).toBe(200);
    expect(waits.run!.status).toBe('awaiting_approval');
    await t.api(key).POST('/api/v1/runs/{runId}/cancel', { params: { path: { runId: waits.run!.runId } } });
  });
});

describe('a real server keeps answering /healthz while it checks a tenant pattern', () => {
  let p: TestProcess;
  let key: string;
  beforeAll(async () => {
    p = await startProcess({ RATE_LIMIT_PER_MINUTE: '0' });
    key = (await cli(['tenants', 'create', 'patterns'], p.database.env)).stdout.match(/agk_\S+/)![0];
  }, 120_000);
  afterAll(() => p?.close());

  it('during and after an execute whose answer is checked against ^(a+)+$', async () => {
    const client = new Agentry({ baseUrl: p.url, apiKey: key, maxRetries: 0 });
    const agent = await client.agents.create({ name: 'n', appId: 'a', systemPrompt: 's' });
    let done = false;
    const answered = client.agents
      .execute(agent.id, { message: JSON.stringify({ s: `${'a'.repeat(60)}!` }), responseFormat: evilFormat })
      .catch((err: unknown) => err)
      .finally(() => {
        done = true;
      });
    let probes = 0;
    while (!done || probes === 0) {
      // A blocked loop answers nothing: the probe's generous bound runs out (not a measure of speed).
      expect(await client.health.live({ signal: AbortSignal.timeout(10_000) })).toEqual({ status: 'ok' });
      probes++;
    }
    const failed = await answered;
    expect(failed).toBeInstanceOf(AgentryError);
    expect(failed).toMatchObject({ status: 502 });
    expect(await client.health.live()).toEqual({ status: 'ok' });
  }, 120_000);
});
