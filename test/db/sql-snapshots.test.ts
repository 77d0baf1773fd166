import { describe, expect, it } from 'vitest';
import { compileAll, staleness, writeAll } from './sql-snapshots.js';

/**
 * docs/sql/<domain>.sql is every store query compiled on both dialects (docs/architecture.md,
 * "Reviewable SQL"). `npm run sql:check` runs this file: it fails when a store function has no
 * sample, or when docs/sql is not what the samples make now; `npm run sql:sync` (AGENTRY_WRITE_SQL=1)
 * rewrites docs/sql instead.
 */

describe('docs/sql', () => {
  it('is the SQL every store function sends, as its sample calls it, on SQLite and PostgreSQL', async () => {
    const { files, problems } = await compileAll();
    expect(problems, 'every exported store function has a sample in its store.samples.ts (null if it runs no SQL)').toEqual([]);
    if (process.env.AGENTRY_WRITE_SQL === '1') writeAll(files);
    const stale = staleness(files);
    if (stale) expect.fail(`docs/sql is not the SQL the stores send now: run \`npm run sql:sync\` and review the change.\n${stale}`);
  });
});
