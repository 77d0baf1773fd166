import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApp, type TestApp } from '../helpers/app.js';
import { execute } from '../helpers/execute.js';
import { sample } from '../metrics/helpers.js';
import { childrenOf, one, type Receiver, startReceiver } from '../tracing/receiver.js';

/**
 * A code execution observed (issue 37): its `code_execution <language>` span under the tool call's
 * `execute_tool` span, exported over OTLP/HTTP to a receiver in this test, and the agentry_code_*
 * metrics on GET /metrics. A limit's kill shows on both. Limits are generous but for the one killed.
 */

const TOKEN = 'metrics-token-for-code';
let receiver: Receiver;
let t: TestApp;
let key: string;

beforeAll(async () => {
  receiver = await startReceiver();
  t = await startApp({
    OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
    METRICS_TOKEN: TOKEN,
    CODE_MAX_WALL_SECONDS: '120',
    CODE_MAX_CPU_SECONDS: '60',
  });
  ({ key } = await t.tenant('observed'));
});
afterAll(async () => {
  await t?.close();
  await receiver?.close();
});

const CODE = [{ type: 'builtin' as const, name: 'code' as const }];

async function codeRun(agentId: string, k: string, code: string) {
  const res = await execute(t.api(k), agentId, { message: `/tool code_run ${JSON.stringify({ language: 'python', code })}` });
  expect(res.response.status, JSON.stringify(res.error)).toBe(200);
  return res.run!;
}

describe('a code execution', () => {
  it('is a span under its tool call’s, and counted; a limit’s kill is marked on both', async () => {
    const agent = await t.agent(key, { tools: CODE });
    const ok = await codeRun(agent.id, key, 'print("hi")');
    expect(ok.toolCalls[0].result).toMatchObject({ exitCode: 0, stdout: 'hi\n' });

    const { key: limited } = await t.tenant('limited');
    expect((await t.api(limited).PUT('/api/v1/code/settings', { body: { wallMs: 1500 } })).response.status).toBe(200);
    const slowAgent = await t.agent(limited, { tools: CODE });
    const killed = await codeRun(slowAgent.id, limited, 'while True:\n    pass');
    expect(killed.toolCalls[0].result).toMatchObject({ error: { code: 'code_timeout' } });

    await t.services.tracing!.flush();
    const tools = receiver.spans.filter((s) => s.name === 'execute_tool code_run');
    expect(tools).toHaveLength(2);
    // Each tool call's span has the execution's as its one child.
    const executions = tools.map((tool) => {
      const children = childrenOf(receiver.spans, tool);
      expect(children).toHaveLength(1);
      return children[0];
    });
    const okSpan = one(executions, 'code_execution python', (s) => !('agentry.code.limit' in s.attributes));
    const killedSpan = one(executions, 'code_execution python', (s) => 'agentry.code.limit' in s.attributes);
    expect(okSpan.name).toBe('code_execution python');
    expect(okSpan.attributes).toMatchObject({ 'agentry.code.language': 'python', 'agentry.code.exit_code': 0 });
    expect(okSpan.attributes['agentry.code.duration_ms']).toEqual(expect.any(Number));
    expect(killedSpan.attributes).toMatchObject({ 'agentry.code.limit': 'code_timeout', 'error.type': 'code_timeout' });
    expect(killedSpan.status).toBe(2);
    // The code itself is not recorded.
    expect(JSON.stringify(killedSpan.attributes)).not.toContain('while True');

    const metrics = await t.raw('GET', '/metrics', { headers: { authorization: `Bearer ${TOKEN}` } });
    expect(metrics.status, metrics.text).toBe(200);
    const text = metrics.text;
    expect(sample(text, 'agentry_code_executions_total', { language: 'python', outcome: 'ok' })).toBe(1);
    expect(sample(text, 'agentry_code_executions_total', { language: 'python', outcome: 'code_timeout' })).toBe(1);
    expect(sample(text, 'agentry_code_limit_kills_total', { language: 'python', code: 'code_timeout' })).toBe(1);
    expect(sample(text, 'agentry_code_execution_duration_seconds_count', { language: 'python' })).toBe(2);
  });
});
