#!/usr/bin/env node
// Knowledge at scale (issue 38, "Scale"): one knowledge base filled with generated documents through
// the API, measured. Not a timed test: a measured run whose findings are recorded (docs/benchmarks.md,
// "Knowledge: scale").
//
//   node bench/knowledge-scale.js                        # SQLite, 10,000 documents of ~10 chunks each
//   node bench/knowledge-scale.js --db postgres          # PostgreSQL (DATABASE_URL or postgres://postgres@127.0.0.1:5432/postgres)
//   node bench/knowledge-scale.js --documents 1000 --searches 200
//
// What runs where: the real server (`node dist/main.js`, a temporary DATA_DIR or a fresh PostgreSQL
// database, the built-in embedding); the uploads, searches and executes from this process.
//
// Recorded, in bench/results/<date>-knowledge-<db>.json and on stdout:
//   - ingestion: documents and chunks per second from the first upload to the last document ready, the
//     server's CPU and its RSS (sampled every second) meanwhile;
//   - the database's growth per chunk (SQLite: the database and WAL files after a checkpoint;
//     PostgreSQL: pg_database_size);
//   - search latency, p50/p99 per mode, with --concurrency searches in flight;
//   - vector search's first pass against comparing every vector (`exact`), one search at a time:
//     the latency of each, and the share of the exact top 10 the first pass keeps;
//   - runs beside ingestion: execute at a fixed rate on the idle server (with its CPU per execute),
//     then while a second base's documents are indexed: p50/p99 latency of each.

import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs, promisify } from 'node:util';
import { createPgDatabase } from './postgres.js';
import { CLK_TCK, cleanupStack, readCpuTicks, readRssKb, startChild } from './processes.js';
import { percentiles } from './stats.js';

const exec = promisify(execFile);
const ROOT = path.resolve(import.meta.dirname, '..');
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const round = (n, digits = 1) => (n === null || n === undefined ? n : Math.round(n * 10 ** digits) / 10 ** digits);
const log = (msg) => process.stderr.write(`knowledge-scale ${new Date().toISOString().slice(11, 19)}: ${msg}\n`);

/** Sections per generated document, each about one chunk (the default chunk is 1,200 characters). */
const SECTIONS = 10;
/** Uploads in flight at once. */
const UPLOADS_IN_FLIGHT = 8;
/** Executes a second beside ingestion (and again when idle): a steady trickle of runs, not a load test. */
const EXECUTE_RATE = 20;

const USAGE = `usage: node bench/knowledge-scale.js [--db sqlite|postgres] [--documents <n>] [--searches <n>] [--exact-searches <n>] [--concurrency <n>] [--out <file>] [--no-write]
  --documents    documents to ingest (default 10000, the per-base limit)
  --searches     searches per mode after ingestion (default 1000)
  --exact-searches  queries searched by vector with and without exact, one at a time (default 20)
  --concurrency  searches in flight (default 20)
  --cpu-prof     the server runs under \`node --cpu-prof\` (profile in .bench-data/profiles; bench/profile-summary.js reads it)`;

function parseOptions(argv) {
  const { values } = parseArgs({
    args: argv,
    options: {
      db: { type: 'string', default: 'sqlite' },
      documents: { type: 'string', default: '10000' },
      searches: { type: 'string', default: '1000' },
      'exact-searches': { type: 'string', default: '20' },
      concurrency: { type: 'string', default: '20' },
      out: { type: 'string' },
      'cpu-prof': { type: 'boolean', default: false },
      'no-write': { type: 'boolean', default: false },
      help: { type: 'boolean', default: false },
    },
  });
  if (values.help) {
    console.log(USAGE);
    process.exit(0);
  }
  if (!['sqlite', 'postgres'].includes(values.db)) throw new Error(`--db sqlite|postgres\n${USAGE}`);
  const int = (name) => {
    const n = Number(values[name]);
    if (!Number.isInteger(n) || n < 1) throw new Error(`--${name} must be a positive integer\n${USAGE}`);
    return n;
  };
  return {
    db: values.db,
    documents: int('documents'),
    searches: int('searches'),
    exactSearches: int('exact-searches'),
    concurrency: int('concurrency'),
    out: values.out,
    cpuProf: values['cpu-prof'],
    write: !values['no-write'],
  };
}

// ---- the documents ---------------------------------------------------------------------------

/** mulberry32: the same documents every run. */
function prng(seed) {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const random = prng(38);
const SYLLABLES = ['zel', 'brin', 'kor', 'vath', 'quen', 'dor', 'lix', 'tov', 'sen', 'rud', 'pha', 'gri', 'nol', 'tesh', 'yun', 'bax'];
/** 20,000 invented words (repeats possible, as homographs), drawn by Zipf's law: the r-th most common with probability ∝ 1/r. */
const VOCABULARY = Array.from({ length: 20_000 }, () =>
  Array.from({ length: 2 + Math.floor(random() * 3) }, () => SYLLABLES[Math.floor(random() * SYLLABLES.length)]).join(''),
);
const ZIPF_CUMULATIVE = (() => {
  const weights = VOCABULARY.map((_w, r) => 1 / (r + 1));
  const total = weights.reduce((a, b) => a + b, 0);
  let sum = 0;
  return weights.map((w) => (sum += w / total));
})();
const word = () => {
  const x = random();
  let lo = 0;
  let hi = ZIPF_CUMULATIVE.length - 1;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (ZIPF_CUMULATIVE[mid] < x) lo = mid + 1;
    else hi = mid;
  }
  return VOCABULARY[lo];
};
/** English function words: about two words in five of real prose, and of real questions. */
const FUNCTION_WORDS = ['the', 'of', 'and', 'to', 'a', 'in', 'is', 'for', 'that', 'with', 'on', 'as', 'it', 'by', 'at', 'from'];
const functionWord = () => FUNCTION_WORDS[Math.floor(random() * FUNCTION_WORDS.length)];
const sentence = () => {
  const words = Array.from({ length: 8 + Math.floor(random() * 10) }, () => (random() < 0.4 ? functionWord() : word()));
  return `${words[0][0].toUpperCase()}${words.join(' ').slice(1)}.`;
};

/** A Markdown document of SECTIONS sections of about 1,100 characters: about one chunk each. */
function makeDocument(index) {
  const sections = [];
  for (let s = 0; s < SECTIONS; s++) {
    let body = '';
    while (body.length < 1000) body += `${sentence()} `;
    sections.push(`## Section ${s + 1}: ${word()} ${word()}\n\n${body.trim()}`);
  }
  return { title: `Document ${index + 1}`, content: `# Document ${index + 1}\n\n${sections.join('\n\n')}\n` };
}

/** A question of a few content words between function words: "what is the X of Y in Z". */
const query = () => `what is ${Array.from({ length: 2 + Math.floor(random() * 3) }, () => `the ${word()}`).join(' of ')}`;

// ---- the server ------------------------------------------------------------------------------

/** The SQLite database's bytes in use: its pages less the free ones, as of the last commit (WAL included). */
async function sqliteBytes(dataDir) {
  const { default: SQLite } = await import('better-sqlite3');
  const db = new SQLite(path.join(dataDir, 'agentry.sqlite'), { readonly: true });
  try {
    const pragma = (name) => Number(db.pragma(name, { simple: true }));
    return (pragma('page_count') - pragma('freelist_count')) * pragma('page_size');
  } finally {
    db.close();
  }
}

function api(server, key) {
  return async (method, urlPath, body) => {
    const res = await fetch(server.url + urlPath, {
      method,
      headers: { authorization: `Bearer ${key}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    if (!res.ok) throw new Error(`${method} ${urlPath} answered ${res.status}: ${text.slice(0, 500)}`);
    return text ? JSON.parse(text) : null;
  };
}

/** Runs `fn(i)` for i in 0..total-1 with `width` in flight. */
async function inPool(width, total, fn) {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(width, total) }, async () => {
      while (next < total) await fn(next++);
    }),
  );
}

/** Uploads `count` documents (numbered from `first`), UPLOADS_IN_FLIGHT at a time; the seconds it took. */
async function upload(call, baseId, count, first) {
  const started = performance.now();
  let uploaded = 0;
  await inPool(UPLOADS_IN_FLIGHT, count, async (i) => {
    await call('POST', `/api/v1/knowledge-bases/${baseId}/documents`, { ...makeDocument(first + i), mediaType: 'text/markdown' });
    if (++uploaded % 1000 === 0) log(`${uploaded} uploaded`);
  });
  return (performance.now() - started) / 1000;
}

async function readyCount(call, baseId) {
  const failed = (await call('GET', `/api/v1/knowledge-bases/${baseId}/documents?status=failed&limit=1`)).total;
  if (failed) throw new Error(`${failed} documents failed`);
  return (await call('GET', `/api/v1/knowledge-bases/${baseId}/documents?status=ready&limit=1`)).total;
}

/** Waits until `count` documents of the base are ready; the seconds since `started`. */
async function untilReady(call, baseId, count, started) {
  for (;;) {
    const ready = await readyCount(call, baseId);
    if (ready === count) return (performance.now() - started) / 1000;
    log(`${ready} ready`);
    await sleep(1000);
  }
}

/**
 * Executes at EXECUTE_RATE a second until `until()` is true (checked each second, after `everySecond`);
 * each one's latency in ms.
 */
async function executeTrickle(call, agentId, until, everySecond = async () => {}) {
  const latencies = [];
  const failures = [];
  const inFlight = new Set();
  while (!until()) {
    for (let i = 0; i < EXECUTE_RATE; i++) {
      const started = performance.now();
      const p = call('POST', `/api/v1/agents/${agentId}/execute`, { message: 'Where is my order 1234?' })
        .then(() => latencies.push(performance.now() - started))
        .catch((err) => failures.push(err.message))
        .finally(() => inFlight.delete(p));
      inFlight.add(p);
      await sleep(1000 / EXECUTE_RATE);
    }
    await everySecond();
  }
  await Promise.all(inFlight);
  return { executes: latencies.length, failures: failures.length, firstFailure: failures[0] ?? null, latencyMs: percentiles(latencies) };
}

async function main() {
  const opts = parseOptions(process.argv.slice(2));
  const { steps: cleanups, run: cleanup } = cleanupStack(log, 'stopping the server, removing the bench data');
  try {
    if (!fs.existsSync(path.join(ROOT, 'dist/main.js'))) await exec('npm', ['run', 'build'], { cwd: ROOT });
    /** @type {Record<string, string | undefined>} */
    const env = { ...process.env, LOG_LEVEL: 'warn', RATE_LIMIT_PER_MINUTE: '0' };
    delete env.DATABASE_URL;
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'agentry-knowledge-bench-'));
    cleanups.push(async () => fs.rmSync(dataDir, { recursive: true, force: true }));
    env.DATA_DIR = dataDir;
    let database = { dialect: 'sqlite' };
    let bytes = async () => sqliteBytes(dataDir);
    if (opts.db === 'postgres') {
      const pgdb = await createPgDatabase('agentry_knowledge_bench');
      cleanups.push(pgdb.drop);
      env.DATABASE_URL = pgdb.url;
      database = { dialect: 'postgres', version: pgdb.version };
      bytes = pgdb.sizeOf;
    }
    const profiling = opts.cpuProf ? ['--cpu-prof', `--cpu-prof-dir=${path.join(ROOT, '.bench-data', 'profiles')}`] : [];
    const serverStarted = performance.now();
    const server = await startChild('agentry', [...profiling, 'dist/main.js'], env, '/readyz');
    cleanups.push(async () => {
      await server.stop();
      const out = server.output().trim();
      if (out) log(`server output (last 3,000 chars):\n${out.slice(-3000)}`);
    });
    const { stdout } = await exec(process.execPath, [path.join(ROOT, 'dist/cli.js'), 'tenants', 'create', 'bench', '--json'], {
      cwd: ROOT,
      env,
    });
    const call = api(server, JSON.parse(stdout).apiKey);
    const agent = await call('POST', '/api/v1/agents', {
      name: 'Trickle',
      appId: 'bench',
      role: 'support agent',
      systemPrompt: 'You answer customers.',
    });
    const base = await call('POST', '/api/v1/knowledge-bases', { name: 'Scale' });
    log(`server ${server.url} (pid ${server.pid}) on ${database.dialect}; ${opts.documents} documents of ${SECTIONS} sections`);

    // 1. Ingestion alone: every document uploaded, then indexed.
    const bytesBefore = await bytes();
    const rss = [];
    const sampler = setInterval(() => rss.push(readRssKb(server.pid)), 1000);
    const ticksBefore = readCpuTicks(server.pid);
    const started = performance.now();
    const uploadSeconds = await upload(call, base.id, opts.documents, 0);
    const ingestSeconds = await untilReady(call, base.id, opts.documents, started);
    const ingestCpuSeconds = (readCpuTicks(server.pid) - ticksBefore) / CLK_TCK;
    clearInterval(sampler);
    const chunks = (await call('GET', `/api/v1/knowledge-bases/${base.id}`)).chunkCount;
    const growth = (await bytes()) - bytesBefore;
    log(`ingested in ${round(ingestSeconds)} s; ${chunks} chunks; ${round(growth / 2 ** 20)} MiB`);

    // 2. Search, each mode.
    const search = {};
    for (const mode of ['lexical', 'vector', 'hybrid']) {
      const latencies = [];
      const searchStarted = performance.now();
      log(`${mode} searches from ${round((searchStarted - serverStarted) / 1000)} s of the server's life`);
      await inPool(opts.concurrency, opts.searches, async () => {
        const t0 = performance.now();
        await call('POST', `/api/v1/knowledge-bases/${base.id}/search`, { query: query(), mode, k: 5 });
        latencies.push(performance.now() - t0);
      });
      search[mode] = {
        searches: opts.searches,
        perSecond: round(opts.searches / ((performance.now() - searchStarted) / 1000)),
        latencyMs: percentiles(latencies),
      };
      log(`${mode}: p50 ${round(search[mode].latencyMs.p50)} ms, p99 ${round(search[mode].latencyMs.p99)} ms`);
    }

    // 2b. Vector search's first pass against every vector compared, alone: latency and what it keeps.
    const firstPass = [];
    const exact = [];
    let kept = 0;
    let compared = 0;
    const key = (p) => `${p.citation.documentId}:${p.citation.position}`;
    for (let i = 0; i < opts.exactSearches; i++) {
      const body = { query: query(), mode: 'vector', k: 10 };
      let t0 = performance.now();
      const fast = await call('POST', `/api/v1/knowledge-bases/${base.id}/search`, body);
      firstPass.push(performance.now() - t0);
      t0 = performance.now();
      const all = await call('POST', `/api/v1/knowledge-bases/${base.id}/search`, { ...body, exact: true });
      exact.push(performance.now() - t0);
      const exactTop = new Set(all.passages.map(key));
      kept += fast.passages.filter((p) => exactTop.has(key(p))).length;
      compared += exactTop.size;
      if (i === 0) search.vectorIndex = fast.vectorIndex;
    }
    search.vectorAlone = {
      searches: opts.exactSearches,
      firstPassMs: percentiles(firstPass),
      exactMs: percentiles(exact),
      keptOfExactTop10: round(kept / Math.max(1, compared), 3),
    };
    log(
      `vector alone: first pass p50 ${round(search.vectorAlone.firstPassMs.p50)} ms, exact p50 ${round(search.vectorAlone.exactMs.p50)} ms; kept ${search.vectorAlone.keptOfExactTop10} of the exact top 10`,
    );

    // 3. Executes on the idle server, then beside the ingestion of a second base's documents (uploaded
    // first, so the executes meet ingestion, not uploads): their latency, and how fast ingestion went.
    const idleTicks = readCpuTicks(server.pid);
    const idleStarted = performance.now();
    const idle = await executeTrickle(call, agent.id, () => performance.now() - idleStarted > 20_000);
    const idleCpuMs = ((readCpuTicks(server.pid) - idleTicks) / CLK_TCK) * 1000;
    const second = await call('POST', '/api/v1/knowledge-bases', { name: 'Scale, second' });
    const secondDocuments = Math.max(1, Math.min(3000, Math.floor(opts.documents / 3)));
    await upload(call, second.id, secondDocuments, opts.documents);
    const readyAtStart = await readyCount(call, second.id);
    const besideStarted = performance.now();
    let ready = readyAtStart;
    const beside = await executeTrickle(
      call,
      agent.id,
      () => performance.now() - besideStarted > 20_000 || ready === secondDocuments,
      async () => {
        ready = await readyCount(call, second.id);
      },
    );
    const besideSeconds = (performance.now() - besideStarted) / 1000;
    const indexedBeside = (await readyCount(call, second.id)) - readyAtStart;
    const besideIngestion = {
      ...beside,
      seconds: round(besideSeconds),
      documentsIndexed: indexedBeside,
      documentsPerSecond: round(indexedBeside / besideSeconds),
    };
    log(
      `executes idle p50 ${idle.latencyMs.p50} ms; beside ingestion p50 ${beside.latencyMs.p50} ms (${indexedBeside} documents indexed meanwhile)`,
    );

    const report = {
      date: new Date().toISOString(),
      machine: { cpus: os.cpus().length, model: os.cpus()[0]?.model, node: process.version },
      database,
      documents: opts.documents,
      chunks,
      ingestion: {
        uploadSeconds: round(uploadSeconds),
        seconds: round(ingestSeconds),
        documentsPerSecond: round(opts.documents / ingestSeconds),
        chunksPerSecond: round(chunks / ingestSeconds),
        serverCpuSeconds: round(ingestCpuSeconds),
        // Uploads included: they ran during this phase.
        serverCpuMsPerDocument: round((ingestCpuSeconds * 1000) / opts.documents, 2),
        rssMb: { max: round(Math.max(...rss) / 1024), median: round(percentiles(rss).p50 / 1024) },
      },
      databaseBytesPerChunk: Math.round(growth / chunks),
      databaseMiB: round(growth / 2 ** 20),
      search,
      executes: {
        rate: EXECUTE_RATE,
        idle: { ...idle, serverCpuMsPerExecute: round(idleCpuMs / Math.max(1, idle.executes), 2) },
        besideIngestion,
      },
    };
    console.log(JSON.stringify(report, null, 2));
    if (opts.write) {
      const out = opts.out ?? path.join(ROOT, 'bench/results', `${report.date.slice(0, 10)}-knowledge-${database.dialect}.json`);
      fs.writeFileSync(out, `${JSON.stringify(report, null, 2)}\n`);
      log(`written to ${path.relative(ROOT, out)}`);
    }
  } finally {
    await cleanup();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
