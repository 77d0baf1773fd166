import { sql, type SelectQueryBuilder } from 'kysely';

/** A page of a list: how many rows, after how many. */
export interface Page {
  limit: number;
  offset: number;
}

/**
 * How many rows a list query matches, for `total` next to a page of it: the same query (its
 * filters) with its selection and ordering replaced by count(*). PostgreSQL answers count(*) as a
 * bigint string, SQLite as a number; both come back as a number.
 */
// biome-ignore lint/suspicious/noExplicitAny: any list query of any table; only its filters are kept
export async function countRows(query: SelectQueryBuilder<any, any, any>): Promise<number> {
  const row = await query.clearSelect().clearOrderBy().select(sql<number | string>`count(*)`.as('n')).executeTakeFirstOrThrow();
  return Number((row as { n: number | string }).n);
}
