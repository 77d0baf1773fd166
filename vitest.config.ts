import fs from 'node:fs';
import path from 'node:path';
import { playwright } from '@vitest/browser-playwright';
import { defineConfig } from 'vitest/config';

/**
 * The suite runs once per database: always on SQLite, and again on PostgreSQL when DATABASE_URL
 * is set (each test file gets a database of its own there, dropped afterwards).
 *
 * Most files wait on sockets, timers and child processes rather than the CPU, so they run three at a
 * time (vitest's default, available cores - 1, is one at a time on a 2-core machine; VITEST_MAX_WORKERS
 * overrides). Two kinds of file run afterwards. SERIAL drive hundreds of runs or several server
 * processes each, or need a worker thread to get the CPU in time: one file at a time over both
 * databases, so a neighbour never starves them of CPU (two at a time failed test/scale/replicas.test.ts
 * in CI). Then BROWSER, the files that drive Chromium, two at a time: their waits give up after 15 s,
 * which two neighbours do not come near, and one at a time left a core idle for minutes.
 * (test/docs/commands.test.ts is in neither: most of its minute or two is its README shell waiting for
 * a cron task's next whole minute, time the other files use.)
 */
const SERIAL = [
  'test/scale/**/*.test.ts',
  'test/tasks/dispatch.test.ts',
  'test/tenancy/admission.test.ts',
  'test/process.test.ts',
  'test/approvals/replicas.test.ts',
  'test/approvals/restart.test.ts',
  // The WAL checkpointer's worker must get the CPU within the test's pauses.
  'test/db/checkpoint.test.ts',
];
// The files that drive Chromium (test/console/browser.ts).
const BROWSER = fs
  .readdirSync(path.join(import.meta.dirname, 'test/console'))
  .filter(
    (file) =>
      file.endsWith('.test.ts') &&
      /openRecordedPage\(|describeConsole\(/.test(fs.readFileSync(path.join(import.meta.dirname, 'test/console', file), 'utf8')),
  )
  .map((file) => `test/console/${file}`);
/**
 * Files that open no database (pure functions, the SQL compiled for both dialects, a script's error
 * message): the postgres project would run them again unchanged, so they run in the sqlite project
 * only. A file here that starts an app or a database fails the run (below), so none loses PostgreSQL.
 */
const NO_DATABASE = [
  // The sandbox's own tests drive its processes directly (test/code/tools.test.ts runs code through the
  // API on both databases).
  'test/code/sandbox.test.ts',
  'test/code/sandbox-escape.test.ts',
  'test/db/sql-snapshots.test.ts',
  'test/docs/mcp-client.test.ts',
  'test/docs/npx.test.ts',
  'test/http/compiled-per-schema.test.ts',
  'test/http/domain-errors.test.ts',
  'test/ids/ids.test.ts',
  'test/knowledge/reader.test.ts',
  'test/knowledge/documents-chunks.test.ts',
  'test/knowledge/documents-corpus.test.ts',
  'test/knowledge/documents.test.ts',
  'test/ops/log-redaction.test.ts',
  'test/runtime/echo-model.test.ts',
  'test/runtime/event-notices.test.ts',
  'test/runtime/event-rows.test.ts',
  'test/tasks/failures.test.ts',
];
const OPENS_A_DATABASE =
  /\b(startApp|startProcess|startReplicas|createTestDatabase|openDatabase|AGENTRY_TEST_DB)\b|helpers\/(app|execute)\.js/;
for (const file of NO_DATABASE) {
  const match = fs.readFileSync(path.join(import.meta.dirname, file), 'utf8').match(OPENS_A_DATABASE);
  if (match) throw new Error(`vitest.config.ts: ${file} is in NO_DATABASE but uses ${match[0]}; take it off the list`);
}
// The console's browser tests (test/console) run on SQLite: what they check is the page, not the
// database. The team's day, which walks every feature through the console, runs on PostgreSQL too.
// AGENTRY_TEST_CONSOLE=skip leaves them out altogether (CI's second Node version).
const CONSOLE_ON_BOTH = ['test/console/team-day.test.ts'];
// Files that start their own database whatever the project's (test/helpers/pglite.ts: PostgreSQL with
// pgvector, which the suite's PostgreSQL lacks): the postgres project would run them again unchanged.
const OWN_DATABASE = ['test/knowledge/pgvector.test.ts'];
const SQLITE_ONLY = [
  ...OWN_DATABASE,
  ...fs
    .readdirSync(path.join(import.meta.dirname, 'test/console'))
    .map((file) => `test/console/${file}`)
    .filter((file) => !CONSOLE_ON_BOTH.includes(file)),
  ...NO_DATABASE,
];
const SKIPPED = process.env.AGENTRY_TEST_CONSOLE === 'skip' ? ['test/console/**'] : [];
const NOT_TESTS = ['**/node_modules/**'];

const MAX_WORKERS = Number(process.env.VITEST_MAX_WORKERS) || 3;
// vitest runs the projects of one groupOrder in one pool, its maxWorkers shared by both databases.
const LANES = {
  parallel: { include: ['test/**/*.test.ts'], groupOrder: 0, maxWorkers: MAX_WORKERS },
  serial: { include: SERIAL, groupOrder: 1, maxWorkers: 1 },
  browser: { include: BROWSER, groupOrder: 2, maxWorkers: Math.min(2, MAX_WORKERS) },
};

const project = (name: string, db: 'sqlite' | 'postgres', lane: keyof typeof LANES) => ({
  test: {
    name,
    env: { AGENTRY_TEST_DB: db },
    include: LANES[lane].include,
    exclude: [...NOT_TESTS, ...SKIPPED, ...(lane === 'parallel' ? [...SERIAL, ...BROWSER] : []), ...(db === 'postgres' ? SQLITE_ONLY : [])],
    // Safety nets for a stuck test, not measures: a loaded machine may take long to start a server.
    testTimeout: 120_000,
    hookTimeout: 120_000,
    pool: 'forks' as const,
    globalSetup: ['test/helpers/global-setup.ts'],
    // One process runs file after file (a fresh one per file cost the serial files ~3-5 s each).
    isolate: false,
    maxWorkers: LANES[lane].maxWorkers,
    sequence: { groupOrder: LANES[lane].groupOrder },
  },
});

/**
 * The console's component tests: single React components mounted in Chromium by Vitest's browser mode,
 * in seconds, where test/console drives the whole built console against a real server. They are
 * `*.browser.test.tsx` files beside the components they mount, in packages/console/src, whose tsconfig
 * types them as the console (DOM, JSX; the root one is Node's). They extend the console's own Vite config
 * (its React plugin), so the code is compiled as its build compiles it, the SDK included (its dist, as
 * the build reads it). They open no database and run once, whatever DATABASE_URL says. Like test/console
 * they need Debian's Chromium (.ci/run installs it), and are skipped, saying so, without it or with
 * AGENTRY_TEST_CONSOLE=skip.
 */
const CHROMIUM = '/usr/bin/chromium';
const consoleComponentsSkipped =
  process.env.AGENTRY_TEST_CONSOLE === 'skip'
    ? 'AGENTRY_TEST_CONSOLE=skip'
    : fs.existsSync(CHROMIUM)
      ? null
      : `no ${CHROMIUM} (apt-get install chromium)`;
if (consoleComponentsSkipped) console.warn(`console-components skipped: ${consoleComponentsSkipped}`);
const FAILURE_SCREENSHOTS = 'node_modules/.cache/console-components';
/**
 * Chromium in a locale and time zone of its own: what the tests read (money, counts, dates) is the same
 * on every machine, and `*.de-DE.browser.test.tsx` files check that the console follows the browser's.
 */
const chromiumIn = (locale: string, timezoneId: string) =>
  playwright({
    launchOptions: {
      executablePath: CHROMIUM,
      args: [
        '--no-sandbox',
        '--disable-gpu',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
        '--no-first-run',
      ],
    },
    contextOptions: { locale, timezoneId },
  });
const GERMAN = 'packages/console/src/**/*.de-DE.browser.test.tsx';
const consoleComponentsProject = {
  extends: './packages/console/vite.config.ts',
  test: {
    name: 'console-components',
    include: ['packages/console/src/**/*.browser.test.tsx'],
    // A failed test's screenshot (the report names it) goes where git does not look, not beside the test.
    attachmentsDir: FAILURE_SCREENSHOTS,
    browser: {
      enabled: true,
      headless: true,
      instances: [
        { browser: 'chromium' as const, provider: chromiumIn('en-US', 'UTC'), exclude: [GERMAN] },
        {
          browser: 'chromium' as const,
          name: 'console-components (chromium de-DE)',
          provider: chromiumIn('de-DE', 'Europe/Berlin'),
          include: [GERMAN],
        },
      ],
      screenshotDirectory: FAILURE_SCREENSHOTS,
    },
  },
};
// Skipped, the project stays without files, so that `--project console-components` ends as test/console's
// skipped files do: the line above says why, nothing fails.
const consoleComponents = consoleComponentsSkipped ? { test: { name: 'console-components', include: [] } } : consoleComponentsProject;

export default defineConfig({
  test: {
    maxWorkers: MAX_WORKERS,
    passWithNoTests: consoleComponentsSkipped !== null,
    projects: [
      project('sqlite', 'sqlite', 'parallel'),
      project('sqlite-serial', 'sqlite', 'serial'),
      project('sqlite-browser', 'sqlite', 'browser'),
      ...(process.env.DATABASE_URL
        ? [
            project('postgres', 'postgres', 'parallel'),
            project('postgres-serial', 'postgres', 'serial'),
            project('postgres-browser', 'postgres', 'browser'),
          ]
        : []),
      consoleComponents,
    ],
  },
});
