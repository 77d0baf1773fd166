import { expect, it } from 'vitest';
import { describeConsole, docsScreenshot, signIn } from './browser.js';

/*
 * The audit log on the usage page (issue 39): what an event touched and who did it by name (agents,
 * API keys, knowledge bases, a memory block with its agent) rather than an id's tail, links to their
 * pages, readable dates, and the filters by action and resource type checked against the API.
 */

describeConsole('the audit log', 'test/console/audit.test.ts', (session) => {
  const events = () => session.page.getByTestId('audit-event');

  async function openAudit() {
    const { page, url } = session;
    // A page of its own: the filters of a test before do not carry over.
    await page.goto(`${url}/usage`);
    await page.getByRole('heading', { name: 'Usage' }).waitFor();
    await page.getByRole('tab', { name: 'Audit log' }).click();
    await events().first().waitFor();
  }

  it('names what each event touched and who did it, with links and readable dates', async () => {
    const { page, t, key } = session;
    const agent = await t.agent(key, { name: 'Ledger' });
    const base = (await t.api(key).POST('/api/v1/knowledge-bases', { body: { name: 'Handbook' } })).data!;
    await t
      .api(key)
      .PUT('/api/v1/agents/{id}/memory/{label}', { params: { path: { id: agent.id, label: 'persona' } }, body: { value: 'calm' } });
    const keys = (await t.api(key).GET('/api/v1/api-keys', { params: { query: {} } })).data!.apiKeys;
    // The tenant's one key so far: the console is signed in with it.
    expect(keys).toHaveLength(1);
    const [own] = keys;
    await openAudit();

    const created = events().filter({ hasText: 'agent.created' }).filter({ hasText: 'Ledger' });
    await created.getByRole('link', { name: 'Ledger' }).waitFor();
    expect(await created.textContent()).not.toContain(agent.id.slice(-8));
    expect(await created.textContent()).toContain(`api key ${own.name}`);
    const at = await created.locator('time').getAttribute('datetime');
    expect(Number.isNaN(Date.parse(at!))).toBe(false);
    expect(await created.locator('time').textContent()).not.toContain('T');

    await events().filter({ hasText: 'knowledge_base.created' }).getByRole('link', { name: 'Handbook' }).waitFor();
    const memory = events().filter({ hasText: 'memory_block.created' });
    await memory.getByText(/memory block persona of Ledger/).waitFor();
    await docsScreenshot(page, 'audit');
    await memory.getByRole('link', { name: 'persona' }).click();
    await page.getByTestId('memory-block').getByText('calm').waitFor();
    expect(page.url()).toContain(`agentId=${agent.id}`);
    expect(base.id).toBeTruthy();
  });

  it('filters by action and by resource type, as the API does', async () => {
    const { page, t, key } = session;
    await openAudit();
    await page.getByRole('textbox', { name: 'Action' }).fill('agent.created');
    const byAction = (await t.api(key).GET('/api/v1/audit-events', { params: { query: { action: 'agent.created' } } })).data!;
    await expect.poll(() => events().count()).toBe(byAction.events.length);
    for (const text of await events().allTextContents()) expect(text).toContain('agent.created');
    await page.getByRole('textbox', { name: 'Action' }).fill('');

    await page.getByRole('combobox', { name: 'Resource type' }).click();
    await page.getByRole('option', { name: 'knowledge_base', exact: true }).click();
    const byType = (await t.api(key).GET('/api/v1/audit-events', { params: { query: { resourceType: 'knowledge_base' } } })).data!;
    await expect.poll(() => events().count()).toBe(byType.total);
    for (const text of await events().allTextContents()) expect(text).toContain('knowledge base');
    await page.getByTestId('audit-count').getByText(`${byType.total} event`).waitFor();

    await page.getByRole('textbox', { name: 'Action' }).fill('nothing.happened');
    await page.getByTestId('audit-count').getByText('No events match.').waitFor();
    expect(await events().count()).toBe(0);
  });

  it('pages through more events than a page holds', async () => {
    const { page, t, key } = session;
    const agent = await t.agent(key, { name: 'Chatty' });
    for (let i = 0; i < 101; i++) {
      const made = await t.api(key).POST('/api/v1/conversations', { body: { agentId: agent.id, name: `talk ${i}` } });
      expect(made.response.status).toBe(201);
    }
    await openAudit();
    await page.getByRole('combobox', { name: 'Resource type' }).click();
    await page.getByRole('option', { name: 'conversation', exact: true }).click();
    const total = (await t.api(key).GET('/api/v1/audit-events', { params: { query: { resourceType: 'conversation' } } })).data!.total;
    expect(total).toBeGreaterThanOrEqual(101);
    await page.getByTestId('audit-count').getByText(`Events 1 to 100 of ${total}, newest first.`).waitFor();
    await expect.poll(() => events().count()).toBe(100);
    await page.getByRole('button', { name: '2', exact: true }).click();
    await page.getByTestId('audit-count').getByText(`Events 101 to ${total} of ${total}, newest first.`).waitFor();
    await expect.poll(() => events().count()).toBe(total - 100);
    // A filter changed starts again from the first page.
    await page.getByRole('textbox', { name: 'Action' }).fill('conversation.created');
    await page
      .getByTestId('audit-count')
      .getByText(/^Events 1 to 100 of/)
      .waitFor();
  });

  it('a key that may read settings but not list keys still sees agents by name', async () => {
    const { page, t, key, url } = session;
    const reader = await t.key(key, ['agents:read', 'settings:read']);
    await page.getByRole('button', { name: 'Sign out' }).click();
    await signIn(page, url, reader);
    await openAudit();
    await page.getByRole('textbox', { name: 'Action' }).fill('agent.created');
    await events().filter({ hasText: 'agent.created' }).getByRole('link', { name: 'Ledger' }).waitFor();
    await page.getByRole('button', { name: 'Sign out' }).click();
    await signIn(page, url, key);
  });

  it('raised no page error', () => {
    // The key list refused to the reader (403) is logged by the browser as a failed resource load.
    expect(session.pageErrors.filter((e) => !e.startsWith('console: Failed to load resource'))).toEqual([]);
  });
});
