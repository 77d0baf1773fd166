// The chaos record (issues 26 and 34; docs/benchmarks.md "Model providers under chaos"): the built server
// (dist/, SQLite) against aimock (@copilotkit/aimock) speaking OpenAI, Anthropic and the OpenAI-compatible
// API, whose primary models answer under chaos (bench/fixtures/chaos.json: 20 % dropped requests
// answered 500, 10 % malformed bodies, 20 % 429s with Retry-After: 1, 20 % disconnects, drawn in
// that order per request, so about 54 % of calls fail) and whose fallback models answer steadily, as a
// second provider outside the first one's outage would. Five rounds of 40 executes, each on a server of
// its own (fresh breakers), over the three providers in turn: under chaos without a fallback, with the
// breaker (the server's defaults) and without it (MODEL_BREAKER_FAILURES=0); under chaos with a
// fallback; and under a full outage (every call a 503), with and without the breaker. The breaker must
// refuse no execute under chaos (it is there for outages, not flaky providers), and under the outage
// it must fail fast: far fewer provider calls than without it. Prints each failure, the counts and the
// two verdicts; exits 1 when a verdict fails.
//
//   npm run bench:chaos            (builds dist/ first)
//   EXECUTES=40 CONCURRENCY=4 node bench/chaos.js
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { LLMock } from '@copilotkit/aimock';
import { cleanupStack, startChild } from './processes.js';

const ROOT = path.resolve(import.meta.dirname, '..');
const EXECUTES = Number(process.env.EXECUTES ?? 40);
const CONCURRENCY = Number(process.env.CONCURRENCY ?? 4);
const MESSAGE = 'where is my parcel';
const ANSWER = 'Your parcel left our warehouse yesterday and arrives tomorrow before noon.';
// Each primary under chaos, and the steady model of another provider it falls back to.
const PAIRS = [
  { model: 'openai/chaos-gpt', fallback: 'anthropic/steady-claude' },
  { model: 'anthropic/chaos-claude', fallback: 'openai-compatible/steady-qwen' },
  { model: 'openai-compatible/chaos-qwen', fallback: 'openai/steady-gpt' },
];
// The same providers fully down: every call a 503.
const DOWN = ['openai/down-gpt', 'anthropic/down-claude', 'openai-compatible/down-qwen'].map((model) => ({ model, fallback: '' }));
const ROUNDS = [
  { name: 'chaosWithBreaker', label: 'chaos, no fallback, breaker on', pairs: PAIRS, fallback: false, env: {} },
  {
    name: 'chaosWithoutBreaker',
    label: 'chaos, no fallback, breaker off',
    pairs: PAIRS,
    fallback: false,
    env: { MODEL_BREAKER_FAILURES: '0' },
  },
  { name: 'chaosWithFallback', label: 'chaos, with a fallback model, breaker on', pairs: PAIRS, fallback: true, env: {} },
  { name: 'outageWithBreaker', label: 'full outage, no fallback, breaker on', pairs: DOWN, fallback: false, env: {} },
  {
    name: 'outageWithoutBreaker',
    label: 'full outage, no fallback, breaker off',
    pairs: DOWN,
    fallback: false,
    env: { MODEL_BREAKER_FAILURES: '0' },
  },
];

const log = (line) => process.stdout.write(`${line}\n`);
const exec = promisify(execFile);

/** The built server on SQLite in a folder of its own, every provider at the mock; a tenant's API key made with the CLI. */
async function startServer(mock, cleanups, extraEnv) {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'agentry-chaos-'));
  cleanups.push(async () => fs.rmSync(dataDir, { recursive: true, force: true }));
  /** @type {NodeJS.ProcessEnv} */
  const env = {
    ...process.env,
    DATA_DIR: dataDir,
    LOG_LEVEL: 'error',
    RATE_LIMIT_PER_MINUTE: '0',
    OPENAI_BASE_URL: `${mock.url}/v1`,
    OPENAI_API_KEY: 'sk-chaos',
    ANTHROPIC_BASE_URL: `${mock.url}/v1`,
    ANTHROPIC_API_KEY: 'sk-ant-chaos',
    OPENAI_COMPATIBLE_BASE_URL: `${mock.url}/v1`,
    ...extraEnv,
  };
  delete env.DATABASE_URL;
  const { stdout } = await exec(process.execPath, [path.join(ROOT, 'dist/cli.js'), 'tenants', 'create', 'chaos', '--json'], {
    cwd: ROOT,
    env,
  });
  const server = await startChild('server', ['dist/main.js'], env, '/healthz');
  cleanups.push(server.stop);
  return { url: server.url, apiKey: JSON.parse(stdout).apiKey, stop: server.stop };
}

async function main() {
  if (!fs.existsSync(path.join(ROOT, 'dist/main.js'))) throw new Error('dist/ is missing: npm run build (or npm run bench:chaos)');
  const { steps: cleanups, run: cleanup } = cleanupStack(log, 'stopping the server and the mock');
  try {
    const mock = new LLMock({ port: 0, host: '127.0.0.1', latency: 0, logLevel: 'silent', journalMaxEntries: 10_000 });
    mock.loadFixtureFile(path.join(import.meta.dirname, 'fixtures', 'chaos.json'));
    for (const { model } of DOWN) {
      mock.addFixture({
        match: { userMessage: MESSAGE, model: model.slice(model.indexOf('/') + 1) },
        response: { error: { message: 'The service is down', type: 'server_error' }, status: 503 },
      });
    }
    await mock.start();
    cleanups.push(() => mock.stop());

    const results = {};
    for (const round of ROUNDS) {
      const { label, fallback: withFallback } = round;
      // A server of its own for each, so the breakers start closed.
      const { url, apiKey, stop } = await startServer(mock, cleanups, round.env);
      /** @returns {Promise<{ status: number, body: any }>} */
      const api = async (method, route, body = undefined) => {
        const res = await fetch(url + route, {
          method,
          headers: { authorization: `Bearer ${apiKey}`, ...(body ? { 'content-type': 'application/json' } : {}) },
          body: body ? JSON.stringify(body) : undefined,
        });
        return { status: res.status, body: await res.json().catch(() => null) };
      };
      const agents = [];
      for (const pair of round.pairs) {
        const created = await api('POST', '/api/v1/agents', {
          name: `chaos ${pair.model}${withFallback ? ' + fallback' : ''}`,
          appId: 'chaos',
          model: pair.model,
          tools: [],
          configuration: withFallback ? { fallbackModels: [pair.fallback] } : {},
        });
        if (created.status !== 201) throw new Error(`creating an agent: ${created.status} ${JSON.stringify(created.body)}`);
        agents.push({ ...pair, id: created.body.id });
      }
      const requestsBefore = mock.getRequests().length;
      const startedAt = Date.now();
      const failures = [];
      const answeredBy = {};
      let next = 0;
      const worker = async () => {
        for (let i = next++; i < EXECUTES; i = next++) {
          const agent = agents[i % agents.length];
          const res = await api('POST', `/api/v1/agents/${agent.id}/execute`, { message: MESSAGE });
          if (res.status !== 200 || res.body?.output !== ANSWER) {
            failures.push({
              i,
              model: agent.model,
              status: res.status,
              code: res.body?.code,
              detail: res.body?.detail ?? res.body?.output,
            });
            continue;
          }
          const run = await api('GET', `/api/v1/runs/${res.body.runId}`);
          const by = run.body?.steps?.at(-1)?.model ?? '?';
          answeredBy[by] = (answeredBy[by] ?? 0) + 1;
        }
      };
      await Promise.all(Array.from({ length: CONCURRENCY }, worker));
      const seconds = (Date.now() - startedAt) / 1000;
      const journal = mock.getRequests().slice(requestsBefore);
      const faults = {};
      for (const e of journal) {
        const model = String(/** @type {{ model?: unknown } | undefined} */ (e.body)?.model ?? '');
        const action = e.response?.chaosAction ?? (model.startsWith('chaos-') ? 'answered' : model.startsWith('down-') ? 'down' : 'steady');
        faults[action] = (faults[action] ?? 0) + 1;
      }
      const refused = failures.filter((f) => /circuit breaker open/.test(String(f.detail ?? ''))).length;
      log(`\n${label}: ${EXECUTES} executes, ${failures.length} failed (${refused} refused by the breaker), ${seconds.toFixed(1)} s`);
      log(
        `  provider calls: ${journal.length} (${Object.entries(faults)
          .map(([k, v]) => `${k} ${v}`)
          .join(', ')})`,
      );
      log(
        `  answered by: ${
          Object.entries(answeredBy)
            .map(([k, v]) => `${k} ${v}`)
            .join(', ') || 'nobody'
        }`,
      );
      for (const f of failures) log(`  failed #${f.i} ${f.model}: ${f.status} ${f.code ?? ''} ${String(f.detail ?? '').slice(0, 160)}`);
      results[round.name] = {
        executes: EXECUTES,
        failed: failures.length,
        refusedByBreaker: refused,
        seconds,
        calls: journal.length,
        faults,
      };
      await stop();
    }
    // The verdicts: under chaos the breaker refuses nothing and fails no more than no breaker (the two
    // rounds draw their own chaos, so a difference of a few is chance; the refusals are not); under the
    // outage it fails fast: once open, executes are refused without a provider call (how many reach it
    // first depends on how many were in flight when it opened).
    const chaosHolds = results.chaosWithBreaker.refusedByBreaker === 0;
    const outageFast =
      results.outageWithBreaker.refusedByBreaker > 0 && results.outageWithBreaker.calls < results.outageWithoutBreaker.calls;
    results.verdicts = { chaosBreakerRefusesNothing: chaosHolds, outageFailsFast: outageFast };
    log(
      `\nchaos: the breaker failed ${results.chaosWithBreaker.failed}, no breaker ${results.chaosWithoutBreaker.failed}; refused by the breaker: ${results.chaosWithBreaker.refusedByBreaker} (${chaosHolds ? 'ok' : 'FAILED'})`,
    );
    log(
      `outage: provider calls ${results.outageWithBreaker.calls} with the breaker, ${results.outageWithoutBreaker.calls} without; ${results.outageWithBreaker.seconds.toFixed(1)} s vs ${results.outageWithoutBreaker.seconds.toFixed(1)} s (${outageFast ? 'ok' : 'FAILED'})`,
    );
    log(`\n${JSON.stringify(results)}`);
    if (!chaosHolds || !outageFast) process.exitCode = 1;
  } finally {
    await cleanup();
  }
}

main().catch((err) => {
  process.stderr.write(`${err.stack ?? err}\n`);
  process.exit(1);
});
