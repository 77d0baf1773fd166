import { expect, vi } from 'vitest';
import type { TestApp } from './app.js';

/** Waits until `count` of the base's documents are `ready` (as its document list counts them). */
export async function documentsReady(
  api: ReturnType<TestApp['api']>,
  baseId: string,
  count: number,
  { timeout = 30_000, interval = 50 }: { timeout?: number; interval?: number } = {},
): Promise<void> {
  await vi.waitFor(
    async () => {
      const listed = await api.GET('/api/v1/knowledge-bases/{id}/documents', {
        params: { path: { id: baseId }, query: { status: 'ready', limit: 1 } },
      });
      expect(listed.data!.total).toBe(count);
    },
    { timeout, interval },
  );
}
