import { exportSources as approvals } from '../approvals/export.js';
import { exportSources as agents } from '../agents/export.js';
import { exportSources as conversations } from '../conversations/export.js';
import type { Db } from '../db/database.js';
import type { ExportSource } from '../db/export-pages.js';
import { exportSources as identity } from '../identity/export.js';
import { exportSources as memory } from '../memory/export.js';
import { exportSources as runs } from '../runs/export.js';
import { exportSources as skills } from '../skills/export.js';
import { exportSources as tasks } from '../tasks/export.js';
import { exportSources as tenancy } from '../tenancy/export.js';

/**
 * `agentry export --tenant <id>` (docs/operations.md, "Export"): every row of a tenant, one JSON line
 * each (`{"table": ..., "row": {...}}`), each domain reading its own tables, a page at a time. Rows
 * are as stored: JSON columns as text, secrets still sealed (they open only under the same master
 * key); an API key's hash is left out. Idempotency keys (a day's retry window) are not exported.
 */

const DOMAINS: ((db: Db, tenantId: string) => ExportSource[])[] = [
  tenancy,
  agents,
  conversations,
  runs,
  tasks,
  skills,
  identity,
  memory,
  approvals,
];

const PAGE = 500;

/** Writes the tenant's rows through `write` (awaited: a slow output holds the reading back); the count per table. */
export async function exportTenant(db: Db, tenantId: string, write: (line: string) => Promise<void>): Promise<Record<string, number>> {
  const counts: Record<string, number> = {};
  for (const domain of DOMAINS) {
    for (const source of domain(db, tenantId)) {
      counts[source.table] = 0;
      for (let after: Record<string, unknown> | undefined; ; ) {
        const rows = await source.page(after, PAGE);
        for (const row of rows) await write(`${JSON.stringify({ table: source.table, row })}\n`);
        counts[source.table] += rows.length;
        if (rows.length < PAGE) break;
        after = rows[rows.length - 1];
      }
    }
  }
  return counts;
}
