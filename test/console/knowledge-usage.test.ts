import type { LLMock } from '@copilotkit/aimock';
import { afterAll, expect, it, vi } from 'vitest';
import { embeddingsWithUsage, providerEnv, startAimock, wordCount } from '../helpers/aimock.js';
import { describeConsole } from './browser.js';

/*
 * The usage page shows the tokens knowledge spent with providers (issue 38): by kind and model, as
 * GET /api/v1/knowledge-usage sums them. Embeddings come from aimock behind a proxy that reports each
 * text's words as its tokens.
 */

let mock: LLMock | undefined;
let provider: Awaited<ReturnType<typeof embeddingsWithUsage>> | undefined;
async function env() {
  mock = await startAimock();
  provider = await embeddingsWithUsage(mock);
  return { ...providerEnv(mock), OPENAI_BASE_URL: provider.url };
}

describeConsole(
  'knowledge tokens on the usage page',
  'test/console/knowledge-usage.test.ts',
  (session) => {
    afterAll(async () => {
      await provider?.stop();
      await mock?.stop();
    });

    it('lists what documents and search queries spent, by model, as the API reports it', async () => {
      const { page, t, key, url } = session;
      await page.goto(`${url}/usage`);
      await page.getByText('No provider tokens spent by knowledge bases in this period').waitFor();

      const model = 'openai/text-embedding-3-small';
      const base = (await t.api(key).POST('/api/v1/knowledge-bases', { body: { name: 'Roof', embeddingModel: model } })).data!;
      const content = 'Solar panels on the south roof are cleaned every spring.';
      const doc = (
        await t.api(key).POST('/api/v1/knowledge-bases/{id}/documents', { params: { path: { id: base.id } }, body: { content } })
      ).data!;
      await vi.waitFor(
        async () => {
          const got = await t.api(key).GET('/api/v1/knowledge-bases/{id}/documents/{documentId}', {
            params: { path: { id: base.id, documentId: doc.id } },
          });
          expect(got.data!.status).toBe('ready');
        },
        { timeout: 30_000, interval: 50 },
      );
      const search = await t.api(key).POST('/api/v1/knowledge-bases/{id}/search', {
        params: { path: { id: base.id } },
        body: { query: 'when are the panels cleaned' },
      });
      expect(search.response.status).toBe(200);

      await page.reload();
      const rows = page.getByTestId('knowledge-tokens-row');
      await rows.first().waitFor();
      expect(await rows.count()).toBe(2);
      const texts = await rows.allTextContents();
      expect(texts).toContain(`documents embedded${model}1${wordCount(content)}0`);
      expect(texts).toContain(`search queries embedded${model}150`);
    });
  },
  env,
);
