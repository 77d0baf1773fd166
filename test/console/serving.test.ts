import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectProblem, startApp, type TestApp } from '../helpers/app.js';

// A console build as Vite writes it (base './'): index.html, hashed assets, a file at the top.
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'agentry-console-'));
fs.mkdirSync(path.join(dir, 'assets'));
fs.writeFileSync(
  path.join(dir, 'index.html'),
  '<!doctype html><html><head><script type="module" src="./assets/index-AbC123.js"></script></head><body><div id="root"></div></body></html>',
);
fs.writeFileSync(path.join(dir, 'assets', 'index-AbC123.js'), 'console.log("console")');
fs.writeFileSync(path.join(dir, 'assets', 'index-Def456.css'), 'body{}');
fs.writeFileSync(path.join(dir, 'favicon.svg'), '<svg xmlns="http://www.w3.org/2000/svg"/>');
// A secret beside the console's folder: no URL may reach it.
fs.writeFileSync(path.join(path.dirname(dir), `${path.basename(dir)}-secret.txt`), 'TOP-SECRET-CONTENT');

let t: TestApp;
beforeAll(async () => {
  t = await startApp({ CONSOLE_DIR: dir, PUBLIC_BASE_URL: 'https://example.test/agentry' });
});
afterAll(async () => {
  await t?.close();
  fs.rmSync(dir, { recursive: true, force: true });
  fs.rmSync(path.join(path.dirname(dir), `${path.basename(dir)}-secret.txt`), { force: true });
});

// The console's pages and files, and unknown routes, are no operations of the API: raw.
describe('the web console', () => {
  it('serves index.html at / with no-cache, a strict CSP and <base href> set to PUBLIC_BASE_URL path', async () => {
    const res = await t.raw('GET', '/');
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(res.headers['cache-control']).toBe('no-cache');
    const csp = String(res.headers['content-security-policy']);
    expect(csp).toContain("script-src 'self'");
    expect(csp).not.toMatch(/script-src[^;]*unsafe-inline/);
    expect(csp).toContain("frame-ancestors 'none'");
    expect(csp).toContain("object-src 'none'");
    expect(res.headers['x-content-type-options']).toBe('nosniff');
    expect(res.text).toContain('<base href="/agentry/">');
    expect(res.text).toContain('./assets/index-AbC123.js');
  });

  it('answers a revalidation of index.html with 304', async () => {
    const first = await t.raw('GET', '/');
    const again = await t.raw('GET', '/', { headers: { 'if-none-match': String(first.headers.etag) } });
    expect(again.status).toBe(304);
    expect(again.text).toBe('');
  });

  it('serves hashed assets as immutable with their type', async () => {
    const js = await t.raw('GET', '/assets/index-AbC123.js');
    expect(js.status).toBe(200);
    expect(js.headers['content-type']).toBe('text/javascript; charset=utf-8');
    expect(js.headers['cache-control']).toBe('public, max-age=31536000, immutable');
    expect(js.text).toBe('console.log("console")');
    const css = await t.raw('GET', '/assets/index-Def456.css');
    expect(css.headers['content-type']).toBe('text/css; charset=utf-8');
    const icon = await t.raw('GET', '/favicon.svg');
    expect(icon.status).toBe(200);
    expect(icon.headers['content-type']).toBe('image/svg+xml');
    expect(icon.headers['cache-control']).toBe('no-cache');
  });

  it("answers index.html for the console's own routes (a reload of a deep link)", async () => {
    for (const url of ['/agents', '/agents/0190aaaa-0000-7000-8000-000000000000', '/runs/x', '/playground', '/tasks?tab=cron']) {
      const res = await t.raw('GET', url);
      expect(res.status, url).toBe(200);
      expect(res.text, url).toContain('<div id="root">');
    }
  });

  it('keeps unknown API paths and unknown files problem+json 404s', async () => {
    expectProblem(await t.raw('GET', '/api/v1/nothing-here'), 404, 'route_not_found');
    // Unknown /v1 paths answer in OpenAI's error shape (docs/clients.md), not the console's page.
    const v1 = await t.raw('GET', '/v1/nothing');
    expect(v1.status).toBe(404);
    expect(v1.body.error).toMatchObject({ type: 'invalid_request_error', code: 'route_not_found' });
    expectProblem(await t.raw('GET', '/nothing-here'), 404, 'route_not_found');
    expectProblem(await t.raw('GET', '/assets/missing.js'), 404, 'route_not_found');
    // The API itself still answers as before.
    const { key } = await t.tenant();
    const agents = await t.api(key).GET('/api/v1/agents');
    expect(agents.response.status).toBe(200);
    expect(agents.response.headers.get('content-security-policy')).toBeNull();
  });

  it('never serves a file outside the console folder', async () => {
    const secret = `${path.basename(dir)}-secret.txt`;
    for (const url of [
      `/assets/../../${secret}`,
      `/assets/..%2f..%2f${secret}`,
      `/assets/%2e%2e/%2e%2e/${secret}`,
      '/assets/..%2findex.html',
      '/assets/%2e%2e%2f%2e%2e%2fetc%2fpasswd',
      '/assets/....//....//etc/passwd',
    ]) {
      const res = await t.raw('GET', url);
      expect(res.status, url).toBe(404);
      expect(res.text, url).not.toContain('TOP-SECRET-CONTENT');
    }
  });
});

describe('without a built console', () => {
  it('starts, and / is a 404 problem', async () => {
    const empty = fs.mkdtempSync(path.join(os.tmpdir(), 'agentry-no-console-'));
    const app = await startApp({ CONSOLE_DIR: empty });
    try {
      expectProblem(await app.raw('GET', '/'), 404, 'route_not_found');
      expect((await app.api().GET('/healthz')).response.status).toBe(200);
    } finally {
      await app.close();
      fs.rmSync(empty, { recursive: true, force: true });
    }
  });
});
