import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Db } from '../../src/db/database.js';
import { insertPrepared, insertRows, placeholders, preparedStatementName, runPrepared } from '../../src/db/prepared.js';
import { dialect, openTestDb } from '../helpers/app.js';

/**
 * Statements compiled once and run with new values (db/prepared.ts), on a real database of either
 * dialect: they write what Kysely's own statements would, fill every placeholder by name, are built
 * once per key, and tell the change tracking of every write (cached reads depend on it).
 */
describe('prepared statements', () => {
  let opened: Awaited<ReturnType<typeof openTestDb>>;
  let db: Db;
  const table = 'prepared_scratch' as never;

  beforeAll(async () => {
    opened = await openTestDb({ migrate: false });
    db = opened.db;
    await sql`create table prepared_scratch (id varchar(20) primary key, name text, n integer not null, note text)`.execute(db.kysely);
  });
  afterAll(() => opened?.close());

  const rows = async () =>
    (
      await sql<{ id: string; name: string | null; n: number; note: string | null }>`select * from prepared_scratch order by id`.execute(
        db.kysely,
      )
    ).rows;

  it('inserts one or several rows, nulls included, as Kysely would', async () => {
    await insertPrepared(db.kysely, table, [{ id: 'a', name: 'first', n: 1, note: null }] as never);
    const result = await insertPrepared(db.kysely, table, [
      { id: 'b', name: null, n: 2, note: 'x' },
      { id: 'c', name: "it's", n: 3, note: '\u00e9\u{1f600}' },
    ] as never);
    expect(result.numAffectedRows).toBe(2n);
    // Kysely's own insert beside it, for the same shape.
    await db.kysely
      .insertInto(table)
      .values({ id: 'd', name: 'kysely', n: 4, note: null } as never)
      .execute();
    expect(await rows()).toEqual([
      { id: 'a', name: 'first', n: 1, note: null },
      { id: 'b', name: null, n: 2, note: 'x' },
      { id: 'c', name: "it's", n: 3, note: '\u00e9\u{1f600}' },
      { id: 'd', name: 'kysely', n: 4, note: null },
    ]);
  });

  it('builds a template once per key and fills placeholders by name, fixed values kept', async () => {
    let builds = 0;
    const bump = (id: string, by: number, tag: string) =>
      runPrepared(
        db.kysely,
        'test bump',
        (q, p) => {
          builds++;
          // `by` twice, and a value fixed in the template ('a' stays excluded).
          return q
            .updateTable(table)
            .set({ n: sql`n + ${p('by')} + ${p('by')}`, note: sql`coalesce(note, '') || ${p('tag')}` } as never)
            .where('id' as never, '=', p('id'))
            .where('id' as never, '!=', 'a' as never);
        },
        { id, by, tag },
      );
    expect((await bump('b', 10, '+10')).numAffectedRows).toBe(1n);
    expect((await bump('c', 5, '+5')).numAffectedRows).toBe(1n);
    expect((await bump('a', 7, '+7')).numAffectedRows).toBe(0n);
    expect(builds).toBe(1);
    const byId = Object.fromEntries((await rows()).map((r) => [r.id, r]));
    expect(byId.a).toMatchObject({ n: 1, note: null });
    expect(byId.b).toMatchObject({ n: 22, note: 'x+10' });
    expect(byId.c).toMatchObject({ n: 13, note: '\u00e9\u{1f600}+5' });
  });

  it('works inside a transaction, which rolls it back with the rest', async () => {
    await db.kysely
      .transaction()
      .execute(async (trx) => {
        await insertPrepared(trx, table, [{ id: 'e', name: 'in trx', n: 5, note: null }] as never);
        const seen = await sql<{ n: number }>`select count(*) as n from prepared_scratch where id = 'e'`.execute(trx);
        expect(Number(seen.rows[0].n)).toBe(1);
        throw new Error('roll back');
      })
      .catch((err) => expect((err as Error).message).toBe('roll back'));
    expect((await rows()).map((r) => r.id)).not.toContain('e');
  });

  it('tells the change tracking of every write, not only the first', async () => {
    // On PostgreSQL the feed is live once its listener is; here nobody listens, so it is switched on.
    db.changes.setLive(true);
    const before = db.changes.stamp('prepared_scratch');
    await insertPrepared(db.kysely, table, [{ id: 'f', name: null, n: 6, note: null }] as never);
    const afterFirst = db.changes.stamp('prepared_scratch');
    await insertPrepared(db.kysely, table, [{ id: 'g', name: null, n: 7, note: null }] as never);
    const afterSecond = db.changes.stamp('prepared_scratch');
    expect(afterFirst).not.toBe(before);
    expect(afterSecond).not.toBe(afterFirst);
  });

  it('refuses to run with a placeholder left without a value', async () => {
    await expect(
      runPrepared(
        db.kysely,
        'test missing',
        (q, p) =>
          q
            .updateTable(table)
            .set(placeholders({ name: '' }, p) as never)
            .where('id' as never, '=', p('id')),
        { name: 'x' },
      ),
    ).rejects.toThrow('prepared statement test missing: no value for id');
  });

  it.skipIf(dialect !== 'postgres')('prepares them once per connection on PostgreSQL, as named statements', async () => {
    const row = { id: 'h', name: 'named', n: 8, note: null };
    await db.kysely.transaction().execute(async (trx) => {
      // One connection for the whole transaction: pg_prepared_statements shows that session's.
      await insertPrepared(trx, table, [row] as never);
      await insertPrepared(trx, table, [{ ...row, id: 'i' }] as never);
      await trx
        .selectFrom(table)
        .selectAll()
        .where('id' as never, '=', 'h' as never)
        .execute();
      const { rows: prepared } = await sql<{ name: string; statement: string }>`select name, statement from pg_prepared_statements`.execute(
        trx,
      );
      // The one-row insert, prepared once although it ran twice; every named statement is a template.
      const oneRow = prepared.filter(
        (p) => p.statement.startsWith('insert into "prepared_scratch"') && p.statement.endsWith('($1, $2, $3, $4)'),
      );
      expect(oneRow).toHaveLength(1);
      for (const p of prepared) expect(p.name).toBe(preparedStatementName(p.statement));
      // A statement Kysely builds each time is not prepared by name.
      expect(prepared.filter((p) => p.statement.startsWith('select'))).toEqual([]);
    });
    expect((await rows()).filter((r) => r.id === 'h' || r.id === 'i')).toHaveLength(2);
  });

  it('inserts any number of rows whole, as statements of power-of-two sizes (at most 256 rows each)', async () => {
    await sql`delete from prepared_scratch`.execute(db.kysely);
    const burst = Array.from({ length: 300 }, (_, i) => ({
      id: `r${String(i).padStart(3, '0')}`,
      name: `n${i}`,
      n: i,
      note: i % 7 ? null : 'x',
    }));
    const sizes: number[] = [];
    const counting = db.kysely.withPlugin({
      transformQuery: (args) => {
        if (args.node.kind === 'InsertQueryNode') sizes.push((args.node.values as unknown as { values: unknown[] }).values.length);
        return args.node;
      },
      transformResult: async (args) => args.result,
    });
    await insertRows(counting, table, burst as never);
    // 300 = 256 + 32 + 8 + 4 (each statement built once: its first use compiles it, also seen here).
    expect([...new Set(sizes)].sort((a, b) => b - a)).toEqual([256, 32, 8, 4]);
    expect(await rows()).toEqual(burst);
    await sql`delete from prepared_scratch`.execute(db.kysely);
  });
});
