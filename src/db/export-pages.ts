import { type Kysely, sql } from 'kysely';
import type { Database } from './schema.js';

/** One table's rows of a tenant, a page at a time (`agentry export`, export/tenant.ts). */
export interface ExportSource {
  table: string;
  /** The `limit` rows following `after` (the previous page's last row; undefined: the first page), in key order. */
  page(after: Record<string, unknown> | undefined, limit: number): Promise<Record<string, unknown>[]>;
  /** A row as `agentry import` inserts it, when it differs from the exported one (derived state reset). */
  imported?(row: Record<string, unknown>): Record<string, unknown>;
  /** A table whose row travels inside each exported row (a knowledge document's bytes): imported right after this one. */
  carries?: { table: keyof Database & string; row(exported: Record<string, unknown>): Record<string, unknown> };
}

type Column<T extends keyof Database> = keyof Database[T] & string;

/** What a store says of one of its tables; a union over every table, so each entry's columns are checked against its own table. */
export type ExportTable = {
  [T in keyof Database & string]: {
    table: T;
    /** Columns unique together (the primary key): the order of the rows, and where the next page starts. */
    keys: Column<T>[];
    /** The column holding the tenant's id; default `tenant_id`. */
    tenantColumn?: Column<T>;
    /** For a table without a tenant column: its column naming a row of `table`, a table whose `tenant_id` is the tenant's. */
    tenantVia?: { column: Column<T>; table: keyof Database & string };
    /** The columns exported; default all. */
    columns?: Column<T>[];
    /** A row as imported, when it differs from the exported one. */
    imported?(row: Record<string, unknown>): Record<string, unknown>;
  };
}[keyof Database & string];

/**
 * Keyset pages (`where (keys) > (the last row's keys) order by keys limit n`), not offset: each page
 * costs the same on a tenant with millions of rows, where an offset would read and skip all the ones before.
 */
export function exportPages(db: Kysely<Database>, tenantId: string, tables: readonly ExportTable[]): ExportSource[] {
  // biome-ignore lint/suspicious/noExplicitAny: the table and its columns are checked by ExportTable's type, which Kysely cannot follow
  const k = db as Kysely<any>;
  return tables.map((spec) => ({
    table: spec.table,
    imported: spec.imported,
    page: (after, limit) => {
      let q = k.selectFrom(spec.table);
      q = spec.columns ? q.select(spec.columns) : q.selectAll();
      q = spec.tenantVia
        ? q.where(spec.tenantVia.column, 'in', k.selectFrom(spec.tenantVia.table).select('id').where('tenant_id', '=', tenantId))
        : q.where(spec.tenantColumn ?? 'tenant_id', '=', tenantId);
      if (after) {
        const refs = sql.join(spec.keys.map((key) => sql.ref(key)));
        const values = sql.join(spec.keys.map((key) => after[key]));
        q = q.where(sql<boolean>`(${refs}) > (${values})`);
      }
      for (const key of spec.keys) q = q.orderBy(key);
      return q.limit(limit).execute();
    },
  }));
}

/** Rows per INSERT when importing: well under SQLite's limit of bound values for the widest table. */
const IMPORT_CHUNK = 50;

/**
 * `agentry import` (export/tenant.ts): rows as `exportPages` read them, inserted into `table` as they
 * are. The caller names only tables an export writes and runs this inside its transaction.
 */
export async function importRows(db: Kysely<Database>, table: string, rows: Record<string, unknown>[]): Promise<void> {
  // biome-ignore lint/suspicious/noExplicitAny: the table is one an export names (checked by the caller), which Kysely cannot follow
  const k = db as Kysely<any>;
  for (let i = 0; i < rows.length; i += IMPORT_CHUNK)
    await k
      .insertInto(table)
      .values(rows.slice(i, i + IMPORT_CHUNK))
      .execute();
}

/**
 * Binary columns (a knowledge document's bytes) as JSON: `{"$bytes": "<base64>"}` in an export line,
 * a Buffer again on import.
 */
export function bytesAsJson(row: Record<string, unknown>): Record<string, unknown> {
  if (!Object.values(row).some((v) => v instanceof Uint8Array)) return row;
  return Object.fromEntries(
    Object.entries(row).map(([k, v]) => [k, v instanceof Uint8Array ? { $bytes: Buffer.from(v).toString('base64') } : v]),
  );
}

export function bytesFromJson(row: Record<string, unknown>): Record<string, unknown> {
  for (const [k, v] of Object.entries(row)) {
    if (v && typeof v === 'object' && !Array.isArray(v) && typeof (v as { $bytes?: unknown }).$bytes === 'string') {
      row[k] = Buffer.from((v as { $bytes: string }).$bytes, 'base64');
    }
  }
  return row;
}
