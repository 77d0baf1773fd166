// One owner per table: a table is named in a query only by its domain's store (src/<domain>/store.ts,
// a store.ts in a folder of it, or modules under a store/ folder). Another domain that needs the rows
// calls that domain's service. Migrations (src/db/migrations/) name every table and are exempt. The
// check reads the Kysely calls that name a table by a literal (selectFrom('runs'),
// insertPrepared(db, 'runs', ...), later.insert('runs', row)), which is how every query here names
// one; raw SQL text is not parsed.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

const OWNERS = {
  tenancy: ['tenants', 'api_keys', 'audit_events'],
  agents: ['agents'],
  conversations: ['conversations', 'messages', 'files', 'conversation_summaries'],
  runs: ['runs', 'run_events', 'run_suspensions'],
  tasks: ['tasks', 'task_jobs', 'task_fires'],
  skills: ['skills', 'skill_files', 'skill_assignments', 'connector_connections', 'connector_requests'],
  idempotency: ['idempotency_keys'],
  memory: ['memory_blocks', 'memory_block_versions'],
  approvals: ['tool_approvals'],
  identity: ['identity_platform_keys', 'identity_agent_keys', 'identity_tokens', 'tbac_policies'],
};

// Tables named outside their owner's store ("file table"), each a TODO until its query moves: none
// since issue 22 moved the last of them. Never add one.
/** @type {Set<string>} */
const KNOWN = new Set([]);

const owner = new Map(Object.entries(OWNERS).flatMap(([domain, tables]) => tables.map((table) => [table, domain])));
const NAMED = [
  /\b(?:selectFrom|updateTable|insertInto|deleteFrom|innerJoin|leftJoin|rightJoin|fullJoin|mergeInto)\(\s*'([a-z_]+)/g,
  /\b(?:insertRows|insertPrepared)\(\s*[\w.]+,\s*'([a-z_]+)'/g,
  // db/group-commit.ts DeferredInserts: rows handed to a batch to insert after its last write
  /\.insert\(\s*'([a-z_]+)'/g,
];

function* files(dir) {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) yield* files(path);
    else if (path.endsWith('.ts')) yield path;
  }
}

const isStoreOf = (file, domain) => file.startsWith(`src/${domain}/`) && /\/store(\.ts$|\/)/.test(file);

const found = new Set();
const errors = [];
for (const file of files('src')) {
  if (file.startsWith('src/db/migrations/')) continue;
  const text = readFileSync(file, 'utf8');
  for (const pattern of NAMED) {
    for (const match of text.matchAll(pattern)) {
      const table = match[1];
      const domain = owner.get(table);
      const line = text.slice(0, match.index).split('\n').length;
      if (!domain) {
        errors.push(`  error table-without-owner: ${file}:${line} names table ${table}, which no domain owns (add it to OWNERS)`);
        continue;
      }
      if (isStoreOf(file, domain)) continue;
      const key = `${file} ${table}`;
      found.add(key);
      if (!KNOWN.has(key)) errors.push(`  error table-owned-elsewhere: ${file}:${line} names ${table}, owned by src/${domain}/store.ts`);
    }
  }
}

for (const key of KNOWN) if (!found.has(key)) console.log(`table owners: "${key}" no longer happens; remove it from KNOWN`);
if (errors.length > 0) {
  console.error(errors.join('\n'));
  console.error(`\nx ${errors.length} queries name a table outside its owner's store`);
  process.exit(1);
}
console.log(`table owners: none new (${found.size} known, listed in scripts/table-owners.mjs)`);
