import type { LLMock } from '@copilotkit/aimock';
import { afterAll, beforeAll, expect, it, vi } from 'vitest';
import { endedRun, pendingOf, shoutWaits } from '../approvals/helpers.js';
import { providerEnv, startAimock } from '../helpers/aimock.js';
import { execute } from '../helpers/execute.js';
import { startMcpServer } from '../helpers/mcp-server.js';
import { describeConsole } from './browser.js';

/*
 * A run's page as a person reads it (issue 39): the trace of its model steps, tool calls and approval
 * waits in time order, each expandable; the fallback that answered; its warnings (also in the runs list
 * and the playground's turn); its citations, linked to the knowledge page; a run of fifty rows that stays
 * readable. The runs are made through the API with builtin/echo's directives (docs/models.md).
 */

// The providers answer from aimock, whose fixtures fail or cut the answers the tests name; retries are 1 ms apart.
let mock: LLMock | undefined;
async function env() {
  mock = await startAimock();
  return {
    ...providerEnv(mock),
    MODEL_RETRY_MAX_ATTEMPTS: '2',
    MODEL_RETRY_BASE_MS: '1',
    MODEL_BREAKER_FAILURES: '0',
    // A window that holds one turn of history, and a summary model whose window holds no summary request.
    MODEL_PRICES: JSON.stringify({
      'openai-compatible/tiny': { contextWindow: 160, outputReserve: 40 },
      'openai-compatible/minuscule': { contextWindow: 120, outputReserve: 20 },
    }),
  };
}

describeConsole(
  'the run page',
  'test/console/run-trace.test.ts',
  (session) => {
    let mcp: Awaited<ReturnType<typeof startMcpServer>>;
    beforeAll(async () => {
      mcp = await startMcpServer();
    });
    afterAll(async () => {
      await mcp?.close();
      await mock?.stop();
    });

    const rows = () => session.page.getByTestId('trace-row');
    async function openRun(runId: string) {
      await session.page.goto(`${session.url}/runs/${runId}`);
      await session.page.getByTestId('run-trace').waitFor();
    }

    it('shows a call approved with edited arguments: the steps in order, the diff and who approved', async () => {
      const { t, key, page } = session;
      const agent = await t.agent(key, { name: 'Loud', tools: [{ type: 'mcp', url: mcp.url }], configuration: shoutWaits() });
      const started = await execute(t.api(key), agent.id, { message: '/tool shout {"text":"delete everything"}' });
      const runId = started.run!.runId;
      const [approval] = await pendingOf(t, key, runId);
      const approved = await t.api(key).POST('/api/v1/approvals/{id}/approve', {
        params: { path: { id: approval.id } },
        body: { arguments: { text: 'be nice' } },
      });
      expect(approved.response.status).toBe(200);
      const run = await endedRun(t, key, runId);
      expect(run.status).toBe('completed');

      await openRun(runId);
      // The model asked for the call, a person was asked, the call ran, the model answered.
      await expect
        .poll(async () => Promise.all((await rows().all()).map((row) => row.getAttribute('data-kind'))))
        .toEqual(['model', 'approval', 'tool', 'model']);
      expect(await rows().nth(0).textContent()).toContain('builtin/echo');
      expect(await page.getByTestId('trace-bar').count()).toBe(4);

      const tool = rows().nth(2);
      await tool.getByRole('button').first().click();
      const diff = tool.getByTestId('arguments-diff');
      const change = diff.locator('tr[data-change=changed]');
      await change.waitFor();
      expect(await change.locator('td').allTextContents()).toEqual(['text', '"delete everything"', '"be nice"']);
      expect(await tool.getByTestId('approval-line').textContent()).toMatch(/^Approved by api_key .* · rule: shouting is loud$/);
      expect(await tool.getByTestId('trace-details').textContent()).toContain('BE NICE');

      const wait = rows().nth(1);
      await wait.getByRole('button').first().click();
      expect(await wait.getByTestId('decided-by').textContent()).toBe(`api_key ${approved.data!.decision!.by!.id}`);
      await wait.getByText('shouting is loud').waitFor();
    });

    it('shows the fallback model that answered a step', async () => {
      const { t, key, page } = session;
      const message = 'hello from the fallback';
      mock!.addFixture({
        match: { userMessage: message, model: 'overloaded' },
        response: { error: { message: 'The engine is currently overloaded', type: 'server_error' }, status: 503 },
      });
      const agent = await t.agent(key, {
        name: 'Backed up',
        model: 'openai-compatible/overloaded',
        configuration: { fallbackModels: ['builtin/echo'] },
      });
      const res = await execute(t.api(key), agent.id, { message });
      expect(res.run?.status, JSON.stringify(res.error)).toBe('completed');

      await openRun(res.run!.runId);
      expect(await page.getByTestId('run-fallbacks').textContent()).toBe('answered by fallback builtin/echo');
      const step = rows().first();
      expect(await step.getAttribute('data-kind')).toBe('model');
      await step.getByText('fallback', { exact: true }).waitFor();
      await step.getByRole('button').first().click();
      await step.getByText('fallback: the agent’s openai-compatible/overloaded did not answer').waitFor();
    });

    it('shows an answer the provider cut and the retry that answered it whole', async () => {
      const { t, key } = session;
      const message = 'an answer cut short';
      // The first answer breaks off after a few chunks; the step is asked again and answers whole.
      mock!.addFixture({
        match: { userMessage: message, sequenceIndex: 0 },
        response: { content: 'One two three four five six seven.' },
        chunkSize: 4,
        truncateAfterChunks: 3,
        latency: 10,
      });
      mock!.addFixture({ match: { userMessage: message, sequenceIndex: 1 }, response: { content: 'One two three four five six seven.' } });
      const agent = await t.agent(key, { name: 'Choppy', model: 'openai-compatible/qwen3-8b' });
      const res = await execute(t.api(key), agent.id, { message });
      expect(res.run?.output, JSON.stringify(res.error)).toBe('One two three four five six seven.');

      await openRun(res.run!.runId);
      await expect
        .poll(async () => Promise.all((await rows().all()).map((row) => row.getAttribute('data-kind'))))
        .toEqual(['event', 'model']);
      const cut = rows().first();
      expect(await cut.textContent()).toContain('Answer cut (openai-compatible/qwen3-8b)');
      await cut.getByRole('button').first().click();
      expect(await cut.getByTestId('trace-details').textContent()).toMatch(/^provider_unavailable: .*; the step was asked again$/);
    });

    it('shows a run’s warnings on its page, in the runs lists and under the playground’s answer', async () => {
      const { t, key, page, url } = session;
      // Nothing listens on port 1: the MCP server is down, which the run reports instead of failing.
      const agent = await t.agent(key, { name: 'Unplugged', tools: [{ type: 'mcp', url: 'http://127.0.0.1:1/mcp' }] });
      const res = await execute(t.api(key), agent.id, { message: 'anyone there?' });
      const runId = res.run!.runId;
      const [warning] = (await t.api(key).GET('/api/v1/runs/{runId}', { params: { path: { runId } } })).data!.warnings;
      expect(warning).toMatch(/^MCP server unavailable/);

      await openRun(runId);
      expect(await page.getByTestId('run-warnings').textContent()).toContain(warning);

      await page.goto(`${url}/runs?agentId=${agent.id}`);
      const badge = page
        .getByRole('row')
        .filter({ hasText: runId.slice(-12) })
        .getByTestId('run-warnings-badge');
      expect((await badge.textContent())?.trim()).toBe('⚠ 1');
      await badge.hover();
      await page.getByRole('tooltip').getByText(warning).waitFor();

      await page.goto(`${url}/playground?agentId=${agent.id}`);
      await page.getByLabel('Message').fill('still there?');
      await page.getByLabel('Message').press('Enter');
      await page
        .locator('[data-author=assistant]')
        .last()
        .getByTestId('turn-warnings')
        .getByText(/MCP server unavailable/)
        .waitFor();

      // A task's run of that agent is badged on the task's page as in the runs list.
      const task = await t
        .api(key)
        .POST('/api/v1/tasks', { body: { name: 'Roll call', description: 'anyone?', agentId: agent.id, type: 'one_time' } });
      expect(task.response.status, JSON.stringify(task.error)).toBe(201);
      const taskId = task.data!.id;
      await expect
        .poll(async () => (await t.api(key).GET('/api/v1/tasks/{id}', { params: { path: { id: taskId } } })).data!.status, {
          timeout: 20_000,
        })
        .toBe('completed');
      await page.goto(`${url}/tasks/${taskId}`);
      const taskBadge = page.getByRole('row').getByTestId('run-warnings-badge');
      expect((await taskBadge.textContent())?.trim()).toBe('⚠ 1');
    });

    it('lists the citations, each a link to its passage in the knowledge page', async () => {
      const { t, key, page } = session;
      const base = (await t.api(key).POST('/api/v1/knowledge-bases', { body: { name: 'Handbook' } })).data!.id;
      const doc = (
        await t.api(key).POST('/api/v1/knowledge-bases/{id}/documents', {
          params: { path: { id: base } },
          body: { title: 'Leave', content: 'Parental leave lasts sixteen weeks at full pay.' },
        })
      ).data!.id;
      await vi.waitFor(
        async () => {
          const got = await t.api(key).GET('/api/v1/knowledge-bases/{id}/documents/{documentId}', {
            params: { path: { id: base, documentId: doc } },
          });
          expect(got.data?.status).toBe('ready');
        },
        { timeout: 30_000, interval: 50 },
      );
      const agent = await t.agent(key, { name: 'Librarian', tools: [{ type: 'builtin', name: 'knowledge' }] });
      const res = await execute(t.api(key), agent.id, { message: '/tool knowledge_search {"query":"how long is parental leave"}' });
      expect(res.run!.citations[0]).toMatchObject({ documentId: doc, position: 0 });

      await openRun(res.run!.runId);
      const citation = page.getByTestId('citation').first();
      await citation.getByText('Parental leave lasts sixteen weeks at full pay.').waitFor();
      await citation.getByText('position 0').waitFor();
      await citation.getByText(/^score /).waitFor();
      expect(await citation.getByRole('link', { name: 'Leave' }).getAttribute('href')).toBe(
        `/knowledge/${base}?document=${doc}&position=0`,
      );
      // The link opens the passage in the knowledge page, within the console (no reload).
      await citation.getByRole('link', { name: 'Leave' }).click();
      await page.getByTestId('passage').getByText('Parental leave lasts sixteen weeks at full pay.').waitFor();
    });

    it('keeps a run of fifty rows readable: one line each, details on demand, no sideways scroll', async () => {
      const { t, key, page } = session;
      const agent = await t.agent(key, { name: 'Busy', tools: [{ type: 'mcp', url: mcp.url }] });
      // builtin/echo makes one step of every /tool line, then one answer: 48 calls and 2 steps.
      const message = Array.from({ length: 48 }, (_, i) => `/tool add {"a":${i},"b":1}`).join('\n');
      const res = await execute(t.api(key), agent.id, { message });
      expect(res.run?.toolCalls, JSON.stringify(res.error)).toHaveLength(48);

      await openRun(res.run!.runId);
      await expect.poll(() => rows().count()).toBe(50);
      expect(await page.getByTestId('trace-details').count()).toBe(0);
      const heights = await Promise.all((await rows().all()).map(async (row) => (await row.boundingBox())?.height ?? Infinity));
      expect(Math.max(...heights)).toBeLessThan(40);
      const overflow = () => page.evaluate<number>('document.documentElement.scrollWidth - document.documentElement.clientWidth');
      expect(await overflow()).toBeLessThanOrEqual(0);

      await page.getByRole('button', { name: 'Expand all' }).click();
      await expect.poll(() => page.getByTestId('trace-details').count()).toBe(50);
      expect(await overflow()).toBeLessThanOrEqual(0);
      await page.getByRole('button', { name: 'Collapse all' }).click();
      await expect.poll(() => page.getByTestId('trace-details').count()).toBe(0);
    });

    it('shows history left out of the prompt as the trace’s context fitting', async () => {
      const { t, key } = session;
      // An echo agent fitted into its (never called) fallback's tiny window, whose summary model cannot summarise.
      const agent = await t.agent(key, {
        name: 'Forgetful',
        configuration: { fallbackModels: ['openai-compatible/tiny'], summaryModel: 'openai-compatible/minuscule' },
      });
      const fact = (name: string) => `fact-${name} ${name.toLowerCase().repeat(96)}`;
      let conversationId: string | undefined;
      let runId = '';
      for (const name of ['A', 'B', 'C']) {
        const res = await execute(t.api(key), agent.id, { message: fact(name), conversationId });
        expect(res.run?.status, JSON.stringify(res.error)).toBe('completed');
        conversationId = res.run!.conversationId;
        runId = res.run!.runId;
      }

      await openRun(runId);
      const fitted = rows().filter({ hasText: 'Context fitted' });
      expect(await fitted.getAttribute('data-kind')).toBe('event');
      await fitted.getByRole('button').first().click();
      expect(await fitted.getByTestId('trace-details').textContent()).toMatch(
        /^2 older message\(s\) left out of the prompt without a summary: .*cannot hold a summary request/,
      );
      expect(await session.page.getByTestId('run-warnings').textContent()).toContain('cannot hold a summary request');
    });

    it('shows a failed model call as the trace’s error, with the run’s error above it', async () => {
      const { t, key, page } = session;
      const agent = await t.agent(key, { name: 'Fragile' });
      const res = await execute(t.api(key), agent.id, { message: '/fail the model broke' });
      const runId = res.response.headers.get('x-run-id')!;
      const run = await endedRun(t, key, runId);
      expect(run.status).toBe('failed');

      await openRun(runId);
      await page.getByRole('alert').filter({ hasText: run.error!.code }).getByText(run.error!.message).waitFor();
      const error = rows().filter({ hasText: `Error ${run.error!.code}` });
      expect(await error.getAttribute('data-kind')).toBe('event');
      await error.getByRole('button').first().click();
      await error.getByTestId('trace-details').getByText(run.error!.message).waitFor();
    });

    it('raised no page error', () => {
      expect(session.pageErrors).toEqual([]);
    });
  },
  env,
);
