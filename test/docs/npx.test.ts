import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, expect, it } from 'vitest';
import { buildStamps, ROOT } from '../helpers/process.js';

/*
 * The docs say `npx agentry ...` in the checkout. The first time, npx links the checkout into its cache
 * and runs its `prepare` (npm_command=exec): that run must leave the built checkout alone, or it
 * rewrites the console a running server is serving (and, in a test's environment, with a development
 * build). The real npx, a cold cache of its own, lifecycle scripts on (CI runs `npm test
 * --ignore-scripts`, which npx would inherit).
 */

const exec = promisify(execFile);
const cache = fs.mkdtempSync(path.join(os.tmpdir(), 'agentry-npx-cache-'));
afterAll(() => fs.rmSync(cache, { recursive: true, force: true }));

it('npx agentry in the checkout runs the built CLI without building the checkout again', async () => {
  const before = buildStamps();
  const { stdout } = await exec('npx', ['--yes', 'agentry', 'help'], {
    cwd: ROOT,
    env: { ...process.env, npm_config_cache: cache, npm_config_ignore_scripts: 'false', NODE_ENV: 'production' },
  });
  expect(stdout).toContain('agentry help');
  // npx did link the checkout into its cache (the path where `prepare` runs), so the check below means something.
  const linked = fs.readdirSync(path.join(cache, '_npx')).map((dir) => path.join(cache, '_npx', dir, 'node_modules/agentry'));
  expect(linked.some((link) => fs.existsSync(link) && fs.realpathSync(link) === fs.realpathSync(ROOT))).toBe(true);
  expect(buildStamps()).toEqual(before);
}, 120_000);
