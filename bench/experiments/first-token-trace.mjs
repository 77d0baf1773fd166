// DIAGNOSTIC, not loaded by the server unless asked: a timeline of what the server's event loop did
// around each streamed run's first token, to see what the slowest first tokens waited for. It wraps,
// from outside, the points that matter (no server code changes):
//   - a request's arrival (the HTTP server's `request` event) and the first `token` event written to
//     its response: the server's own share of the client's time to the first token;
//   - each group-committed batch (db/group-commit.ts: starts and ends; size and time to commit);
//   - each write of the run event hub (runs/events.ts: how many runs' events, time to publish);
//   - each wait of the server's SQLite connection for a RESTART checkpoint (db/checkpointer.ts writesPaused);
//   - every SQLite statement slower than 0.4 ms (better-sqlite3), by its first words;
//   - garbage collections (PerformanceObserver).
// Every 4 s it appends to .bench-data/first-token-trace.txt (or $FIRST_TOKEN_TRACE_FILE): the server's
// first-token p50/p99/max over the streams of those seconds, what each kind of work cost, the slow
// statements' durations, and the timelines of the three slowest streams.
//
//   npm run bench -- --only sse-stream --no-write --server-node-arg=--import=./bench/experiments/first-token-trace.mjs
//   (FIRST_TOKEN_TRACE_AT=0.99,0.98 shows the streams at those ranks instead of the three slowest;
//   FIRST_TOKEN_TRACE_RAW=1 also keeps the raw marks for bench/experiments/first-token-waves.mjs)
//
// It costs a little on every request and statement: its figures explain the tail, they are not the
// benchmark's. (docs/benchmarks-history.md, eighth round, reads one.)
import fs from 'node:fs';
import http from 'node:http';
import { createRequire } from 'node:module';
import path from 'node:path';
import { PerformanceObserver, performance } from 'node:perf_hooks';
import { CheckpointAwareDialect } from '../../dist/db/checkpointer.js';
import { GroupCommit } from '../../dist/db/group-commit.js';
import { RunEventHub } from '../../dist/runs/events.js';

const OUT = process.env.FIRST_TOKEN_TRACE_FILE ?? path.resolve(import.meta.dirname, '../../.bench-data/first-token-trace.txt');
const SLOW_STATEMENT_MS = 0.4;
/** How far before a slow stream's arrival its timeline starts (ms). */
const BEFORE_MS = Number(process.env.FIRST_TOKEN_TRACE_BEFORE_MS ?? 1);
/**
 * Which streams' timelines are shown, as quantiles of the window's first-token times: the slowest
 * three by default; e.g. `0.99,0.98,0.97` shows the streams at those ranks (what sets the p99, when
 * the maximum is an outlier such as this report's own pause).
 */
const SHOWN = process.env.FIRST_TOKEN_TRACE_AT?.split(',').map(Number);
/** FIRST_TOKEN_TRACE_RAW=1: each window's streams and marks also go, as a JSON line, to OUT + '.jsonl' (read by first-token-waves.mjs). */
const RAW = process.env.FIRST_TOKEN_TRACE_RAW === '1';
const now = () => performance.now();

/** [at ms, what, duration ms] */
let log = [];
/** [arrival, firstToken] per stream */
let streams = [];
const mark = (what, at, duration = 0) => log.push([at, what, duration]);

// Requests and their first token.
const emit = http.Server.prototype.emit;
http.Server.prototype.emit = function (event, ...args) {
  if (event === 'request') {
    const res = /** @type {any} */ (args[1]);
    res.traceArrival = now();
    mark('request', res.traceArrival);
  }
  return emit.call(this, event, ...args);
};
const write = http.ServerResponse.prototype.write;
/** @this {any} */
http.ServerResponse.prototype.write = function (chunk, ...rest) {
  if (this.traceArrival !== undefined && typeof chunk === 'string') {
    if (!this.traceFirstToken && chunk.includes('\nevent: token\n')) {
      this.traceFirstToken = now();
      streams.push([this.traceArrival, this.traceFirstToken]);
      mark('first token', this.traceFirstToken);
    }
    if (chunk.includes('\nevent: done\n')) mark('done', now());
  }
  return write.call(this, chunk, ...rest);
};

/** Wraps a `writesPaused()` so that each wait for a RESTART checkpoint is marked. */
function markPauses(owner, key, who) {
  const original = owner[key];
  if (!original || original.traced) return;
  const wrapped = function (...args) {
    const paused = original.apply(this, args);
    if (paused) {
      const t0 = now();
      paused.then(() => mark(`${who} waited for a RESTART`, t0, now() - t0));
    }
    return paused;
  };
  wrapped.traced = true;
  owner[key] = wrapped;
}

// The server's SQLite connection, held back while a RESTART checkpoint runs.
const createDriver = CheckpointAwareDialect.prototype.createDriver;
CheckpointAwareDialect.prototype.createDriver = function () {
  markPauses(this, 'writesPaused', 'a statement');
  return createDriver.call(this);
};

// Group-committed batches (starts take up to 64 writes, ends 8: told apart by their limit).
// Private members, reached from outside on purpose (this is a diagnostic): hence the `any`s.
const groupCommit = /** @type {any} */ (GroupCommit.prototype);
const writeBatch = groupCommit.writeBatch;
/** @this {any} */
groupCommit.writeBatch = async function () {
  const t0 = now();
  const size = Math.min(this.queue.length, this.options.maxBatch);
  try {
    return await writeBatch.call(this);
  } finally {
    mark(`${this.options.maxBatch >= 64 ? 'starts' : 'ends'} batch of ${size}`, t0, now() - t0);
  }
};

// The event hub's writes.
const hub = /** @type {any} */ (RunEventHub.prototype);
const hubWrite = hub.write;
hub.write = async function (batch) {
  const t0 = now();
  try {
    return await hubWrite.call(this, batch);
  } finally {
    mark(`events of ${batch.length} runs`, t0, now() - t0);
  }
};

// Slow SQLite statements: every statement the server prepares is wrapped where it is created.
const Database = createRequire(import.meta.url)('better-sqlite3');
const prepare = Database.prototype.prepare;
Database.prototype.prepare = function (source) {
  const stmt = prepare.call(this, source);
  const label = `sql ${source.slice(0, 32).replace(/\s+/g, ' ')}`;
  for (const method of ['run', 'all', 'get']) {
    const original = stmt[method];
    stmt[method] = function (...args) {
      const t0 = now();
      try {
        return original.apply(this, args);
      } finally {
        const d = now() - t0;
        if (d > SLOW_STATEMENT_MS) mark(label, t0, d);
      }
    };
  }
  return stmt;
};

new PerformanceObserver((list) => {
  for (const e of list.getEntries()) {
    const kind = /** @type {{ detail?: { kind?: number } }} */ (e).detail?.kind;
    mark(`gc ${kind === 1 ? 'scavenge' : kind}`, e.startTime, e.duration);
  }
}).observe({ entryTypes: ['gc'] });

fs.mkdirSync(path.dirname(OUT), { recursive: true });
/** The previous window's events: a stream that began in it is shown whole. */
let previous = [];
setInterval(() => {
  // This report runs on the server's event loop too (tens of ms under load): it marks itself, so the
  // streams it held up show it in their timelines.
  const reportStart = now();
  const taken = streams;
  const current = log.sort((a, b) => a[0] - b[0]);
  const events = [...previous, ...current];
  previous = current;
  streams = [];
  log = [];
  if (!taken.length) return;
  const latencies = taken.map(([a, f]) => f - a).sort((a, b) => a - b);
  const at = (q) => latencies[Math.min(latencies.length - 1, Math.floor(latencies.length * q))].toFixed(2);
  let out = `--- ${new Date().toISOString()}: ${taken.length} streams; server's first token p50 ${at(0.5)} ms, p99 ${at(0.99)} ms, max ${at(1)} ms\n`;
  const kinds = new Map();
  for (const [, what, d] of current) {
    const kind = what.startsWith('sql') ? 'slow sql' : what.replace(/ of \d+.*/, '').replace(/ batch$/, ' batches');
    const k = kinds.get(kind) ?? { n: 0, ms: 0 };
    k.n++;
    k.ms += d;
    kinds.set(kind, k);
  }
  out += `work: ${[...kinds]
    .filter(([k]) => k !== 'request' && k !== 'first token' && k !== 'done')
    .map(([k, { n, ms }]) => `${k} ${n} (${ms.toFixed(0)} ms)`)
    .join('; ')}\n`;
  const slowSql = current.filter(([, w]) => w.startsWith('sql')).map(([, , d]) => d.toFixed(1));
  out += `slow statements (ms): ${slowSql.join(' ')}\n`;
  const byLatency = [...taken].sort((a, b) => a[1] - a[0] - (b[1] - b[0]));
  const shown = SHOWN
    ? SHOWN.map((q) => byLatency[Math.min(byLatency.length - 1, Math.floor(byLatency.length * q))])
    : byLatency.slice(-3).reverse();
  for (const [arrival, first] of shown) {
    out += `slow stream: first token after ${(first - arrival).toFixed(2)} ms\n`;
    // Runs of requests and first tokens are folded into one line each.
    let run = null;
    const flush = () => {
      if (run) out += `  +${run.from.toFixed(2)}..${run.to.toFixed(2)} ${run.what} x${run.n}\n`;
      run = null;
    };
    for (const [t, what, d] of events) {
      if (t < arrival - BEFORE_MS || t > first) continue;
      const rel = t - arrival;
      if (what === 'request' || what === 'first token' || what === 'done') {
        if (run?.what === what) {
          run.n++;
          run.to = rel;
        } else {
          flush();
          run = { what, n: 1, from: rel, to: rel };
        }
        continue;
      }
      flush();
      out += `  +${rel.toFixed(2)} ${what} (${d.toFixed(2)} ms)\n`;
    }
    flush();
  }
  fs.appendFileSync(OUT, out);
  if (RAW) fs.appendFileSync(`${OUT}.jsonl`, `${JSON.stringify({ streams: taken, events: current })}\n`);
  mark('trace report', reportStart, now() - reportStart);
}, 4000).unref();
