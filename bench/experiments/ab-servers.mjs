#!/usr/bin/env node
// Two or more Agentry servers side by side, measured in alternation: each round gives every server the
// same short burst of execute requests (echo, a new conversation each) and reads the CPU time it spent
// per request from /proc, so a machine whose load drifts (other work, the hour) moves all of them alike.
// For what one setting costs (tracing, metrics) where a full bench run's windows are minutes apart.
//
//   node bench/experiments/ab-servers.mjs --variant plain= --variant traced=OTEL_EXPORTER_OTLP_ENDPOINT=receiver
//   options: --rounds 12 --seconds 2 --connections 10 --cpu-prof <dir> ; a variant is name=KEY=VALUE,KEY=VALUE (VALUE
//   `receiver`: an OTLP/HTTP receiver in this process that answers 200 at once; KEY `DIST`: the server built in that
//   folder instead of dist/, e.g. a copy of another build under .bench-data/)
//   --model openai/bench-mock (or anthropic/, openai-compatible/): the agents use that model, answered by
//   bench/mock-provider.js (started here, one for all variants) as in bench/run.js's execute-<provider>; KEY `MODEL`:
//   that variant's model instead (e.g. echo=MODEL=builtin/echo, the yardstick of issue 36's targets)
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { parseArgs, promisify } from 'node:util';
import autocannon from 'autocannon';
import { CLK_TCK, readCpuTicks, startChild } from '../processes.js';

const ROOT = path.resolve(import.meta.dirname, '../..');
const { values } = parseArgs({
  options: {
    variant: { type: 'string', multiple: true, default: ['plain=', 'traced=OTEL_EXPORTER_OTLP_ENDPOINT=receiver'] },
    rounds: { type: 'string', default: '12' },
    seconds: { type: 'string', default: '2' },
    connections: { type: 'string', default: '10' },
    model: { type: 'string', default: 'builtin/echo' },
    // Each server under node --cpu-prof, its profile in <dir>/<variant>/.
    'cpu-prof': { type: 'string' },
  },
});
const exec = promisify(execFile);

const receiver = http.createServer((req, res) => {
  req.resume();
  req.on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end('{}'));
});
await new Promise((r) => receiver.listen(0, '127.0.0.1', () => r(undefined)));
const receiverUrl = `http://127.0.0.1:${/** @type {import('node:net').AddressInfo} */ (receiver.address()).port}/v1/traces`;

const mock = values.model.startsWith('builtin/')
  ? undefined
  : await startChild('mock-provider', ['bench/mock-provider.js'], { ...process.env }, '/health');
const providerEnv = mock
  ? {
      OPENAI_COMPATIBLE_BASE_URL: `${mock.url}/v1`,
      OPENAI_COMPATIBLE_API_KEY: 'bench',
      OPENAI_BASE_URL: `${mock.url}/v1`,
      OPENAI_API_KEY: 'bench',
      ANTHROPIC_BASE_URL: `${mock.url}/v1`,
      ANTHROPIC_API_KEY: 'bench',
    }
  : {};

const servers = [];
for (const v of values.variant) {
  const [name, ...rest] = v.split('=');
  const settings = rest.join('=');
  /** @type {Record<string, string | undefined>} */
  const env = { ...process.env, ...providerEnv, LOG_LEVEL: 'warn', RATE_LIMIT_PER_MINUTE: '0' };
  delete env.DATABASE_URL;
  env.DATA_DIR = fs.mkdtempSync(path.join(os.tmpdir(), 'agentry-ab-'));
  for (const pair of settings ? settings.split(',') : []) {
    const [k, ...val] = pair.split('=');
    env[k] = val.join('=') === 'receiver' ? receiverUrl : val.join('=');
  }
  const dist = env.DIST ?? 'dist';
  const model = env.MODEL ?? values.model;
  delete env.DIST;
  delete env.MODEL;
  const { stdout } = await exec(process.execPath, [path.join(ROOT, dist, 'cli.js'), 'tenants', 'create', 'ab', '--json'], {
    cwd: ROOT,
    env,
  });
  const { apiKey } = JSON.parse(stdout);
  const prof = values['cpu-prof'] ? ['--cpu-prof', `--cpu-prof-dir=${path.join(values['cpu-prof'], name)}`] : [];
  const server = await startChild(name, [...prof, path.join(dist, 'main.js')], env, '/readyz');
  const res = await fetch(`${server.url}/api/v1/agents`, {
    method: 'POST',
    headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'ab', appId: 'ab', systemPrompt: 'You are a support agent.', model }),
  });
  const agent = /** @type {{ id: string }} */ (await res.json());
  servers.push({ name, server, apiKey, agentId: agent.id, dataDir: env.DATA_DIR, us: [], failed: 0 });
}

const burst = (s, seconds) =>
  autocannon({
    url: `${s.server.url}/api/v1/agents/${s.agentId}/execute`,
    method: 'POST',
    headers: { authorization: `Bearer ${s.apiKey}`, 'content-type': 'application/json' },
    body: JSON.stringify({ message: 'Hello, where is my order 4711? It was due yesterday.' }),
    connections: Number(values.connections),
    duration: seconds,
  });

for (const s of servers) await burst(s, 5); // warm-up (JIT, caches)
for (let round = 0; round < Number(values.rounds); round++) {
  const order = round % 2 ? [...servers].reverse() : servers;
  for (const s of order) {
    const before = readCpuTicks(s.server.pid);
    const r = await burst(s, Number(values.seconds));
    const ticks = readCpuTicks(s.server.pid) - before;
    s.us.push(((ticks / CLK_TCK) * 1e6) / r.requests.total);
    // A failed execute costs less than a whole one: they are counted, so a run with any is not taken for a result.
    s.failed += r.non2xx + r.errors;
  }
}
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const base = median(servers[0].us);
// Each round's ratio to the first variant's same round: load that drifts between rounds cancels out.
for (const s of servers) {
  const m = median(s.us);
  const ratio = median(s.us.map((u, i) => u / servers[0].us[i]));
  console.log(
    `${s.name.padEnd(12)} median ${m.toFixed(0)} µs/req (x${(m / base).toFixed(2)}); median of per-round ratios to ${servers[0].name}: x${ratio.toFixed(2)}; rounds: ${s.us.map((u) => u.toFixed(0)).join(' ')}; failed requests ${s.failed}`,
  );
}
for (const s of servers) {
  await s.server.stop();
  fs.rmSync(s.dataDir, { recursive: true, force: true });
}
await mock?.stop();
receiver.close();
