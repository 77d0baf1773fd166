import type { Compilable, CompiledQuery, Insertable, Kysely, QueryId, QueryResult, RootOperationNode } from 'kysely';
import type { Database } from './schema.js';

/**
 * Statements Kysely builds and compiles once per dialect, then runs with new values: for the writes
 * every run makes (its start, events and end). Building and compiling a statement with Kysely's
 * immutable builders costs more (10-20 µs) than SQLite takes to run it; the SQL Kysely compiles is
 * the same each time, only the values change.
 *
 * A template is built with named placeholders instead of values; the compiled statement's parameters
 * are then filled by name on every run. The SQL text is one string object, so the SQLite statement
 * cache (and its string hash) is hit without rehashing. Plugins still see every run (the change
 * tracking that keeps cached reads honest bumps the written table), as with a query Kysely builds.
 */

const PLACEHOLDER = '\u0000agentry.placeholder:';

/** Stands for the value named `name` when a template is built. */
export type Placeholder = (name: string) => never;
const placeholder: Placeholder = (name) => `${PLACEHOLDER}${name}` as never;

/** A placeholder's name; for a row of a multi-row insert, also the row and column it stands for. */
interface Named {
  name: string;
  row: number;
  column: string;
}

interface Template {
  sql: string;
  query: RootOperationNode;
  queryId: QueryId;
  /** Per parameter: the placeholder that fills it, or a value fixed in the template. */
  slots: (Named | { fixed: unknown })[];
}

type Build = (db: Kysely<Database>, p: Placeholder) => Compilable;

/** Templates per dialect (a transaction's executor shares its database's adapter) and key. */
const templates = new WeakMap<object, Map<string, Template>>();

/** A name for each template's SQL text (a small, fixed set: one per key). */
const statementNames = new Map<string, string>();

/**
 * The name under which a template's SQL is prepared on PostgreSQL connections (db/database.ts), so
 * PostgreSQL parses and plans it once per connection; undefined for any other SQL.
 */
export function preparedStatementName(sql: string): string | undefined {
  return statementNames.get(sql);
}

function compile(db: Kysely<Database>, build: Build): Template {
  const compiled: CompiledQuery = build(db, placeholder).compile();
  const slots = compiled.parameters.map((value) => {
    if (!(typeof value === 'string' && value.startsWith(PLACEHOLDER))) return { fixed: value };
    const name = value.slice(PLACEHOLDER.length);
    const dot = name.indexOf('.');
    return { name, row: dot > 0 ? Number(name.slice(0, dot)) : -1, column: name.slice(dot + 1) };
  });
  if (!statementNames.has(compiled.sql)) statementNames.set(compiled.sql, `agentry_${statementNames.size + 1}`);
  return { sql: compiled.sql, query: compiled.query, queryId: compiled.queryId, slots };
}

function template(db: Kysely<Database>, key: string, build: Build): Template {
  const adapter = db.getExecutor().adapter;
  let byKey = templates.get(adapter);
  if (!byKey) {
    byKey = new Map();
    templates.set(adapter, byKey);
  }
  let t = byKey.get(key);
  if (!t) {
    t = compile(db, build);
    byKey.set(key, t);
  }
  return t;
}

/** Runs a template with its parameters filled by `value`. */
function run(db: Kysely<Database>, key: string, t: Template, value: (slot: Named) => unknown): Promise<QueryResult<unknown>> {
  const parameters = t.slots.map((slot) => {
    if ('fixed' in slot) return slot.fixed;
    const v = value(slot);
    if (v === undefined) throw new Error(`prepared statement ${key}: no value for ${slot.name}`);
    return v;
  });
  // What Kysely does for a query it builds: plugins see the statement (change tracking), then it runs.
  db.getExecutor().transformQuery(t.query, t.queryId);
  return db.executeQuery({ sql: t.sql, parameters, query: t.query, queryId: t.queryId });
}

/**
 * Runs the statement `build` makes, with `values` in place of its placeholders. `key` names the
 * template: the same key must always build the same statement.
 */
export async function runPrepared(
  db: Kysely<Database>,
  key: string,
  build: Build,
  values: Record<string, unknown>,
): Promise<QueryResult<unknown>> {
  return run(db, key, template(db, key, build), (slot) => values[slot.name]);
}

/** Placeholders for every key of `row`, named by the key (prefixed by `prefix`). */
export function placeholders<T extends object>(row: T, p: Placeholder, prefix = ''): T {
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(row)) out[key] = p(prefix + key);
  return out as T;
}

/**
 * INSERTs rows of one shape: one template per table, column list and row count. Callers keep the row
 * counts to a small set (insertRows: powers of two), as each count is a template and, on PostgreSQL,
 * a statement prepared on every connection.
 */
export async function insertPrepared<T extends keyof Database & string>(
  db: Kysely<Database>,
  table: T,
  rows: Insertable<Database[T]>[],
): Promise<QueryResult<unknown>> {
  const key = `insert ${table} ${rows.length} ${Object.keys(rows[0]).join(',')}`;
  const t = template(db, key, (q, p) => q.insertInto(table).values(rows.map((row, i) => placeholders(row, p, `${i}.`)) as never));
  return run(db, key, t, (slot) => (rows[slot.row] as Record<string, unknown>)[slot.column]);
}

/**
 * Rows per INSERT at most in insertRows: a power of two, well under the bound-parameter limits of
 * both dialects for this schema's widest table (SQLite 32,766, PostgreSQL 65,535; runs has 26 columns).
 */
const MAX_ROWS_PER_INSERT = 256;

/**
 * INSERTs any number of rows of one shape in as few statements as keep the templates few: n rows go
 * out as the powers of two that sum to n (at most 256 each), so the statements are nine
 * compiled-once templates per shape instead of one for every n.
 */
export async function insertRows<T extends keyof Database & string>(
  db: Kysely<Database>,
  table: T,
  rows: Insertable<Database[T]>[],
): Promise<void> {
  let at = 0;
  for (let size = MAX_ROWS_PER_INSERT; at < rows.length; ) {
    if (rows.length - at >= size) {
      await insertPrepared(db, table, rows.slice(at, at + size));
      at += size;
    } else {
      size >>= 1;
    }
  }
}
