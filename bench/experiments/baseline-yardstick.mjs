// EXPERIMENT, not part of `npm run bench`: how the bare server's figure (the ratios' denominator)
// responds to a server doing a little more work per request. It runs bench/baseline.js busy-waiting
// BURN_US microseconds per request (0 first), drives each with autocannon like the benchmark does
// (50 connections), and prints requests/s, the server's CPU per request and the ratio to the bare
// server of the same run. docs/benchmarks-history.md (tenth round) reads it: a server that spends 10 µs
// more per request than the bare one does not get 10 µs more per request.
//
//   node bench/experiments/baseline-yardstick.mjs [burn µs, comma-separated; default 0,5,10,15,20,30]
//   (env DURATION, seconds per measurement, default 6; CONNECTIONS, default 50)
import autocannon from 'autocannon';
import { CLK_TCK, readCpuTicks, startChild } from '../processes.js';

const burns = (process.argv[2] ?? '0,5,10,15,20,30').split(',').map(Number);
const seconds = Number(process.env.DURATION ?? 6);
const connections = Number(process.env.CONNECTIONS ?? 50);

const load = (url, duration) => autocannon({ url, connections, duration });

async function measure(burn) {
  const bare = await startChild('baseline', ['bench/baseline.js'], { ...process.env, BURN_US: String(burn) }, '/');
  try {
    const url = `${bare.url}/`;
    await load(url, 2); // warm-up
    const ticks0 = readCpuTicks(bare.pid);
    const result = await load(url, seconds);
    const cpuMicros = ((readCpuTicks(bare.pid) - ticks0) * 1e6) / CLK_TCK;
    return {
      burn,
      rps: result.requests.total / seconds,
      cpuPerRequest: cpuMicros / result.requests.total,
      errors: result.errors + result.non2xx,
    };
  } finally {
    await bare.stop();
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
