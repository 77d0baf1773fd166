// One owner per table: only its domain's store (src/<domain>/store.ts, a store.ts in a folder of it,
// or modules under a store/ folder) reads or writes it; another domain that needs the rows calls that
// domain's service. Two checks hold it:
//
// 1. The compiled SQL (docs/sql/<domain>.sql, every store query on SQLite and PostgreSQL as
//    `npm run sql:sync` wrote it, kept current by `npm run sql:check`): every table a statement reads or
//    writes (FROM, JOIN, INSERT INTO, UPDATE, DELETE FROM, in CTEs and subqueries alike) must be the
//    file's domain's. Statements are parsed by libpg-query, PostgreSQL's own parser; SQLite's differ in
//    their parameters (?), which are numbered as PostgreSQL's ($1) first, and in the index a table may
//    be told to use (`indexed by <index>`), which is left out.
// 2. The source: SQL is built only in stores, so none escapes the compiled SQL. Outside a store, a
//    Kysely call naming a table by a literal (selectFrom('runs'), insertPrepared(db, 'runs', ...),
//    later.insert('runs', row)) is refused, and so is raw SQL: a CompiledQuery, executeQuery, sql.raw,
//    or a sql`` template unless its text parses to a statement naming no table (`select 1`). src/db/
//    (the plumbing the stores build their SQL with) may build raw SQL; migrations (src/db/migrations/)
//    name every table and are exempt.
//
// `node scripts/table-owners.mjs [--src DIR] [--sql DIR]` checks another tree (its self-test,
// test/db/sql-snapshots.test.ts); `npm run deps` runs it on src/ and docs/sql/.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join, relative, sep } from 'node:path';
import { parseArgs } from 'node:util';
import { parse } from 'libpg-query';

const OWNERS = {
  tenancy: ['tenants', 'api_keys', 'audit_events'],
  agents: ['agents'],
  conversations: ['conversations', 'messages', 'files', 'conversation_summaries'],
  runs: ['runs', 'run_events', 'run_suspensions'],
  tasks: ['tasks', 'task_jobs', 'task_fires'],
  skills: ['skills', 'skill_files', 'skill_assignments', 'connector_connections', 'connector_requests'],
  idempotency: ['idempotency_keys'],
  memory: ['memory_blocks', 'memory_block_versions'],
  knowledge: [
    'knowledge_bases',
    'knowledge_documents',
    'knowledge_document_contents',
    'knowledge_chunks',
    'knowledge_chunks_fts',
    'knowledge_usage',
    'knowledge_terms',
  ],
  approvals: ['tool_approvals'],
  identity: ['identity_platform_keys', 'identity_agent_keys', 'identity_tokens', 'tbac_policies'],
  code: ['code_slots'],
};

// Tables named outside their owner's store ("file table"), each a TODO until its query moves: none
// since issue 22 moved the last of them. Never add one.
/** @type {Set<string>} */
const KNOWN = new Set([]);

const owner = new Map(Object.entries(OWNERS).flatMap(([domain, tables]) => tables.map((table) => [table, domain])));

const { values: args } = parseArgs({ options: { src: { type: 'string', default: 'src' }, sql: { type: 'string', default: 'docs/sql' } } });

// ---- 1. the compiled SQL ----

/**
 * The statements of a docs/sql file: each under the label of its section (`-- runs/store.ts: findRun`)
 * and its dialect (`-- sqlite`, `-- postgres`, or `-- sqlite and postgres`, written as PostgreSQL's).
 * @param {string} text
 */
function statementsOf(text) {
  /** @type {{ label: string, dialect: string, sql: string }[]} */
  const statements = [];
  let label = '';
  let dialect = '';
  /** @type {string[]} */
  let lines = [];
  for (const line of text.split('\n')) {
    const marker = /^-- (sqlite and postgres|sqlite|postgres)(: none)?$/.exec(line);
    if (marker) dialect = marker[1];
    else if (line.startsWith('-- ')) label = line.slice(3);
    else if (line.trim()) {
      lines.push(line);
      if (line.endsWith(';')) {
        statements.push({ label, dialect, sql: lines.join('\n') });
        lines = [];
      }
    }
  }
  return statements;
}

/**
 * The tables a statement reads or writes: every relation it names, less the names of its CTEs.
 * @param {string} sql PostgreSQL's SQL, or SQLite's with its parameters (?) numbered as PostgreSQL's
 */
async function tablesOf(sql) {
  /** @type {Set<string>} */
  const relations = new Set();
  /** @type {Set<string>} */
  const ctes = new Set();
  // A RangeVar (a relation named in FROM, JOIN, INSERT INTO, UPDATE, DELETE FROM) is the one node with a
  // relname; where a field can hold only a RangeVar (InsertStmt.relation), the AST leaves out its type name.
  /** @param {any} node */
  const walk = (node) => {
    if (Array.isArray(node)) for (const item of node) walk(item);
    else if (node && typeof node === 'object') {
      if (typeof node.relname === 'string') relations.add(node.relname);
      if (typeof node.ctename === 'string') ctes.add(node.ctename);
      for (const value of Object.values(node)) walk(value);
    }
  };
  walk(await parse(sql));
  return [...relations].filter((name) => !ctes.has(name));
}

const numbered = (/** @type {string} */ sql) => {
  let n = 0;
  return sql.replace(/\?/g, () => `$${++n}`);
};

/** SQLite's `indexed by <index>` (in a statement written alike for both, too) left out. */
const withoutIndexHints = (/** @type {string} */ sql) => sql.replace(/\s+indexed\s+by\s+\w+/gi, '');

/** @param {string} dir */
async function checkCompiledSql(dir) {
  const errors = [];
  let count = 0;
  if (!existsSync(dir)) return { errors: [`  error no-compiled-sql: ${dir} is missing (npm run sql:sync writes it)`], count };
  for (const name of readdirSync(dir).filter((f) => f.endsWith('.sql'))) {
    const domain = name.slice(0, -'.sql'.length);
    const file = join(dir, name);
    for (const { label, dialect, sql } of statementsOf(readFileSync(file, 'utf8'))) {
      count++;
      let tables;
      try {
        tables = await tablesOf(withoutIndexHints(dialect === 'sqlite' ? numbered(sql) : sql));
      } catch (err) {
        errors.push(`  error unreadable-sql: ${file} "${label}" (${dialect}): ${err instanceof Error ? err.message : err}`);
        continue;
      }
      for (const table of tables) {
        const of = owner.get(table);
        if (!of)
          errors.push(
            `  error table-without-owner: ${file} "${label}" (${dialect}) names table ${table}, which no domain owns (add it to OWNERS)`,
          );
        else if (of !== domain)
          errors.push(`  error table-owned-elsewhere: ${file} "${label}" (${dialect}) touches ${table}, owned by ${of}`);
      }
    }
  }
  return { errors, count };
}

// ---- 2. the source ----

const NAMED = [
  /\b(?:selectFrom|updateTable|insertInto|deleteFrom|innerJoin|leftJoin|rightJoin|fullJoin|mergeInto)\(\s*'([a-z_]+)/g,
  /\b(?:insertRows|insertPrepared)\(\s*[\w.]+,\s*'([a-z_]+)'/g,
  // db/group-commit.ts DeferredInserts: rows handed to a batch to insert after its last write
  /\.insert\(\s*'([a-z_]+)'/g,
];

/** SQL that does not go through a Kysely builder. */
const RAW = /\bCompiledQuery\b|\.executeQuery\(|\bsql\.raw\(/g;
const TEMPLATE = /\bsql(?:<[^`;]*?>)?`([^`]*)`/g;

/** @param {string} dir @returns {Generator<string>} */
function* files(dir) {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) yield* files(path);
    else if (path.endsWith('.ts')) yield path;
  }
}

/** The domain whose store `file` (relative to src/, with /) is, if it is one. */
const storeDomain = (/** @type {string} */ file) => (/\/store(\.ts$|\/)/.test(file) ? file.split('/')[0] : undefined);

/** @param {string} root */
async function checkSource(root) {
  const errors = [];
  const found = new Set();
  for (const path of files(root)) {
    const file = relative(root, path).split(sep).join('/');
    if (file.startsWith('db/migrations/')) continue;
    const text = readFileSync(path, 'utf8');
    const lineOf = (/** @type {number} */ index) => text.slice(0, index).split('\n').length;
    const store = storeDomain(file);
    for (const pattern of NAMED) {
      for (const match of text.matchAll(pattern)) {
        const table = match[1];
        const domain = owner.get(table);
        const at = `${root}/${file}:${lineOf(match.index)}`;
        if (!domain) {
          errors.push(`  error table-without-owner: ${at} names table ${table}, which no domain owns (add it to OWNERS)`);
          continue;
        }
        if (store === domain) continue;
        const key = `src/${file} ${table}`;
        found.add(key);
        if (!KNOWN.has(key)) errors.push(`  error table-owned-elsewhere: ${at} names ${table}, owned by src/${domain}/store.ts`);
      }
    }
    if (store || file.startsWith('db/')) continue;
    for (const match of text.matchAll(RAW)) {
      errors.push(
        `  error raw-sql-outside-store: ${root}/${file}:${lineOf(match.index)} runs SQL of its own (${match[0]}): its domain's store does`,
      );
    }
    for (const match of text.matchAll(TEMPLATE)) {
      const at = `${root}/${file}:${lineOf(match.index)}`;
      let tables;
      try {
        tables = match[1].includes('${') ? undefined : await tablesOf(match[1]);
      } catch {
        tables = undefined;
      }
      if (!tables)
        errors.push(`  error raw-sql-outside-store: ${at} builds raw SQL (with values, or not a whole statement): its domain's store does`);
      else if (tables.length)
        errors.push(`  error raw-sql-outside-store: ${at} names ${tables.join(', ')} in raw SQL: its owner's store does`);
    }
  }
  return { errors, found };
}

const source = await checkSource(args.src);
const compiled = await checkCompiledSql(args.sql);
for (const key of KNOWN) if (!source.found.has(key)) console.log(`table owners: "${key}" no longer happens; remove it from KNOWN`);
const errors = [...source.errors, ...compiled.errors];
if (errors.length > 0) {
  console.error(errors.join('\n'));
  console.error(`\nx ${errors.length} queries touch a table outside its owner's store, or run outside a store`);
  process.exit(1);
}
console.log(
  `table owners: ${compiled.count} compiled statements each touch only their domain's tables; none new in the source (${source.found.size} known)`,
);
