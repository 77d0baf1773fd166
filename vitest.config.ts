import { defineConfig } from 'vitest/config';

/**
 * The suite runs once per database: always on SQLite, and again on PostgreSQL when DATABASE_URL
 * is set (each test file gets a database of its own there, dropped afterwards).
 */
const projects = [
  { extends: true as const, test: { name: 'sqlite', env: { AGENTRY_TEST_DB: 'sqlite' } } },
  // The console's browser tests (test/console) run once, on SQLite: what they check is the page, not the database.
  ...(process.env.DATABASE_URL
    ? [
        {
          extends: true as const,
          test: { name: 'postgres', env: { AGENTRY_TEST_DB: 'postgres' }, exclude: ['**/node_modules/**', 'test/console/**'] },
        },
      ]
    : []),
];

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
    projects,
  },
});
