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

/** The files under dir (relative paths) and their contents; empty when dir is absent. */
const contents = (dir) =>
  fs.existsSync(dir)
    ? fs
        .readdirSync(dir, { recursive: true, withFileTypes: true })
        .filter((entry) => entry.isFile())
        .map((entry) => path.relative(dir, path.join(entry.parentPath, entry.name)))
        .sort()
        .map((file) => [file, fs.readFileSync(path.join(dir, file), 'utf8')])
    : [];

for (const rel of assets) {
  const from = path.join(root, 'src', rel);
  const to = path.join(root, 'dist', rel);
  // Left alone when already current: a build run while tests read dist/ (CI's checks beside its
  // tests) must not delete what a running server is reading.
  if (JSON.stringify(contents(from)) === JSON.stringify(contents(to))) continue;
  fs.rmSync(to, { recursive: true, force: true });
  fs.cpSync(from, to, { recursive: true });
}

for (const entry of ['cli.js', 'main.js']) fs.chmodSync(path.join(root, 'dist', entry), 0o755);
