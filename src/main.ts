#!/usr/bin/env node
import './v8-flags.js'; // first: V8 flags before anything else is loaded
import { buildApp, createLogger, createServices, shutdown } from './app.js';
import { type Config, ConfigError, loadConfig } from './config.js';
import { migrate, openDatabase } from './db/database.js';
import { loadMasterKey } from './identity/master-key.js';
import { checkMasterKey, MasterKeyMismatch } from './identity/master-key-check.js';
import { sealedSamples as skillSecrets } from './skills/export.js';
import { sealedSamples as taskSecrets } from './tasks/export.js';
import { dbStatementLog } from './tracing/db.js';
import { Tracing } from './tracing/tracing.js';

/** Starts the platform: configuration -> database (migrated) -> HTTP server; stops on SIGINT/SIGTERM. */
async function main() {
  let config: Config;
  try {
    config = loadConfig();
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`agentry: ${err.message}\n`);
      process.exit(1);
    }
    throw err;
  }
  // Tracing first: with OTEL_AGENTRY_DB_SPANS the database reports each statement to it.
  const tracing = Tracing.create(config.tracing);
  const onQuery = tracing && config.tracing.dbSpans ? dbStatementLog(tracing, config.databaseUrl ? 'postgresql' : 'sqlite') : undefined;
  const db = openDatabase({ databaseUrl: config.databaseUrl, dataDir: config.dataDir, onQuery });
  try {
    await migrate(db, { masterKey: () => loadMasterKey(config) });
  } catch (err) {
    process.stderr.write(`agentry: cannot prepare the database at ${db.location}: ${(err as Error).message}\n`);
    process.exit(1);
  }
  // Before anything makes or uses the key: a database restored without its master key must not start.
  try {
    const { reset } = await checkMasterKey(db, config, [...(await taskSecrets(db)), ...(await skillSecrets(db))]);
    if (reset.length) {
      process.stderr.write(
        `agentry: MASTER_KEY_RESET: starting with a master key that does not open ${reset.join(', ')}; platform keys it cannot open were revoked\n`,
      );
    }
  } catch (err) {
    if (!(err instanceof MasterKeyMismatch)) throw err;
    process.stderr.write(`agentry: cannot start: ${err.message}\n`);
    process.exit(1);
  }
  const services = createServices(config, db, { logger: createLogger(config), tracing });
  const app = await buildApp({ config, db, services });
  // A second line only: background work handles its own errors (the run-event writer, runs' ends), and
  // tests assert that nothing reaches this. Should something, one tenant's fault does not stop the
  // process every tenant shares: it is logged, and the process goes on.
  process.on('unhandledRejection', (reason) => app.log.error({ err: reason }, 'unhandled rejection (a bug: please report it)'));

  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    app.log.info({ signal, activeRuns: services.runs.activeCount, graceMs: config.shutdownGraceMs }, 'stopping');
    try {
      await shutdown(app, services, config.shutdownGraceMs);
      await db.close();
    } catch (err) {
      app.log.error({ err }, 'error while stopping');
      process.exit(1);
    }
    app.log.info('stopped');
    process.exit(0);
  };
  process.on('SIGINT', () => void stop('SIGINT'));
  process.on('SIGTERM', () => void stop('SIGTERM'));

  await app.listen({ port: config.port, host: config.host });
  app.log.info({ database: db.location, dialect: db.dialect, publicBaseUrl: config.publicBaseUrl }, 'agentry is ready');
}

main().catch((err) => {
  process.stderr.write(`agentry: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
