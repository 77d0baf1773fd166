import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { startApp, type TestApp } from '../helpers/app.js';
import { execute } from '../helpers/execute.js';
import {
  CONSOLE_DIST,
  CONVERSATION_MESSAGES,
  docsScreenshot,
  hasChromium,
  holdResponses,
  openRecordedPage,
  requireConsoleBuild,
  screenshotFailures,
  type TestBrowser,
} from './browser.js';

/*
 * The console as a person uses it: a real server (this process, SQLite) serving the built console,
 * Chromium driving it. Nothing is mocked; what the page shows is checked against the API. Each test
 * goes on from where the one before left the page (one browser per file keeps the suite short).
 */

const describeBrowser = hasChromium ? describe : describe.skip;
if (!hasChromium) console.warn('test/console/e2e.test.ts skipped: no /usr/bin/chromium (apt-get install chromium)');

// builtin/echo priced so a run costs something to show on the usage page.
const PRICES = { 'builtin/echo': { input: 1_000, output: 2_000 } };

let t: TestApp;
let browser: TestBrowser;
let page: Page;
let url: string;
let key: string;
const pageErrors: string[] = [];

/** Picks `option` in the Mantine Select labelled `label` (within `scope`, default the page). */
async function choose(label: string, option: string, scope: Pick<Page, 'getByLabel'> = page) {
  // A required field's label ends with ' *'.
  await scope
    .getByLabel(new RegExp(`^${label}( \\*)?$`))
    .first()
    .click();
  await page.getByRole('option', { name: option, exact: true }).click();
}

describeBrowser('the console in a browser', () => {
  beforeAll(async () => {
    requireConsoleBuild();
    t = await startApp({ CONSOLE_DIR: CONSOLE_DIST, MODEL_PRICES: JSON.stringify(PRICES) });
    url = await t.listen();
    ({ key } = await t.tenant('Acme'));
    ({ browser, page } = await openRecordedPage(pageErrors));
  });
  screenshotFailures('agentry-console-failed', () => page);
  afterAll(async () => {
    await browser?.close();
    await t?.close();
  });

  it('signs in with an API key (kept in sessionStorage only) and lands on the agents page', async () => {
    await page.goto(url);
    await page.getByLabel('API key or access token').fill('agk_not-a-real-key');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('alert').filter({ hasText: 'Not signed in' }).waitFor();

    await page.getByLabel('API key or access token').fill(key);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'Agents' }).waitFor();
    expect(new URL(page.url()).pathname).toBe('/agents');
    // Expressions evaluated in the page (its DOM globals are not this file's).
    const storage = (await page.evaluate(
      `({ session: sessionStorage.getItem('agentry.credential'), local: JSON.stringify(localStorage) })`,
    )) as { session: string | null; local: string };
    expect(storage.session).toBe(key);
    expect(storage.local).not.toContain(key);
    expect(await page.evaluate('document.cookie')).toBe('');
  });

  it("creates an agent, showing the server's validation errors at their fields", async () => {
    await page.getByRole('link', { name: 'New agent' }).click();
    await page.getByLabel('Name').fill('Support');
    await page.getByLabel('App').fill('demo');
    // An MCP server without its url: the schema's ^https?:// (checked before sending, as the server's 400
    // would name tools.N.url), shown under the row's URL field.
    await page.getByRole('button', { name: 'Add MCP server' }).click();
    await page.getByRole('button', { name: 'Create agent' }).click();
    await page.getByText('Not saved').waitFor();
    const toolsError = page.getByTestId('mcp-row').locator('.mantine-TextInput-error');
    await toolsError.waitFor();
    expect(await toolsError.textContent()).toMatch(/https:\/\/|https\?|uri/i);

    // The skills tools (skill_discover...): a tool the chat below can call.
    await page.getByRole('button', { name: 'Remove MCP server' }).click();
    expect(await page.getByRole('checkbox', { name: 'skills' }).isChecked()).toBe(true);
    await page.getByRole('button', { name: 'Create agent' }).click();
    await page.getByRole('heading', { name: 'Support' }).waitFor();
    const agents = (await t.api(key).GET('/api/v1/agents')).data!;
    expect(agents.agents.map((a) => a.name)).toEqual(['Support']);
    expect(new URL(page.url()).pathname).toBe(`/agents/${agents.agents[0].id}`);
    await page.getByRole('link', { name: 'Agents' }).click();
    await page.getByRole('link', { name: 'Support' }).waitFor();
    await docsScreenshot(page, 'agents');
  });

  it('chats over the stream: tokens, a tool call as a card, the turn’s cost', async () => {
    await page.getByRole('link', { name: 'Chat' }).click();
    await page.getByRole('heading', { name: 'Playground' }).waitFor();
    // builtin/echo calls the tool a /tool line names, then answers with what it returned.
    await page.getByLabel('Message').fill('/tool skill_discover {"query":"orders"}');
    await page.getByLabel('Message').press('Enter');
    const answer = page.locator('[data-author=assistant]').last();
    await answer.getByText('skill_discover returned', { exact: false }).waitFor();
    const card = answer.getByTestId('tool-call').first();
    await card.waitFor();
    expect(await card.textContent()).toContain('skill_discover');
    await card.getByRole('button').first().click();
    await card.getByText('"query": "orders"').waitFor();
    await page.getByTestId('turn-cost').last().waitFor();
    const costText = await page.getByTestId('turn-cost').last().textContent();
    expect(costText).toMatch(/^\$0\.\d{6} · \d+ in \/ \d+ out tokens$/);
    expect(costText).not.toMatch(/^\$0\.000000/);
    expect(new URL(page.url()).searchParams.get('conversationId')).toBeTruthy();
    await docsScreenshot(page, 'playground');
  });

  it('stops a slow answer: the run is cancelled and its text stops', async () => {
    const words = Array.from({ length: 12 }, (_, i) => `w${i}`).join(' ');
    await page.getByLabel('Message').fill(`/delay 1500\n${words}`);
    await page.getByLabel('Message').press('Enter');
    await page.getByTestId('live-answer').filter({ hasText: 'w0' }).waitFor();
    await page.getByRole('button', { name: 'Stop' }).click();
    await page.getByRole('button', { name: 'Stop' }).waitFor({ state: 'detached' });
    const conversationId = new URL(page.url()).searchParams.get('conversationId')!;
    const api = t.api(key);
    const agentId = (await api.GET('/api/v1/agents')).data!.agents[0].id;
    const runs = (await api.GET('/api/v1/agents/{id}/runs', { params: { path: { id: agentId } } })).data!;
    const slow = runs.runs.find((r) => r.conversationId === conversationId && r.status !== 'completed');
    expect(slow?.status).toBe('cancelled');
    const stopped = (await page.locator('[data-author=assistant]').last().textContent()) ?? '';
    expect(stopped).toContain('w0');
    expect(stopped).not.toContain('w11');
    // Kept as the conversation's message, it says it was stopped: no cost line that reads as a finished answer.
    const kept = page.locator('[data-author=assistant]').filter({ hasText: 'w0' }).getByTestId('turn-cost');
    await kept.filter({ hasText: 'Stopped before the answer was finished' }).waitFor();
    expect(await kept.textContent()).not.toMatch(/^\$/);
  });

  it('resumes an answer after a reload without losing or repeating text', async () => {
    const words = Array.from({ length: 8 }, (_, i) => `r${i}`).join(' ');
    await page.getByLabel('Message').fill(`/delay 400\n${words}`);
    await page.getByLabel('Message').press('Enter');
    await page.getByTestId('live-answer').filter({ hasText: 'r0' }).waitFor();
    await page.reload();
    // After the reload the answer is rebuilt from the run's events, then kept as the conversation's message.
    await page.getByRole('button', { name: 'Stop' }).waitFor({ state: 'detached', timeout: 20_000 });
    const answers = page.locator('[data-author=assistant]').filter({ hasText: 'r0' });
    await answers.getByText(words, { exact: true }).waitFor();
    // One answer holding each word once: nothing lost, nothing repeated.
    expect(await answers.count()).toBe(1);
    const text = (await answers.textContent()) ?? '';
    expect(text.startsWith(words)).toBe(true);
    expect(text.split('r7').length - 1).toBe(1);
  });

  it('comes back to the open conversation through the Playground link, and a turn links to its run', async () => {
    const open = new URL(page.url()).searchParams;
    expect(open.get('conversationId')).toBeTruthy();
    await page.getByRole('navigation').getByRole('link', { name: /^Runs/ }).click();
    await page.getByRole('heading', { name: 'Runs' }).waitFor();
    await page
      .getByRole('navigation')
      .getByRole('link', { name: /^Playground/ })
      .click();
    await page.locator('[data-author=assistant]').filter({ hasText: 'r0' }).waitFor();
    const back = new URL(page.url()).searchParams;
    expect([back.get('agentId'), back.get('conversationId')]).toEqual([open.get('agentId'), open.get('conversationId')]);
    const turn = page.locator('[data-author=assistant]').filter({ hasText: 'r0' });
    const runId = (
      await t.api(key).GET('/api/v1/conversations/{id}/messages', { params: { path: { id: open.get('conversationId')! } } })
    ).data!.messages.find((m) => m.role === 'assistant' && m.content.includes('r0'))!.runId!;
    await turn.getByTestId('turn-run').click();
    await page.getByRole('heading', { name: 'Run', exact: true }).waitFor();
    expect(new URL(page.url()).pathname).toBe(`/runs/${runId}`);
    await page
      .getByRole('navigation')
      .getByRole('link', { name: /^Playground/ })
      .click();
    await page.getByLabel('Message').waitFor();
  });

  it('shows a new conversation’s first answer as stored even when the first read of its messages ends after the turn', async () => {
    // The new conversation's first read of its messages is made before the answer is stored and answered
    // after the turn has ended: the page must read them again, not wait on that stale read.
    const held = await holdResponses(page, CONVERSATION_MESSAGES, { first: true });
    try {
      await page.getByRole('button', { name: 'New conversation' }).click();
      await expect.poll(() => page.locator('[data-author]').count()).toBe(0);
      // Slow tokens: the first read is answered (and held) while the turn is still under way.
      await page.getByLabel('Message').fill('/delay 150\nfirst of a new conversation');
      await page.getByLabel('Message').press('Enter');
      const answer = page.locator('[data-author=assistant]').filter({ hasText: 'first of a new conversation' });
      await answer.getByTestId('turn-cost').waitFor();
      expect(held.count()).toBe(1);
      held.release();
      // The stored answer has its run's link, which the streamed one has not.
      await answer.getByTestId('turn-run').waitFor();
      expect(await answer.getByTestId('live-answer').count()).toBe(0);
    } finally {
      await held.stop();
    }
  });

  it('creates a cron task and shows its next five fire times in its time zone', async () => {
    await page.getByRole('link', { name: 'Tasks' }).click();
    await page.getByRole('button', { name: 'New task' }).click();
    const dialog = page.getByRole('dialog');
    await dialog.getByText('Cron', { exact: true }).click();
    await dialog.getByLabel('Name').fill('Morning digest');
    await dialog.getByLabel(/^Description/).fill('Summarise yesterday');
    await choose('Agent', 'Support', dialog);
    await dialog.getByLabel('Cron expression').fill('30 8 * * 1-5');
    await dialog.getByLabel('Time zone', { exact: true }).fill('Asia/Tok');
    await page.getByRole('option', { name: 'Asia/Tokyo', exact: true }).click();
    const preview = dialog.getByTestId('cron-preview');
    await preview.getByText('Next five fire times (Asia/Tokyo)').waitFor();
    const times = await preview.locator('li').allTextContents();
    expect(times).toHaveLength(5);
    for (const time of times) {
      expect(time).toMatch(/^(Mon|Tue|Wed|Thu|Fri), .*08:30 GMT\+9$/);
    }
    await docsScreenshot(page, 'tasks-cron');
    await dialog.getByRole('button', { name: 'Create task' }).click();
    await page.getByRole('heading', { name: 'Morning digest' }).waitFor();
    const tasks = (await t.api(key).GET('/api/v1/tasks')).data!.tasks;
    expect(tasks).toHaveLength(1);
    expect(tasks[0]).toMatchObject({ type: 'scheduled', schedule: '30 8 * * 1-5' });
    const task = await t.api(key).GET('/api/v1/tasks/{id}', { params: { path: { id: tasks[0].id } } });
    expect(task.data!.timezone).toBe('Asia/Tokyo');
    expect((await page.getByTestId('cron-preview').locator('li').allTextContents())[0]).toBe(times[0]);
  });

  it('approves a task awaiting approval from the inbox, with its count in the navigation', async () => {
    const api = t.api(key);
    const agentId = (await api.GET('/api/v1/agents')).data!.agents[0].id;
    const created = await api.POST('/api/v1/tasks', {
      body: { name: 'Refund order A-17', description: 'Refund 40 EUR to the customer', agentId, requiresApproval: true },
    });
    expect(created.response.status, JSON.stringify(created.error)).toBe(201);
    await page.getByRole('link', { name: /^Approvals/ }).click();
    await page.getByTestId('approvals-badge').filter({ hasText: '1' }).waitFor();
    const item = page.getByTestId('approval').filter({ hasText: 'Refund order A-17' });
    await item.waitFor();
    await docsScreenshot(page, 'approvals');
    await item.getByRole('button', { name: 'Approve' }).click();
    await page.getByText('Nothing is waiting for a decision.').waitFor();
    await page.getByTestId('approvals-badge').waitFor({ state: 'detached' });
    const task = (await api.GET('/api/v1/tasks/{id}', { params: { path: { id: created.data!.id } } })).data!;
    expect(task.status).not.toBe('awaiting_approval');
    expect(task.approval!.decision).toBe('approved');
  });

  it('creates a TBAC policy and tests a decision through authorize', async () => {
    await t.agent(key, { name: 'Planner' });
    await t.agent(key, { name: 'Researcher' });
    await page.getByRole('link', { name: 'Identity' }).click();
    await page.getByRole('heading', { name: 'TBAC policies' }).waitFor();
    await choose('Caller', 'Planner');
    await choose('Callee', 'Researcher');
    await page.getByRole('textbox', { name: 'Tool', exact: true }).first().fill('search');
    await choose('Effect', 'deny');
    await page.getByRole('textbox', { name: 'Description', exact: true }).fill('no searching');
    await page.getByRole('button', { name: 'Add policy' }).click();
    await page.getByTestId('policies').getByText('no searching').waitFor();
    const { policies } = (await t.api(key).GET('/api/v1/identity/tbac/policies')).data!;
    expect(policies).toHaveLength(1);
    expect(policies[0]).toMatchObject({ toolName: 'search', effect: 'deny' });

    await choose('Caller agent', 'Planner');
    await choose('Callee agent', 'Researcher');
    await page.getByRole('textbox', { name: 'Tool', exact: true }).last().fill('search');
    await page.getByRole('button', { name: 'Test decision' }).click();
    // The deny policy stops the token exchange itself: no token may carry the tool.
    const decision = page.getByTestId('decision');
    await decision.filter({ hasText: 'Denied' }).waitFor();
    expect(await decision.textContent()).toContain('exchange refused');

    // Made an allow policy, the call is allowed by it, and authorize names it.
    await page.getByRole('button', { name: 'Make allow' }).click();
    await page.getByTestId('policies').getByText('allow', { exact: true }).waitFor();
    await page.getByRole('button', { name: 'Test decision' }).click();
    await decision.filter({ hasText: 'Allowed' }).waitFor();
    expect(await decision.textContent()).toContain('policy_allow');
    expect(await decision.textContent()).toContain(policies[0].id);
    await docsScreenshot(page, 'identity');
  });

  it("shows the runs' cost on the usage page, and a run's timeline", async () => {
    await page.getByRole('link', { name: 'Usage' }).click();
    const usage = (await t.api(key).GET('/api/v1/usage/daily')).data!;
    const total = usage.rows.reduce((sum, row) => sum + row.costUsd, 0);
    expect(total).toBeGreaterThan(0);
    await page
      .getByTestId('usage-cost')
      .filter({ hasText: `$${total.toFixed(6)}` })
      .waitFor();
    await page.locator('.recharts-bar-rectangle').first().waitFor();
    await docsScreenshot(page, 'usage');

    await page.getByRole('link', { name: 'Runs' }).click();
    await page.getByRole('cell', { name: 'cancelled' }).waitFor();
    await page.getByRole('row').filter({ hasText: 'completed' }).first().getByRole('link').click();
    await page.getByTestId('run-timeline').getByText('Done').waitFor();
    await docsScreenshot(page, 'run');
  });

  it('approves a tool call with edited arguments from the inbox; the run goes on with them', async () => {
    const agent = await t.agent(key, {
      name: 'Careful',
      configuration: { approval: { rules: [{ tool: 'skill_discover', reason: 'look before searching' }] } },
    });
    const api = t.api(key);
    const executed = await execute(api, agent.id, { message: '/tool skill_discover {"query":"orders"}' });
    expect(executed.run?.status, JSON.stringify(executed.data ?? executed.error)).toBe('awaiting_approval');
    const runId = executed.run!.runId;
    await page.getByRole('link', { name: /^Approvals/ }).click();
    const item = page.getByTestId('approval').filter({ hasText: 'skill_discover' });
    await item.getByText('look before searching').waitFor();
    await item.getByRole('button', { name: 'Edit arguments…' }).click();
    const editor = page.getByRole('textbox', { name: 'Arguments' });
    expect(JSON.parse(await editor.inputValue())).toEqual({ query: 'orders' });
    await editor.fill('{"query": ');
    expect(await page.getByRole('button', { name: 'Approve with these' }).isDisabled()).toBe(true);
    await editor.fill('{"query":"refunds"}');
    await page.getByRole('button', { name: 'Approve with these' }).click();
    await page.getByText('Nothing is waiting for a decision.').waitFor();
    const run = await vi.waitFor(
      async () => {
        const { data } = await api.GET('/api/v1/runs/{runId}', { params: { path: { runId } } });
        expect(data!.status, JSON.stringify(data)).toBe('completed');
        return data!;
      },
      { timeout: 15_000, interval: 100 },
    );
    expect(run.toolCalls[0]).toMatchObject({ name: 'skill_discover', input: { query: 'refunds' } });
  });

  it('shows a tool call waiting for approval in the chat; approved there, the answer goes on', async () => {
    await page.getByRole('link', { name: 'Playground' }).click();
    await choose('Agent', 'Careful');
    await page.getByLabel('Message').fill('/tool skill_discover {"query":"invoices"}');
    await page.getByLabel('Message').press('Enter');
    const waiting = page.getByTestId('chat-approval');
    await waiting.getByText('look before searching', { exact: false }).waitFor();
    expect(await waiting.textContent()).toContain('"query": "invoices"');
    await page.getByTestId('approvals-badge').filter({ hasText: '1' }).waitFor();
    await waiting.getByRole('button', { name: 'Approve' }).click();
    const answer = page.locator('[data-author=assistant]').last();
    await answer.getByText('skill_discover returned', { exact: false }).waitFor();
    await page.getByTestId('chat-approval').waitFor({ state: 'detached' });
    const approvals = (await t.api(key).GET('/api/v1/approvals', { params: { query: { status: 'approved', kind: 'tool_call' } } })).data!;
    expect(approvals.approvals.map((a) => a.toolCall!.arguments)).toContainEqual({ query: 'invoices' });
  });

  it('searches agents by name on the server, past the first page', async () => {
    // More agents than a page holds: the oldest, Support, is on no first page but the search's.
    for (let i = 0; i < 20; i++) await t.agent(key, { name: `filler ${i}` });
    await page.getByRole('link', { name: 'Agents' }).click();
    await page.getByRole('row').filter({ hasText: 'filler 19' }).waitFor();
    expect(await page.getByRole('row').filter({ hasText: 'Support' }).count()).toBe(0);
    await page.getByLabel('Search').fill('SUPP');
    await page.getByRole('row').filter({ hasText: 'Support' }).waitFor();
    await page.getByRole('row').filter({ hasText: 'filler' }).first().waitFor({ state: 'detached' });
    await page.getByLabel('Search').fill('');
  });

  it('lists runs of every agent from GET /api/v1/runs, filtered by the server', async () => {
    await page.getByRole('link', { name: 'Runs' }).click();
    await choose('Kind', 'execute');
    const expected = (await t.api(key).GET('/api/v1/runs', { params: { query: { kind: 'execute', limit: 50 } } })).data!;
    expect(expected.total).toBeGreaterThan(0);
    for (const run of expected.runs) await page.getByRole('link', { name: run.runId.slice(-12) }).waitFor();
    await page
      .getByRole('row')
      .filter({ hasText: /\bchat\b/ })
      .first()
      .waitFor({ state: 'detached' });
    expect(new URL(page.url()).searchParams.get('kind')).toBe('execute');
  });

  it('works at phone width: the navigation folds behind its button, the chat and the inbox fit', async () => {
    await page.setViewportSize({ width: 390, height: 844 });
    try {
      await page.getByRole('button', { name: 'Toggle navigation' }).click();
      await page.getByRole('link', { name: /^Approvals/ }).click();
      await page.getByRole('heading', { name: 'Approvals' }).waitFor();
      await page.getByRole('button', { name: 'Toggle navigation' }).click();
      await page.getByRole('link', { name: 'Playground' }).click();
      await choose('Agent', 'Support');
      const input = page.getByLabel('Message');
      await input.waitFor();
      const box = (await input.boundingBox())!;
      expect(box.x).toBeGreaterThanOrEqual(0);
      expect(box.x + box.width).toBeLessThanOrEqual(390);
      // Nothing wider than the screen: no sideways scrolling.
      expect(await page.evaluate('document.documentElement.scrollWidth')).toBeLessThanOrEqual(390);
    } finally {
      await page.setViewportSize({ width: 1280, height: 800 });
    }
  });

  it('signs out and forgets the key; the page raised no error (CSP included)', async () => {
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByRole('button', { name: 'Sign in' }).waitFor();
    expect(await page.evaluate('sessionStorage.length')).toBe(0);
    // Refused requests (the 401 at sign-in, the 400s shown at their fields) are logged as failed loads;
    // anything else (a script error, a Content-Security-Policy violation) is a fault.
    expect(pageErrors.filter((e) => !e.startsWith('console: Failed to load resource'))).toEqual([]);
  });
});
