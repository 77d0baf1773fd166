import fs from 'node:fs';
import path from 'node:path';
import { Migrator, sql } from 'kysely';
import { AgentsService } from '../agents/service.js';
import { createCodeSandbox } from '../code/sandbox/index.js';
import { type Config, ConfigError, loadConfig } from '../config.js';
import { type Db, openDatabase } from '../db/database.js';
import { migrationProvider } from '../db/migrations/index.js';
import { findMasterKey } from '../identity/master-key.js';
import { IdentityService } from '../identity/service.js';
import { OutboundGuard } from '../runtime/tools/ssrf.js';
import { TenancyService } from '../tenancy/service.js';

/**
 * `agentry doctor`: checks an installation and says, for each check, whether it passed and what to do
 * when it did not (docs/operations.md, "Doctor"). Reads only: it creates no master key, migrates
 * nothing and tightens no permission; a check whose prerequisite failed is skipped.
 */

type CheckStatus = 'pass' | 'fail' | 'skip';

interface CheckResult {
  name: string;
  status: CheckStatus;
  detail: string;
  /** What to do about a failure. */
  fix?: string;
}

interface DoctorOptions {
  env?: NodeJS.ProcessEnv;
  /** How long a provider's models list may take (ms). */
  providerTimeoutMs?: number;
}

/** Clocks further apart than this fail: tokens' lifetimes, leases and cron fires assume agreement within seconds. */
const MAX_CLOCK_SKEW_MS = 5_000;
/** A platform key retiring within this time with no successor fails the check. */
const KEY_EXPIRY_WARNING_MS = 7 * 24 * 3600 * 1000;
/** Free disk below this fails on SQLite: the WAL, a checkpoint and a vacuum need room to work. */
const MIN_FREE_BYTES = 1024 ** 3;
const DEFAULT_PROVIDER_TIMEOUT_MS = 5_000;

const pass = (name: string, detail: string): CheckResult => ({ name, status: 'pass', detail });
const fail = (name: string, detail: string, fix: string): CheckResult => ({ name, status: 'fail', detail, fix });
const skip = (name: string, detail: string): CheckResult => ({ name, status: 'skip', detail });

export async function runDoctor(options: DoctorOptions = {}): Promise<CheckResult[]> {
  const results: CheckResult[] = [];
  let config: Config;
  try {
    config = loadConfig(options.env ?? process.env);
    results.push(pass('configuration', `parses (${config.databaseUrl ? 'PostgreSQL' : `SQLite in ${config.dataDir}`})`));
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    results.push(fail('configuration', err.message, `set ${err.variable} as README's configuration table describes, or unset it`));
    return results;
  }

  results.push(dataFolder(config));
  results.push(freeDisk(config));

  const db = await openReachable(config, results);
  try {
    const migrated = db ? await migrations(db, results) : false;
    if (db) results.push(await clock(db));
    else results.push(skip('clock', 'the database is not reachable'));
    if (db && migrated) results.push(...(await keys(db, config)));
    else {
      const why = db ? 'the database is not migrated' : 'the database is not reachable';
      results.push(skip('master key', why), skip('platform signing keys', why));
    }
  } finally {
    await db?.close();
  }
  results.push(...(await providers(config, options.providerTimeoutMs ?? DEFAULT_PROVIDER_TIMEOUT_MS)));
  results.push(await breakers(config, options.providerTimeoutMs ?? DEFAULT_PROVIDER_TIMEOUT_MS));
  results.push(await codeExecution(config));
  return results;
}

/** The data folder: a folder, the server's user's own, reachable by nobody else (it holds the master key and SQLite). */
function dataFolder(config: Config): CheckResult {
  const name = 'data folder';
  const dir = config.dataDir;
  // On PostgreSQL with MASTER_KEY set the server keeps nothing there: whatever the folder is, it is not this installation's concern.
  if (config.databaseUrl && config.masterKey)
    return skip(name, `unused: PostgreSQL keeps the data and MASTER_KEY is set (${dir} is never read)`);
  // On PostgreSQL the folder holds only DATA_DIR/master.key; on SQLite, the database too.
  const holds = config.databaseUrl ? 'the master key' : 'the master key and the data';
  let stat: fs.Stats;
  try {
    stat = fs.statSync(dir);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') {
      return config.databaseUrl
        ? pass(name, `${dir} does not exist yet (made 0700 on first start)`)
        : fail(name, `${dir} does not exist`, `start the server once (it makes the folder 0700), or: mkdir -m 700 ${dir}`);
    }
    return fail(name, `${dir}: ${(err as Error).message}`, `make ${dir} readable by the server's user`);
  }
  if (!stat.isDirectory()) return fail(name, `${dir} is not a folder`, 'point DATA_DIR at a folder');
  if (typeof process.getuid === 'function' && stat.uid !== process.getuid()) {
    return fail(name, `${dir} belongs to uid ${stat.uid}, not this user (${process.getuid()})`, `chown it to the server's user`);
  }
  const mode = stat.mode & 0o777;
  if (mode & 0o077) {
    return fail(name, `${dir} is mode ${mode.toString(8)}: others may read ${holds}`, `chmod 700 ${dir}`);
  }
  try {
    fs.accessSync(dir, fs.constants.R_OK | fs.constants.W_OK | fs.constants.X_OK);
  } catch {
    return fail(name, `${dir} is not writable by this user`, `chmod 700 ${dir}`);
  }
  return pass(name, `${dir} is private (mode ${mode.toString(8)})`);
}

function freeDisk(config: Config): CheckResult {
  const name = 'free disk';
  if (config.databaseUrl) return skip(name, 'PostgreSQL keeps the data (its own disk is its server’s to watch)');
  let stat: fs.StatsFs;
  try {
    stat = fs.statfsSync(fs.existsSync(config.dataDir) ? config.dataDir : path.dirname(config.dataDir));
  } catch (err) {
    return fail(name, `cannot read free space: ${(err as Error).message}`, 'check DATA_DIR');
  }
  const free = stat.bavail * stat.bsize;
  const total = stat.blocks * stat.bsize;
  const words = `${gib(free)} free of ${gib(total)}`;
  if (free < MIN_FREE_BYTES) {
    return fail(name, `${words} where SQLite writes`, 'free disk space, set retention (docs/operations.md, "Retention") or move DATA_DIR');
  }
  return pass(name, words);
}

const gib = (bytes: number) => `${(bytes / 1024 ** 3).toFixed(1)} GiB`;

async function openReachable(config: Config, results: CheckResult[]): Promise<Db | null> {
  const name = 'database reachable';
  if (!config.databaseUrl && !fs.existsSync(path.join(config.dataDir, 'agentry.sqlite'))) {
    results.push(fail(name, `no database in ${config.dataDir}`, 'run `agentry migrate` (or start the server) to create it'));
    return null;
  }
  let db: Db | undefined;
  try {
    db = openDatabase({ databaseUrl: config.databaseUrl, dataDir: config.dataDir, poolSize: 1 });
    await sql`select 1`.execute(db.kysely);
    results.push(pass(name, db.location));
    return db;
  } catch (err) {
    await db?.close().catch(() => {});
    results.push(
      fail(
        name,
        (err as Error).message || String(err),
        config.databaseUrl
          ? 'check DATABASE_URL and that PostgreSQL is up and accepts this user'
          : 'check DATA_DIR and its files’ permissions',
      ),
    );
    return null;
  }
}

async function migrations(db: Db, results: CheckResult[]): Promise<boolean> {
  const name = 'database migrated';
  try {
    const all = await new Migrator({ db: db.kysely, provider: migrationProvider() }).getMigrations();
    const pending = all.filter((m) => !m.executedAt).map((m) => m.name);
    if (pending.length) {
      results.push(fail(name, `${pending.length} of ${all.length} migrations pending: ${pending.join(', ')}`, 'run `agentry migrate`'));
      return false;
    }
    results.push(pass(name, `${all.length} migrations applied`));
    return true;
  } catch (err) {
    results.push(fail(name, (err as Error).message, 'run `agentry migrate`'));
    return false;
  }
}

/** This machine's clock against the database server's (PostgreSQL's; SQLite reads this machine's own). */
async function clock(db: Db): Promise<CheckResult> {
  const name = 'clock';
  if (db.dialect === 'sqlite') return pass(name, 'SQLite reads this machine’s clock; nothing to compare');
  const before = Date.now();
  const { rows } = await sql<{ now: Date }>`select clock_timestamp() as now`.execute(db.kysely);
  const after = Date.now();
  // The server read its clock somewhere within the round trip: compared with its middle.
  const skew = new Date(rows[0].now).getTime() - (before + after) / 2;
  const words = `this machine and PostgreSQL differ by ${Math.abs(Math.round(skew))} ms (round trip ${after - before} ms)`;
  if (Math.abs(skew) > MAX_CLOCK_SKEW_MS) return fail(name, words, 'synchronise both clocks (NTP: chrony or systemd-timesyncd)');
  return pass(name, words);
}

async function keys(db: Db, config: Config): Promise<CheckResult[]> {
  let found: ReturnType<typeof findMasterKey>;
  try {
    found = findMasterKey(config);
  } catch (err) {
    return [
      fail('master key', (err as Error).message, 'restore DATA_DIR/master.key from a backup, or set MASTER_KEY'),
      skip('platform signing keys', 'no usable master key'),
    ];
  }
  const identity = found
    ? new IdentityService({
        db,
        config,
        tenancy: new TenancyService(db),
        agents: new AgentsService({ db, defaultModel: config.defaultModel }),
      })
    : null;
  const checked = identity ? await identity.checkPlatformKeys() : null;
  const results: CheckResult[] = [];
  const source = found?.from === 'MASTER_KEY' ? 'MASTER_KEY' : `${config.dataDir}/master.key`;
  if (!found) {
    results.push(pass('master key', `none yet: ${config.dataDir}/master.key is made on first start (replicas need one MASTER_KEY)`));
    results.push(skip('platform signing keys', 'none yet: the first is made on first use'));
    return results;
  }
  const signing = checked!.keys.filter((k) => k.status === 'active' || k.status === 'pending');
  if (checked!.unusable.length) {
    const [first] = checked!.unusable;
    results.push(
      fail(
        'master key',
        `${source} does not open the stored platform key ${first.kid}: ${first.reason}`,
        'set MASTER_KEY (or DATA_DIR/master.key) to the key this database was sealed with',
      ),
    );
  } else if (signing.length) {
    results.push(pass('master key', `${source} opens the stored platform keys (${signing.length})`));
  } else {
    results.push(pass('master key', `${source} is present; no sealed platform key is stored yet to try it on`));
  }
  results.push(platformKeys(checked!.keys, checked!.unusable.length > 0));
  return results;
}

function platformKeys(keys: Awaited<ReturnType<IdentityService['listPlatformKeys']>>, unusable: boolean): CheckResult {
  const name = 'platform signing keys';
  if (unusable) return fail(name, 'a signing key does not open (see master key)', 'fix the master key first');
  const active = keys.filter((k) => k.status === 'active').sort((a, b) => b.generation - a.generation);
  const pending = keys.filter((k) => k.status === 'pending');
  if (!active.length && !pending.length) return pass(name, 'none signs yet: one is made on first use');
  const signer = active[0];
  if (signer?.retiresAt && !pending.length && Date.parse(signer.retiresAt) - Date.now() < KEY_EXPIRY_WARNING_MS) {
    return fail(
      name,
      `key ${signer.kid} stops signing at ${signer.retiresAt} and no key follows it`,
      'run `agentry identity rotate-platform-key`',
    );
  }
  const words = signer ? `key ${signer.kid} (#${signer.generation}) signs` : 'a pending key signs soon';
  return pass(name, `${words}; ${pending.length} pending, ${keys.length} in all`);
}

interface ProviderProbe {
  name: string;
  url: string;
  headers: Record<string, string>;
}

/** Each configured provider's models list: the cheapest call that proves the address, the network and the key. */
function probes(config: Config): ProviderProbe[] {
  const { openai, anthropic, openaiCompatible } = config.providers;
  const list: ProviderProbe[] = [];
  const bearer = (key: string | undefined): Record<string, string> => (key ? { authorization: `Bearer ${key}` } : {});
  const base = (url: string) => url.replace(/\/+$/, '');
  if (openai.apiKey || openai.baseUrl) {
    list.push({ name: 'openai', url: `${base(openai.baseUrl ?? 'https://api.openai.com/v1')}/models`, headers: bearer(openai.apiKey) });
  }
  if (anthropic.apiKey || anthropic.baseUrl) {
    list.push({
      name: 'anthropic',
      url: `${base(anthropic.baseUrl ?? 'https://api.anthropic.com/v1')}/models`,
      headers: { ...(anthropic.apiKey ? { 'x-api-key': anthropic.apiKey } : {}), 'anthropic-version': '2023-06-01' },
    });
  }
  if (openaiCompatible.baseUrl) {
    list.push({ name: 'openai-compatible', url: `${base(openaiCompatible.baseUrl)}/models`, headers: bearer(openaiCompatible.apiKey) });
  }
  return list;
}

async function providers(config: Config, timeoutMs: number): Promise<CheckResult[]> {
  const list = probes(config);
  if (!list.length) return [skip('model providers', 'none configured (builtin/echo needs none)')];
  // Through the SSRF guard as every outbound request; the providers' own hosts are the operator's choice, so allowed.
  const hosts = list.map((p) => new URL(p.url).host);
  const guard = new OutboundGuard({
    allowedHosts: [...config.mcpAllowedHosts, ...hosts],
    allowPrivateNetworks: config.mcpAllowPrivateNetworks,
  });
  try {
    return await Promise.all(list.map((p) => probe(guard, p, timeoutMs)));
  } finally {
    await guard.close();
  }
}

async function probe(guard: OutboundGuard, p: ProviderProbe, timeoutMs: number): Promise<CheckResult> {
  const name = `provider ${p.name}`;
  const started = Date.now();
  try {
    const res = await guard.fetch(p.url, { headers: p.headers, signal: AbortSignal.timeout(timeoutMs) });
    const ms = Date.now() - started;
    if (res.ok) {
      // A 200 is not enough: a proxy's login page or a web server's index answers 200 too, and no model call would work.
      const listed = await modelsList(res);
      if (listed !== undefined) return pass(name, `${p.url} answered ${res.status} in ${ms} ms (${listed} models listed)`);
      const type = res.headers.get('content-type') ?? 'no content type';
      return fail(
        name,
        `${p.url} answered ${res.status} with ${type}, not a models list: this is not the provider's API`,
        `check ${envPrefix(p.name)}_BASE_URL: it must end where the API answers (often /v1), not at a web page or a proxy's login`,
      );
    }
    await res.body?.cancel();
    if (res.status === 401 || res.status === 403) {
      return fail(name, `${p.url} refused the key (${res.status})`, `check ${envPrefix(p.name)}_API_KEY`);
    }
    return fail(name, `${p.url} answered ${res.status}`, `check ${envPrefix(p.name)}_BASE_URL and the provider's status`);
  } catch (err) {
    const e = err as Error & { cause?: { code?: string; message?: string } };
    const reason = e.name === 'TimeoutError' ? `no answer within ${timeoutMs} ms` : (e.cause?.code ?? e.cause?.message ?? e.message);
    return fail(name, `${p.url} is not reachable: ${reason}`, `check ${envPrefix(p.name)}_BASE_URL, DNS and the network (proxy, firewall)`);
  }
}

/** The number of models a models-list answer names (`{"data": [...]}`, as OpenAI and Anthropic answer), or undefined when it is not one. */
async function modelsList(res: Response): Promise<number | undefined> {
  if (!/\bjson\b/i.test(res.headers.get('content-type') ?? '')) {
    await res.body?.cancel();
    return undefined;
  }
  try {
    const body = (await res.json()) as { data?: unknown };
    return Array.isArray(body?.data) ? body.data.length : undefined;
  } catch {
    return undefined;
  }
}

/** Where the running server answers `/metrics`, as this configuration exposes it; undefined when it does not. */
function metricsEndpoint(config: Config): { url: string; headers: Record<string, string> } | undefined {
  // A server listening on every address is reached on loopback.
  const local = (host: string) =>
    host === '0.0.0.0' || host === '::' || host === '' ? '127.0.0.1' : host.includes(':') ? `[${host}]` : host;
  if (config.metrics.port !== undefined) return { url: `http://${local(config.metrics.host)}:${config.metrics.port}/metrics`, headers: {} };
  const token = config.metrics.token;
  if (token)
    return {
      url: `http://${local(config.host)}:${config.port}/metrics`,
      headers: { authorization: `Bearer ${token.reveal().toString()}` },
    };
  return undefined;
}

/**
 * The model breakers of the running server (runtime/models/breaker.ts): they live in its memory, so
 * they are read from its metrics (agentry_model_breaker_state). An open breaker fails: its model is
 * being skipped.
 */
async function breakers(config: Config, timeoutMs: number): Promise<CheckResult> {
  const name = 'model breakers';
  const endpoint = metricsEndpoint(config);
  if (!endpoint)
    return skip(name, 'the server’s metrics are not exposed (METRICS_PORT or METRICS_TOKEN), and the breakers live in its memory');
  const url = new URL(endpoint.url);
  // The server's own address, from its configuration: allowed as exactly that host:port, nothing else.
  const guard = new OutboundGuard({ allowedHosts: [url.host], allowPrivateNetworks: false });
  let text: string;
  try {
    const res = await guard.fetch(endpoint.url, { headers: endpoint.headers, signal: AbortSignal.timeout(timeoutMs) });
    text = await res.text();
    if (!res.ok) {
      return fail(
        name,
        `${url.origin}/metrics answered ${res.status}`,
        'check METRICS_TOKEN is the running server’s, and that its port is this one',
      );
    }
  } catch (err) {
    const e = err as Error & { cause?: { code?: string } };
    const reason = e.name === 'TimeoutError' ? `no answer within ${timeoutMs} ms` : (e.cause?.code ?? e.message);
    return skip(name, `the server is not running at ${url.origin} (${reason})`);
  } finally {
    await guard.close();
  }
  const states = breakerSamples(text);
  const open = states.filter((b) => b.value === 2).map((b) => b.model);
  const halfOpen = states.filter((b) => b.value === 1).map((b) => b.model);
  if (open.length) {
    return fail(
      name,
      `open (the model is skipped): ${open.join(', ')}${halfOpen.length ? `; half-open: ${halfOpen.join(', ')}` : ''}`,
      'check the provider (its status page, the provider check above, the server log); it is tried again after MODEL_BREAKER_COOLDOWN_MS. Give agents fallbackModels of another provider to keep answering meanwhile',
    );
  }
  if (!states.length) return pass(name, 'no model called since the server started');
  const words = halfOpen.length ? `; half-open (a probe is let through): ${halfOpen.join(', ')}` : '';
  return pass(name, `${states.length - halfOpen.length} closed${words}`);
}

/** The agentry_model_breaker_state samples of a Prometheus text exposition. */
function breakerSamples(text: string): { model: string; value: number }[] {
  const samples: { model: string; value: number }[] = [];
  for (const line of text.split('\n')) {
    if (!line.startsWith('agentry_model_breaker_state{')) continue;
    const labels = Object.fromEntries([...line.matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map((m) => [m[1], m[2]]));
    const value = Number(line.slice(line.lastIndexOf(' ') + 1));
    samples.push({ model: `${labels.provider}/${labels.model}`, value });
  }
  return samples;
}

const envPrefix = (provider: string) => provider.toUpperCase().replace(/-/g, '_');

/** The report as a person reads it: one line per check, the fix under a failure. */
/**
 * Whether the sandbox can isolate code here (docs/code-execution.md) and a JavaScript job runs in it;
 * Python's runtime is found but not started (it takes seconds). Off by configuration: skipped.
 */
async function codeExecution(config: Config): Promise<CheckResult> {
  const name = 'code execution';
  if (!config.code.enabled) return skip(name, 'CODE_EXECUTION=off: agents run no code');
  const fix =
    'run on Linux with util-linux (unshare, prlimit), as root or with unprivileged user namespaces allowed ' +
    '(sysctl kernel.unprivileged_userns_clone=1; on Ubuntu kernel.apparmor_restrict_unprivileged_userns=0), or set CODE_EXECUTION=off';
  const sandbox = await createCodeSandbox({ maxima: config.code.maxima, poolSize: 0, maxConcurrent: 1 });
  try {
    const availability = sandbox.availability();
    if (!availability.available) return fail(name, availability.reason, fix);
    const result = await sandbox.run({ language: 'javascript', code: 'console.log(6 * 7)', limits: config.code.maxima });
    if (result.stdout !== '42\n') {
      const why = result.limit?.message ?? (result.stderr.trim().split('\n')[0] || `exit code ${result.exitCode}`);
      return fail(name, `a JavaScript job did not run: ${why}`, fix);
    }
    return pass(
      name,
      `available: network and PID namespaces, Node's permission model, as ${sandbox.runsAs}; ${config.code.poolSize} warm process(es) per language`,
    );
  } finally {
    await sandbox.close();
  }
}

export function formatReport(results: CheckResult[]): string {
  const lines = results.map((r) => {
    const mark = r.status === 'pass' ? 'PASS' : r.status === 'fail' ? 'FAIL' : 'SKIP';
    return `${mark}  ${r.name}: ${r.detail}${r.fix ? `\n      fix: ${r.fix}` : ''}`;
  });
  const failed = results.filter((r) => r.status === 'fail').length;
  lines.push(failed ? `\n${failed} check${failed > 1 ? 's' : ''} failed` : '\nall checks passed');
  return lines.join('\n');
}
