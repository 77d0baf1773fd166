import type { LLMock } from '@copilotkit/aimock';
import { Agentry } from '@agentry/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAimock } from '../helpers/aimock.js';
import { startProcess, type TestProcess } from '../helpers/app.js';
import { cli, freePort } from '../helpers/process.js';

/**
 * `agentry doctor` reads the running server's model breakers from its metrics (docs/operations.md
 * "Doctor"): the built server as a real process against aimock answering 500s, with a breaker that
 * opens after two failures; the doctor as another process, through METRICS_PORT or METRICS_TOKEN.
 */

interface Check {
  name: string;
  status: 'pass' | 'fail' | 'skip';
  detail: string;
  fix?: string;
}

const TOKEN = 'metrics-token-0123456789';
let mock: LLMock;
let proc: TestProcess;
let metricsPort: number;
let env: Record<string, string>;

beforeAll(async () => {
  mock = await startAimock();
  mock.addFixture({
    match: { userMessage: 'broken' },
    response: { error: { message: 'The server had an error', type: 'server_error' }, status: 500 },
  });
  metricsPort = await freePort();
  env = {
    OPENAI_BASE_URL: `${mock.url}/v1`,
    OPENAI_API_KEY: 'sk-test',
    MODEL_RETRY_MAX_ATTEMPTS: '2',
    MODEL_RETRY_BASE_MS: '1',
    MODEL_BREAKER_FAILURES: '2',
    // Longer than the test: the breaker stays open while the doctor looks.
    MODEL_BREAKER_COOLDOWN_MS: '3600000',
  };
  proc = await startProcess({ ...env, METRICS_PORT: String(metricsPort), METRICS_TOKEN: TOKEN });
});
afterAll(async () => {
  await proc?.close();
  await mock?.stop();
});

async function breakerCheck(extra: Record<string, string>) {
  const run = await cli(['doctor', '--json'], { ...proc.database.env, ...env, ...extra });
  const report = JSON.parse(run.stdout) as { ok: boolean; checks: Check[] };
  return { code: run.code, check: report.checks.find((c) => c.name === 'model breakers')! };
}

describe('agentry doctor: model breakers', () => {
  it('passes while no breaker is open, fails with a fix once one is, through METRICS_PORT and through METRICS_TOKEN', {
    timeout: 120_000,
  }, async () => {
    const before = await breakerCheck({ METRICS_PORT: String(metricsPort) });
    expect(before.check).toMatchObject({ status: 'pass', detail: 'no model called since the server started' });

    const created = await cli(['tenants', 'create', 'Acme', '--json'], proc.database.env);
    expect(created.code, created.stderr).toBe(0);
    const key: string = JSON.parse(created.stdout).apiKey;
    // No retries by the client: each failed call below is one call.
    const client = new Agentry({ baseUrl: proc.url, apiKey: key, maxRetries: 0 });
    const agent = await client.api.POST('/api/v1/agents', { body: { name: 'broken', appId: 'app', model: 'openai/gpt-4.1' } });
    expect(agent.response.status).toBe(201);
    // Two failed calls (each after its two attempts) open its breaker.
    for (let i = 0; i < 2; i++) {
      await expect(client.agents.execute(agent.data!.id, { message: 'broken' })).rejects.toMatchObject({ status: 502 });
    }

    const port = await breakerCheck({ METRICS_PORT: String(metricsPort) });
    expect(port.code).toBe(1);
    expect(port.check).toMatchObject({ status: 'fail', detail: 'open (the model is skipped): openai/gpt-4.1' });
    expect(port.check.fix).toContain('MODEL_BREAKER_COOLDOWN_MS');

    // The main port, with the token: the same configuration the server was given.
    const main = await breakerCheck({ METRICS_TOKEN: TOKEN, PORT: new URL(proc.url).port });
    expect(main.check).toMatchObject({ status: 'fail', detail: 'open (the model is skipped): openai/gpt-4.1' });
  });

  it('is skipped with the reason when the metrics are not exposed, or no server answers', async () => {
    const hidden = await breakerCheck({});
    expect(hidden.check.status).toBe('skip');
    expect(hidden.check.detail).toMatch(/^the server’s metrics are not exposed \(METRICS_PORT or METRICS_TOKEN\)/);
    const nobody = await breakerCheck({ METRICS_PORT: String(await freePort()) });
    expect(nobody.check.status).toBe('skip');
    expect(nobody.check.detail).toMatch(/^the server is not running at http:\/\/127\.0\.0\.1:\d+ \(ECONNREFUSED\)$/);
  });
});
