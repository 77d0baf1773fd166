import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../helpers/app.js';
import { buildStamps, cli, NPX_AGENTRY, ROOT, startServer, type ServerProcess } from '../helpers/process.js';

/**
 * docs/identity.md promises that its walk-through works as shown: this runs every `sh` block of it, in
 * order, with bash against the real server (built `dist/`), and checks each `# {...}` / `# 204`
 * answer the page shows (`...` stands for any text).
 */

let database: TestDatabase;
let server: ServerProcess;
/** The Acme tenant's key, made with the CLI as the README's walk-through makes it before this page. */
let key: string;

beforeAll(async () => {
  database = await createTestDatabase();
  server = await startServer({ ...database.env, LOG_LEVEL: 'warn' });
  const created = await cli(['tenants', 'create', 'Acme', '--json'], database.env);
  key = JSON.parse(created.stdout).apiKey;
});
afterAll(async () => {
  await server?.stop();
  await database?.drop();
});

const doc = fs.readFileSync(path.join(ROOT, 'docs/identity.md'), 'utf8');
const walkthrough = doc.slice(doc.indexOf('## Walk-through'));
const blocks = [...walkthrough.matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1]);

const expectedAnswers = blocks
  .flatMap((b) => b.split('\n'))
  .filter((line) => /^#\s*(\{|\d{3}\b)/.test(line.trim()))
  .map((line) =>
    line
      .trim()
      .replace(/^#\s*/, '')
      .split(/:\s+the key|\s+#/)[0]
      .replace(/:$/, ''),
  );

const toPattern = (answer: string) =>
  new RegExp(
    answer
      .split('...')
      .map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))
      .join('[\\s\\S]*?'),
  );

function bash(script: string, env: Record<string, string | undefined>) {
  return spawnSync('bash', ['-c', script], { cwd: ROOT, env: { ...process.env, ...env }, encoding: 'utf8', timeout: 180_000 });
}

describe('docs/identity.md walk-through', () => {
  it('has command blocks and shown answers to check', () => {
    expect(blocks.length).toBeGreaterThanOrEqual(6);
    expect(expectedAnswers.length).toBeGreaterThanOrEqual(6);
  });

  it('runs as shown against a real server', { timeout: 180_000 }, () => {
    const script = [
      'set -e -o pipefail',
      NPX_AGENTRY,
      ...blocks,
      'echo "TOKEN=$TOKEN"',
      'echo "CALLEE=$CALLEE"',
      'echo "TENANT=$TENANT"',
    ].join('\n');
    // The page's preconditions: AGENTRY_URL is the running server, KEY the Acme tenant's key.
    const built = buildStamps();
    const run = bash(script, { ...database.env, AGENTRY_URL: server.url, KEY: key });
    expect(run.status, `${run.stdout}\n${run.stderr}`).toBe(0);
    // The commands use the build, they never make another (the suite's other files read it meanwhile).
    expect(buildStamps()).toEqual(built);
    const out = run.stdout;
    for (const answer of expectedAnswers) expect(out, `the page shows ${answer}`).toMatch(toPattern(answer));
    expect(out).toContain('"valid":true,"type":"access_token"');
    expect(out).toContain('"valid":true,"type":"svid"');
    expect(out).toContain('"valid":true,"type":"badge"');

    // The verification script also says no when it should.
    const vars = Object.fromEntries([...out.matchAll(/^(TOKEN|CALLEE|TENANT)=(.*)$/gm)].map((m) => [m[1], m[2]]));
    const verify = (args: string[]) =>
      spawnSync(process.execPath, [path.join(ROOT, 'scripts/verify-token.mjs'), '--base', server.url, ...args], { encoding: 'utf8' });
    const aud = `spiffe://agentry.local/tenant/${vars.TENANT}/agent/${vars.CALLEE}`;
    const good = verify(['--audience', aud, vars.TOKEN]);
    expect(good.status, good.stdout + good.stderr).toBe(0);
    const [h, p, s] = vars.TOKEN.split('.');
    const sig = Buffer.from(s, 'base64url');
    sig[5] ^= 1;
    const tampered = verify(['--audience', aud, `${h}.${p}.${sig.toString('base64url')}`]);
    expect(tampered.status).toBe(1);
    expect(JSON.parse(tampered.stdout)).toMatchObject({ valid: false, step: 2 });
    const otherAudience = verify(['--audience', 'spiffe://agentry.local/someone/else', vars.TOKEN]);
    expect(otherAudience.status).toBe(1);
    expect(JSON.parse(otherAudience.stdout)).toMatchObject({ valid: false, step: 5 });
    const otherIssuer = verify(['--audience', aud, '--issuer', 'https://other.example', vars.TOKEN]);
    expect(JSON.parse(otherIssuer.stdout)).toMatchObject({ valid: false, step: 4 });
  });
});
