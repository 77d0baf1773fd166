// EXPERIMENT, not part of `npm run bench`: how many machine instructions the server executes per
// request, counted by valgrind (callgrind). Unlike CPU time, the count does not move with what else
// the machine is doing or how fast this VM is at the moment, so two builds can be compared in one
// run each. It counts user-space instructions only, every thread of the server's process (V8's
// compiler and collector threads, the checkpoint worker): the kernel's share (the socket writes,
// most of a GET's time) is not in it.
//
//   node bench/experiments/instructions.mjs [get-agent|execute] [requests]
//   ROOT=/path/to/other/checkout node bench/experiments/instructions.mjs execute   # another build
//
// The server runs under valgrind (~50-100x slower) with counting off; after a warm-up counting is
// switched on (callgrind_control) for `requests` requests, 8 at a time, and the count is divided by
// them.
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { startChild } from '../processes.js';

const exec = promisify(execFile);
const scenario = process.argv[2] ?? 'get-agent';
const requests = Number(process.argv[3] ?? 2000);
const WARMUP = 2000;
const IN_FLIGHT = 8;
const root = path.resolve(process.env.ROOT ?? path.join(import.meta.dirname, '../..'));

const REQUESTS = {
  'get-agent': (agentId) => ({ method: 'GET', path: `/api/v1/agents/${agentId}` }),
  execute: (agentId) => ({
    method: 'POST',
    path: `/api/v1/agents/${agentId}/execute`,
    body: JSON.stringify({ message: 'Where is my order? It was due on Monday and has not arrived yet.' }),
  }),
};
if (!REQUESTS[scenario]) throw new Error(`scenario must be one of ${Object.keys(REQUESTS).join(', ')}`);

async function count(n) {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'agentry-instructions-'));
  const out = path.join(dataDir, 'callgrind.out');
  const env = { ...process.env, LOG_LEVEL: 'warn', RATE_LIMIT_PER_MINUTE: '0', DATA_DIR: dataDir };
  // vgdb names its pipes after the user and the host in the environment (HOST is also the server's
  // listening address, 127.0.0.1 from startChild): the controls below are given the same.
  const vgdbPrefix = `--vgdb-prefix=${path.join(dataDir, 'vgdb')}`;
  const args = [
    '--tool=callgrind',
    '--instr-atstart=no',
    '--smc-check=all-non-file',
    vgdbPrefix,
    `--callgrind-out-file=${out}`,
    process.execPath,
    path.join(root, 'dist/main.js'),
  ];
  const server = await startChild('agentry under valgrind', args, env, '/readyz', { command: 'valgrind', readyTimeoutMs: 600_000 });
  const part1 = path.join(dataDir, 'callgrind.out.1');
  const control = (...flags) =>
    exec('callgrind_control', [vgdbPrefix, ...flags, String(server.pid)], { env: { ...process.env, HOST: '127.0.0.1' } });
  try {
    const { stdout } = await exec(process.execPath, [path.join(root, 'dist/cli.js'), 'tenants', 'create', 'instructions', '--json'], {
      cwd: root,
      env,
    });
    const { apiKey } = JSON.parse(stdout);
    const call = async ({ method, path: p, body }) => {
      const res = await fetch(server.url + p, {
        method,
        body,
        headers: { authorization: `Bearer ${apiKey}`, ...(body ? { 'content-type': 'application/json' } : {}) },
      });
      const text = await res.text();
      if (!res.ok) throw new Error(`${method} ${p}: ${res.status} ${text}`);
      return text;
    };
    const agent = JSON.parse(
      await call({
        method: 'POST',
        path: '/api/v1/agents',
        body: JSON.stringify({ name: 'instructions', appId: 'support', systemPrompt: 'You answer customers of an online shop.' }),
      }),
    );
    const drive = async (total) => {
      let next = 0;
      await Promise.all(
        Array.from({ length: IN_FLIGHT }, async () => {
          while (next++ < total) await call(REQUESTS[scenario](agent.id));
        }),
      );
    };
    await drive(WARMUP);
    await control('-i', 'on');
    await drive(n);
    await control('-d');
    // The dump is written once the server's thread next runs: wake it until the file is there.
    for (let i = 0; i < 100 && !fs.existsSync(part1); i++) {
      await fetch(server.url + '/healthz');
      await new Promise((r) => setTimeout(r, 100));
    }
  } finally {
    await server.stop();
  }
  // The dump made at the end of the measured requests is part 1 (`callgrind.out.1`); the one at exit
  // has nothing (counting was off, and the dump zeroed the counts).
  const dumps = fs.readdirSync(dataDir).filter((f) => f.startsWith('callgrind.out'));
  const text = fs.existsSync(part1) ? fs.readFileSync(part1, 'utf8') : '';
  const total = /^(?:summary|totals):\s+(\d+)/m.exec(text);
  fs.rmSync(dataDir, { recursive: true, force: true });
  if (!total) throw new Error(`no instruction count in callgrind's dump (${dumps.join(', ')}):\n${server.output().slice(-2000)}`);
  return Number(total[1]);
}

const total = await count(requests);
process.stdout.write(
  `${scenario} (${root}): ${Math.round(total / requests).toLocaleString('en')} instructions per request (${requests} requests, ${total.toLocaleString('en')} in all)\n`,
);
