import { exportSources as approvals } from '../approvals/export.js';
import { exportSources as agents } from '../agents/export.js';
import { exportSources as conversations } from '../conversations/export.js';
import type { Db } from '../db/database.js';
import { randomBytes } from 'node:crypto';
import { bytesAsJson, bytesFromJson, type ExportSource, importRows } from '../db/export-pages.js';
import { exportSources as identity } from '../identity/export.js';
import { exportSources as knowledge } from '../knowledge/export.js';
import { exportSources as memory } from '../memory/export.js';
import { exportSources as runs } from '../runs/export.js';
import { exportSources as skills } from '../skills/export.js';
import { exportSources as tasks } from '../tasks/export.js';
import { exportSources as tenancy } from '../tenancy/export.js';

/**
 * `agentry export --tenant <id>` (docs/operations.md, "Export"): every row of a tenant, one JSON line
 * each (`{"table": ..., "row": {...}}`), each domain reading its own tables, a page at a time. Rows
 * are as stored: JSON columns as text, secrets still sealed (they open only under the same master
 * key); an API key's hash is left out. Idempotency keys (a day's retry window) are not exported, nor
 * are knowledge chunks (derived: an imported document is indexed again) or code slots (executions now).
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
  knowledge,
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
        for (const row of rows) await write(`${JSON.stringify({ table: source.table, row: bytesAsJson(row) })}\n`);
        counts[source.table] += rows.length;
        if (rows.length < PAGE) break;
        after = rows[rows.length - 1];
      }
    }
  }
  return counts;
}

/** Why an import was refused: the file is not an export, or the tenant is already here. Nothing was written. */
export class ImportError extends Error {}

/**
 * `agentry import` (docs/operations.md, "Backup and restore"): what `exportTenant` wrote, put back into
 * this database in one transaction (all of it or nothing), table by table in the export's order (a
 * tenant's rows before those that name it). Every line must be `{"table", "row"}` of a table an export
 * writes, and every row with a `tenant_id` must be the file's tenant's; a tenant already here is refused.
 * API keys come back revoked: their hashes are never exported, so none of them could authenticate; the
 * caller makes the tenant a new key. Sealed secrets open only under the master key that sealed them.
 */
export async function importTenant(db: Db, lines: AsyncIterable<string>): Promise<{ tenantId: string; counts: Record<string, number> }> {
  const sources = DOMAINS.flatMap((domain) => domain(db, ''));
  const bySource = new Map(sources.map((source) => [source.table, source]));
  const written = sources.map((source) => source.table);
  const order = sources.flatMap((source) => (source.carries ? [source.table, source.carries.table] : [source.table]));
  const rows = new Map<string, Record<string, unknown>[]>(order.map((table) => [table, []]));
  let tenantId: string | undefined;
  let n = 0;
  for await (const line of lines) {
    n++;
    if (!line.trim()) continue;
    let parsed: { table?: unknown; row?: unknown };
    try {
      parsed = JSON.parse(line);
    } catch {
      throw new ImportError(`line ${n} is not JSON: an export has one {"table", "row"} object per line`);
    }
    const table = typeof parsed?.table === 'string' ? parsed.table : '';
    const row = parsed?.row;
    const source = bySource.get(table);
    if (!source || typeof row !== 'object' || row === null || Array.isArray(row)) {
      throw new ImportError(`line ${n}: expected {"table": one of ${written.join(', ')}, "row": {...}}`);
    }
    const r = row as Record<string, unknown>;
    if (table === 'tenants') {
      if (tenantId !== undefined || typeof r.id !== 'string') throw new ImportError(`line ${n}: an export holds exactly one tenant`);
      tenantId = r.id;
    } else if ('tenant_id' in r && tenantId !== undefined && r.tenant_id !== tenantId) {
      throw new ImportError(`line ${n}: a row of ${table} belongs to another tenant than the file's (${tenantId})`);
    }
    const exported = bytesFromJson(r);
    if (source.carries) {
      const carried = source.carries.row(exported);
      const missing = Object.keys(carried).filter((column) => carried[column] === undefined || carried[column] === null);
      if (missing.length) throw new ImportError(`line ${n}: a row of ${table} lacks ${missing.join(', ')}`);
      rows.get(source.carries.table)!.push(carried);
    }
    rows.get(table)!.push(source.imported ? source.imported(exported) : exported);
  }
  if (!tenantId) throw new ImportError('the file holds no tenant: is it the output of `agentry export`?');
  const id = tenantId;
  // The tenant's rows may only have come before it if the file was reordered: checked once all are read.
  for (const [table, list] of rows)
    for (const r of list)
      if ('tenant_id' in r && r.tenant_id !== id)
        throw new ImportError(`a row of ${table} belongs to another tenant than the file's (${id})`);
  for (const r of rows.get('api_keys') ?? []) {
    // Never exported, so unknown: a random value no key hashes to, and the key revoked.
    r.secret_hash = randomBytes(32).toString('hex');
    r.revoked_at ??= new Date().toISOString();
  }
  // Its primary key would refuse it in the transaction too; this says why.
  if ((await tenantsSource(db, id).page(undefined, 1)).length) {
    throw new ImportError(`tenant ${id} is already in this database: import into one without it`);
  }
  const counts: Record<string, number> = {};
  await db.kysely.transaction().execute(async (trx) => {
    for (const table of order) {
      const list = rows.get(table)!;
      counts[table] = list.length;
      await importRows(trx, table, list);
    }
  });
  return { tenantId: id, counts };
}

/** The tenants table's source (tenancy's first), to see whether the tenant is here already. */
const tenantsSource = (db: Db, tenantId: string) => DOMAINS[0](db, tenantId)[0];
