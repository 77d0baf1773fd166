// A fresh PostgreSQL database for one bench run, shared by bench/run.js and bench/knowledge-scale.js.
import { randomBytes } from 'node:crypto';

const DEFAULT_PG = 'postgres://postgres@127.0.0.1:5432/postgres';

/**
 * Creates `<prefix>_<random>` on DATABASE_URL's server (or the local one): its URL, name, the
 * server's version, its size now (`sizeOf`), and `drop` for the run's cleanup.
 */
export async function createPgDatabase(prefix) {
  const { default: pg } = await import('pg');
  const adminUrl = process.env.DATABASE_URL || DEFAULT_PG;
  const name = `${prefix}_${randomBytes(4).toString('hex')}`;
  const admin = async (fn) => {
    const client = new pg.Client({ connectionString: adminUrl });
    await client.connect();
    try {
      return await fn(client);
    } finally {
      await client.end();
    }
  };
  const version = await admin(async (c) => {
    await c.query(`create database ${name}`);
    return (await c.query('show server_version')).rows[0].server_version;
  });
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    name,
    version,
    sizeOf: () => admin(async (c) => Number((await c.query('select pg_database_size($1) as size', [name])).rows[0].size)),
    drop: () => admin((c) => c.query(`drop database if exists ${name} with (force)`)),
  };
}
