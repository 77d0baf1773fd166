import { afterAll, beforeAll, expect, it } from 'vitest';
import { startApp, type TestApp } from '../helpers/app.js';

/*
 * The console's first load (issue 39): its pages are chunks of their own, loaded when first opened,
 * so signing in fetches the shell only. Measured on the real build (packages/console/dist, as
 * `npm run build` writes it) through the server: the entry script and what index.html preloads.
 * The build before pages were split was one 1.39 MB script; the charts (recharts) alone are ~450 KB
 * and belong to the usage page.
 */

const FIRST_LOAD_LIMIT = 800_000;

let t: TestApp;
beforeAll(async () => {
  t = await startApp();
});
afterAll(() => t?.close());

it('loads the shell first and each page when it is opened', async () => {
  const index = await t.raw('GET', '/');
  expect(index.status).toBe(200);
  const first = [...index.text.matchAll(/(?:src|href)="\.\/(assets\/[^"]+\.js)"/g)].map((m) => m[1]);
  expect(first.length).toBeGreaterThan(0);
  let bytes = 0;
  for (const asset of first) {
    const res = await t.raw('GET', `/${asset}`);
    expect(res.status, asset).toBe(200);
    bytes += Buffer.byteLength(res.text);
  }
  expect(bytes).toBeLessThan(FIRST_LOAD_LIMIT);
  // The pages are not in the first load, and are served when asked for: the entry names their chunks.
  const entry = (await t.raw('GET', `/${first[0]}`)).text;
  for (const page of ['usage', 'agents', 'playground', 'run-page', 'base-page']) {
    expect(
      first.some((a) => a.startsWith(`assets/${page}-`)),
      page,
    ).toBe(false);
    const chunk = new RegExp(`assets/${page}-[\\w-]+\\.js`).exec(entry)?.[0] ?? new RegExp(`${page}-[\\w-]+\\.js`).exec(entry)?.[0];
    expect(chunk, page).toBeDefined();
    const res = await t.raw('GET', `/assets/${chunk!.replace(/^assets\//, '')}`);
    expect(res.status, page).toBe(200);
  }
});
