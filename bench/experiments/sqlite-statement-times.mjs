// MEASUREMENT, not loaded by the server unless asked: the time SQLite spends in each statement, by SQL
// text, while a scenario runs. Preloaded into the benchmark's server, it wraps better-sqlite3's
// Statement run/get/all and Database exec, and writes the 40 costliest texts (total ms, count, µs each)
// to .bench-data/statement-times-<pid>.txt every 2 s and when the server stops.
//
//   node bench/run.js --only execute --duration 6 --no-write --server-node-arg=--import=./bench/experiments/sqlite-statement-times.mjs
//
// Divide a line's count by the runs the scenario made (the `update "runs" set "status"` line counts one
// per run) to get a statement's cost per run.
import fs from 'node:fs';
import path from 'node:path';
import { isMainThread } from 'node:worker_threads';
import Database from 'better-sqlite3';

const totals = new Map();
// The time is taken before the statement's text is normalised, so that the normalising is not counted.
const record = (statementText, startedAt) => {
  const ns = Number(process.hrtime.bigint() - startedAt);
  const text = statementText();
  const total = totals.get(text) ?? { n: 0, ns: 0 };
  total.n++;
  total.ns += ns;
  totals.set(text, total);
};

// --import loads this into worker threads too (the WAL checkpointer's): time the main thread's statements only.
if (isMainThread) install();

function install() {
  const Statement = Object.getPrototypeOf(new Database(':memory:').prepare('select 1'));
  for (const method of ['run', 'get', 'all']) {
    const original = Statement[method];
    Statement[method] = function timed(...args) {
      const startedAt = process.hrtime.bigint();
      try {
        return original.apply(this, args);
      } finally {
        record(() => this.source.replace(/\s+/g, ' ').slice(0, 160), startedAt);
      }
    };
  }
  const exec = Database.prototype.exec;
  Database.prototype.exec = function timedExec(sql) {
    const startedAt = process.hrtime.bigint();
    try {
      return exec.call(this, sql);
    } finally {
      record(() => `exec: ${sql.replace(/\s+/g, ' ').slice(0, 100)}`, startedAt);
    }
  };

  const out = path.resolve('.bench-data', `statement-times-${process.pid}.txt`);
  const write = () => {
    const lines = [...totals]
      .sort((a, b) => b[1].ns - a[1].ns)
      .slice(0, 40)
      .map(
        ([text, t]) =>
          `${(t.ns / 1e6).toFixed(0).padStart(7)} ms ${String(t.n).padStart(8)} x ${(t.ns / t.n / 1e3).toFixed(1).padStart(7)} µs  ${text}`,
      );
    fs.mkdirSync(path.dirname(out), { recursive: true });
    fs.writeFileSync(out, `${lines.join('\n')}\n`);
  };
  setInterval(write, 2000).unref();
  process.on('exit', write);
}
