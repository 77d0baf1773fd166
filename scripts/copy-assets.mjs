#!/usr/bin/env node
// Copies the non-TypeScript files the server reads at run time into dist/, next to the compiled code
// that reads them: the skill store catalog (src/skills/store-catalog -> dist/skills/store-catalog).
import fs from 'node:fs';
import path from 'node:path';

const root = path.resolve(import.meta.dirname, '..');
const assets = ['skills/store-catalog'];

for (const rel of assets) {
  const from = path.join(root, 'src', rel);
  const to = path.join(root, 'dist', rel);
  fs.rmSync(to, { recursive: true, force: true });
  fs.cpSync(from, to, { recursive: true });
}
