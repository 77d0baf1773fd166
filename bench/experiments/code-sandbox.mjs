// MEASUREMENT, not loaded by the server: the code sandbox's cold start, warm round trip and the memory
// of a warm process (docs/code-execution.md, "Measured"). Needs the build (dist/) and Linux.
//
//   node bench/experiments/code-sandbox.mjs [runs]
//
// Cold: CODE_POOL_SIZE=0, every job starts its process (Pyodide loads). Warm: a pool of one, and a pause
// before each job so that the pool's process is loaded, as it is on a server between executions.
// RSS: the resident memory of each sandbox process (VmRSS of the node behind unshare), read while idle.
import fs from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { createCodeSandbox } from '../../dist/code/sandbox/index.js';
import { descendantPids } from '../processes.js';

const runs = Number(process.argv[2] ?? 5);
const limits = { wallMs: 60_000, cpuMs: 60_000, memoryMb: 512, outputBytes: 65536, maxOutputFiles: 20, maxOutputFileBytes: 1 << 20 };
const jobs = { python: 'print(1)', javascript: 'console.log(1)' };

const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
const fmt = (values) =>
  `median ${median(values).toFixed(0)} ms (min ${Math.min(...values).toFixed(0)}, max ${Math.max(...values).toFixed(0)})`;

/** The sandbox's node processes under this one: their VmRSS in MB. */
function sandboxRss() {
  return descendantPids(process.pid).flatMap((pid) => {
    let status;
    try {
      status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
    } catch {
      return [];
    }
    return /^Name:\s+(\S+)/m.exec(status)?.[1] === 'node' ? [Number(/^VmRSS:\s+(\d+)/m.exec(status)?.[1] ?? 0) / 1024] : [];
  });
}

/** @type {import('../../dist/code/sandbox/types.js').CodeLanguage[]} */
const languages = ['python', 'javascript'];
for (const language of languages) {
  const cold = await createCodeSandbox({ maxima: limits, poolSize: 0, maxConcurrent: 1 });
  const coldTimes = [];
  for (let i = 0; i < runs; i++) {
    const started = performance.now();
    const result = await cold.run({ language, code: jobs[language], limits });
    if (result.stdout !== '1\n') throw new Error(`unexpected result: ${JSON.stringify(result)}`);
    coldTimes.push(performance.now() - started);
  }
  await cold.close();

  const warm = await createCodeSandbox({ maxima: limits, poolSize: 1, maxConcurrent: 1 });
  await warm.run({ language, code: jobs[language], limits }); // fills the pool
  const warmTimes = [];
  const rss = [];
  for (let i = 0; i < runs; i++) {
    await sleep(language === 'python' ? 15_000 : 3_000);
    rss.push(...sandboxRss());
    const started = performance.now();
    const result = await warm.run({ language, code: jobs[language], limits });
    if (result.stdout !== '1\n') throw new Error(`unexpected result: ${JSON.stringify(result)}`);
    warmTimes.push(performance.now() - started);
  }
  await warm.close();
  console.log(`${language}: cold ${fmt(coldTimes)}; warm ${fmt(warmTimes)}; idle warm process RSS ${fmt(rss).replace(/ ms/g, ' MB')}`);
}
