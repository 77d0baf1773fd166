import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import type { TestProject } from 'vitest/node';
import { migrate, openDatabase } from '../../src/db/database.js';

declare module 'vitest' {
  export interface ProvidedContext {
    /** A PostgreSQL database migrated once for the run; each test database is copied from it. */
    postgresTemplate: string | undefined;
    /** A SQLite database file migrated once for the run; each migrated test database is a copy of it. */
    sqliteTemplate: string | undefined;
  }
}

/**
 * The migrations run once per project into a template, and each test database is copied from it, as
 * Immich migrates one database for its whole run: on PostgreSQL a template database (`CREATE DATABASE
 * ... TEMPLATE`), on SQLite a database file (a copy is ~15 ms of CPU, migrating anew ~60 ms, for each of
 * the run's hundreds of apps). The template is dropped when the run ends.
 */
export default async function setup(project: TestProject) {
  const adminUrl = process.env.DATABASE_URL;
  if (project.config.env?.AGENTRY_TEST_DB !== 'postgres' || !adminUrl) {
    project.provide('postgresTemplate', undefined);
    return sqliteTemplate(project);
  }
  project.provide('sqliteTemplate', undefined);
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

/** A migrated SQLite database, closed (so its WAL is folded into the file), for test databases to copy. */
async function sqliteTemplate(project: TestProject) {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'agentry-template-'));
  const db = openDatabase({ dataDir });
  try {
    await migrate(db);
  } finally {
    await db.close();
  }
  const file = path.join(dataDir, 'agentry.sqlite');
  if (fs.existsSync(`${file}-wal`) && fs.statSync(`${file}-wal`).size > 0) throw new Error(`the SQLite template kept a WAL: ${file}-wal`);
  project.provide('sqliteTemplate', file);
  return () => fs.rmSync(dataDir, { recursive: true, force: true });
}
