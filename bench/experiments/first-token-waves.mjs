// DIAGNOSTIC: reads the raw marks first-token-trace.mjs keeps with FIRST_TOKEN_TRACE_RAW=1 and says
// what the slowest first tokens had in common: the size of the batch of starts their run went in (the
// wave of requests it came with), and whether a scavenge, a RESTART wait or a slow statement fell
// between the request and its first token. The first window (warm-up) and streams held up by the
// trace's own report are left out. docs/benchmarks-history.md (tenth round) reads it.
//
//   FIRST_TOKEN_TRACE_RAW=1 npm run bench -- --only sse-stream --no-write \
//     --server-node-arg=--import=./bench/experiments/first-token-trace.mjs
//   node bench/experiments/first-token-waves.mjs [.bench-data/first-token-trace.txt.jsonl]
import fs from 'node:fs';
import path from 'node:path';

const file = process.argv[2] ?? path.resolve(import.meta.dirname, '../../.bench-data/first-token-trace.txt.jsonl');
const windows = fs
  .readFileSync(file, 'utf8')
  .trim()
  .split('\n')
  .map((line) => JSON.parse(line));
const overlaps =
  (from, to) =>
  ([t, , d]) =>
    t < to && t + d > from;

const streams = [];
for (const { streams: taken, events } of windows.slice(1)) {
  events.sort((a, b) => a[0] - b[0]);
  const starts = events.filter(([, what]) => what.startsWith('starts batch'));
  const reports = events.filter(([, what]) => what === 'trace report');
  for (const [arrival, first] of taken) {
    if (reports.some(overlaps(arrival, first))) continue;
    const inside = events.filter(overlaps(arrival, first));
    // The first batch of starts to begin after the request: the one its run went in, nearly always.
    const batch = starts.find(([t]) => t >= arrival);
    streams.push({
      ms: first - arrival,
      batch: batch ? Number(batch[1].match(/of (\d+)/)[1]) : 0,
      gc: inside.filter(([, what]) => what.startsWith('gc')).reduce((sum, [, , d]) => sum + d, 0),
      restart: inside.some(([, what]) => what.includes('RESTART')),
      slowSql: inside.some(([, what]) => what.startsWith('sql')),
    });
  }
}
if (!streams.length) throw new Error(`no streams in ${file} after its first window`);
streams.sort((a, b) => a.ms - b.ms);
const at = (list, q) => list[Math.min(list.length - 1, Math.floor(list.length * q))].ms.toFixed(2);
const share = (list, test) => `${Math.round((list.filter(test).length / list.length) * 100)}%`;
const mean = (list, key) => (list.reduce((sum, s) => sum + s[key], 0) / list.length).toFixed(1);

process.stdout.write(
  `${streams.length} streams; server's first token p50 ${at(streams, 0.5)} ms, p90 ${at(streams, 0.9)}, p99 ${at(streams, 0.99)}\n`,
);
const slowest = streams.slice(Math.floor(streams.length * 0.98));
for (const [name, list] of [
  ['all streams', streams],
  ['slowest 2%', slowest],
]) {
  process.stdout.write(
    `${name}: batch of starts ${mean(list, 'batch')} on average; a scavenge inside ${share(list, (s) => s.gc > 0)} (${mean(list, 'gc')} ms on average), ` +
      `a RESTART wait ${share(list, (s) => s.restart)}, a slow statement ${share(list, (s) => s.slowSql)}\n`,
  );
}
for (const [lo, hi] of [
  [1, 8],
  [9, 16],
  [17, 32],
  [33, 64],
]) {
  const list = streams.filter((s) => s.batch >= lo && s.batch <= hi);
  if (!list.length) continue;
  process.stdout.write(
    `batches of ${lo}-${hi}: ${share(streams, (s) => s.batch >= lo && s.batch <= hi)} of streams, first token p50 ${at(list, 0.5)} ms, p99 ${at(list, 0.99)}; ` +
      `${share(slowest, (s) => s.batch >= lo && s.batch <= hi)} of the slowest 2%\n`,
  );
}
