#!/usr/bin/env node
// Where a run's memory is allocated: starts the platform in this process (SQLite in a temporary
// data folder, builtin/echo), drives POST /agents/:id/execute with autocannon in a child process, and
// samples every allocation made meanwhile, including the objects already collected (V8's sampling
// heap profiler through the inspector), then prints bytes per run by allocating function.
// Allocation drives the young-generation GC, whose pauses are part of the SSE first token's tail
// (docs/benchmarks.md). The sampling costs time: read the shares, not the throughput.
//
//   npm run build && node bench/alloc-profile.js [--seconds 5] [--top 30]
import '../dist/v8-flags.js';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import inspector from 'node:inspector/promises';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';

const ROOT = path.resolve(import.meta.dirname, '..');
const { values } = parseArgs({ options: { seconds: { type: 'string', default: '5' }, top: { type: 'string', default: '30' } } });
const dist = (p) => import(path.join(ROOT, 'dist', p));
const { buildApp, createLogger, createServices } = await dist('app.js');
const { loadConfig } = await dist('config.js');
const { migrate, openDatabase } = await dist('db/database.js');

const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'agentry-alloc-'));
Object.assign(process.env, { DATA_DIR: dataDir, LOG_LEVEL: 'warn', RATE_LIMIT_PER_MINUTE: '0' });
const config = loadConfig();
const db = openDatabase({ dataDir: config.dataDir });
await migrate(db);
const services = createServices(config, db, { logger: createLogger(config) });
const app = await buildApp({ config, db, services });
const url = await app.listen({ port: 0, host: '127.0.0.1' });
const { apiKey } = await services.tenancy.createTenant('alloc');
const created = await fetch(`${url}/api/v1/agents`, {
  method: 'POST',
  headers: { 'content-type': 'application/json', authorization: `Bearer ${apiKey}` },
  body: JSON.stringify({ name: 'Alloc agent', appId: 'bench' }),
});
const agent = /** @type {{ id: string }} */ (await created.json());

/** autocannon in a child process for `seconds`; resolves with the number of 2xx answers. */
function load(seconds) {
  return new Promise((resolve, reject) => {
    const child = spawn(
      process.execPath,
      [
        path.join(ROOT, 'node_modules/autocannon/autocannon.js'),
        ...['-c', '50', '-d', String(seconds), '-m', 'POST', '--json'],
        ...['-H', 'content-type=application/json', '-H', `authorization=Bearer ${apiKey}`],
        ...['-b', JSON.stringify({ message: 'Hello, where is my order 4711? It was due yesterday.' })],
        `${url}/api/v1/agents/${agent.id}/execute`,
      ],
      { stdio: ['ignore', 'pipe', 'ignore'] },
    );
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.on('error', reject);
    child.on('exit', () => resolve(JSON.parse(out)['2xx']));
  });
}

try {
  await load(2); // warm-up: compiled code and caches, as in the benchmark
  const session = new inspector.Session();
  session.connect();
  await session.post('HeapProfiler.startSampling', {
    samplingInterval: 4096,
    includeObjectsCollectedByMajorGC: true,
    includeObjectsCollectedByMinorGC: true,
  });
  const runs = await load(Number(values.seconds));
  const { profile } = await session.post('HeapProfiler.stopSampling');
  session.disconnect();

  const bySite = new Map();
  const walk = (node) => {
    const f = node.callFrame;
    const site = `${f.functionName || '(anonymous)'}  ${f.url.replace(`file://${ROOT}/`, '')}${f.url ? `:${f.lineNumber + 1}` : ''}`;
    bySite.set(site, (bySite.get(site) ?? 0) + node.selfSize);
    for (const child of node.children) walk(child);
  };
  walk(profile.head);
  const total = [...bySite.values()].reduce((a, b) => a + b, 0);
  console.log(
    `${runs} runs in ${values.seconds} s; ${(total / 1e6).toFixed(0)} MB allocated (sampled), ${(total / runs / 1024).toFixed(1)} KiB per run`,
  );
  for (const [site, bytes] of [...bySite].sort((a, b) => b[1] - a[1]).slice(0, Number(values.top))) {
    console.log(`${((bytes / total) * 100).toFixed(1).padStart(5)} %  ${(bytes / runs / 1024).toFixed(2).padStart(6)} KiB/run  ${site}`);
  }
} finally {
  await app.close();
  await db.close();
  fs.rmSync(dataDir, { recursive: true, force: true });
}
