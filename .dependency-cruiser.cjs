/**
 * Dependency rules of src/ (docs/architecture.md, "Rules the build enforces"). `npm run deps` checks
 * them; depcruise-baseline.json lists what broke a rule before the rule existed (empty now: every
 * violation is fixed). `npm run deps:baseline` regenerates it only when a violation is removed, never
 * to admit a new one. Cycles between folders (counting top-level files such as src/config.ts as
 * folders of their own) are judged by scripts/folder-cycles.mjs on this cruise's graph:
 * dependency-cruiser's folder scope sees only the innermost folder of each module (src/runtime/tools,
 * not src/runtime).
 */
const fs = require('node:fs');
const path = require('node:path');

/**
 * The folders of src/ that are no domain: the layers every domain builds on (docs/architecture.md's
 * map): the database, cross-cutting HTTP, the runtime, the scheduler's clock and loops, the signal bus,
 * traces and metrics.
 */
const CROSS_CUTTING = ['db', 'http', 'metrics', 'runtime', 'scheduler', 'signals', 'tracing'];
/** Every other folder of src/ is a domain: a new one is covered by the rules below as soon as it exists. */
const DOMAINS = `(${fs
  .readdirSync(path.join(__dirname, 'src'), { withFileTypes: true })
  .filter((entry) => entry.isDirectory() && !CROSS_CUTTING.includes(entry.name))
  .map((entry) => entry.name)
  .join('|')})`;
/** A domain's store: its store.ts, a store.ts in a folder of it, or the modules of a store/ folder. */
const STORE = ['^src/[^/]+/store\\.ts$', '^src/[^/]+/store/', '^src/[^/]+/[^/]+/store\\.ts$'];

/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      severity: 'error',
      comment: 'A module cycle makes the order of evaluation matter and the pieces impossible to read apart.',
      from: { path: '^src/' },
      to: { circular: true },
    },
    {
      name: 'store-only-from-own-domain',
      severity: 'error',
      comment: "One owner per table: a domain's store is imported only inside its own folder; other domains call its service.",
      from: { path: '^src/([^/]+)/' },
      to: { path: STORE, pathNot: '^src/$1/' },
    },
    {
      name: 'store-not-from-top-level',
      severity: 'error',
      comment: "app.ts, cli.ts and main.ts compose services; they do not reach a domain's store.",
      from: { path: '^src/[^/]+\\.ts$' },
      to: { path: STORE },
    },
    {
      name: 'store-calls-no-service',
      severity: 'error',
      comment: 'Data flows one way, route -> service -> store: a store never calls a service or a route.',
      from: { path: STORE },
      to: { path: '/(service|routes)\\.ts$' },
    },
    {
      name: 'routes-touch-no-sql',
      severity: 'error',
      comment: 'Routes hold the HTTP contract and call their service; the database, stores and SQL sit below it.',
      from: { path: '/routes\\.ts$' },
      to: { path: ['^src/db/', ...STORE, '(^|/)node_modules/kysely/'] },
    },
    {
      name: 'domain-below-routes-knows-no-http',
      comment:
        'Below the routes, domains throw the errors of src/errors.ts and know no HTTP status; only routes import the problem+json helpers of http/errors.ts (problemOf maps domain errors).',
      severity: 'error',
      from: { path: `^src/${DOMAINS}/`, pathNot: '/(routes|plugin)\\.ts$' },
      to: { path: '^src/http/errors\\.ts$' },
    },
    {
      name: 'runtime-imports-no-domain',
      severity: 'error',
      comment: 'The runtime (models, tool loop, tools) is what domains build on; it imports none of them.',
      from: { path: '^src/runtime/' },
      to: { path: `^src/${DOMAINS}/` },
    },
    {
      name: 'src-imports-no-tests',
      severity: 'error',
      comment: 'Product code never reaches into test/ or bench/.',
      from: { path: '^src/' },
      to: { path: '^(test|bench)/' },
    },
  ],
  options: {
    includeOnly: { path: ['^src/', '(^|/)node_modules/kysely/'] },
    doNotFollow: { path: 'node_modules' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: {
      exportsFields: ['exports'],
      conditionNames: ['import', 'require', 'node', 'default', 'types'],
    },
    reporterOptions: { text: { highlightFocused: true } },
  },
};
