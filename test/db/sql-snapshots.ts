import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import {
  type CompiledQuery,
  type DatabaseConnection,
  type Driver,
  Kysely,
  PostgresAdapter,
  PostgresIntrospector,
  PostgresQueryCompiler,
  type QueryResult,
  SqliteAdapter,
  SqliteIntrospector,
  SqliteQueryCompiler,
} from 'kysely';
import { format } from 'sql-formatter';
import type { Dialect } from '../../src/db/database.js';
import type { Database } from '../../src/db/schema.js';
import type { SampleCall, SampleDatabase, SampleEntry } from '../../src/db/sql-samples.js';

/**
 * The SQL of every store query, compiled from the samples beside each store (src/db/sql-samples.ts)
 * on both dialects, as `npm run sql:sync` writes it to docs/sql/<domain>.sql and `npm run sql:check`
 * compares it (docs/architecture.md, "Reviewable SQL"). No database runs: a Kysely whose driver
 * records each statement it is sent and answers it with one row, whose every column reads 'sample'.
 */

const ROOT = path.resolve(import.meta.dirname, '../..');
const SRC = path.join(ROOT, 'src');
const SQL_DIR = path.join(ROOT, 'docs/sql');

/** One row for every statement: a store that goes on with what it read (ids to delete next) runs all its SQL. */
const ANY_ROW: object = new Proxy({}, { get: (_target, key) => (typeof key === 'string' && key !== 'then' ? 'sample' : undefined) });

/** Records the statements Kysely sends, and what a transaction around them does. */
class RecordingDriver implements Driver {
  statements: string[] = [];
  private readonly connection: DatabaseConnection = {
    executeQuery: async <R>(query: CompiledQuery): Promise<QueryResult<R>> => {
      this.statements.push(query.sql);
      return { rows: [ANY_ROW as R], numAffectedRows: 1n };
    },
    streamQuery: () => {
      throw new Error('a recorded query cannot be streamed');
    },
  };
  async init() {}
  async acquireConnection() {
    return this.connection;
  }
  async beginTransaction() {
    this.statements.push('begin');
  }
  async commitTransaction() {
    this.statements.push('commit');
  }
  async rollbackTransaction() {
    this.statements.push('rollback');
  }
  async releaseConnection() {}
  async destroy() {}
}

interface Recorder extends SampleDatabase {
  driver: RecordingDriver;
}

function recorder(dialect: Dialect): Recorder {
  const driver = new RecordingDriver();
  const db = new Kysely<Database>({
    dialect:
      dialect === 'sqlite'
        ? {
            createAdapter: () => new SqliteAdapter(),
            createDriver: () => driver,
            createIntrospector: (k) => new SqliteIntrospector(k),
            createQueryCompiler: () => new SqliteQueryCompiler(),
          }
        : {
            createAdapter: () => new PostgresAdapter(),
            createDriver: () => driver,
            createIntrospector: (k) => new PostgresIntrospector(k),
            createQueryCompiler: () => new PostgresQueryCompiler(),
          },
  });
  return { db, dialect, driver };
}

/** A store: one module `x/store.ts`, or the modules of a folder `x/store/`, and where its samples are. */
interface Store {
  /** Its domain: the folder under src/ it is in. */
  domain: string;
  /** Paths under src/ of its modules. */
  modules: string[];
  samples: string;
}

/** Every store under src/: a `store.ts`, or a `store/` folder (migrations excepted). */
function findStores(dir = SRC): Store[] {
  const stores: Store[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
    const full = path.join(dir, entry.name);
    const rel = path.relative(SRC, full);
    if (rel === path.join('db', 'migrations')) continue;
    if (entry.isDirectory() && entry.name === 'store') {
      const modules = readdirSync(full)
        .filter((f) => f.endsWith('.ts') && f !== 'samples.ts')
        .sort()
        .map((f) => path.join(rel, f));
      stores.push({ domain: rel.split(path.sep)[0], modules, samples: path.join(rel, 'samples.ts') });
    } else if (entry.isDirectory()) {
      stores.push(...findStores(full));
    } else if (entry.name === 'store.ts') {
      stores.push({ domain: rel.split(path.sep)[0], modules: [rel], samples: path.join(path.dirname(rel), 'store.samples.ts') });
    }
  }
  return stores;
}

/** One function's recorded SQL on both dialects, under the label its section in docs/sql is headed by. */
interface RecordedQuery {
  label: string;
  sqlite: string[];
  postgres: string[];
}

interface StoreSql {
  queries: RecordedQuery[];
  /** What is wrong with the store's samples: functions without one, samples of no function, samples that record nothing. */
  problems: string[];
}

type AnyFunction = (...args: unknown[]) => unknown;

const isCall = (entry: unknown): entry is SampleCall<AnyFunction> => Array.isArray(entry) || typeof entry === 'function';

/** Calls every sample of the store on both dialects and records the SQL each sends. */
async function recordStore(store: Store): Promise<StoreSql> {
  // The functions the store exports, named by the module that defines them (an index's re-exports name the same functions).
  const functions = new Map<string, { fn: AnyFunction; module: string }>();
  for (const module of [...store.modules].sort((a, b) => Number(a.endsWith('index.ts')) - Number(b.endsWith('index.ts')))) {
    const exports: Record<string, unknown> = await import(path.join(SRC, module));
    for (const [name, value] of Object.entries(exports)) {
      if (typeof value === 'function' && !functions.has(name)) functions.set(name, { fn: value as AnyFunction, module });
    }
  }
  const problems: string[] = [];
  const file = path.join(SRC, store.samples);
  if (!existsSync(file)) {
    return { queries: [], problems: [`src/${store.samples} is missing: it declares a sample call of each function of the store`] };
  }
  const { samples } = (await import(file)) as { samples?: Record<string, SampleEntry<AnyFunction>> };
  if (!samples) return { queries: [], problems: [`src/${store.samples} exports no \`samples\``] };
  for (const name of functions.keys()) if (!(name in samples)) problems.push(`src/${store.samples} has no sample of ${name}`);
  const queries: RecordedQuery[] = [];
  for (const [name, entry] of Object.entries(samples)) {
    const target = functions.get(name);
    if (!target) {
      problems.push(`src/${store.samples} has a sample of ${name}, which the store does not export`);
      continue;
    }
    if (entry === null) continue;
    const calls: [string, SampleCall<AnyFunction>][] = isCall(entry)
      ? [['', entry]]
      : Object.entries(entry).map(([variant, call]) => [` (${variant})`, call]);
    for (const [variant, call] of calls) {
      const label = `${target.module.split(path.sep).join('/')}: ${name}${variant}`;
      const recorded = await recordCall(label, (sample) =>
        typeof call === 'function' ? call(sample) : target.fn(sample.db, ...(call as unknown[])),
      ).catch((err: unknown) => {
        throw new Error(`${label}: its sample threw (src/${store.samples})`, { cause: err });
      });
      if (!recorded.sqlite.length && !recorded.postgres.length) {
        problems.push(`${label}: its sample sent no SQL (a function that runs none has the entry null)`);
      }
      queries.push(recorded);
    }
  }
  return { queries, problems };
}

/** The SQL `call` sends on each dialect; a query builder it returns is executed (its caller would run it). */
export async function recordCall(label: string, call: (sample: SampleDatabase) => unknown): Promise<RecordedQuery> {
  const statements = async (dialect: Dialect) => {
    const target = recorder(dialect);
    const result = call(target);
    const builder = result as { compile?: unknown; execute?: () => Promise<unknown> } | null;
    if (builder && typeof builder.compile === 'function' && typeof builder.execute === 'function') await builder.execute();
    else await result;
    return target.driver.statements;
  };
  return { label, sqlite: await statements('sqlite'), postgres: await statements('postgres') };
}

const HEADER = [
  '-- The SQL of the store queries of this domain, compiled from the samples beside each store on SQLite',
  '-- and PostgreSQL: under `-- sqlite and postgres` when the two differ only in how parameters are written',
  '-- ($1 there is ? on SQLite). Written by `npm run sql:sync`; do not edit (docs/architecture.md, "Reviewable SQL").',
];

const LANGUAGE = { sqlite: 'sqlite', postgres: 'postgresql' } as const;

function formatted(statements: string[], dialect: Dialect): string {
  return statements
    .map((s) => `${format(s, { language: LANGUAGE[dialect], tabWidth: 2, expressionWidth: 100, linesBetweenQueries: 1 })};`)
    .join('\n\n');
}

/** SQLite's statements with their parameters numbered as PostgreSQL's: equal to PostgreSQL's when only that differs. */
const numbered = (statements: string[]) =>
  statements.map((s) => {
    let n = 0;
    return s.replace(/\?/g, () => `$${++n}`);
  });

/** One function's section: its label, then its SQL once when the dialects agree, else each dialect's. */
function section(q: RecordedQuery): string {
  if (numbered(q.sqlite).join('\n') === q.postgres.join('\n')) {
    return `-- ${q.label}\n-- sqlite and postgres\n${formatted(q.postgres, 'postgres')}`;
  }
  const dialect = (statements: string[], name: Dialect) =>
    statements.length ? `-- ${name}\n${formatted(statements, name)}` : `-- ${name}: none`;
  return [`-- ${q.label}`, dialect(q.sqlite, 'sqlite'), '', dialect(q.postgres, 'postgres')].join('\n');
}

/** The text of docs/sql/<domain>.sql for what its stores recorded. */
export function render(queries: RecordedQuery[]): string {
  return `${[HEADER.join('\n'), ...queries.map(section)].join('\n\n')}\n`;
}

/** The files of docs/sql, by name, as the stores' samples make them now; and what is wrong with the samples. */
export async function compileAll(): Promise<{ files: Map<string, string>; problems: string[] }> {
  const byDomain = new Map<string, RecordedQuery[]>();
  const problems: string[] = [];
  for (const store of findStores()) {
    const recorded = await recordStore(store);
    problems.push(...recorded.problems);
    byDomain.set(store.domain, [...(byDomain.get(store.domain) ?? []), ...recorded.queries]);
  }
  const files = new Map<string, string>();
  for (const [domain, queries] of [...byDomain].sort(([a], [b]) => a.localeCompare(b))) files.set(`${domain}.sql`, render(queries));
  return { files, problems };
}

/**
 * What differs between docs/sql as committed and as the samples make it now, diff-like (`-` committed,
 * `+` now, two lines of context, at most 40 lines a file); empty when it is current.
 */
export function staleness(now: Map<string, string>, dir = SQL_DIR): string {
  const committed = new Map<string, string>(
    existsSync(dir)
      ? readdirSync(dir)
          .filter((f) => f.endsWith('.sql'))
          .map((f) => [f, readFileSync(path.join(dir, f), 'utf8')])
      : [],
  );
  const out: string[] = [];
  for (const name of [...new Set([...committed.keys(), ...now.keys()])].sort()) {
    const before = committed.get(name);
    const after = now.get(name);
    if (before === after) continue;
    if (before === undefined) out.push(`docs/sql/${name}: missing`);
    else if (after === undefined) out.push(`docs/sql/${name}: no store of this domain is left`);
    else out.push(`docs/sql/${name}:`, ...lineDiff(before.split('\n'), after.split('\n')));
  }
  return out.join('\n');
}

/** The lines that differ (longest common subsequence), with two lines of context around each change. */
function lineDiff(a: string[], b: string[], limit = 40): string[] {
  const common = Array.from({ length: a.length + 1 }, () => new Array<number>(b.length + 1).fill(0));
  for (let i = a.length - 1; i >= 0; i--)
    for (let j = b.length - 1; j >= 0; j--)
      common[i][j] = a[i] === b[j] ? common[i + 1][j + 1] + 1 : Math.max(common[i + 1][j], common[i][j + 1]);
  const ops: { mark: ' ' | '-' | '+'; line: string }[] = [];
  let i = 0;
  let j = 0;
  while (i < a.length || j < b.length) {
    if (i < a.length && j < b.length && a[i] === b[j]) {
      ops.push({ mark: ' ', line: a[i++] });
      j++;
    } else if (i < a.length && (j === b.length || common[i + 1][j] >= common[i][j + 1])) ops.push({ mark: '-', line: a[i++] });
    else ops.push({ mark: '+', line: b[j++] });
  }
  const near = (k: number) => ops.slice(Math.max(0, k - 2), k + 3).some((op) => op.mark !== ' ');
  const lines: string[] = [];
  ops.forEach((op, k) => {
    if (!near(k)) return;
    if (lines.length && !near(k - 1)) lines.push('  ...');
    lines.push(`  ${op.mark} ${op.line}`);
  });
  return lines.length > limit ? [...lines.slice(0, limit), `  ... (${lines.length - limit} lines more)`] : lines;
}

/** Writes docs/sql as the samples make it now, removing a file no store writes any more. */
export function writeAll(now: Map<string, string>, dir = SQL_DIR) {
  mkdirSync(dir, { recursive: true });
  for (const name of readdirSync(dir)) if (name.endsWith('.sql') && !now.has(name)) rmSync(path.join(dir, name));
  for (const [name, text] of now) writeFileSync(path.join(dir, name), text);
}
