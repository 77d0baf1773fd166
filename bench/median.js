#!/usr/bin/env node
// Judges the benchmark's targets on the median of several full runs (issue 22: three), from their
// results files, so that one run at a slow or a fast hour decides nothing on its own.
//
//   node bench/median.js bench/results/a.json bench/results/b.json bench/results/c.json [--out <file>]
//
// `npm run bench -- --repeat 3` runs the suite three times and calls this on its three files.
import fs from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { judgement, median, meets } from './targets.js';

/**
 * @typedef {{ date: string, database: { dialect: string, version?: string }, machine?: { node?: string },
 *   baseline?: { start: number, end: number }, scenarios: any[] }} Results
 * @typedef {{ scenario: string, text: string, unit: string, limit: number, atMost: boolean,
 *   figures: (number | null)[], ran: boolean[], disturbed: boolean[], median: number | null, met: boolean,
 *   serverUs: (number | null)[], serverUsMedian: number | null }} TargetVerdict
 */

/**
 * Every target found in the runs, with its figure in each run, their median, and whether that meets
 * the target. A run without the scenario (`--only`) is left out of its median.
 * @param {Results[]} runs
 * @returns {TargetVerdict[]}
 */
export function combine(runs) {
  const dialects = new Set(runs.map((r) => r.database.dialect));
  if (dialects.size !== 1) throw new Error(`the runs are of different databases (${[...dialects].join(', ')}): combine runs of one`);
  const [dialect] = dialects;
  /** @type {Map<string, TargetVerdict>} */
  const verdicts = new Map();
  runs.forEach((run, i) => {
    for (const row of run.scenarios) {
      const j = judgement(row, dialect);
      if (!j) continue;
      let v = verdicts.get(row.name);
      if (!v) {
        v = {
          scenario: row.name,
          text: j.text,
          unit: j.unit,
          limit: j.limit,
          atMost: j.atMost,
          figures: runs.map(() => null),
          ran: runs.map(() => false),
          disturbed: runs.map(() => false),
          median: null,
          met: false,
          serverUs: runs.map(() => null),
          serverUsMedian: null,
        };
        verdicts.set(row.name, v);
      }
      v.figures[i] = j.figure;
      v.ran[i] = true;
      v.disturbed[i] = Boolean(row.disturbed);
      v.serverUs[i] = typeof row.serverUsPerRequest === 'number' ? row.serverUsPerRequest : null;
    }
  });
  for (const v of verdicts.values()) {
    v.median = median(
      v.figures.filter((_, i) => v.ran[i]),
      v.atMost,
    );
    v.met = meets(v.median, v);
    // The server's CPU per request beside the ratio: the ratio moves with the machine's hour, this less.
    v.serverUsMedian = median(
      v.serverUs.filter((us) => us !== null),
      true,
    );
  }
  return [...verdicts.values()];
}

const show = (/** @type {number | null} */ n) => (n === null ? 'unfinished' : String(Math.round(n * 1000) / 1000));

/**
 * The report: one line per target, each run's figure (* = that run's row was disturbed by other
 * load), the median and whether it meets the target.
 * @param {Results[]} runs
 * @param {TargetVerdict[]} verdicts
 */
export function report(runs, verdicts) {
  const header = ['target', ...runs.map((_, i) => `run ${i + 1}`), 'median', 'met', 'server µs/req'];
  const lines = verdicts.map((v) => [
    `${v.scenario}: ${v.text}`,
    ...v.figures.map((f, i) => (v.ran[i] ? `${show(f)}${v.disturbed[i] ? ' *' : ''}` : 'not run')),
    `${show(v.median)}${v.unit === 'x' ? '' : ` ${v.unit}`}`,
    v.met ? 'yes' : 'NO',
    v.serverUsMedian === null
      ? '-'
      : `${Math.round(v.serverUsMedian)} (${v.serverUs.map((us) => (us === null ? '-' : Math.round(us))).join(', ')})`,
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...lines.map((l) => l[i].length)));
  const fmt = (/** @type {string[]} */ cells) => cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]) : c.padStart(widths[i]))).join('  ');
  const { dialect, version } = runs[0].database;
  return [
    `Agentry benchmark targets, median of ${runs.length} runs, ${dialect}${version ? ` ${version}` : ''}`,
    ...runs.map((r, i) => `  run ${i + 1}: ${r.date}${r.baseline ? `, bare server ${r.baseline.start} / ${r.baseline.end} req/s` : ''}`),
    '',
    fmt(header),
    widths.map((w) => '-'.repeat(w)).join('  '),
    ...lines.map(fmt),
    '',
    "figures: ratios to the bare server of the same run (sse-stream: first-token p99 / the bare server's, same clients);",
    `  RSS in MB, the dispatcher in s; unfinished = the run did not open every stream or finish every task; * = disturbed;`,
    '  server µs/req: the median of the server CPU time per request (per stream for sse-stream), each run in brackets',
  ].join('\n');
}

function main() {
  const { values, positionals } = parseArgs({
    args: process.argv.slice(2),
    allowPositionals: true,
    options: { out: { type: 'string' }, help: { type: 'boolean', short: 'h' } },
  });
  if (values.help || positionals.length < 1) {
    process.stdout.write('usage: node bench/median.js <results.json>... [--out <file>]\n');
    process.exit(values.help ? 0 : 2);
  }
  const runs = positionals.map((f) => /** @type {Results} */ (JSON.parse(fs.readFileSync(f, 'utf8'))));
  const verdicts = combine(runs);
  process.stdout.write(`\n${report(runs, verdicts)}\n`);
  if (values.out) {
    const file = path.resolve(values.out);
    fs.writeFileSync(
      file,
      `${JSON.stringify({ runs: positionals.map((f) => path.relative(path.dirname(file), path.resolve(f))), dialect: runs[0].database.dialect, targets: verdicts }, null, 2)}\n`,
    );
    process.stderr.write(`bench: wrote ${path.relative(process.cwd(), file)}\n`);
  }
}

if (process.argv[1] && path.resolve(process.argv[1]) === import.meta.filename) main();
