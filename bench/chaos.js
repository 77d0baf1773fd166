// The chaos record (issue 26; docs/benchmarks.md "Model providers under chaos"): the built server
// (dist/, SQLite) against aimock (@copilotkit/aimock) speaking OpenAI, Anthropic and the OpenAI-compatible
// API, whose primary models answer under chaos (bench/fixtures/chaos.json: 20 % dropped requests
// answered 500, 10 % malformed bodies, 20 % 429s with Retry-After: 1, 20 % disconnects, drawn in
// that order per request, so about 54 % of calls fail) and whose fallback models answer steadily, as a
// second provider outside the first one's outage would. 40 executes without a fallback model, then 40
// with one, over the three providers in turn (each primary falls back to another provider); the
// retries and the breaker are the server's defaults. Prints each failure and the counts.
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

const log = (line) => process.stdout.write(`${line}\n`);
const exec = promisify(execFile);

/** The built server on SQLite in a folder of its own, every provider at the mock; a tenant's API key made with the CLI. */
async function startServer(mock, cleanups) {
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
    await mock.start();
    cleanups.push(() => mock.stop());

    const results = {};
    for (const withFallback of [false, true]) {
      const label = withFallback ? 'with a fallback model' : 'without a fallback model';
      // A server of its own for each, so the breakers start closed.
      const { url, apiKey, stop } = await startServer(mock, cleanups);
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
      for (const pair of PAIRS) {
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
        const action = e.response?.chaosAction ?? (model.startsWith('chaos-') ? 'answered' : 'steady');
        faults[action] = (faults[action] ?? 0) + 1;
      }
      log(`\n${label}: ${EXECUTES} executes, ${failures.length} failed, ${seconds.toFixed(1)} s`);
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
      results[withFallback ? 'withFallback' : 'withoutFallback'] = {
        executes: EXECUTES,
        failed: failures.length,
        seconds,
        calls: journal.length,
        faults,
      };
      await stop();
    }
    log(`\n${JSON.stringify(results)}`);
  } finally {
    await cleanup();
  }
}

main().catch((err) => {
  process.stderr.write(`${err.stack ?? err}\n`);
  process.exit(1);
});
