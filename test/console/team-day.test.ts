import type { LLMock } from '@copilotkit/aimock';
import { afterAll, expect, it, vi } from 'vitest';
import { providerEnv, startAimock } from '../helpers/aimock.js';
import { describeConsole } from './browser.js';

/*
 * A team's day in the console (issue 39's walkthrough), through the pages a person uses and nothing
 * else for what they do: a knowledge base with a document; an agent with the knowledge and memory
 * tools, an approval rule, a fallback model and a budget; a chat whose knowledge search waits for a
 * person; the call approved with edited arguments from the inbox; the run's trace with the fallback,
 * the approval and the tool step; a memory block written and edited; a key revoked after its
 * confirmation. The API is read only to check what the pages did.
 *
 * The agent's own model is an OpenAI-compatible one that is down (aimock answers 503), so each step is
 * answered by its fallback, builtin/echo, whose /tool lines call tools (docs/models.md).
 */

let mock: LLMock | undefined;
async function env() {
  mock = await startAimock();
  mock.addFixture({
    match: { model: 'down' },
    response: { error: { message: 'The engine is currently overloaded', type: 'server_error' }, status: 503 },
  });
  return { ...providerEnv(mock), MODEL_RETRY_MAX_ATTEMPTS: '1', MODEL_BREAKER_FAILURES: '0' };
}

describeConsole(
  'a team’s day',
  'test/console/team-day.test.ts',
  (session) => {
    afterAll(async () => {
      await mock?.stop();
    });
    let agentId = '';
    let runId = '';

    it('makes a knowledge base and adds a document to it', async () => {
      const { page } = session;
      await page.getByRole('navigation').getByRole('link', { name: 'Knowledge' }).click();
      await page.getByRole('button', { name: 'New knowledge base' }).click();
      const create = page.getByRole('dialog', { name: 'New knowledge base' });
      await create.getByLabel('Name').fill('Handbook');
      await create.getByRole('button', { name: 'Create' }).click();
      await page.getByRole('heading', { level: 1, name: 'Handbook' }).waitFor();
      await page.getByRole('button', { name: 'Add text…' }).click();
      const text = page.getByRole('dialog', { name: 'Add a text' });
      await text.getByLabel('Title').fill('Leave');
      await text.getByLabel('Text (Markdown)').fill('Parental leave lasts sixteen weeks at full pay.');
      await text.getByRole('button', { name: 'Add', exact: true }).click();
      await page
        .getByTestId('document')
        .filter({ hasText: 'Leave' })
        .getByTestId('document-status')
        .filter({ hasText: /^ready$/ })
        .waitFor({ timeout: 30_000 });
    });

    it('creates an agent with tools, an approval rule, a fallback model and a budget', async () => {
      const { page, t, key } = session;
      await page.getByRole('navigation').getByRole('link', { name: 'Agents' }).click();
      await page.getByRole('link', { name: 'New agent' }).click();
      await page.getByLabel('Name').fill('Helpdesk');
      await page.getByLabel('App').fill('people');
      await page.getByRole('combobox', { name: 'Model', exact: true }).fill('openai-compatible/down');
      await page.getByRole('combobox', { name: 'Fallback models', exact: true }).fill('builtin/ec');
      await page.getByRole('option', { name: /builtin\/echo/ }).click();
      for (const group of ['knowledge', 'memory']) {
        const box = page.getByRole('checkbox', { name: group });
        if (!(await box.isChecked())) await box.check();
      }
      await page.getByLabel('Configuration').fill(
        JSON.stringify({
          fallbackModels: ['builtin/echo'],
          approval: { rules: [{ tool: 'knowledge_search', reason: 'searches are read first' }] },
        }),
      );
      await page.getByRole('button', { name: 'Create agent' }).click();
      await page.getByRole('heading', { name: 'Helpdesk' }).waitFor();
      // The budget is set on the agent's own page, once it exists.
      await page.getByLabel('Monthly budget (USD, empty: none)').fill('25');
      await page.getByRole('button', { name: 'Set budget' }).click();
      await page.getByText(/spent \$0\.0000 of \$25 \(left \$25\.0000\)/).waitFor();
      const agents = (await t.api(key).GET('/api/v1/agents', { params: { query: { q: 'Helpdesk' } } })).data!.agents;
      expect(agents).toHaveLength(1);
      agentId = agents[0].id;
      const agent = (await t.api(key).GET('/api/v1/agents/{id}', { params: { path: { id: agentId } } })).data!;
      expect(agent.model).toBe('openai-compatible/down');
      expect(agent.tools).toEqual(expect.arrayContaining([expect.objectContaining({ type: 'builtin', name: 'knowledge' })]));
      expect(agent.configuration).toMatchObject({ fallbackModels: ['builtin/echo'] });
      const budget = await t.api(key).GET('/api/v1/agents/{id}/budget', { params: { path: { id: agentId } } });
      expect(budget.data?.monthlyBudgetUsd).toBe(25);
    });

    it('chats; the search waits for a person, who approves it with edited arguments from the inbox', async () => {
      const { page, t, key } = session;
      await page.getByRole('navigation').getByRole('link', { name: 'Playground' }).click();
      await page
        .getByLabel(/^Agent( \*)?$/)
        .first()
        .click();
      await page.getByRole('option', { name: 'Helpdesk', exact: true }).click();
      await page.getByLabel('Message').fill('/tool knowledge_search {"query":"holiday"}');
      await page.getByLabel('Message').press('Enter');
      await page.getByTestId('chat-approval').getByText('searches are read first', { exact: false }).waitFor();

      await page
        .getByRole('navigation')
        .getByRole('link', { name: /^Approvals/ })
        .click();
      const item = page.getByTestId('approval').filter({ hasText: 'knowledge_search' });
      await item.getByText('searches are read first').waitFor();
      await item.getByRole('button', { name: 'Edit arguments…' }).click();
      await page.getByRole('textbox', { name: 'Arguments' }).fill('{"query":"parental leave"}');
      await page.getByRole('button', { name: 'Approve with these' }).click();
      await page.getByText('Nothing is waiting for a decision.').waitFor();

      const approved = (await t.api(key).GET('/api/v1/approvals', { params: { query: { status: 'approved', kind: 'tool_call' } } })).data!;
      runId = approved.approvals[0].toolCall!.runId;
      const run = await vi.waitFor(
        async () => {
          const { data } = await t.api(key).GET('/api/v1/runs/{runId}', { params: { path: { runId } } });
          expect(data!.status, JSON.stringify(data)).toBe('completed');
          return data!;
        },
        { timeout: 15_000, interval: 100 },
      );
      expect(run.toolCalls[0]).toMatchObject({ name: 'knowledge_search', input: { query: 'parental leave' } });
      expect(run.citations[0]).toMatchObject({ title: 'Leave' });
    });

    it('reads the run’s trace: the fallback, the approval with its edit, the tool step and its citation', async () => {
      const { page } = session;
      await page.goto(`${session.url}/runs/${runId}`);
      await page.getByTestId('run-trace').waitFor();
      expect(await page.getByTestId('run-fallbacks').textContent()).toBe('answered by fallback builtin/echo');
      const rows = page.getByTestId('trace-row');
      await expect
        .poll(async () => Promise.all((await rows.all()).map((row) => row.getAttribute('data-kind'))))
        .toEqual(['model', 'approval', 'tool', 'model']);
      const tool = rows.nth(2);
      await tool.getByRole('button').first().click();
      const change = tool.getByTestId('arguments-diff').locator('tr[data-change=changed]');
      expect(await change.locator('td').allTextContents()).toEqual(['query', '"holiday"', '"parental leave"']);
      expect(await tool.getByTestId('approval-line').textContent()).toMatch(/^Approved by api_key .* · rule: searches are read first$/);
      await page.getByTestId('citation').getByRole('link', { name: 'Leave' }).click();
      await page.getByTestId('passage').getByText('Parental leave lasts sixteen weeks at full pay.').waitFor();
    });

    it('writes the agent’s memory and edits it', async () => {
      const { page, t, key } = session;
      await page.goto(`${session.url}/agents/${agentId}`);
      await page.getByRole('main').getByRole('link', { name: 'Memory', exact: true }).click();
      await page.getByText('No blocks yet.').waitFor();
      await page.getByRole('button', { name: 'New block…' }).click();
      const create = page.getByRole('dialog', { name: 'New memory block' });
      await create.getByLabel('Name').fill('policies');
      await create.getByLabel('Text').fill('Leave questions go to HR.');
      await create.getByRole('button', { name: 'Save' }).click();
      await create.waitFor({ state: 'detached' });
      const block = page.getByTestId('memory-block').filter({ hasText: 'policies' });
      await block.getByRole('button', { name: 'Edit…' }).click();
      const edit = page.getByRole('dialog', { name: 'Edit policies' });
      await edit.getByLabel('Text').fill('Leave questions go to HR, with the handbook’s passage.');
      await edit.getByRole('button', { name: 'Save' }).click();
      await block.getByText('version 2').waitFor();
      const read = await t.api(key).GET('/api/v1/agents/{id}/memory/{label}', { params: { path: { id: agentId, label: 'policies' } } });
      expect(read.data?.value).toBe('Leave questions go to HR, with the handbook’s passage.');
    });

    it('revokes a key after its confirmation; the key stops working, the console’s own key goes on', async () => {
      const { page, t, key } = session;
      const created = await t.api(key).POST('/api/v1/api-keys', { body: { name: 'old-laptop', permissions: ['agents:read'] } });
      expect(created.response.status).toBe(201);
      await page
        .getByRole('navigation')
        .getByRole('link', { name: /^Usage/ })
        .click();
      await page.getByRole('tab', { name: 'API keys' }).click();
      await page.getByRole('row').filter({ hasText: 'old-laptop' }).getByRole('button', { name: 'Revoke' }).click();
      const confirm = page.getByRole('dialog', { name: 'Revoke API key' });
      await confirm.getByText('It stops working at once').waitFor();
      await confirm.getByRole('button', { name: 'Revoke' }).click();
      await page.getByRole('row').filter({ hasText: 'old-laptop' }).waitFor({ state: 'detached' });
      expect((await t.raw('GET', '/api/v1/agents', { key: created.data!.key })).status).toBe(401);
      await page.getByRole('navigation').getByRole('link', { name: 'Agents' }).click();
      await page.getByRole('link', { name: 'Helpdesk' }).waitFor();
    });

    it('raised no page error', () => {
      expect(session.pageErrors).toEqual([]);
    });
  },
  env,
);
