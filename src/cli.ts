#!/usr/bin/env node
import fs from 'node:fs';
import readline from 'node:readline';
import { parseArgs } from 'node:util';
import { ConfigError, loadConfig, type Config } from './config.js';
import { migrate, openDatabase, type Db } from './db/database.js';
import { DomainError } from './errors.js';
import { ProblemError } from './http/errors.js';
import { DEFAULT_PLATFORM_ACTIVATION_DELAY_S } from './identity/key-material.js';
import { loadMasterKey } from './identity/master-key.js';
import { PERMISSIONS } from './tenancy/permissions.js';
import { TenancyService, parsePermissions } from './tenancy/service.js';
// What only some commands use is imported by them: each call is a process, and loading the whole
// platform (the doctor's checks load the app) would double the cost of a command that lists keys.

const USAGE = `agentry: operate an Agentry installation (uses DATA_DIR / DATABASE_URL like the server)

  agentry tenants create <name> [--json]        create a tenant and print its first API key (all permissions)
  agentry tenants list [--json]
  agentry keys create --tenant <id> --permissions <p,p,...> [--name <name>] [--json]
  agentry keys list --tenant <id> [--all] [--json]
  agentry keys revoke <keyId> --tenant <id>
  agentry identity platform-keys [--json]       list the platform signing keys and their status
  agentry identity rotate-platform-key [--activate-in <seconds>] [--json]
                                                new platform key: published now, signs after the delay
                                                (default ${DEFAULT_PLATFORM_ACTIVATION_DELAY_S} s, the platform JWKS cache lifetime)
  agentry identity revoke-platform-key <kid>    revoke a platform key (its tokens stop verifying)
  agentry migrate                               apply pending database migrations
  agentry doctor [--json]                       check the installation: each check passed or failed, with a fix;
                                                exits 1 when one failed (docs/operations.md, "Doctor")
  agentry export --tenant <id> [--out <file>]   every row of the tenant as JSON lines (stdout, or a new 0600 file);
                                                run it before retention or a deletion removes anything
  agentry import --file <file> [--json]         put back what export wrote (one tenant) into this database, in one
                                                transaction; prints a new API key (all permissions): imported keys
                                                come back revoked. Copy master.key (or MASTER_KEY) for sealed secrets
  agentry backup --out <file>                   SQLite: a consistent copy of the database while the server runs
  agentry vacuum                                SQLite: convert an older database to incremental auto-vacuum, so
                                                retention hands space back (rewrites the file: stop the server first)
  agentry help

permissions: ${PERMISSIONS.join(', ')}
`;

class UsageError extends Error {}
/** A command refused its input (exit 2), like an import file that is not an export. */
class InputError extends Error {}

const CLI_ACTOR = { type: 'cli' as const, id: null };

function print(json: boolean, value: unknown, text: string) {
  process.stdout.write(json ? `${JSON.stringify(value)}\n` : `${text}\n`);
}

/**
 * A kid is a base64url thumbprint and may begin with '-', which parseArgs would take for an option: the
 * word after `revoke-platform-key` is the kid whatever it looks like, so it goes after a `--`.
 */
function kidAsPositional(argv: string[]): string[] {
  const at = argv.indexOf('revoke-platform-key');
  const kid = argv[at + 1];
  if (at < 0 || kid === undefined || !kid.startsWith('-') || argv.includes('--')) return argv;
  return [...argv.slice(0, at + 1), ...argv.slice(at + 2), '--', kid];
}

async function run(argv: string[], db: Db, config: Config): Promise<void> {
  const { values, positionals } = parseArgs({
    args: kidAsPositional(argv),
    allowPositionals: true,
    options: {
      json: { type: 'boolean', default: false },
      tenant: { type: 'string' },
      permissions: { type: 'string' },
      name: { type: 'string' },
      all: { type: 'boolean', default: false },
      'activate-in': { type: 'string' },
      out: { type: 'string' },
      file: { type: 'string' },
    },
  });
  const [group, action, arg] = positionals;
  const tenancy = new TenancyService(db);
  const json = values.json ?? false;

  if (group === 'migrate') {
    const applied = await migrate(db, { masterKey: () => loadMasterKey(config) });
    print(json, { applied }, applied.length ? `applied: ${applied.join(', ')}` : 'database is up to date');
    return;
  }
  // Every other command needs the schema in place; applying it is idempotent.
  await migrate(db, { masterKey: () => loadMasterKey(config) });

  if (group === 'tenants' && action === 'create') {
    const name = arg?.trim();
    if (!name || name.length > 200) throw new UsageError('tenants create needs a name (1 to 200 characters)');
    const { tenant, apiKey } = await tenancy.createTenant(name, CLI_ACTOR);
    print(
      json,
      { tenant: { id: tenant.id, name: tenant.name }, apiKey },
      `tenant ${tenant.id} (${tenant.name})\napi key (shown once): ${apiKey}`,
    );
    return;
  }
  if (group === 'tenants' && action === 'list') {
    const tenants = (await tenancy.listTenants()).map((t) => ({ id: t.id, name: t.name, createdAt: t.created_at }));
    print(json, { tenants }, tenants.map((t) => `${t.id}  ${t.name}`).join('\n') || '(no tenants)');
    return;
  }
  if (group === 'keys') {
    const tenantId = values.tenant;
    if (!tenantId) throw new UsageError(`keys ${action ?? ''} needs --tenant <id>`);
    await tenancy.requireTenant(tenantId);
    if (action === 'create') {
      if (!values.permissions) throw new UsageError('keys create needs --permissions, e.g. agents:read,agents:write');
      const permissions = parsePermissions(
        values.permissions
          .split(',')
          .map((p) => p.trim())
          .filter(Boolean),
      );
      if (!permissions.length) throw new UsageError('keys create needs at least one permission');
      const { view, secret } = await tenancy.createKey(tenantId, { name: values.name ?? 'cli key', permissions }, CLI_ACTOR);
      print(json, { apiKey: view, key: secret }, `key ${view.id} [${view.permissions.join(', ')}]\napi key (shown once): ${secret}`);
      return;
    }
    if (action === 'list') {
      const { apiKeys } = await tenancy.listKeys(tenantId, 10_000, 0, values.all ?? false);
      print(
        json,
        { apiKeys },
        apiKeys
          .map((k) => `${k.id}  ${k.name}  [${k.permissions.join(', ')}]${k.revokedAt ? `  revoked ${k.revokedAt}` : ''}`)
          .join('\n') || '(no keys)',
      );
      return;
    }
    if (action === 'revoke') {
      if (!arg) throw new UsageError('keys revoke needs the key id');
      await tenancy.revokeKey(tenantId, arg, CLI_ACTOR);
      print(json, { revoked: arg }, `revoked ${arg}`);
      return;
    }
  }
  if (group === 'identity') {
    const [{ AgentsService }, { IdentityService }] = await Promise.all([import('./agents/service.js'), import('./identity/service.js')]);
    const identity = new IdentityService({ db, config, tenancy, agents: new AgentsService({ db, defaultModel: config.defaultModel }) });
    const describe = (k: { kid: string; generation: number; status: string; activatesAt: string; expiresAt: string | null }) =>
      `${k.kid}  #${k.generation}  ${k.status}  signs from ${k.activatesAt}${k.expiresAt ? `  published until ${k.expiresAt}` : ''}`;
    if (action === 'platform-keys') {
      const keys = await identity.listPlatformKeys();
      print(json, { keys }, keys.map(describe).join('\n') || '(no platform keys yet: one is made on first use)');
      return;
    }
    if (action === 'rotate-platform-key') {
      const raw = values['activate-in'];
      if (raw !== undefined && !/^\d{1,7}$/.test(raw)) throw new UsageError('--activate-in takes a whole number of seconds');
      const key = await identity.rotatePlatformKey(raw === undefined ? DEFAULT_PLATFORM_ACTIVATION_DELAY_S : Number(raw));
      print(json, { key }, `new platform key ${key.kid}: published now, signs from ${key.activatesAt}`);
      return;
    }
    if (action === 'revoke-platform-key') {
      if (!arg) throw new UsageError('identity revoke-platform-key needs the kid');
      if (!(await identity.revokePlatformKey(arg))) throw new UsageError(`no platform key ${arg}`);
      print(json, { revoked: arg }, `revoked platform key ${arg}`);
      return;
    }
  }
  if (group === 'export') {
    const tenantId = values.tenant;
    if (!tenantId) throw new UsageError('export needs --tenant <id>');
    await tenancy.requireTenant(tenantId);
    // Opened here, so an existing file (never overwritten) is refused before anything is read.
    const out = values.out ? fs.createWriteStream('', { fd: fs.openSync(values.out, 'wx', 0o600) }) : process.stdout;
    // A full buffer waits for 'drain' or 'error', whichever comes: the other listener goes too, so the waits of a long export do not pile up.
    const write = (line: string) =>
      new Promise<void>((resolve, reject) => {
        if (out.write(line)) return resolve();
        const drained = () => {
          out.off('error', failed);
          resolve();
        };
        const failed = (err: Error) => {
          out.off('drain', drained);
          reject(err);
        };
        out.once('drain', drained).once('error', failed);
      });
    const { exportTenant } = await import('./export/tenant.js');
    const counts = await exportTenant(db, tenantId, write);
    if (out !== process.stdout) await new Promise<void>((resolve, reject) => (out as fs.WriteStream).end(resolve).once('error', reject));
    const total = Object.values(counts).reduce((a, b) => a + b, 0);
    process.stderr.write(`exported ${total} rows of tenant ${tenantId}${values.out ? ` to ${values.out}` : ''}\n`);
    return;
  }
  if (group === 'import') {
    if (!values.file) throw new UsageError('import needs --file <file> (the output of agentry export)');
    // Loaded before the file is opened: its lines flow from the first tick, read or not.
    const { ImportError, importTenant } = await import('./export/tenant.js');
    const lines = readline.createInterface({ input: fs.createReadStream(values.file), crlfDelay: Number.POSITIVE_INFINITY });
    const { tenantId, counts } = await importTenant(db, lines).catch((err) => {
      throw err instanceof ImportError ? new InputError(err.message) : err;
    });
    const { view, secret } = await tenancy.createKey(tenantId, { name: 'after import', permissions: [...PERMISSIONS] }, CLI_ACTOR);
    const total = Object.values(counts).reduce((a, b) => a + b, 0);
    print(
      json,
      { tenantId, counts, apiKey: view, key: secret },
      `imported ${total} rows of tenant ${tenantId}\napi key (shown once): ${secret}`,
    );
    return;
  }
  if (group === 'backup') {
    if (db.dialect !== 'sqlite') throw new UsageError('backup is for SQLite; back up PostgreSQL with pg_dump (docs/operations.md)');
    if (!values.out) throw new UsageError('backup needs --out <file> (a new file)');
    if (fs.existsSync(values.out)) throw new UsageError(`${values.out} exists; backup never overwrites a file`);
    const { backupSqlite } = await import('./db/vacuum.js');
    const pages = await backupSqlite(db.location, values.out);
    print(json, { out: values.out, pages }, `backed up ${db.location} to ${values.out} (${pages} pages)`);
    return;
  }
  if (group === 'vacuum') {
    if (db.dialect !== 'sqlite') throw new UsageError('vacuum is for SQLite; PostgreSQL hands space back with its own VACUUM');
    const { convertToIncrementalVacuum } = await import('./db/vacuum.js');
    const { before, after } = convertToIncrementalVacuum(db.location);
    print(
      json,
      { autoVacuumBefore: before, autoVacuumAfter: after },
      `vacuumed ${db.location}: auto_vacuum ${before} -> ${after} (2: incremental)`,
    );
    return;
  }
  if (!group || group === 'help') {
    process.stdout.write(USAGE);
    return;
  }
  throw new UsageError(`unknown command: ${positionals.join(' ')}`);
}

async function main() {
  const argv = process.argv.slice(2);
  if (!argv.length || argv[0] === 'help' || argv.includes('--help') || argv.includes('-h')) {
    process.stdout.write(USAGE);
    return;
  }
  if (argv[0] === 'doctor') {
    await doctor(argv.slice(1));
    return;
  }
  let db: Db | undefined;
  try {
    const config = loadConfig();
    db = openDatabase({ databaseUrl: config.databaseUrl, dataDir: config.dataDir, poolSize: 2 });
    await run(argv, db, config);
  } catch (err) {
    if (err instanceof UsageError) {
      process.stderr.write(`agentry: ${err.message}\n\n${USAGE}`);
      process.exitCode = 2;
    } else if (
      err instanceof ConfigError ||
      err instanceof DomainError ||
      err instanceof ProblemError ||
      err instanceof InputError ||
      (err as { code?: string }).code?.startsWith('ERR_PARSE_ARGS')
    ) {
      process.stderr.write(`agentry: ${(err as Error).message}\n`);
      process.exitCode = 2;
    } else {
      process.stderr.write(`agentry: ${(err as Error).message ?? String(err)}\n`);
      process.exitCode = 1;
    }
  } finally {
    await db?.close();
  }
}

/** `agentry doctor`: before the configuration is loaded, since whether it loads is its first check. */
async function doctor(args: string[]) {
  const unknown = args.filter((a) => a !== '--json');
  if (unknown.length) {
    process.stderr.write(`agentry: doctor takes only --json, got ${unknown.join(' ')}\n`);
    process.exitCode = 2;
    return;
  }
  const { formatReport, runDoctor } = await import('./doctor/checks.js');
  const checks = await runDoctor();
  const ok = checks.every((c) => c.status !== 'fail');
  process.stdout.write(args.includes('--json') ? `${JSON.stringify({ ok, checks })}\n` : `${formatReport(checks)}\n`);
  process.exitCode = ok ? 0 : 1;
}

void main();
