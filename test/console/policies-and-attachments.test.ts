import fs from 'node:fs';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApp, type TestApp } from '../helpers/app.js';
import {
  CONSOLE_DIST,
  hasChromium,
  openRecordedPage,
  requireConsoleBuild,
  screenshotFailures,
  signIn,
  type TestBrowser,
} from './browser.js';

/*
 * Two console pages as a person uses them, against a real server (this process, SQLite) and Chromium:
 * a TBAC policy's conditions (made, refused by the server at their field, edited, deciding a call both
 * ways) and a chat message with attachments (chosen and dropped), checked against the API.
 */

const describeBrowser = hasChromium ? describe : describe.skip;
if (!hasChromium) console.warn('test/console/policies-and-attachments.test.ts skipped: no /usr/bin/chromium (apt-get install chromium)');

let t: TestApp;
let browser: TestBrowser;
let page: Page;
let url: string;
let key: string;
const pageErrors: string[] = [];

/** Picks `option` in the Mantine Select labelled `label`. */
async function choose(label: string, option: string) {
  await page
    .getByLabel(new RegExp(`^${label}( \\*)?$`))
    .first()
    .click();
  await page.getByRole('option', { name: option, exact: true }).click();
}

/** HH:MM in UTC, `hours` from now (wrapping around midnight, as a daily window may). */
// Hours from one instant taken when the test begins: read twice (filled, then expected) across a minute's
// turn, `now` would give two different times.
let testStart = Date.now();
const utcTime = (hours: number) => new Date(testStart + hours * 3_600_000).toISOString().slice(11, 16);

/** The error Mantine shows for the input labelled `label` (its aria-describedby names it). */
async function errorOf(label: string) {
  const input = page.getByLabel(label, { exact: true });
  // A locator, not a string predicate: the page's CSP refuses the eval Playwright polls a string with.
  await page.locator(`[aria-invalid="true"][id="${await input.getAttribute('id')}"]`).waitFor();
  const ids = (await input.getAttribute('aria-describedby')) ?? '';
  const texts = await Promise.all(
    ids
      .split(/\s+/)
      .filter(Boolean)
      .map((id) => page.locator(`[id="${id}"]`).textContent()),
  );
  return texts.join(' ');
}

describeBrowser('the console: policy conditions and chat attachments', () => {
  beforeAll(async () => {
    requireConsoleBuild();
    t = await startApp({ CONSOLE_DIR: CONSOLE_DIST });
    url = await t.listen();
    ({ key } = await t.tenant('Conditions'));
    ({ browser, page } = await openRecordedPage(pageErrors));
    await signIn(page, url, key);
  });
  screenshotFailures('agentry-console-failed', () => page);
  afterAll(async () => {
    await browser?.close();
    await t?.close();
  });

  it('makes a policy with conditions, shows the server’s errors at their fields, edits it, and a decision goes both ways on it', async () => {
    testStart = Date.now();
    await t.agent(key, { name: 'Planner' });
    await t.agent(key, { name: 'Researcher' });
    await page.getByRole('link', { name: 'Identity' }).click();
    await page.getByRole('heading', { name: 'TBAC policies' }).waitFor();
    // Enforce: a call no policy allows is refused, so the policy's conditions decide it.
    await page.getByText('enforce (deny)').click();
    await expect.poll(async () => (await t.api(key).GET('/api/v1/identity/tbac/mode')).data!.mode).toBe('enforce');

    await choose('Caller', 'Planner');
    await choose('Callee', 'Researcher');
    await page.getByRole('textbox', { name: 'Tool', exact: true }).first().fill('search');
    await page.getByRole('textbox', { name: 'Description', exact: true }).fill('office hours');
    // Expiring before it applies: the server refuses it, and says so under "Expires at".
    await page.getByLabel('Applies from (UTC)').fill('2030-01-02T00:00');
    await page.getByLabel('Expires at (UTC)').fill('2030-01-01T00:00');
    await page.getByRole('button', { name: 'Add policy' }).click();
    await page.getByText('Not added').waitFor();
    expect(await errorOf('Expires at (UTC)')).toContain('must be later than notBefore');
    const policiesNow = async () => (await t.api(key).GET('/api/v1/identity/tbac/policies')).data!.policies;
    expect(await policiesNow()).toEqual([]);

    // A daily window around now, until a later date.
    await page.getByLabel('Applies from (UTC)').fill('');
    await page.getByLabel('Expires at (UTC)').fill('2099-01-01T00:00');
    await page.getByLabel('Daily window start (UTC)').fill(utcTime(-1));
    await page.getByLabel('Daily window end (UTC)').fill(utcTime(1));
    await page.getByRole('button', { name: 'Add policy' }).click();
    const row = page.getByTestId('policies').getByRole('row').filter({ hasText: 'office hours' });
    await row.getByText('holds now').waitFor();
    let policies = await policiesNow();
    expect(policies).toHaveLength(1);
    const policyId = policies[0].id;
    expect(policies[0]).toMatchObject({
      toolName: 'search',
      effect: 'allow',
      description: 'office hours',
      conditions: { notAfter: '2099-01-01T00:00:00.000Z', timeWindow: { start: utcTime(-1), end: utcTime(1) } },
    });
    expect(policies[0].conditions!.notBefore).toBeUndefined();

    // Inside the window: the allow policy decides.
    await choose('Caller agent', 'Planner');
    await choose('Callee agent', 'Researcher');
    await page.getByRole('textbox', { name: 'Tool', exact: true }).last().fill('search');
    await page.getByRole('button', { name: 'Test decision' }).click();
    const decision = page.getByTestId('decision');
    await decision.filter({ hasText: 'Allowed' }).waitFor();
    expect(await decision.textContent()).toContain('policy_allow');
    expect(await decision.textContent()).toContain(policyId);
    expect(await page.getByTestId('decision-conditions').textContent()).toContain('its conditions hold, it decided');

    // Edited: the form holds the policy; a window ending where it starts is refused at its end.
    await row.getByRole('button', { name: 'Edit' }).click();
    await page.getByText(`Edit policy ${policyId}`).waitFor();
    expect(await page.getByLabel('Daily window start (UTC)').inputValue()).toBe(utcTime(-1));
    expect(await page.getByLabel('Expires at (UTC)').inputValue()).toBe('2099-01-01T00:00');
    expect(await page.getByRole('textbox', { name: 'Tool', exact: true }).first().isDisabled()).toBe(true);
    await page.getByLabel('Daily window start (UTC)').fill(utcTime(2));
    await page.getByLabel('Daily window end (UTC)').fill(utcTime(2));
    await page.getByRole('button', { name: 'Save policy' }).click();
    await page.getByText('Not saved').waitFor();
    expect(await errorOf('Daily window end (UTC)')).toContain('must differ from start');

    // A window that is not now: saved, and the same request is now refused.
    await page.getByLabel('Daily window end (UTC)').fill(utcTime(3));
    await page.getByRole('button', { name: 'Save policy' }).click();
    await row.getByText('not now').waitFor();
    policies = await policiesNow();
    expect(policies).toHaveLength(1);
    expect(policies[0]).toMatchObject({
      id: policyId,
      conditions: { notAfter: '2099-01-01T00:00:00.000Z', timeWindow: { start: utcTime(2), end: utcTime(3) } },
    });
    await page.getByRole('button', { name: 'Test decision' }).click();
    await decision.filter({ hasText: 'Denied' }).waitFor();
    // No policy applies now, so enforce refuses the token exchange.
    expect(await decision.textContent()).toContain('exchange refused');
    expect(await page.getByTestId('decision-conditions').textContent()).toContain('does not apply: outside its daily window');

    // Conditions cleared: the policy applies at any time again.
    await row.getByRole('button', { name: 'Edit' }).click();
    await page.getByRole('button', { name: 'Clear conditions' }).click();
    await page.getByRole('button', { name: 'Save policy' }).click();
    // The row showed 'not now' (the window above): it goes once the saved policy has no conditions.
    await row.getByText('not now').waitFor({ state: 'detached' });
    expect(await row.getByText('holds now').count()).toBe(0);
    expect((await policiesNow())[0].conditions).toBeNull();
    await page.getByRole('button', { name: 'Test decision' }).click();
    await decision.filter({ hasText: 'Allowed' }).waitFor();
  });

  it('sends a chat message with attachments chosen and dropped; the answer reads them, the conversation holds them', async () => {
    const agent = await t.agent(key, { name: 'Reader', model: 'builtin/echo' });
    await page.goto(`${url}/playground?agentId=${agent.id}`);
    await page.getByRole('heading', { name: 'Playground' }).waitFor();

    // Chosen with the button.
    const chooser = page.waitForEvent('filechooser');
    await page.getByRole('button', { name: 'Attach files' }).click();
    await (await chooser).setFiles({ name: 'notes.txt', mimeType: 'text/plain', buffer: Buffer.from('the launch code is 4417\n') });
    const pending = page.getByTestId('pending-attachments');
    await pending.getByText('notes.txt').waitFor();

    // Too large: the server's 413 is said with the file's name, nothing is attached.
    const tooBig = page.waitForEvent('filechooser');
    await page.getByRole('button', { name: 'Attach files' }).click();
    await (await tooBig).setFiles({ name: 'huge.bin', mimeType: 'application/octet-stream', buffer: Buffer.alloc(5 * 1024 * 1024 + 1) });
    await page.getByRole('alert').filter({ hasText: 'huge.bin' }).waitFor();
    expect(await page.getByRole('alert').filter({ hasText: 'huge.bin' }).textContent()).toContain('limited to 5242880 bytes');
    expect(await pending.getByText('huge.bin').count()).toBe(0);

    // Dropped on the chat (the DataTransfer is made in the page: its DOM is not this file's).
    const dropped = await page.evaluateHandle(
      `(() => { const d = new DataTransfer(); d.items.add(new File(['{"colour":"teal"}'], 'data.json', { type: 'application/json' })); return d; })()`,
    );
    const zone = page.getByTestId('chat-drop-zone');
    await zone.dispatchEvent('dragover', { dataTransfer: dropped });
    await zone.dispatchEvent('drop', { dataTransfer: dropped });
    await pending.getByText('data.json').waitFor();

    await page.getByLabel('Message').fill('what do these say?');
    await page.getByRole('button', { name: 'Send' }).click();
    // builtin/echo repeats what the model read: the message, then the text attachments inline.
    const answer = page.locator('[data-author=assistant]').last();
    await answer.getByText('4417', { exact: false }).waitFor();
    await answer.getByText('teal', { exact: false }).waitFor();
    const sent = page.locator('[data-author=user]').last();
    await sent.getByTestId('attachment').filter({ hasText: 'notes.txt' }).waitFor();
    await sent.getByTestId('attachment').filter({ hasText: 'data.json' }).waitFor();
    await pending.waitFor({ state: 'detached' });

    // The conversation holds the files: the user's message names both, and they are the tenant's.
    const conversationId = new URL(page.url()).searchParams.get('conversationId');
    expect(conversationId).toBeTruthy();
    const api = t.api(key);
    const messages = (await api.GET('/api/v1/conversations/{id}/messages', { params: { path: { id: conversationId! } } })).data!.messages;
    const user = messages.find((m) => m.role === 'user')!;
    expect(user.content).toBe('what do these say?');
    expect(user.attachments).toHaveLength(2);
    const files = await Promise.all(user.attachments!.map((id) => api.GET('/api/v1/files/{id}', { params: { path: { id } } })));
    expect(files.map((f) => f.response.status)).toEqual([200, 200]);
    expect(files.map((f) => f.data!.name).sort()).toEqual(['data.json', 'notes.txt']);
    const notes = files.find((f) => f.data!.name === 'notes.txt')!.data!.id;
    const content = await api.GET('/api/v1/files/{id}/content', { params: { path: { id: notes } }, parseAs: 'text' });
    expect(content.data).toBe('the launch code is 4417\n');

    // After a reload the stored message still shows its attachments.
    await page.reload();
    const stored = page.locator('[data-author=user]').last().getByTestId('attachment').filter({ hasText: 'notes.txt' });
    await stored.waitFor();
    // A click downloads its bytes (fetched with the credential, saved through the page's anchor).
    const download = page.waitForEvent('download');
    await stored.click();
    const saved = await download;
    expect(saved.suggestedFilename()).toBe('notes.txt');
    expect(fs.readFileSync((await saved.path())!, 'utf8')).toBe('the launch code is 4417\n');
    // The refused requests (the 400s shown at their fields, the 413) are logged as failed loads; anything
    // else (a script error, a Content-Security-Policy violation) is a fault.
    expect(pageErrors.filter((e) => !e.startsWith('console: Failed to load resource'))).toEqual([]);
  });

  it('a drop during an upload cannot pass 20 attachments; a removed one frees its slot', async () => {
    const agent = await t.agent(key, { name: 'Counter', model: 'builtin/echo' });
    await page.goto(`${url}/playground?agentId=${agent.id}`);
    await page.getByRole('heading', { name: 'Playground' }).waitFor();
    // Slow uploads, so the second drop lands while the first one's files are still on their way.
    const uploads = '**/api/v1/files';
    await page.route(uploads, async (route) => {
      await new Promise((resolve) => setTimeout(resolve, 400));
      await route.continue();
    });
    try {
      const drop = async (prefix: string, n: number) => {
        const files = await page.evaluateHandle(
          `(() => { const d = new DataTransfer(); for (let i = 0; i < ${n}; i++) d.items.add(new File(['x'], '${prefix}-' + i + '.txt', { type: 'text/plain' })); return d; })()`,
        );
        const zone = page.getByTestId('chat-drop-zone');
        await zone.dispatchEvent('dragover', { dataTransfer: files });
        await zone.dispatchEvent('drop', { dataTransfer: files });
      };
      await drop('first', 15);
      await drop('second', 10);
      const pending = page.getByTestId('pending-attachments');
      await page.getByRole('alert').filter({ hasText: 'at most 20 attachments: 5 not attached' }).waitFor();
      await pending.getByText(/uploading/).waitFor({ state: 'detached', timeout: 30_000 });
      // The pills' remove buttons are out of the tab order (Mantine), so they are found by their label.
      const removers = pending.locator('[aria-label^="Remove "]');
      expect(await removers.count()).toBe(20);

      // One removed: exactly one more fits, and the removed file is deleted from the server (nothing names it).
      const stored = (name: string) => t.db.kysely.selectFrom('files').select('id').where('name', '=', name).execute();
      expect(await stored('first-0.txt')).toHaveLength(1);
      await pending.getByLabel('Remove first-0.txt').click();
      await expect.poll(async () => (await stored('first-0.txt')).length, { timeout: 10_000 }).toBe(0);
      expect(await stored('first-1.txt')).toHaveLength(1);
      await page.getByRole('alert').getByRole('button').click();
      await drop('third', 2);
      await page.getByRole('alert').filter({ hasText: 'at most 20 attachments: 1 not attached' }).waitFor();
      await pending.getByText('third-0.txt', { exact: false }).waitFor();
      await pending.getByText(/uploading/).waitFor({ state: 'detached', timeout: 30_000 });
      expect(await removers.count()).toBe(20);
    } finally {
      await page.unroute(uploads);
    }
  });
});
