import fs from 'node:fs';
import path from 'node:path';
import { skillFromEntries, type ArchiveEntry } from './archive.js';
import type { SkillContent } from './format.js';

/**
 * The store: skills shipped with the platform, one Agent Skills folder each under `store-catalog/`
 * (next to this file in `src/`, copied next to the compiled file in `dist/` by the build). They go
 * through the same parser as uploads, so a broken catalog entry fails loudly at first use and in tests.
 * A store skill's id is its name.
 */

const STORE_CATALOG_DIR = path.join(import.meta.dirname, 'store-catalog');

export type StoreSkill = SkillContent & { id: string };

function walk(dir: string, prefix: string): ArchiveEntry[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((d) => {
    const rel = `${prefix}${d.name}`;
    if (d.isDirectory()) return walk(path.join(dir, d.name), `${rel}/`);
    return d.isFile() ? [{ path: rel, data: fs.readFileSync(path.join(dir, d.name)) }] : [];
  });
}

export function loadStoreCatalog(dir = STORE_CATALOG_DIR): StoreSkill[] {
  if (!fs.existsSync(dir)) throw new Error(`the skill store catalog is missing at ${dir} (was the build's asset copy skipped?)`);
  return fs
    .readdirSync(dir, { withFileTypes: true })
    .filter((d) => d.isDirectory())
    .map((d) => d.name)
    .sort()
    .map((name) => {
      try {
        return { id: name, ...skillFromEntries(walk(path.join(dir, name), `${name}/`)) };
      } catch (err) {
        throw new Error(`store skill ${name} is invalid: ${(err as Error).message}`);
      }
    });
}

let cached: StoreSkill[] | undefined;

/** The catalog, read once per process. */
export function storeCatalog(): StoreSkill[] {
  cached ??= loadStoreCatalog();
  return cached;
}
