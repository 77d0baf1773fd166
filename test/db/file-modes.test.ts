import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dialect, startApp, type TestApp } from '../helpers/app.js';

/** Permission bits of a path, as an octal string ('600'). */
const modeOf = (p: string) => (fs.statSync(p).mode & 0o777).toString(8);

let root: string;
let previousUmask: number;

beforeAll(() => {
  // The usual umask: without explicit modes, folders come out 0755 and files 0644 (readable by everyone).
  previousUmask = process.umask(0o022);
  root = fs.mkdtempSync(path.join(os.tmpdir(), 'agentry-modes-'));
});
afterAll(() => {
  process.umask(previousUmask);
  fs.rmSync(root, { recursive: true, force: true });
});

/** Uploads an attachment (stored in the database) and answers the files of the data folder by name. */
async function uploadAndList(t: TestApp, dataDir: string) {
  const { key } = await t.tenant();
  const { error, response } = await t.api(key).POST('/api/v1/files', {
    body: { file: 'only for this tenant' },
    bodySerializer: ({ file }) => {
      const form = new FormData();
      form.append('file', new Blob([file], { type: 'text/plain' }), 'private.txt');
      return form;
    },
  });
  expect(response.status, JSON.stringify(error)).toBe(201);
  return fs.readdirSync(dataDir);
}

describe("data at rest is readable by the server's user only", () => {
  it('a fresh data folder is created 0700, and master.key, the SQLite database, its WAL and shared memory 0600', async () => {
    const dataDir = path.join(root, 'fresh', 'data');
    const t = await startApp({ DATA_DIR: dataDir });
    try {
      const files = await uploadAndList(t, dataDir);
      expect(modeOf(dataDir)).toBe('700');
      expect(files).toContain('master.key');
      const expected = dialect === 'sqlite' ? ['master.key', 'agentry.sqlite', 'agentry.sqlite-wal', 'agentry.sqlite-shm'] : ['master.key'];
      for (const name of expected) expect(files).toContain(name);
      expect(Object.fromEntries(files.map((name) => [name, modeOf(path.join(dataDir, name))]))).toEqual(
        Object.fromEntries(files.map((name) => [name, '600'])),
      );
    } finally {
      await t.close();
    }
  });

  it("an existing installation's modes are tightened at start", async () => {
    const dataDir = path.join(root, 'existing');
    const first = await startApp({ DATA_DIR: dataDir });
    await uploadAndList(first, dataDir);
    // Loosen everything, as an older version (or a copy) left it, while the database is still open.
    fs.chmodSync(dataDir, 0o755);
    for (const name of fs.readdirSync(dataDir)) fs.chmodSync(path.join(dataDir, name), 0o644);
    const second = await startApp({ DATA_DIR: dataDir });
    try {
      const files = await uploadAndList(second, dataDir);
      expect(modeOf(dataDir)).toBe('700');
      expect(Object.fromEntries(files.map((name) => [name, modeOf(path.join(dataDir, name))]))).toEqual(
        Object.fromEntries(files.map((name) => [name, '600'])),
      );
    } finally {
      await second.close();
      await first.close();
    }
  });
});
