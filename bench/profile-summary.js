#!/usr/bin/env node
// Summarizes a V8 CPU profile written by `node --cpu-prof` (e.g. `npm run bench -- --only get-agent
// --cpu-prof`): self time and total time per function, and self time per package / area.
// Idle time is left out of the percentages: they are shares of the time the process was busy.
//
//   node bench/profile-summary.js .bench-data/profiles/CPU.<...>.cpuprofile [--top 30] [--window 6.1,16.1]
//
// --window from,to keeps the samples between those seconds after the profile started (which is
// within a few tens of ms of the process start): pass a scenario's `window` from the results JSON
// written by the same run to leave out start-up, seeding and the other scenarios.
// --callers name splits that function's self time by its nearest caller outside Node's own
// modules (e.g. --callers writev: how much socket writing is HTTP responses, how much the pg client).
import fs from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: { top: { type: 'string', default: '30' }, window: { type: 'string' }, callers: { type: 'string' }, help: { type: 'boolean' } },
});
process.stdout.on('error', () => process.exit(0)); // piped into head
if (values.help || !positionals[0]) {
  (values.help ? process.stdout : process.stderr).write(
    'usage: node bench/profile-summary.js <file.cpuprofile> [--top N] [--window from,to] [--callers name]\n',
  );
  process.exit(values.help ? 0 : 2);
}
const top = Number(values.top);
const [from, to] = values.window ? values.window.split(',').map((v) => Number(v) * 1e6) : [0, Infinity]; // µs
const profile = JSON.parse(fs.readFileSync(positionals[0], 'utf8'));
const ROOT = path.resolve(import.meta.dirname, '..');

const nodes = new Map(profile.nodes.map((n) => [n.id, n]));
const parent = new Map();
for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);

const IDLE = new Set(['(idle)']);

function shortUrl(url) {
  if (!url) return '';
  const u = url.replace(/^file:\/\//, '');
  const nm = u.lastIndexOf('/node_modules/');
  if (nm >= 0) return u.slice(nm + '/node_modules/'.length);
  if (u.startsWith(ROOT)) return path.relative(ROOT, u);
  // worktrees share one node_modules through a symlink; show any other absolute path as is
  return u;
}

/** Where a frame belongs: an npm package, Agentry's own code, Node's internals, or V8 pseudo-frames. */
function area(cf) {
  const u = shortUrl(cf.url);
  if (!cf.url) return cf.functionName.startsWith('(') ? cf.functionName : '(native)';
  if (cf.url.startsWith('node:')) return 'node:' + cf.url.slice(5).split('/')[0];
  if (cf.url.includes('/node_modules/')) {
    const parts = u.split('/');
    return parts[0].startsWith('@') ? `${parts[0]}/${parts[1]}` : parts[0];
  }
  if (u.startsWith('dist/')) return `agentry ${u.split('/').slice(1, -1).join('/') || u.slice(5)}`;
  return u;
}

const key = (cf) => `${cf.functionName || '(anonymous)'}  ${shortUrl(cf.url)}${cf.url ? `:${cf.lineNumber + 1}` : ''}`;

const self = new Map();
const total = new Map();
const byArea = new Map();
const callers = new Map();
let busy = 0;
let idle = 0;
const { samples, timeDeltas } = profile;
let at = 0; // µs since the profile started
for (let i = 0; i < samples.length; i++) {
  at += timeDeltas[i];
  if (at < from || at > to) continue;
  const dt = (timeDeltas[i + 1] ?? 0) / 1000; // ms; a sample lasts until the next one
  const node = nodes.get(samples[i]);
  const cf = node.callFrame;
  if (IDLE.has(cf.functionName)) {
    idle += dt;
    continue;
  }
  busy += dt;
  const k = key(cf);
  self.set(k, (self.get(k) ?? 0) + dt);
  const a = area(cf);
  byArea.set(a, (byArea.get(a) ?? 0) + dt);
  if (values.callers && cf.functionName === values.callers) {
    let caller = '(none)';
    for (let id = parent.get(node.id); id !== undefined; id = parent.get(id)) {
      const f = nodes.get(id).callFrame;
      if (f.url && !f.url.startsWith('node:')) {
        caller = key(f);
        break;
      }
    }
    callers.set(caller, (callers.get(caller) ?? 0) + dt);
  }
  const seen = new Set();
  for (let id = node.id; id !== undefined; id = parent.get(id)) {
    const f = nodes.get(id).callFrame;
    if (f.functionName === '(root)') continue;
    const fk = key(f);
    if (seen.has(fk)) continue;
    seen.add(fk);
    total.set(fk, (total.get(fk) ?? 0) + dt);
  }
}

const pct = (ms) => `${((ms / busy) * 100).toFixed(1).padStart(5)}%`;
const print = (title, map, n) => {
  process.stdout.write(`\n${title}\n`);
  for (const [k, ms] of [...map].sort((a, b) => b[1] - a[1]).slice(0, n)) {
    process.stdout.write(`${pct(ms)} ${ms.toFixed(0).padStart(7)} ms  ${k}\n`);
  }
};

const wall = (Math.min(profile.endTime - profile.startTime, to) - from) / 1000;
process.stdout.write(
  `${positionals[0]}${values.window ? ` window ${values.window} s` : ''}\nwall ${(wall / 1000).toFixed(1)} s, busy ${(busy / 1000).toFixed(1)} s, idle ${(idle / 1000).toFixed(1)} s; percentages are of busy time\n`,
);
print('self time by area (package / Agentry folder / node internals / V8)', byArea, 25);
print(`self time, top ${top} functions`, self, top);
print(`total time (self + callees), top ${top} functions`, total, top);
if (values.callers) print(`self time of ${values.callers} by nearest caller outside node:*`, callers, 10);
