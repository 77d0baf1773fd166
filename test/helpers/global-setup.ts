import pg from 'pg';
import type { TestProject } from 'vitest/node';
import { migrate, openDatabase } from '../../src/db/database.js';

declare module 'vitest' {
  export interface ProvidedContext {
    /** A PostgreSQL database migrated once for the run; each test database is copied from it. */
    postgresTemplate: string | undefined;
  }
}

/**
 * On PostgreSQL, the migrations run once per project into a template database, and each test file's
 * database is created from it (`CREATE DATABASE ... TEMPLATE`), as Immich migrates one database for
 * its whole run. The template is dropped when the run ends.
 */
export default async function setup(project: TestProject) {
  const adminUrl = process.env.DATABASE_URL;
  if (project.config.env?.AGENTRY_TEST_DB !== 'postgres' || !adminUrl) {
    project.provide('postgresTemplate', undefined);
    return;
  }
  const name = `agentry_template_${process.pid}_${project.name.replace(/\W/g, '_')}`;
  await admin(adminUrl, `CREATE DATABASE ${name}`);
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  const db = openDatabase({ databaseUrl: url.toString(), dataDir: '' });
  try {
    await migrate(db);
  } finally {
    // A template takes copies only while nobody is connected to it.
    await db.close();
  }
  project.provide('postgresTemplate', name);
  return async () => admin(adminUrl, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
}

async function admin(adminUrl: string, statement: string) {
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    await client.query(statement);
  } finally {
    await client.end();
  }
}
