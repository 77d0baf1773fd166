import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { dialect, startApp, type TestApp } from '../helpers/app.js';

/**
 * Knowledge searches take turns (docs/knowledge.md, "Sizes and limits"): at most
 * KNOWLEDGE_SEARCH_CONCURRENCY rank at once, KNOWLEDGE_SEARCH_QUEUE wait, and one more is refused
 * with 503 search_busy and Retry-After, while the rest of the API answers as usual.
 */

let t: TestApp;
let key: string;
let baseId: string;

beforeAll(async () => {
  t = await startApp({ KNOWLEDGE_SEARCH_CONCURRENCY: '1', KNOWLEDGE_SEARCH_QUEUE: '0' });
  await t.listen();
  ({ key } = await t.tenant());
  const { data: base } = await t
    .api(key)
    .POST('/api/v1/knowledge-bases', { body: { name: 'Turns', chunking: { maxChars: 200, overlapChars: 0 } } });
  baseId = base!.id;
  const content = Array.from({ length: 60 }, (_, i) => `Harbour ${i} keeps ${i % 7} cranes and a tide table for ships.`).join('\n\n');
  const added = await t.api(key).POST('/api/v1/knowledge-bases/{id}/documents', { params: { path: { id: baseId } }, body: { content } });
  expect(added.response.status).toBe(202);
  await vi.waitFor(
    async () => {
      const doc = await t.api(key).GET('/api/v1/knowledge-bases/{id}/documents/{documentId}', {
        params: { path: { id: baseId, documentId: added.data!.id } },
      });
      expect(doc.data!.status).toBe('ready');
    },
    { timeout: 30_000, interval: 50 },
  );
});
afterAll(() => t?.close());

describe('knowledge searches take turns', () => {
  it('one ranks at a time here and none waits: a burst gets 200s and 503 search_busy with Retry-After, nothing else', async () => {
    const search = (i: number) =>
      t.fetch(`/api/v1/knowledge-bases/${baseId}/search`, key, { body: { query: `cranes of harbour ${i}`, mode: 'hybrid' } });
    const [answers, agents] = await Promise.all([
      Promise.all(Array.from({ length: 30 }, (_, i) => search(i))),
      t.fetch('/api/v1/agents', key),
    ]);
    expect(agents.status).toBe(200);
    let busy = 0;
    for (const res of answers) {
      const body = (await res.json()) as { passages: unknown[]; code: string };
      if (res.status === 200) {
        expect(body.passages.length).toBeGreaterThan(0);
        continue;
      }
      expect(res.status).toBe(503);
      expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
      expect(res.headers.get('retry-after')).toBe('1');
      expect(body.code).toBe('search_busy');
      busy++;
    }
    expect(busy).toBeLessThan(30);
    // On PostgreSQL a search's statements wait on the network, so a burst overlaps: some are refused.
    // On SQLite they run one after another on the event loop, so a turn is usually free.
    if (dialect === 'postgres') expect(busy).toBeGreaterThan(0);
    // Turns are given back: the next search has one.
    expect((await search(99)).status).toBe(200);
  });
});
