#!/usr/bin/env node
// Writes the OpenAPI document the built server serves (GET /openapi.json) to the file named by the first
// argument, for `npm run lint:openapi`. The app is built over a throwaway SQLite database and never listens.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { buildApp, createServices } from '../dist/app.js';
import { loadConfig } from '../dist/config.js';
import { migrate, openDatabase } from '../dist/db/database.js';

const out = process.argv[2];
if (!out) {
  process.stderr.write('usage: node scripts/openapi-document.mjs <file.json>\n');
  process.exit(2);
}

const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'agentry-openapi-'));
try {
  const config = loadConfig({ DATA_DIR: dataDir, LOG_LEVEL: 'silent', TASK_SCHEDULER: 'off' });
  const db = openDatabase({ databaseUrl: undefined, dataDir });
  await migrate(db);
  const services = createServices(config, db);
  const app = await buildApp({ config, db, services });
  const served = await app.inject({ method: 'GET', url: '/openapi.json' });
  if (served.statusCode !== 200) throw new Error(`GET /openapi.json answered ${served.statusCode}`);
  fs.mkdirSync(path.dirname(path.resolve(out)), { recursive: true });
  fs.writeFileSync(out, `${JSON.stringify(served.json(), null, 2)}\n`);
  await app.close();
  await db.close();
} finally {
  fs.rmSync(dataDir, { recursive: true, force: true });
}
