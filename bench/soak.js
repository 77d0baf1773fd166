#!/usr/bin/env node
// The `soak` bench scenario (issue 21, item 15): mixed traffic at about half the measured capacity for
// ten minutes, on PostgreSQL with two replicas of the server on one database, and PostgreSQL restarted
// half-way. Not a timed test: a measured run whose findings are recorded (docs/benchmarks.md, "Soak").
//
//   npm run bench -- --only soak                         # 10 minutes, its own PostgreSQL cluster
//   node bench/soak.js --soak-minutes 2 --rate 300       # shorter, slower
//   node bench/soak.js --database-url postgres://u@host:5432/db --pg-restart-command 'systemctl restart postgresql'
//
// What runs where:
//   - PostgreSQL: by default a throw-away cluster of its own (initdb into a temporary folder, a free
//     port, trust authentication; as the `postgres` user when run as root), stopped, kept down
//     `--outage-seconds` and started again at `--restart-at` of the duration, and removed afterwards.
//     Never the machine's main cluster. With `--database-url`, that database (it must be empty or hold
//     nothing the run minds: a tenant `soak` is created) and `--pg-restart-command` (a shell command);
//   - two replicas: `node main.js` twice on that database, from a copy of dist/ taken at the start (so a
//     build during the run changes nothing), the same MASTER_KEY and PUBLIC_BASE_URL, each its own DATA_DIR;
//   - the load: this process, open loop at `--rate` requests/s, each request to the next replica in turn.
//
// Recorded: each replica's RSS every `--sample-seconds`; per `--window-seconds` window the outcomes by
// kind and status and the latency; after the load, from the database: runs left `running`, one-time
// tasks run other than once, cron times fired twice or not at all. Written to
// bench/results/<date>-soak-postgres.json (or --out).

import { execFile, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { parseArgs, promisify } from 'node:util';
import { createParser } from 'eventsource-parser';
import pg from 'pg';
import { cleanupStack, freePort, readRssKb, startChild } from './processes.js';

const exec = promisify(execFile);
const ROOT = path.resolve(import.meta.dirname, '..');
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const round = (n, digits = 1) => (n === null || n === undefined ? n : Math.round(n * 10 ** digits) / 10 ** digits);
const log = (msg) => process.stderr.write(`soak ${new Date().toISOString().slice(11, 19)}: ${msg}\n`);

/**
 * The traffic mix (shares of all requests) and each kind's capacity on PostgreSQL with one server, from
 * the twelfth round (docs/benchmarks.md; conversation messages: short conversations, measured like
 * execute; one-time tasks: what the dispatcher drains). The default rate is half the capacity of this
 * mix: 1 / sum(share / capacity) / 2.
 */
const MIX = [
  { kind: 'execute', share: 0.3, capacity: 2692 },
  { kind: 'stream', share: 0.15, capacity: 1511 },
  { kind: 'message', share: 0.2, capacity: 1500 },
  { kind: 'authorize', share: 0.3, capacity: 12247 },
  { kind: 'task', share: 0.05, capacity: 207 },
];
const MIX_CAPACITY = 1 / MIX.reduce((sum, m) => sum + m.share / m.capacity, 0);
const AGENTS = 10;
const CONVERSATIONS = 300;
const CRON_TASKS = 4;
/** Requests in flight at most; beyond it a request is not sent and counted as `client_backlog`. */
const MAX_IN_FLIGHT = 400;
const REQUEST_TIMEOUT_MS = 30_000;
/** The servers' run lease (RUN_LEASE_SECONDS): after the load, runs must have ended within it. */
const RUN_LEASE_SECONDS = 30;
/** Seconds after the restart in which a 503 still counts as the outage's (the pool reconnecting). */
const OUTAGE_TAIL_SECONDS = 15;

const USAGE = `usage: node bench/soak.js [--soak-minutes <m>] [--rate <req/s>] [--restart-at <fraction>] [--outage-seconds <s>]
                          [--database-url <url> --pg-restart-command <shell command>] [--pg-bin <dir>]
                          [--sample-seconds <s>] [--window-seconds <s>] [--dist <folder>] [--out <file>] [--no-write]
  --dist             the build to run (default dist/; a copy is taken at the start)
  --soak-minutes     load duration (default 10)
  --rate             requests per second over both replicas (default ${Math.round(MIX_CAPACITY / 2)}: half the mix's capacity
                     from the latest PostgreSQL results, ${Math.round(MIX_CAPACITY)}/s)
  --restart-at       when PostgreSQL is restarted, as a fraction of the duration (default 0.5)
  --outage-seconds   own cluster: how long it stays stopped before it is started again (default 5)
  --database-url     use this database instead of a cluster of its own (then --pg-restart-command is needed)
  --pg-restart-command  shell command that restarts that PostgreSQL (run with sh -c)
  --pg-bin           PostgreSQL's bin folder for the own cluster (default: pg_config --bindir, else /usr/lib/postgresql/<newest>/bin)`;

function parseOptions(argv) {
  const { values } = parseArgs({
    args: argv,
    options: {
      'soak-minutes': { type: 'string', default: '10' },
      rate: { type: 'string' },
      'restart-at': { type: 'string', default: '0.5' },
      'outage-seconds': { type: 'string', default: '5' },
      'database-url': { type: 'string' },
      'pg-restart-command': { type: 'string' },
      'pg-bin': { type: 'string' },
      'sample-seconds': { type: 'string', default: '5' },
      dist: { type: 'string' },
      'window-seconds': { type: 'string', default: '10' },
      out: { type: 'string' },
      'no-write': { type: 'boolean', default: false },
      help: { type: 'boolean', short: 'h', default: false },
      // accepted from bench/run.js's command line
      only: { type: 'string' },
      db: { type: 'string' },
    },
  });
  if (values.help) {
    process.stdout.write(`${USAGE}\n`);
    process.exit(0);
  }
  const fail = (msg) => {
    process.stderr.write(`soak: ${msg}\n${USAGE}\n`);
    process.exit(2);
  };
  const number = (name, min, max = Infinity) => {
    const n = Number(values[name]);
    if (!Number.isFinite(n) || n < min || n > max) fail(`--${name} must be a number from ${min}${max === Infinity ? '' : ` to ${max}`}`);
    return n;
  };
  if (values.db && values.db !== 'postgres') fail('soak runs on PostgreSQL only');
  if (values['database-url'] && !values['pg-restart-command']) fail('--database-url needs --pg-restart-command');
  return {
    minutes: number('soak-minutes', 0.5),
    rate: values.rate === undefined ? Math.round(MIX_CAPACITY / 2) : number('rate', 1),
    restartAt: number('restart-at', 0, 1),
    outageSeconds: number('outage-seconds', 0),
    databaseUrl: values['database-url'],
    restartCommand: values['pg-restart-command'],
    pgBin: values['pg-bin'],
    sampleSeconds: number('sample-seconds', 1),
    windowSeconds: number('window-seconds', 1),
    dist: values.dist,
    out: values.out,
    write: !values['no-write'],
  };
}

// ---- PostgreSQL: a cluster of its own -----------------------------------------------------------

function pgBinDir(given) {
  if (given) return given;
  const r = spawnSync('pg_config', ['--bindir'], { encoding: 'utf8' });
  if (r.status === 0 && fs.existsSync(path.join(r.stdout.trim(), 'initdb'))) return r.stdout.trim();
  const base = '/usr/lib/postgresql';
  const versions = fs.existsSync(base) ? fs.readdirSync(base).filter((v) => fs.existsSync(path.join(base, v, 'bin', 'initdb'))) : [];
  versions.sort((a, b) => Number(b) - Number(a));
  if (!versions.length) throw new Error('no PostgreSQL binaries found (initdb); give --pg-bin');
  return path.join(base, versions[0], 'bin');
}

/** Runs a PostgreSQL tool, as the `postgres` user when this process is root (initdb refuses root). */
async function pgTool(bin, tool, args) {
  const cmd = [path.join(bin, tool), ...args];
  if (process.getuid?.() === 0) {
    const quoted = cmd.map((a) => `'${a.replace(/'/g, `'\\''`)}'`).join(' ');
    return exec('su', ['postgres', '-s', '/bin/sh', '-c', quoted]);
  }
  return exec(cmd[0], cmd.slice(1));
}

/** initdb into a temporary folder, started on a free port; `restart` stops it, waits, starts it. */
async function ownCluster(opts) {
  const bin = pgBinDir(opts.pgBin);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'agentry-soak-pg-'));
  if (process.getuid?.() === 0) await exec('chown', ['postgres:postgres', dir]);
  const port = await freePort();
  await pgTool(bin, 'initdb', ['-D', dir, '-A', 'trust', '-U', 'postgres', '--no-sync', '-E', 'UTF8']);
  const pgOptions = `-p ${port} -k /tmp -c listen_addresses=127.0.0.1 -c max_connections=200 -c fsync=off`;
  const start = () => pgTool(bin, 'pg_ctl', ['-D', dir, '-o', pgOptions, '-l', path.join(dir, 'server.log'), '-w', 'start']);
  const stop = () => pgTool(bin, 'pg_ctl', ['-D', dir, '-m', 'fast', '-w', 'stop']);
  await start();
  const version = (await pgTool(bin, 'postgres', ['--version'])).stdout.trim();
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    description: `${version}, own cluster on port ${port} (fsync off), stopped and started again`,
    restart: async () => {
      await stop();
      await sleep(opts.outageSeconds * 1000);
      await start();
    },
    remove: async () => {
      await stop().catch(() => {});
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

// ---- HTTP client --------------------------------------------------------------------------------

/**
 * One request; resolves { status, body, ms } or { status: <error code>, ms } when no answer came. For
 * `sse`, the answer's events are read to the end: a 200 whose stream ends without `done` counts as
 * `stream_<last event or 'cut'>`.
 */
function request(replica, { method = 'GET', path: urlPath, headers = {}, body, sse = false }) {
  return new Promise((resolve) => {
    const started = performance.now();
    const done = (status, text) => resolve({ status: String(status), body: text, ms: performance.now() - started });
    const req = http.request(`${replica.url}${urlPath}`, {
      method,
      agent: replica.agent,
      headers: body === undefined ? headers : { 'content-type': 'application/json', ...headers, 'content-length': Buffer.byteLength(body) },
      timeout: REQUEST_TIMEOUT_MS,
    });
    req.on('response', (res) => {
      res.setEncoding('utf8');
      if (sse && res.statusCode === 200) {
        let last = null;
        let errorCode = null;
        const parser = createParser({
          onEvent: (e) => {
            last = e.event;
            if (e.event === 'error') {
              try {
                errorCode = JSON.parse(e.data).code ?? JSON.parse(e.data).error?.code ?? 'unknown';
              } catch {
                errorCode = 'unparsable';
              }
            }
          },
        });
        res.on('data', (chunk) => parser.feed(chunk));
        res.on('end', () => done(last === 'done' ? 200 : errorCode ? `stream_error_${errorCode}` : `stream_cut_after_${last}`, ''));
        res.on('error', (/** @type {NodeJS.ErrnoException} */ err) => done(`stream_${err.code ?? 'error'}`, ''));
        return;
      }
      let text = '';
      res.on('data', (d) => (text += d));
      res.on('end', () => done(res.statusCode, text));
      res.on('error', (/** @type {NodeJS.ErrnoException} */ err) => done(err.code ?? 'response_error', text));
    });
    req.on('timeout', () => req.destroy(Object.assign(new Error('timeout'), { code: 'client_timeout' })));
    req.on('error', (/** @type {NodeJS.ErrnoException} */ err) => done(err.code ?? 'socket_error', ''));
    req.end(body);
  });
}

// ---- the run ------------------------------------------------------------------------------------

async function main(argv) {
  const opts = parseOptions(argv);
  const started = new Date();
  const { steps: cleanups, run: cleanup } = cleanupStack(log, 'stopping');
  try {
    return await soak(opts, started, cleanups);
  } finally {
    await cleanup();
  }
}

async function soak(opts, started, cleanups) {
  const dist = opts.dist ? path.resolve(opts.dist) : path.join(ROOT, 'dist');
  if (!fs.existsSync(path.join(dist, 'main.js'))) throw new Error(`${dist}/main.js is missing: npm run build`);
  // The build as it is now, copied beside it (so its packages resolve as before): a rebuild during the
  // run changes nothing.
  const distCopy = path.join(path.dirname(dist), '.bench-data', `soak-dist-${process.pid}`);
  fs.mkdirSync(path.dirname(distCopy), { recursive: true });
  fs.cpSync(dist, distCopy, { recursive: true });
  cleanups.push(async () => fs.rmSync(distCopy, { recursive: true, force: true }));

  let database;
  if (opts.databaseUrl) {
    database = {
      url: opts.databaseUrl,
      description: `given database, restarted by: ${opts.restartCommand}`,
      restart: () => exec('sh', ['-c', opts.restartCommand]),
      remove: async () => {},
    };
  } else {
    database = await ownCluster(opts);
    cleanups.push(database.remove);
  }
  log(`PostgreSQL: ${database.description}`);
  const admin = new pg.Pool({ connectionString: database.url, max: 2 });
  admin.on('error', () => {}); // idle connections are cut by the restart
  cleanups.push(() => admin.end());
  const pgVersion = (await admin.query('show server_version')).rows[0].server_version;

  const env = {
    ...process.env,
    DATABASE_URL: database.url,
    LOG_LEVEL: 'warn',
    RATE_LIMIT_PER_MINUTE: '0',
    RUN_LEASE_SECONDS: String(RUN_LEASE_SECONDS),
    MASTER_KEY: randomBytes(32).toString('base64'),
    PUBLIC_BASE_URL: 'http://agentry-soak.invalid',
  };
  const replicas = [];
  for (const name of ['replica-a', 'replica-b']) {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), `agentry-soak-${name}-`));
    cleanups.push(async () => fs.rmSync(dataDir, { recursive: true, force: true }));
    const child = await startChild(name, [path.join(distCopy, 'main.js')], { ...env, DATA_DIR: dataDir }, '/readyz');
    cleanups.push(async () => {
      await child.stop();
    });
    replicas.push({ name, ...child, agent: new http.Agent({ keepAlive: true, maxSockets: 128 }) });
    log(`${name}: ${child.url} (pid ${child.pid})`);
  }

  // ---- seeding, through the CLI and the API (alternating replicas) ----
  const { stdout } = await exec(process.execPath, [path.join(distCopy, 'cli.js'), 'tenants', 'create', 'soak', '--json'], { env });
  const { apiKey, tenant } = JSON.parse(stdout);
  const auth = { authorization: `Bearer ${apiKey}` };
  let turn = 0;
  const nextReplica = () => replicas[turn++ % replicas.length];
  const api = async (method, urlPath, body) => {
    const r = await request(nextReplica(), {
      method,
      path: urlPath,
      headers: auth,
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    if (!r.status.startsWith('2')) throw new Error(`${method} ${urlPath} answered ${r.status}: ${r.body?.slice(0, 300)}`);
    return r.body ? JSON.parse(r.body) : null;
  };
  const agentIds = [];
  for (let i = 0; i < AGENTS; i++)
    agentIds.push(
      (
        await api('POST', '/api/v1/agents', {
          name: `Soak agent ${i}`,
          appId: 'soak',
          role: 'support agent',
          systemPrompt: 'You answer customer questions about orders.',
        })
      ).id,
    );
  const conversations = [];
  for (let i = 0; i < CONVERSATIONS; i += 20) {
    const batch = Array.from({ length: Math.min(20, CONVERSATIONS - i) }, (_, j) =>
      api('POST', '/api/v1/conversations', { agentId: agentIds[(i + j) % AGENTS], name: `Soak conversation ${i + j}` }),
    );
    for (const c of await Promise.all(batch)) conversations.push(c.id);
  }
  const freeConversations = [...conversations];
  const { svid } = await api('POST', `/api/v1/identity/agents/${agentIds[0]}/svid`, { audience: env.PUBLIC_BASE_URL, ttlSeconds: 86_400 });
  const exchange = async () => {
    const r = await request(nextReplica(), {
      method: 'POST',
      path: '/api/v1/identity/oauth/token',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        grant_type: 'urn:ietf:params:oauth:grant-type:token-exchange',
        subject_token: svid,
        subject_token_type: 'urn:ietf:params:oauth:token-type:jwt',
        audience: agentIds[1],
        scope: 'tools:search',
      }).toString(),
    });
    if (r.status !== '200') throw new Error(`token exchange answered ${r.status}: ${r.body?.slice(0, 300)}`);
    return JSON.parse(r.body).access_token;
  };
  let accessToken = await exchange();
  const cronTasks = [];
  for (let i = 0; i < CRON_TASKS; i++) {
    const t = await api('POST', '/api/v1/tasks', {
      name: `Soak cron ${i}`,
      description: `Summarise the open orders (cron ${i}).`,
      agentId: agentIds[i % AGENTS],
      type: 'scheduled',
      schedule: '* * * * *',
    });
    cronTasks.push({ id: t.id, createdAt: t.createdAt, firstRunAt: t.nextRunAt });
  }
  log(
    `seeded tenant ${tenant.id}: ${AGENTS} agents, ${CONVERSATIONS} conversations, ${CRON_TASKS} cron tasks (* * * * *), an access token for authorize`,
  );

  // ---- load, samples, restart ----
  const seconds = opts.minutes * 60;
  const restartAtMs = seconds * opts.restartAt * 1000;
  const windows = [];
  const windowOf = (tMs) => {
    const i = Math.floor(tMs / (opts.windowSeconds * 1000));
    while (windows.length <= i) windows.push({ fromSeconds: windows.length * opts.windowSeconds, outcomes: {}, latency: {} });
    return windows[i];
  };
  const samples = [];
  const acknowledgedTasks = [];
  const errorsSeen = {}; // status -> a few bodies, for the report
  let inFlight = 0;
  let sent = 0;
  const t0 = performance.now();
  const now = () => performance.now() - t0;
  /** @type {{ fromSeconds: number, backSeconds: number } | null} */
  let outage = null;

  // A request counts in the window it was sent in. Acceptable: a 2xx, or a 503 answered between the
  // restart and OUTAGE_TAIL_SECONDS after PostgreSQL was back (decided when the outage is known, below).
  const answers = [];
  const record = (kind, r, sentAt) => {
    const w = windowOf(sentAt);
    const key = `${kind} ${r.status}`;
    w.outcomes[key] = (w.outcomes[key] ?? 0) + 1;
    if (r.status.startsWith('2')) {
      w.latency[kind] ??= [];
      w.latency[kind].push(r.ms);
    } else {
      answers.push({ window: w, status: r.status, answeredAt: sentAt + r.ms });
      errorsSeen[key] ??= [];
      if (errorsSeen[key].length < 3) errorsSeen[key].push({ atSeconds: round(sentAt / 1000), body: r.body?.slice(0, 300) ?? '' });
    }
  };

  const mixTable = [];
  for (const m of MIX) for (let i = 0; i < Math.round(m.share * 100); i++) mixTable.push(m.kind);
  let mixNext = 0;
  let taskSerial = 0;
  let agentTurn = 0;
  const one = async () => {
    mixNext = (mixNext + 37) % mixTable.length; // 37 is prime to 100: every kind, spread out
    const kind = mixTable[mixNext];
    const replica = nextReplica();
    const agentId = agentIds[agentTurn++ % AGENTS];
    const sentAt = now();
    let r;
    if (kind === 'execute') {
      r = await request(replica, {
        method: 'POST',
        path: `/api/v1/agents/${agentId}/execute`,
        headers: auth,
        body: JSON.stringify({ message: 'Where is my order 4711?' }),
      });
    } else if (kind === 'stream') {
      r = await request(replica, {
        method: 'POST',
        path: `/api/v1/agents/${agentId}/stream`,
        headers: auth,
        body: JSON.stringify({ message: 'Where is my order 4712?' }),
        sse: true,
      });
    } else if (kind === 'message') {
      const id = freeConversations.pop();
      if (id === undefined) {
        r = { status: 'client_no_free_conversation', ms: 0 };
      } else {
        r = await request(replica, {
          method: 'POST',
          path: `/api/v1/conversations/${id}/messages`,
          headers: auth,
          body: JSON.stringify({ content: 'And my parcel?' }),
        });
        freeConversations.push(id);
      }
    } else if (kind === 'authorize') {
      r = await request(replica, {
        method: 'POST',
        path: '/api/v1/identity/authorize',
        headers: { authorization: `Bearer ${accessToken}` },
        body: JSON.stringify({ tool: 'search', callee: agentIds[1] }),
      });
      if (r.status === '200' && !JSON.parse(r.body).allowed) r = { ...r, status: `200_denied_${JSON.parse(r.body).reason}` };
    } else {
      const n = taskSerial++;
      r = await request(replica, {
        method: 'POST',
        path: '/api/v1/tasks',
        headers: auth,
        body: JSON.stringify({ name: `Soak one-time ${n}`, description: `Summarise order ${n}.`, agentId, type: 'one_time' }),
      });
      if (r.status === '201') acknowledgedTasks.push(JSON.parse(r.body).id);
    }
    record(kind, r, sentAt);
  };

  const sampler = setInterval(() => {
    const t = round(now() / 1000, 0);
    const sample = {
      atSeconds: t,
      rssMb: replicas.map((x) => {
        const kb = readRssKb(x.pid);
        return kb === null ? null : round(kb / 1024);
      }),
      inFlight,
      taskJobs: null,
    };
    samples.push(sample);
    // The task queue (null while the database is away): cron fires wait in it behind one-time tasks.
    admin
      .query(
        `select state, count(*)::int as n from task_jobs where tenant_id = $1 and state in ('queued', 'claimed', 'running') group by state`,
        [tenant.id],
      )
      .then(({ rows }) => (sample.taskJobs = Object.fromEntries(rows.map((r) => [r.state, r.n]))))
      .catch(() => {});
  }, opts.sampleSeconds * 1000);
  const tokenRefresh = setInterval(() => {
    exchange().then(
      (t) => (accessToken = t),
      (err) => log(`token exchange for authorize: ${err.message} (the old token stays in use)`),
    );
  }, 60_000);
  const restart = (async () => {
    await sleep(restartAtMs);
    const from = now();
    log(`restarting PostgreSQL at ${round(from / 1000)} s`);
    try {
      await database.restart();
    } catch (err) {
      log(`restart command failed: ${err.message}`);
    }
    outage = { fromSeconds: round(from / 1000), backSeconds: round(now() / 1000) };
    log(`PostgreSQL back at ${outage.backSeconds} s`);
  })();
  const progress = setInterval(() => {
    const w = windows[windows.length - 2];
    if (w)
      log(
        `${w.fromSeconds} s: ${Object.entries(w.outcomes)
          .map(([k, v]) => `${k}: ${v}`)
          .join(', ')}; RSS ${samples.at(-1)?.rssMb.join(' / ')} MB`,
      );
  }, 60_000);

  log(`load: ${opts.rate} requests/s for ${opts.minutes} min, restart at ${round(restartAtMs / 1000)} s`);
  // Open loop: requests are sent on time whatever the answers do, every 10 ms as many as are due.
  const pending = new Set();
  const end = seconds * 1000;
  while (now() < end) {
    const due = Math.floor((now() / 1000) * opts.rate);
    while (sent < due) {
      sent++;
      if (inFlight >= MAX_IN_FLIGHT) {
        record('any', { status: 'client_backlog', ms: 0 }, now());
        continue;
      }
      inFlight++;
      const p = one()
        .catch((err) => record('any', { status: `client_exception`, body: err.message, ms: 0 }, now()))
        .finally(() => {
          inFlight--;
          pending.delete(p);
        });
      pending.add(p);
    }
    await sleep(10);
  }
  clearInterval(tokenRefresh);
  clearInterval(progress);
  log(`load stopped; waiting for ${pending.size} requests in flight`);
  await Promise.all(pending);
  await restart;

  // ---- afterwards: the database's view ----
  // Queued task work drains, runs end (or, if a process lost them, their leases expire and they are
  // declared interrupted); give it the lease twice over, then read what is left.
  const settleDeadline = Date.now() + (RUN_LEASE_SECONDS * 2 + 60) * 1000;
  let open;
  for (;;) {
    open = (
      await admin.query(
        `select (select count(*) from runs where tenant_id = $1 and status = 'running')::int as running,
                (select count(*) from task_jobs where tenant_id = $1 and state in ('queued', 'claimed', 'running'))::int as jobs`,
        [tenant.id],
      )
    ).rows[0];
    if ((open.running === 0 && open.jobs === 0) || Date.now() > settleDeadline) break;
    await sleep(2000);
  }
  clearInterval(sampler);
  log(`after the load: ${open.running} runs running, ${open.jobs} task jobs open`);
  const findings = await checkDatabase(admin, tenant.id, cronTasks, acknowledgedTasks, new Date());
  findings.runsRunningAfterSettle = open.running;
  findings.taskJobsOpenAfterSettle = open.jobs;
  for (const x of replicas) x.agent.destroy();

  // What the replicas logged (warnings and errors; LOG_LEVEL=warn), by message: the evidence behind the findings.
  const logs = {};
  const logDir = path.join(ROOT, '.bench-data', `soak-logs-${started.toISOString().replace(/[:.]/g, '-')}`);
  fs.mkdirSync(logDir, { recursive: true });
  for (const x of replicas) {
    const out = x.output();
    fs.writeFileSync(path.join(logDir, `${x.name}.log`), out);
    const byMessage = {};
    for (const line of out.split('\n')) {
      let entry;
      try {
        entry = JSON.parse(line);
      } catch {
        if (line.trim()) byMessage[`(not JSON) ${line.slice(0, 120)}`] = (byMessage[`(not JSON) ${line.slice(0, 120)}`] ?? 0) + 1;
        continue;
      }
      const key = `${entry.level >= 50 ? 'error' : 'warn'}: ${entry.msg}${entry.code ? ` (${entry.code})` : ''}${entry.err?.message ? `: ${entry.err.message.slice(0, 160)}` : ''}`;
      byMessage[key] = (byMessage[key] ?? 0) + 1;
    }
    logs[x.name] = byMessage;
  }
  log(`replica logs in ${path.relative(ROOT, logDir)}/`);
  const rss = rssJudgement(samples, seconds, replicas);
  const outageWindow = outage ? [outage.fromSeconds, outage.backSeconds + OUTAGE_TAIL_SECONDS] : null;
  const duringOutage = (seconds) => Boolean(outageWindow) && seconds >= outageWindow[0] && seconds <= outageWindow[1];
  for (const a of answers) {
    if (a.status === '503' && duringOutage(a.answeredAt / 1000)) a.window.outage503 = (a.window.outage503 ?? 0) + 1;
    else a.window.unexpected = (a.window.unexpected ?? 0) + 1;
  }
  const timeline = windows.map((w) => {
    const lat = {};
    for (const [k, v] of Object.entries(w.latency)) lat[k] = percentiles(v);
    const inOutage = outageWindow && w.fromSeconds + opts.windowSeconds > outageWindow[0] && w.fromSeconds < outageWindow[1];
    return { ...w, latency: lat, inOutage: Boolean(inOutage), outage503: w.outage503 ?? 0, unexpected: w.unexpected ?? 0 };
  });
  const totals = {};
  for (const w of windows) for (const [k, v] of Object.entries(w.outcomes)) totals[k] = (totals[k] ?? 0) + v;
  const result = {
    date: started.toISOString(),
    scenario: 'soak',
    machine: {
      cpu: os.cpus()[0]?.model,
      cores: os.cpus().length,
      memoryGb: round(os.totalmem() / 1024 ** 3),
      node: process.version,
      loadavgAtEnd: os.loadavg().map((n) => round(n, 2)),
    },
    database: { dialect: 'postgres', version: pgVersion, description: database.description },
    options: {
      minutes: opts.minutes,
      rate: opts.rate,
      mixCapacity: Math.round(MIX_CAPACITY),
      mix: MIX,
      restartAt: opts.restartAt,
      outageSeconds: opts.outageSeconds,
      windowSeconds: opts.windowSeconds,
      sampleSeconds: opts.sampleSeconds,
      runLeaseSeconds: RUN_LEASE_SECONDS,
      agents: AGENTS,
      conversations: CONVERSATIONS,
      cronTasks: CRON_TASKS,
      replicas: replicas.length,
    },
    outage,
    requests: {
      sent,
      totals,
      outage503: timeline.reduce((s, w) => s + w.outage503, 0),
      unexpected: timeline.reduce((s, w) => s + w.unexpected, 0),
      unexpectedByStatus: countBy(
        answers.filter((a) => !(a.status === '503' && duringOutage(a.answeredAt / 1000))),
        (a) => a.status,
      ),
      examples: errorsSeen,
    },
    rss,
    findings,
    logs,
    samples,
    timeline,
  };
  printReport(result);
  if (opts.write) {
    const file = opts.out
      ? path.resolve(opts.out)
      : path.join(ROOT, 'bench', 'results', `${started.toISOString().slice(0, 10)}-soak-postgres.json`);
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(file, `${JSON.stringify(result, null, 2)}\n`);
    log(`wrote ${path.relative(ROOT, file)}`);
  }
  return result;
}

/**
 * What the database says after the load: runs by status and error, one-time tasks and the runs each
 * got, and every cron time from the first one to the last before the load ended, with its fires and runs.
 */
async function checkDatabase(db, tenantId, cronTasks, acknowledgedTasks, checkedAt) {
  const q = async (text, params = [tenantId]) => (await db.query(text, params)).rows;
  const runsByStatus = await q(
    `select kind, status, coalesce(error::json->>'code', '') as error, count(*)::int as n from runs where tenant_id = $1 group by 1, 2, 3 order by 1, 2, 3`,
  );
  const oneTime = await q(
    `select t.id, t.status, t.last_error, (select count(*) from runs r where r.task_id = t.id)::int as runs,
            (select string_agg(j.state, ',') from task_jobs j where j.task_id = t.id) as jobs
       from tasks t where t.tenant_id = $1 and t.type = 'one_time'`,
  );
  const known = new Set(oneTime.map((t) => t.id));
  const oneTimeTasks = {
    created: oneTime.length,
    acknowledged: acknowledgedTasks.length,
    acknowledgedButMissing: acknowledgedTasks.filter((id) => !known.has(id)),
    runOnce: oneTime.filter((t) => t.runs === 1).length,
    neverRun: oneTime.filter((t) => t.runs === 0).map((t) => ({ id: t.id, status: t.status, jobs: t.jobs, lastError: t.last_error })),
    runMoreThanOnce: oneTime.filter((t) => t.runs > 1).map((t) => ({ id: t.id, runs: t.runs, status: t.status, jobs: t.jobs })),
    byStatus: countBy(oneTime, (t) => t.status),
  };
  const cron = [];
  for (const task of cronTasks) {
    // Cron times up to 10 s before now (the scheduler looks every second) have had time to fire; the
    // replicas are still up, so later ones are left out on both sides.
    const bound = new Date(checkedAt.getTime() - 10_000).toISOString();
    const fires = await q(
      `select f.fire_key, f.scheduled_for, f.decision, f.reason, f.missed, f.job_id, f.decided_at,
              (select count(*) from runs r where r.id = (select j.run_id from task_jobs j where j.id = f.job_id))::int as runs,
              (select r.started_at from runs r where r.id = (select j.run_id from task_jobs j where j.id = f.job_id)) as run_started_at
         from task_fires f where f.task_id = $1 and f.scheduled_for <= $2 order by f.scheduled_for`,
      [task.id, bound],
    );
    const taskRuns = (await q(`select count(*)::int as n from runs r where r.task_id = $1 and r.created_at <= $2`, [task.id, bound]))[0].n;
    const expected = [];
    for (let t = Date.parse(task.firstRunAt); t <= Date.parse(bound); t += 60_000) expected.push(new Date(t).toISOString());
    const byTime = new Map();
    for (const f of fires) byTime.set(f.scheduled_for, [...(byTime.get(f.scheduled_for) ?? []), f]);
    cron.push({
      id: task.id,
      expectedTimes: expected.length,
      fires: fires.length,
      runs: taskRuns,
      firedTwice: [...byTime.entries()].filter(([, v]) => v.length > 1).map(([k]) => k),
      notFired: expected.filter((t) => !byTime.has(t)),
      notFiredButRecorded: fires
        .filter((f) => f.decision !== 'fired')
        .map((f) => ({ scheduledFor: f.scheduled_for, decision: f.decision, reason: f.reason, missed: f.missed })),
      firesWithoutOneRun: fires
        .filter((f) => f.decision === 'fired' && f.runs !== 1)
        .map((f) => ({ scheduledFor: f.scheduled_for, runs: f.runs })),
      // Seconds from the cron time to its run's start: a fire's job waits in the queue with all others.
      runStartDelaySeconds: fires
        .filter((f) => f.run_started_at)
        .map((f) => ({
          scheduledFor: f.scheduled_for,
          seconds: round((Date.parse(f.run_started_at) - Date.parse(f.scheduled_for)) / 1000),
        })),
      lateFires: fires
        .map((f) => ({
          scheduledFor: f.scheduled_for,
          lateSeconds: round((Date.parse(f.decided_at) - Date.parse(f.scheduled_for)) / 1000),
        }))
        .filter((f) => f.lateSeconds > 5),
    });
  }
  return { runsByStatus, oneTimeTasks, cron };
}

const countBy = (rows, key) => {
  const counts = {};
  for (const r of rows) counts[key(r)] = (counts[key(r)] ?? 0) + 1;
  return counts;
};

function percentiles(values) {
  if (!values.length) return null;
  const s = [...values].sort((a, b) => a - b);
  const at = (q) => s[Math.min(s.length - 1, Math.floor(s.length * q))];
  return { n: s.length, p50: round(at(0.5)), p99: round(at(0.99)), max: round(s[s.length - 1]) };
}

/**
 * RSS per replica per minute (median of that minute's samples). Warm-up: the first fifth of the run
 * (at least one minute). Flat: every later minute's median within 10 % of the first minute after warm-up.
 */
function rssJudgement(samples, seconds, replicas) {
  const warmup = Math.max(60, seconds / 5);
  const perMinute = replicas.map((x, i) => {
    const minutes = [];
    for (const s of samples) {
      const m = Math.floor(s.atSeconds / 60);
      if (s.rssMb[i] === null) continue; // the replica had exited
      minutes[m] ??= [];
      minutes[m].push(s.rssMb[i]);
    }
    return {
      replica: x.name,
      medianMbByMinute: Array.from(minutes, (v) => (v ? percentiles(v).p50 : null)),
      exited: samples.some((s) => s.rssMb[i] === null),
    };
  });
  for (const r of perMinute) {
    const after = r.medianMbByMinute.slice(Math.ceil(warmup / 60)).filter((v) => v !== null);
    r.afterWarmup = after.length ? { first: after[0], min: Math.min(...after), max: Math.max(...after), last: after.at(-1) } : null;
    r.flat = after.length ? after.every((v) => Math.abs(v - after[0]) / after[0] <= 0.1) : null;
  }
  return { warmupSeconds: warmup, perReplica: perMinute };
}

function queueByMinute(samples) {
  const minutes = [];
  for (const s of samples) {
    if (!s.taskJobs) continue;
    const m = Math.floor(s.atSeconds / 60);
    const q = s.taskJobs.queued ?? 0;
    minutes[m] = Math.max(minutes[m] ?? 0, q);
  }
  return Array.from(minutes, (v) => v ?? '-').join(' ');
}

function printReport(r) {
  const lines = [
    `Agentry soak, PostgreSQL ${r.database.version} (${r.database.description}), ${r.date}`,
    `${r.options.minutes} min at ${r.options.rate} requests/s over ${r.options.replicas} replicas (mix capacity ${r.options.mixCapacity}/s); PostgreSQL restarted at ${r.outage?.fromSeconds} s, back at ${r.outage?.backSeconds} s`,
    `requests: ${r.requests.sent} sent; ${Object.entries(r.requests.totals)
      .map(([k, v]) => `${k}: ${v}`)
      .join(', ')}`,
    `503 answered during the outage (restart to ${OUTAGE_TAIL_SECONDS} s after PostgreSQL was back): ${r.requests.outage503}; anything else not 2xx: ${r.requests.unexpected} ${JSON.stringify(r.requests.unexpectedByStatus)}`,
    '',
    'window   ' + 'outcomes that are not 2xx'.padEnd(60) + ' 2xx; execute p50/p99 ms; 503 in the outage; other',
    ...r.timeline.map(
      (w) =>
        `${String(w.fromSeconds).padStart(5)} s${w.inOutage ? '*' : ' '} ${Object.entries(w.outcomes)
          .filter(([k]) => !/ 20[01]$/.test(k))
          .map(([k, v]) => `${k}: ${v}`)
          .join(', ')
          .padEnd(60)} ${Object.entries(w.outcomes)
          .filter(([k]) => / 20[01]$/.test(k))
          .reduce(
            (s, [, v]) => s + v,
            0,
          )}; ${w.latency.execute ? `${w.latency.execute.p50}/${w.latency.execute.p99}` : '-'}; ${w.outage503}; ${w.unexpected}`,
    ),
    '',
    'RSS MB by minute (median):',
    ...r.rss.perReplica.map(
      (p) => `  ${p.replica}: ${p.medianMbByMinute.join(' ')}; after warm-up ${JSON.stringify(p.afterWarmup)}, flat within 10 %: ${p.flat}`,
    ),
    '',
    `runs left running: ${r.findings.runsRunningAfterSettle}; task jobs open: ${r.findings.taskJobsOpenAfterSettle}`,
    `runs: ${r.findings.runsByStatus.map((x) => `${x.kind}/${x.status}${x.error ? `/${x.error}` : ''}: ${x.n}`).join(', ')}`,
    `one-time tasks: ${JSON.stringify({ ...r.findings.oneTimeTasks, neverRun: r.findings.oneTimeTasks.neverRun.length, runMoreThanOnce: r.findings.oneTimeTasks.runMoreThanOnce.length, acknowledgedButMissing: r.findings.oneTimeTasks.acknowledgedButMissing.length })}`,
    ...r.findings.oneTimeTasks.neverRun.map((t) => `  never run: ${t.id} ${t.status}, jobs ${t.jobs}, last error ${t.lastError}`),
    ...r.findings.cron.map(
      (c) =>
        `cron ${c.id}: ${c.expectedTimes} times expected, ${c.fires} fires, ${c.runs} runs; twice: ${c.firedTwice.length}, not fired: ${c.notFired.length}, recorded not fired: ${c.notFiredButRecorded.length}, fires without one run: ${c.firesWithoutOneRun.length}, decided late (> 5 s): ${c.lateFires.map((f) => `${f.scheduledFor.slice(11, 16)} +${f.lateSeconds} s`).join(' ') || 'none'}; run started after (s): ${c.runStartDelaySeconds.map((f) => `${f.scheduledFor.slice(11, 16)} +${f.seconds}`).join(' ')}${c.notFiredButRecorded.length ? `; not fired: ${c.notFiredButRecorded.map((f) => `${f.scheduledFor.slice(11, 16)} ${f.decision} (${f.reason})`).join(' ')}` : ''}`,
    ),
    `queued task jobs by minute (most in a sample): ${queueByMinute(r.samples)}`,
  ];
  process.stdout.write(`\n${lines.join('\n')}\n`);
}

if (import.meta.url === `file://${process.argv[1]}`) {
  main(process.argv.slice(2)).catch((err) => {
    process.stderr.write(`soak: ${err.stack ?? err}\n`);
    process.exit(1);
  });
}

export { main };
