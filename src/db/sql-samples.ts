import type { Kysely } from 'kysely';
import type { Dialect } from './database.js';
import type { ExportSource } from './export-pages.js';
import type { Database } from './schema.js';

/**
 * Sample calls of a store's functions (docs/architecture.md, "Reviewable SQL"): `npm run sql:sync`
 * makes each call on SQLite and on PostgreSQL against a database that records the SQL it is sent
 * instead of running it, and writes what it recorded to docs/sql/<domain>.sql. A store `x/store.ts`
 * declares its samples in `x/store.samples.ts` (a `store/` folder in `store/samples.ts`) as
 * `export const samples = { ... } satisfies StoreSamples<typeof store>`, so tsc refuses a sample
 * whose arguments no longer fit, and a function without an entry. Not part of the build.
 */

/** What a sample call is given: a database that records the SQL it is sent and answers every statement with one row. */
export interface SampleDatabase {
  db: Kysely<Database>;
  dialect: Dialect;
}

type ArgsAfterDatabase<F> = F extends (db: Kysely<Database>, ...rest: infer Rest) => unknown ? Rest : never;

/**
 * One call of a store function: its arguments after the database, or a function that makes the call
 * (for a function that takes the dialect, or whose result runs the SQL: a query builder is executed).
 */
export type SampleCall<F> = ArgsAfterDatabase<F> | ((sample: SampleDatabase) => unknown);

/**
 * A function's entry: one call; several, named (for SQL that changes with the arguments, such as a
 * list's optional filters); or null for a function that runs no SQL.
 */
export type SampleEntry<F> = SampleCall<F> | { [variant: string]: SampleCall<F> } | null;

// biome-ignore lint/suspicious/noExplicitAny: any function a store exports
type AnyFunction = (...args: any[]) => unknown;

/** An entry for every function the store module exports. */
export type StoreSamples<Module> = { [K in keyof Module as Module[K] extends AnyFunction ? K : never]: SampleEntry<Module[K]> };

/** The calls of a store's `exportSources`: each table's first page, the page after a row, and an import of rows. */
export function exportSample(exportSources: (db: Kysely<Database>, tenantId: string) => ExportSource[]) {
  return async ({ db }: SampleDatabase) => {
    for (const source of exportSources(db, 'tenant-1')) {
      await source.page(undefined, 500);
      await source.page(new Proxy({}, { get: () => 'last' }), 500);
    }
  };
}
