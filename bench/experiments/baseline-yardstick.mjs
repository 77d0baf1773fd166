// EXPERIMENT, not part of `npm run bench`: how the bare server's figure (the ratios' denominator)
// responds to a server doing a little more work per request. It runs bench/baseline.js busy-waiting
// BURN_US microseconds per request (0 first), drives each with autocannon like the benchmark does
// (50 connections), and prints requests/s, the server's CPU per request and the ratio to the bare
// server of the same run. docs/benchmarks.md (tenth round) reads it: a server that spends 10 µs
// more per request than the bare one does not get 10 µs more per request.
//
//   node bench/experiments/baseline-yardstick.mjs [burn µs, comma-separated; default 0,5,10,15,20,30]
//   (env SECONDS per measurement, default 6; CONNECTIONS, default 50)
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import autocannon from 'autocannon';

const ROOT = path.resolve(import.meta.dirname, '../..');
const burns = (process.argv[2] ?? '0,5,10,15,20,30').split(',').map(Number);
const seconds = Number(process.env.SECONDS ?? 6);
const connections = Number(process.env.CONNECTIONS ?? 50);
const TICKS_PER_SECOND = 100; // USER_HZ on Linux

const freePort = () =>
  new Promise((resolve) => {
    const s = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });

/** The process's user + system CPU time so far, in µs (/proc/<pid>/stat fields 14 and 15). */
function cpuMicros(pid) {
  const fields = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1e6) / TICKS_PER_SECOND;
}

const load = (url, duration) => autocannon({ url, connections, duration });

async function measure(burn) {
  const port = await freePort();
  const child = spawn(process.execPath, [path.join(ROOT, 'bench/baseline.js')], {
    env: { ...process.env, PORT: String(port), BURN_US: String(burn) },
    stdio: 'ignore',
  });
  const url = `http://127.0.0.1:${port}/`;
  try {
    for (let i = 0; i < 50; i++) {
      const up = await fetch(url).then(
        (r) => r.ok,
        () => false,
      );
      if (up) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    await load(url, 2); // warm-up
    const cpu0 = cpuMicros(child.pid);
    const result = await load(url, seconds);
    const cpu = cpuMicros(child.pid) - cpu0;
    const rps = result.requests.total / seconds;
    return { burn, rps, cpuPerRequest: cpu / result.requests.total, errors: result.errors + result.non2xx };
  } finally {
    child.kill();
  }
}

const rows = [];
for (const burn of burns) rows.push(await measure(burn));
const bare = rows.find((r) => r.burn === 0) ?? rows[0];
process.stdout.write(`burn µs  req/s   server µs/req  beyond bare+burn  ratio to bare  errors\n`);
for (const r of rows) {
  const beyond = r.cpuPerRequest - bare.cpuPerRequest - r.burn;
  process.stdout.write(
    `${String(r.burn).padStart(7)}  ${String(Math.round(r.rps)).padStart(6)}  ${r.cpuPerRequest.toFixed(1).padStart(13)}  ${beyond.toFixed(1).padStart(16)}  ${(r.rps / bare.rps).toFixed(2).padStart(13)}  ${String(r.errors).padStart(6)}\n`,
  );
}
