#!/usr/bin/env node
// Runs after tsc: what the compiled code needs beside it.
// 1. The non-TypeScript files the server reads at run time (the skill store catalog) and runs (the code
//    sandbox's child scripts: plain JavaScript, run by a node under the permission model).
// 2. The executable bit on the command-line entry points: npm links `bin` before `prepare` builds
//    dist/, so on a fresh install nothing else marks dist/cli.js executable for `npx agentry`.
import fs from 'node:fs';
import path from 'node:path';

const root = path.resolve(import.meta.dirname, '..');
const assets = ['skills/store-catalog', 'code/sandbox/child'];

for (const rel of assets) {
  const from = path.join(root, 'src', rel);
  const to = path.join(root, 'dist', rel);
  fs.rmSync(to, { recursive: true, force: true });
  fs.cpSync(from, to, { recursive: true });
}

for (const entry of ['cli.js', 'main.js']) fs.chmodSync(path.join(root, 'dist', entry), 0o755);
