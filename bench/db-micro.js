#!/usr/bin/env node
// Micro-benchmark of the data-access work behind get-agent and list-agents on SQLite, outside
// HTTP: what better-sqlite3's prepare costs per call (Kysely's SqliteDriver prepares every query
// again), what a reused statement costs, and what the store and service functions cost in a
// tight loop. In the server the same work costs more (colder caches, 50 requests interleaved);
// use this to compare the parts, and bench/run.js for the whole.
//
//   npm run build && node bench/db-micro.js
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import SQLite from 'better-sqlite3';

const ROOT = path.resolve(import.meta.dirname, '..');
const dist = (p) => import(path.join(ROOT, 'dist', p));
const { openDatabase, migrate } = await dist('db/database.js');
const { TenancyService } = await dist('tenancy/service.js');
const { AgentsService } = await dist('agents/service.js');
const agentStore = await dist('agents/store.js');
const tenancyStore = await dist('tenancy/store.js');

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'agentry-db-micro-'));
try {
  const db = openDatabase({ dataDir: dir });
  await migrate(db);
  const tenancy = new TenancyService(db);
  const agents = new AgentsService({ db, defaultModel: 'builtin/echo' });
  const { tenant, apiKey } = await tenancy.createTenant('micro');
  const principal = await tenancy.authenticateApiKey(apiKey);
  const systemPrompt =
    'You are a support agent for a mid-sized online shop. Answer customer questions about orders, ' +
    'shipping, returns and invoices kindly and precisely. When you do not know, say so and offer to ' +
    'hand over to a human colleague. Never promise refunds; explain the return policy instead.';
  const ids = [];
  for (let i = 0; i < 100; i++) {
    const a = await agents.create(principal, {
      name: `Bench agent ${i}`,
      appId: i % 2 ? 'support' : 'sales',
      role: 'support agent',
      description: `Seeded (#${i})`,
      systemPrompt,
    });
    ids.push(a.id);
  }
  const keyId = principal.actor.id;

  // The exact SQL the stores send (compiled by Kysely), run directly on a second connection.
  const agentQ = db.kysely.selectFrom('agents').selectAll().where('tenant_id', '=', tenant.id).where('id', '=', ids[0]).compile();
  const keyQ = db.kysely
    .selectFrom('api_keys')
    .select(['id', 'tenant_id', 'secret_hash', 'permissions', 'revoked_at'])
    .where('id', '=', keyId)
    .compile();
  const listBase = db.kysely.selectFrom('agents').where('tenant_id', '=', tenant.id);
  const rowsQ = listBase
    .select(['id', 'name', 'role', 'description', 'model', 'status', 'hosting', 'team_id', 'app_id', 'created_at'])
    .orderBy('id', 'desc')
    .limit(20)
    .offset(0)
    .compile();
  const countQ = listBase.select((eb) => eb.fn.countAll().as('n')).compile();
  const raw = new SQLite(path.join(dir, 'agentry.sqlite'));
  for (const q of [agentQ, keyQ, rowsQ, countQ]) {
    const plan = raw
      .prepare(`explain query plan ${q.sql}`)
      .all(q.parameters)
      .map((r) => /** @type {{ detail: string }} */ (r).detail)
      .join('; ');
    console.log(`${q.sql}\n    plan: ${plan}`);
  }

  const N = 20_000;
  async function time(name, fn) {
    for (let i = 0; i < N / 5; i++) await fn(i);
    const t = process.hrtime.bigint();
    for (let i = 0; i < N; i++) await fn(i);
    console.log(`${(Number(process.hrtime.bigint() - t) / 1e3 / N).toFixed(1).padStart(7)} µs  ${name}`);
  }
  const id = (i) => ids[i % ids.length];
  const [agentStmt, keyStmt, rowsStmt, countStmt] = [agentQ, keyQ, rowsQ, countQ].map((q) => raw.prepare(q.sql));

  console.log('\nget-agent parts');
  await time('prepare: agent select', () => raw.prepare(agentQ.sql));
  await time('prepare: api key select', () => raw.prepare(keyQ.sql));
  await time('reused statement .all: agent select', (i) => agentStmt.all([tenant.id, id(i)]));
  await time('reused statement .all: api key select', () => keyStmt.all([keyId]));
  await time('Kysely build + compile only: agent select', (i) =>
    db.kysely.selectFrom('agents').selectAll().where('tenant_id', '=', tenant.id).where('id', '=', id(i)).compile(),
  );
  await time('store.findApiKeyForAuth (Kysely: build, compile, prepare, all)', () => tenancyStore.findApiKeyForAuth(db.kysely, keyId));
  await time('store.findAgent (Kysely: build, compile, prepare, all)', (i) => agentStore.findAgent(db.kysely, tenant.id, id(i)));
  await time('TenancyService.authenticateApiKey', () => tenancy.authenticateApiKey(apiKey));
  await time('AgentsService.get', (i) => agents.get(tenant.id, id(i)));

  console.log('\nlist-agents parts (20 of 100 agents)');
  await time('prepare: page select', () => raw.prepare(rowsQ.sql));
  await time('prepare: count select', () => raw.prepare(countQ.sql));
  await time('reused statement .all: page select (20 rows)', () => rowsStmt.all(rowsQ.parameters));
  await time('reused statement .all: count select', () => countStmt.all(countQ.parameters));
  await time('store.listAgents (both queries through Kysely)', () =>
    agentStore.listAgents(db.kysely, { tenantId: tenant.id, filter: {}, limit: 20, offset: 0 }),
  );
  await time('AgentsService.list', () => agents.list(tenant.id, {}, 1, 20));

  raw.close();
  await db.close();
} finally {
  fs.rmSync(dir, { recursive: true, force: true });
}
