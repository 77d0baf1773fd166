import { type CompiledQuery, sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Db } from '../../src/db/database.js';
import { expiredRunsQuery, listTaskRuns } from '../../src/runs/store.js';
import { dialect, openTestDb } from '../helpers/app.js';

/**
 * Two indexes of `runs` are partial (migration 0011): only running runs are in runs_running_lease,
 * only task runs in runs_tenant_task. A partial index serves a query only if the query's WHERE
 * implies the index's, so these check, on each dialect, that the queries they exist for still use them.
 */
describe('partial indexes of runs', () => {
  let opened: Awaited<ReturnType<typeof openTestDb>>;
  let db: Db;

  beforeAll(async () => {
    opened = await openTestDb();
    db = opened.db;
  });
  afterAll(() => opened?.close());

  /** The plan's text. PostgreSQL is told to avoid sequential scans: the test's tables are nearly empty. */
  async function plan(query: CompiledQuery): Promise<string> {
    if (dialect === 'postgres') {
      return db.kysely.transaction().execute(async (trx) => {
        await sql`set local enable_seqscan = off`.execute(trx);
        const r = await trx.executeQuery<{ 'QUERY PLAN': string }>({ ...query, sql: `explain ${query.sql}` });
        return r.rows.map((row) => row['QUERY PLAN']).join('\n');
      });
    }
    const r = await db.kysely.executeQuery<{ detail: string }>({ ...query, sql: `explain query plan ${query.sql}` });
    return r.rows.map((row) => row.detail).join('\n');
  }

  it('the recovery of runs whose lease expired reads the index of running runs', async () => {
    expect(await plan(expiredRunsQuery(db.kysely, new Date().toISOString(), 100).compile())).toContain('runs_running_lease');
  });

  it("a task's runs are listed through the index of task runs", async () => {
    let listed: CompiledQuery | undefined;
    // listTaskRuns runs its queries itself: capture the page query as it is compiled.
    const capturing = db.kysely.withPlugin({
      transformQuery: (args) => args.node,
      transformResult: async (args) => args.result,
    });
    const original = capturing.getExecutor().executeQuery.bind(capturing.getExecutor());
    capturing.getExecutor().executeQuery = ((query: CompiledQuery, ...rest: unknown[]) => {
      if (query.sql.includes('order by')) listed ??= query;
      return (original as (...a: unknown[]) => never)(query, ...rest);
    }) as never;
    await listTaskRuns(capturing, { tenantId: 'tenant', taskId: 'task', limit: 20, offset: 0 });
    expect(listed).toBeDefined();
    expect(await plan(listed!)).toContain('runs_tenant_task');
  });
});
