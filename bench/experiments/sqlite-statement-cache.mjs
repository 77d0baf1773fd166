// EXPERIMENT, not a fix, and not loaded by the server: it measures what a prepared-statement
// cache would gain on SQLite, without changing server code. Kysely's SqliteDriver calls
// better-sqlite3's `db.prepare(sql)` for every query (kysely/dist/esm/dialect/sqlite/sqlite-driver.js,
// SqliteConnection.executeQuery); this reuses one statement per SQL text instead.
//
//   npm run bench -- --server-node-arg=--import=./bench/experiments/sqlite-statement-cache.mjs
//
// Safe for this measurement because Kysely only calls stmt.all()/stmt.run(), which finish before
// returning; a real fix would bound the cache and keep streamQuery (stmt.iterate) off shared statements.
import Database from 'better-sqlite3';

const prepare = Database.prototype.prepare;
const caches = new WeakMap();
Database.prototype.prepare = function cachedPrepare(sql) {
  let cache = caches.get(this);
  if (!cache) {
    cache = new Map();
    caches.set(this, cache);
  }
  let stmt = cache.get(sql);
  if (!stmt) {
    stmt = prepare.call(this, sql);
    cache.set(sql, stmt);
  }
  return stmt;
};
