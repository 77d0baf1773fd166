#!/usr/bin/env node
// Judges the benchmark's targets on the median of several full runs (three), from their results
// files, so that one run at a slow or a fast hour decides nothing on its own.
//
//   node bench/median.js bench/results/a.json bench/results/b.json bench/results/c.json [--out <file>]
//
// `npm run bench -- --repeat 3` runs the suite three times and calls this on its three files.
import fs from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { cpuMultiples, firstTokenP99, judgement, median, meets, reference } from './targets.js';

/**
 * @typedef {{ date: string, database: { dialect: string, version?: string }, machine?: { node?: string },
 *   options?: { connections?: number },
 *   baseline?: { start: number, end: number, serverUsPerRequest?: import('./targets.js').BareMeasurements },
 *   scenarios: any[] }} Results
 * @typedef {{ scenario: string, what: string, unit: string, limit: number, limitText: string,
 *   figures: (number | null)[], ran: boolean[], disturbed: boolean[], median: number | null, met: boolean,
 *   serverUs: (number | null)[], serverUsMedian: number | null }} TargetVerdict
 * @typedef {{ scenario: string, ran: boolean[], bare: (number | null)[], execute: (number | null)[],
 *   serverUs: (number | null)[], bareMedian: number | null, executeMedian: number | null,
 *   serverUsMedian: number | null }} Untargeted
 *   a scenario without a target: its CPU per request as a multiple of the bare server's and of
 *   execute's in each run (issue 36 judges the execute variants by the latter), reported only
 * @typedef {{ ran: boolean[], p99: (number | null)[], bareP99: (number | null)[], p99Median: number | null,
 *   bareP99Median: number | null }} FirstToken
 *   sse-stream's first-token p99 and the bare server's beside it, reported only
 * @typedef {{ bareUs: (number | null)[], targets: TargetVerdict[], untargeted: Untargeted[], firstToken: FirstToken | null }} Verdicts
 */

/** The median of the known figures (a run that did not measure one is left out), or null. */
const medianOfKnown = (/** @type {(number | null)[]} */ figures) => median(figures.filter((f) => f !== null));

/**
 * Every target found in the runs, with its figure in each run, their median, and whether that meets
 * the target; beside them what is reported without a target. A run without the scenario (`--only`)
 * is left out of its median.
 * @param {Results[]} runs
 * @returns {Verdicts}
 */
export function combine(runs) {
  const dialects = new Set(runs.map((r) => r.database.dialect));
  if (dialects.size !== 1) throw new Error(`the runs are of different databases (${[...dialects].join(', ')}): combine runs of one`);
  const [dialect] = dialects;
  const refs = runs.map(reference);
  const none = () => runs.map(() => null);
  /** @type {Map<string, TargetVerdict>} */
  const targets = new Map();
  /** @type {Map<string, Untargeted>} */
  const untargeted = new Map();
  /** @type {FirstToken | null} */
  let firstToken = null;
  runs.forEach((run, i) => {
    for (const row of run.scenarios) {
      if (row.name.startsWith('baseline')) continue;
      const us = typeof row.serverUsPerRequest === 'number' ? row.serverUsPerRequest : null;
      const ft = firstTokenP99(row);
      if (ft) {
        firstToken ??= { ran: runs.map(() => false), p99: none(), bareP99: none(), p99Median: null, bareP99Median: null };
        firstToken.ran[i] = true;
        firstToken.p99[i] = ft.p99;
        firstToken.bareP99[i] = ft.bareP99;
      }
      const j = judgement(row, dialect, refs[i]);
      if (!j) {
        if (us === null) continue;
        let u = untargeted.get(row.name);
        if (!u) {
          u = {
            scenario: row.name,
            ran: runs.map(() => false),
            bare: none(),
            execute: none(),
            serverUs: none(),
            bareMedian: null,
            executeMedian: null,
            serverUsMedian: null,
          };
          untargeted.set(row.name, u);
        }
        const multiples = cpuMultiples(row, refs[i]);
        u.ran[i] = true;
        u.bare[i] = multiples.bare;
        u.execute[i] = multiples.execute;
        u.serverUs[i] = us;
        continue;
      }
      let v = targets.get(row.name);
      if (!v) {
        v = {
          scenario: row.name,
          what: j.what,
          unit: j.unit,
          limit: j.limit,
          limitText: j.limitText,
          figures: none(),
          ran: runs.map(() => false),
          disturbed: runs.map(() => false),
          median: null,
          met: false,
          serverUs: none(),
          serverUsMedian: null,
        };
        targets.set(row.name, v);
      }
      v.figures[i] = j.figure;
      v.ran[i] = true;
      v.disturbed[i] = Boolean(row.disturbed);
      v.serverUs[i] = us;
    }
  });
  for (const v of targets.values()) {
    // A run that ran the scenario but did not measure or finish what the target counts ranks worst.
    v.median = median(v.figures.filter((_, i) => v.ran[i]));
    v.met = meets(v.median, v);
    v.serverUsMedian = medianOfKnown(v.serverUs);
  }
  for (const u of untargeted.values()) {
    u.bareMedian = medianOfKnown(u.bare);
    u.executeMedian = medianOfKnown(u.execute);
    u.serverUsMedian = medianOfKnown(u.serverUs);
  }
  if (firstToken) {
    firstToken.p99Median = medianOfKnown(firstToken.p99);
    firstToken.bareP99Median = medianOfKnown(firstToken.bareP99);
  }
  return { bareUs: refs.map((r) => r.bareUs), targets: [...targets.values()], untargeted: [...untargeted.values()], firstToken };
}

const show = (/** @type {number | null} */ n, digits = 2) => (n === null ? '-' : n.toFixed(digits));
/** µs: to 0.1 below 100, whole above. */
const showUs = (/** @type {number | null} */ n) => (n === null ? '-' : n.toFixed(n >= 100 ? 0 : 1));
/** A median with each run's figure in brackets ('-' where a run has none). */
const withRuns = (/** @type {number | null} */ m, /** @type {(number | null)[]} */ runs, format = show) =>
  m === null ? '-' : `${format(m)} (${runs.map((f) => format(f)).join(', ')})`;

/** Lines of a table: the first column left-aligned, the others right-aligned. */
function layout(/** @type {string[]} */ header, /** @type {string[][]} */ lines) {
  const widths = header.map((h, i) => Math.max(h.length, ...lines.map((l) => l[i].length)));
  const fmt = (/** @type {string[]} */ cells) => cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]) : c.padStart(widths[i]))).join('  ');
  return [fmt(header), widths.map((w) => '-'.repeat(w)).join('  '), ...lines.map(fmt)];
}

/**
 * The report: one line per target, each run's figure (* = that run's row was disturbed by other
 * load), the median, the limit and whether the median is within it; then what is reported without a
 * target.
 * @param {Results[]} runs
 * @param {Verdicts} verdicts
 */
export function report(runs, verdicts) {
  const runHeaders = runs.map((_, i) => `run ${i + 1}`);
  const targetLines = verdicts.targets.map((v) => {
    const digits = v.unit === 'x bare' ? 2 : 1;
    return [
      `${v.scenario}: ${v.what}`,
      ...v.figures.map((f, i) => (v.ran[i] ? `${f === null ? 'unfinished' : show(f, digits)}${v.disturbed[i] ? ' *' : ''}` : 'not run')),
      v.median === null ? 'unfinished' : show(v.median, digits),
      v.limitText,
      v.met ? 'yes' : 'NO',
      withRuns(v.serverUsMedian, v.serverUs, showUs),
    ];
  });
  const untargetedLines = verdicts.untargeted.map((u) => [
    u.scenario,
    ...u.bare.map((f, i) => (u.ran[i] ? show(f) : 'not run')),
    show(u.bareMedian),
    withRuns(u.executeMedian, u.execute),
    withRuns(u.serverUsMedian, u.serverUs, showUs),
  ]);
  const ft = verdicts.firstToken;
  const { dialect, version } = runs[0].database;
  return [
    `Agentry benchmark targets, median of ${runs.length} run${runs.length === 1 ? '' : 's'}, ${dialect}${version ? ` ${version}` : ''}`,
    ...runs.map((r, i) => {
      const us = r.baseline?.serverUsPerRequest;
      const known = [us?.start, ...(us?.samplesBeforeEachScenario ?? []), us?.end].filter((n) => typeof n === 'number');
      const range = known.length > 1 ? ` (${known.length} measurements, ${Math.min(...known)}-${Math.max(...known)})` : '';
      return `  run ${i + 1}: ${r.date}, the bare server's CPU per request ${showUs(verdicts.bareUs[i])} µs${range}`;
    }),
    '',
    ...layout(['target', ...runHeaders, 'median', 'limit', 'met', 'server µs/req'], targetLines),
    '',
    "CPU/req: the server's CPU time per request (per stream for sse-stream) / the bare server's, same run (x bare);",
    '  RSS in MB, all done in s; unfinished = the run did not measure it, open every stream or finish every task;',
    '  * = disturbed by other load; server µs/req: the median, each run in brackets',
    ...(untargetedLines.length
      ? [
          '',
          ...layout(['no target: CPU/req x bare', ...runHeaders, 'median', 'x execute', 'server µs/req'], untargetedLines),
          '',
          "x execute: the server's CPU time per request / echo execute's, same run (median, each run in brackets)",
        ]
      : []),
    ...(ft
      ? [
          '',
          `sse-stream first-token p99 at ${runs[0].options?.connections ?? 50} streams, ms (no target): ${withRuns(ft.p99Median, ft.p99, (n) => show(n, 1))};` +
            ` the bare server's, same clients: ${withRuns(ft.bareP99Median, ft.bareP99, (n) => show(n, 1))}`,
        ]
      : []),
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
      `${JSON.stringify({ runs: positionals.map((f) => path.relative(path.dirname(file), path.resolve(f))), dialect: runs[0].database.dialect, ...verdicts }, null, 2)}\n`,
    );
    process.stderr.write(`bench: wrote ${path.relative(process.cwd(), file)}\n`);
  }
}

if (process.argv[1] && path.resolve(process.argv[1]) === import.meta.filename) main();
