import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { ROOT, freePort } from '../helpers/process.js';

const exec = promisify(execFile);

describe('scripts/mcp-client.mjs', () => {
  it('names the URL it could not reach, and the variable that sets it', async () => {
    const port = await freePort(); // nothing listens there
    const run = exec(process.execPath, [path.join(ROOT, 'scripts/mcp-client.mjs'), 'some-agent'], {
      env: { ...process.env, AGENTRY_KEY: 'agk_test', AGENTRY_URL: `http://127.0.0.1:${port}/` },
    });
    const failed = (await run.then(
      () => null,
      (e) => e,
    )) as { code: number; stderr: string } | null;
    expect(failed?.code).toBe(1);
    expect(failed?.stderr).toContain(`could not reach http://127.0.0.1:${port}/api/v1/agents/some-agent/mcp`);
    expect(failed?.stderr).toContain('AGENTRY_URL');
  });
});
