import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startProcess, type TestProcess } from '../helpers/app.js';
import { cli, ROOT } from '../helpers/process.js';

const exec = promisify(execFile);
const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';

// What a user gets from `npm pack` of packages/client, installed into a fresh project, used from
// JavaScript against a real server and type-checked from TypeScript.
let proc: TestProcess;
let dir: string;
beforeAll(async () => {
  proc = await startProcess({ LOG_LEVEL: 'silent' });
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'agentry-client-'));
});
afterAll(async () => {
  await proc?.close();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

it('npm pack gives a tarball a fresh project installs and uses', { timeout: 90_000 }, async () => {
  const packed = await exec(npm, ['pack', '--json', '--pack-destination', dir], { cwd: path.join(ROOT, 'packages/client') });
  const [{ filename, files }] = JSON.parse(packed.stdout.slice(packed.stdout.indexOf('[')));
  const paths = (files as { path: string }[]).map((f) => f.path);
  expect(paths).toEqual(expect.arrayContaining(['package.json', 'README.md', 'dist/index.js', 'dist/index.d.ts']));
  expect(paths.filter((p) => !p.startsWith('dist/') && !['package.json', 'README.md'].includes(p))).toEqual([]);

  const project = path.join(dir, 'app');
  fs.mkdirSync(project);
  fs.writeFileSync(path.join(project, 'package.json'), JSON.stringify({ name: 'app', private: true, type: 'module' }));
  await exec(npm, ['install', path.join(dir, filename), '--prefer-offline', '--no-audit', '--no-fund'], { cwd: project });

  fs.writeFileSync(
    path.join(project, 'main.mjs'),
    `import { Agentry, AgentryError } from '@agentry/client';
const client = new Agentry({ baseUrl: process.env.AGENTRY_URL, apiKey: process.env.AGENTRY_API_KEY });
const agent = await client.agents.create({ name: 'Packed', appId: 'pack', model: 'builtin/echo' });
let text = '';
for await (const event of client.agents.stream(agent.id, { message: 'from the tarball' })) {
  if (event.type === 'token') text += event.data.text;
}
const missing = await client.agents.get('01a00000-0000-7000-8000-000000000000').catch((e) => e);
console.log(JSON.stringify({ text, listed: (await client.agents.list().toArray()).length, missing: missing instanceof AgentryError && missing.code }));
`,
  );
  const created = JSON.parse((await cli(['tenants', 'create', 'Pack', '--json'], proc.database.env)).stdout);
  const ran = await exec(process.execPath, ['main.mjs'], {
    cwd: project,
    env: { ...process.env, AGENTRY_URL: proc.url, AGENTRY_API_KEY: created.apiKey },
  });
  expect(JSON.parse(ran.stdout)).toEqual({ text: 'from the tarball', listed: 1, missing: 'not_found' });

  // The declarations resolve through the exports map for a TypeScript consumer.
  fs.writeFileSync(
    path.join(project, 'check.ts'),
    `import { Agentry, type AgentSummary } from '@agentry/client';
const client = new Agentry({ baseUrl: 'http://localhost:3000', apiKey: 'agk_x' });
export async function names(): Promise<string[]> {
  const out: string[] = [];
  for await (const agent of client.agents.list({ status: 'available' })) out.push((agent satisfies AgentSummary).name);
  return out;
}
`,
  );
  const tsc = path.join(ROOT, 'node_modules/typescript/bin/tsc');
  await exec(
    process.execPath,
    [
      tsc,
      '--noEmit',
      '--strict',
      '--module',
      'nodenext',
      '--moduleResolution',
      'nodenext',
      '--target',
      'es2022',
      '--lib',
      'es2022,dom',
      'check.ts',
    ],
    {
      cwd: project,
    },
  );
});
