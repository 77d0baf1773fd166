import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cli } from '../helpers/process.js';
import { expectProblem, startApp, startProcess, type TestApp, type TestProcess } from '../helpers/app.js';
import { startMcpServer } from '../helpers/mcp-server.js';

/**
 * Every regular expression a tenant supplies runs on the linear-time engine (issue 33, item 3): a
 * pattern whose backtracking time doubles with each character (`^(a+)+$`) against 40 characters would
 * block the shared event loop for hours. Each place answers at once, and what it answers is right.
 */
const EVIL = '^(a+)+$';
const LONG = `${'a'.repeat(40)}!`;
const evilFormat = {
  type: 'json_schema',
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

  it('responseFormat on execute and chat: an answer that does not match fails as invalid_output; one that does is kept', async () => {
    const agent = await t.agent(key, { model: 'builtin/echo' });
    const bad = await t.request('POST', `/api/v1/agents/${agent.id}/execute`, {
      key,
      body: { message: JSON.stringify({ s: LONG }), responseFormat: evilFormat },
    });
    expectProblem(bad, 502, 'invalid_output');
    const good = await t.request('POST', `/api/v1/agents/${agent.id}/execute`, {
      key,
      body: { message: JSON.stringify({ s: 'a'.repeat(40) }), responseFormat: evilFormat },
    });
    expect(good.status, good.text).toBe(200);
    expect(good.body.structuredOutput).toEqual({ s: 'a'.repeat(40) });
    // Each pattern of a schema is its own (the engine's compiled patterns are not mixed up).
    const twoPatterns = {
      type: 'json_schema',
      schema: {
        ...evilFormat.schema,
        properties: { ...evilFormat.schema.properties, t: { type: 'string', maxLength: 9, pattern: '^b+$' } },
      },
    };
    const wrongT = await t.request('POST', `/api/v1/agents/${agent.id}/execute`, {
      key,
      body: { message: JSON.stringify({ s: 'aaa', t: 'aaa' }), responseFormat: twoPatterns },
    });
    expectProblem(wrongT, 502, 'invalid_output');
    const rightT = await t.request('POST', `/api/v1/agents/${agent.id}/execute`, {
      key,
      body: { message: JSON.stringify({ s: 'aaa', t: 'bbb' }), responseFormat: twoPatterns },
    });
    expect(rightT.body.structuredOutput).toEqual({ s: 'aaa', t: 'bbb' });
    const chat = await t.request('POST', `/api/v1/agents/${agent.id}/chat`, {
      key,
      body: { message: JSON.stringify({ s: LONG }), responseFormat: evilFormat },
    });
    // chat answers as a stream: the run's end says how it failed.
    expect(chat.status).toBe(200);
    expect(chat.text).toContain('invalid_output');
    expect((await t.request('GET', '/healthz')).status).toBe(200);
  });

  it('response_format on /v1/chat/completions', async () => {
    const agent = await t.agent(key, { model: 'builtin/echo', name: 'oai' });
    const res = await t.request('POST', '/v1/chat/completions', {
      key,
      body: {
        model: `agent:${agent.id}`,
        messages: [{ role: 'user', content: JSON.stringify({ s: LONG }) }],
        response_format: { type: 'json_schema', json_schema: { name: 'x', schema: evilFormat.schema } },
      },
    });
    expect(res.status, res.text).toBeGreaterThanOrEqual(400);
    expect(res.status, res.text).toBeLessThan(600);
    expect(res.text).toContain('invalid_output');
  });

  it('a pattern the linear-time engine cannot run is a 400 naming the field', async () => {
    const agent = await t.agent(key, { model: 'builtin/echo' });
    const lookahead = {
      type: 'json_schema',
      schema: { type: 'object', properties: { s: { type: 'string', maxLength: 9, pattern: '^(?=a)a$' } } },
    };
    const res = await t.request('POST', `/api/v1/agents/${agent.id}/execute`, { key, body: { message: '{}', responseFormat: lookahead } });
    expectProblem(res, 400, 'validation_failed');
    expect(JSON.stringify(res.body)).toContain('body.responseFormat.schema');
    expect(res.body.detail).toContain('linear-time engine');
    const policy = await t.request('POST', '/api/v1/agents', {
      key,
      body: {
        name: 'p',
        appId: 'app',
        configuration: { approval: { rules: [{ tool: 'shout', when: [{ argument: 'text', operator: 'matches', value: '(\\w)\\1' }] }] } },
      },
    });
    expectProblem(policy, 400, 'validation_failed');
    expect(policy.body.errors).toEqual([
      { path: 'body.configuration.approval.rules.0.when.0.value', message: expect.stringContaining('linear-time engine') },
    ]);
  });

  it('an approval rule matching with the pattern: the call waits only when its argument matches', async () => {
    const agent = await t.agent(key, {
      tools: [{ type: 'mcp', url: mcp.url }],
      configuration: { approval: { rules: [{ tool: 's*o*u*t', when: [{ argument: 'text', operator: 'matches', value: EVIL }] }] } },
    });
    const call = (text: string) =>
      t.request('POST', `/api/v1/agents/${agent.id}/execute`, { key, body: { message: `/tool shout {"text":"${text}"}` } });
    const ran = await call(LONG);
    expect(ran.status, ran.text).toBe(200);
    expect(ran.body.status).toBe('completed');
    expect(mcp.state.calls.filter((c) => c.name === 'shout').map((c) => c.args)).toEqual([{ text: LONG }]);
    const waits = await call('a'.repeat(40));
    expect(waits.status, waits.text).toBe(200);
    expect(waits.body.status).toBe('awaiting_approval');
    await t.request('POST', `/api/v1/runs/${waits.body.runId}/cancel`, { key });
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
    const call = (path: string, body: unknown) =>
      fetch(`${p.url}${path}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
    const agent = (await (await call('/api/v1/agents', { name: 'n', appId: 'a', systemPrompt: 's' })).json()) as { id: string };
    let done = false;
    const answered = call(`/api/v1/agents/${agent.id}/execute`, {
      message: JSON.stringify({ s: `${'a'.repeat(60)}!` }),
      responseFormat: evilFormat,
    }).finally(() => (done = true));
    let probes = 0;
    while (!done || probes === 0) {
      // A blocked loop answers nothing: the probe's generous bound runs out (not a measure of speed).
      const health = await fetch(`${p.url}/healthz`, { signal: AbortSignal.timeout(10_000) });
      expect(health.status).toBe(200);
      probes++;
    }
    expect((await answered).status).toBe(502);
    expect((await fetch(`${p.url}/healthz`)).status).toBe(200);
  }, 120_000);
});
