import type { Page } from 'playwright-core';
import { beforeAll, expect, it } from 'vitest';
import { describeConsole } from './browser.js';

/*
 * The console's other forms that post (a task, an API key, a TBAC policy, a connection, a memory block,
 * a group of settings) report every error (issue 39): what breaks the API's limits is said at its field
 * and in a summary before anything is sent, and the server's own 400 is shown the same way, with the
 * fields' names, never a request path (`body.name`).
 */

/** Records the requests that would change something (anything but GET) while `act` runs. */
async function writesDuring(page: Page, act: () => Promise<void>): Promise<string[]> {
  const sent: string[] = [];
  const record = (request: { method(): string; url(): string }) => {
    if (request.method() !== 'GET' && request.url().includes('/api/')) sent.push(`${request.method()} ${new URL(request.url()).pathname}`);
  };
  page.on('request', record);
  try {
    await act();
  } finally {
    page.off('request', record);
  }
  return sent;
}

/**
 * Sends the next `method` request to `path` with `body` instead of what the form sent: a value the
 * form's own checks never let through, so that the real server's 400 stands for a rule of the server
 * the page does not know (a newer server's, or one the page cannot check).
 */
async function sendInstead(page: Page, method: string, path: string, body: unknown) {
  let sent = false;
  await page.route(
    (url) => url.pathname.endsWith(path),
    (route) => {
      if (sent || route.request().method() !== method) return route.fallback();
      sent = true;
      return route.continue({ postData: JSON.stringify(body) });
    },
  );
}

describeConsole('the forms’ errors', 'test/console/form-errors.test.ts', (session) => {
  let agentId: string;
  beforeAll(async () => {
    agentId = (await session.t.agent(session.key, { name: 'Support' })).id;
  });

  it('a task breaking two limits: both errors at their fields and in the summary, nothing sent, what was typed kept', async () => {
    const { page, url } = session;
    await page.goto(`${url}/tasks`);
    await page.getByRole('button', { name: 'New task' }).click();
    const dialog = page.getByRole('dialog', { name: 'New task' });
    const name = 'W'.repeat(201);
    const sent = await writesDuring(page, async () => {
      await dialog.getByLabel('Name').fill(name);
      await dialog.getByLabel(/^Description/).fill('Sum up the week');
      await dialog
        .getByLabel(/^Agent( \*)?$/)
        .first()
        .click();
      await page.getByRole('option', { name: 'Support' }).click();
      await dialog.getByLabel('Input (JSON)').fill('{"week": ');
      await dialog.getByRole('button', { name: 'Create task' }).click();
      await dialog.getByTestId('form-errors').getByText('Not created: 2 problems').waitFor();
    });
    expect(sent).toEqual([]);
    // The summary has the focus: the keyboard and a screen reader start from it.
    expect(await page.evaluate('document.activeElement?.dataset.testid')).toBe('form-errors');
    expect(await dialog.getByTestId('form-errors').getByRole('listitem').allTextContents()).toEqual([
      'Name: must have at most 200 characters (has 201)',
      'Input: is not valid JSON',
    ]);
    // Under their inputs.
    expect(await dialog.locator('.mantine-TextInput-error').allTextContents()).toEqual(['must have at most 200 characters (has 201)']);
    expect(await dialog.locator('.mantine-JsonInput-error').allTextContents()).toEqual(['is not valid JSON']);
    expect(await dialog.getByLabel('Name').inputValue()).toBe(name);
    expect(await dialog.getByLabel('Input (JSON)').inputValue()).toBe('{"week": ');
    await page.keyboard.press('Escape');
    await dialog.waitFor({ state: 'detached' });
  });

  it('an API key the server refuses: its error at the field and in the summary with the field’s name', async () => {
    const { page, url } = session;
    await page.goto(`${url}/usage`);
    await page.getByRole('tab', { name: 'API keys' }).click();
    await page.getByRole('textbox', { name: 'Name' }).fill('no permissions');
    // The default permission taken off: the server refuses an empty list (minItems 1).
    const permissions = page.getByLabel('Permissions').first();
    await permissions.focus();
    await page.keyboard.press('Backspace');
    await page.keyboard.press('Escape');
    const answered = page.waitForResponse((r) => r.url().endsWith('/api/v1/api-keys') && r.request().method() === 'POST');
    await page.getByRole('button', { name: 'Create key' }).click();
    expect((await answered).status()).toBe(400);
    const summary = page.getByTestId('form-errors');
    await summary.getByText('Not created: 1 problem').waitFor();
    const [line] = await summary.getByRole('listitem').allTextContents();
    expect(line).toMatch(/^Permissions: .*1/);
    expect(line).not.toMatch(/body/);
    const under = await page.locator('.mantine-MultiSelect-error').allTextContents();
    expect(under).toEqual([expect.stringMatching(/1/)]);
    expect(await page.getByRole('textbox', { name: 'Name' }).inputValue()).toBe('no permissions');
  });

  it('a policy whose tool breaks its pattern is refused before sending', async () => {
    const { page, url } = session;
    await page.goto(`${url}/identity`);
    await page.getByRole('heading', { name: 'TBAC policies' }).waitFor();
    const sent = await writesDuring(page, async () => {
      await page.getByLabel('Caller', { exact: true }).first().click();
      await page.getByRole('option', { name: '* (any agent)' }).click();
      await page.getByLabel('Callee', { exact: true }).first().click();
      await page.getByRole('option', { name: 'Support' }).click();
      await page.getByRole('textbox', { name: 'Tool', exact: true }).first().fill('send mail!');
      await page.getByRole('button', { name: 'Add policy' }).click();
      await page.getByTestId('form-errors').getByText('Not added: 1 problem').waitFor();
    });
    expect(sent).toEqual([]);
    expect(await page.getByTestId('form-errors').getByRole('listitem').allTextContents()).toEqual([
      'Tool: must match ^(\\*|[A-Za-z0-9][A-Za-z0-9_.:/-]{0,127})$',
    ]);
  });

  it('a connection: a required field left blank, then the server’s refusal, each at its field and in the summary', async () => {
    const { page, url } = session;
    await page.goto(`${url}/connectors`);
    const github = page.getByTestId('connector').filter({ has: page.getByRole('heading', { name: 'GitHub', exact: true }) });
    await github.getByRole('button', { name: 'Connect…' }).click();
    const dialog = page.getByRole('dialog', { name: 'Connect GitHub' });
    const sent = await writesDuring(page, async () => {
      await dialog.getByRole('button', { name: 'Connect', exact: true }).click();
      await dialog.getByTestId('form-errors').getByText('Not connected: 1 problem').waitFor();
    });
    expect(sent).toEqual([]);
    expect(await dialog.getByTestId('form-errors').getByRole('listitem').allTextContents()).toEqual(['Access token: required']);
    expect(await page.evaluate('document.activeElement?.dataset.testid')).toBe('form-errors');

    await dialog.getByLabel('Access token').fill('not-a-token');
    const answered = page.waitForResponse((r) => r.url().endsWith('/api/v1/connectors/github/connect'));
    await dialog.getByRole('button', { name: 'Connect', exact: true }).click();
    expect((await answered).status()).toBe(400);
    await dialog.getByTestId('form-errors').getByText('Not connected: 1 problem').waitFor();
    expect(await dialog.getByTestId('form-errors').getByRole('listitem').allTextContents()).toEqual([
      'Access token: does not look like a valid value for this field',
    ]);
    await dialog.locator('.mantine-PasswordInput-error').getByText('does not look like a valid value for this field').waitFor();
    expect(await dialog.getByLabel('Access token').inputValue()).toBe('not-a-token');
    await page.keyboard.press('Escape');
    await dialog.waitFor({ state: 'detached' });
  });

  it('a memory block the server refuses: its error at the field and in the summary, the text kept', async () => {
    const { page, url } = session;
    await page.goto(`${url}/memory?agentId=${agentId}`);
    await page.getByRole('button', { name: 'New block…' }).click();
    const editor = page.getByRole('dialog', { name: 'New memory block' });
    await editor.getByLabel('Name').fill('persona');
    await editor.getByLabel('Text').fill('You are terse.');
    await sendInstead(page, 'PUT', '/memory/persona', { value: 'x'.repeat(5001) });
    const answered = page.waitForResponse((r) => r.url().includes('/memory/persona') && r.request().method() === 'PUT');
    await editor.getByRole('button', { name: 'Save' }).click();
    expect((await answered).status()).toBe(400);
    await editor.getByTestId('form-errors').getByText('Not saved: 1 problem').waitFor();
    const [line] = await editor.getByTestId('form-errors').getByRole('listitem').allTextContents();
    expect(line).toMatch(/^Text: .*5000/);
    expect(await editor.locator('.mantine-Textarea-error').allTextContents()).toEqual([line.slice('Text: '.length)]);
    expect(await editor.getByLabel('Text').inputValue()).toBe('You are terse.');
    await page.keyboard.press('Escape');
    await editor.waitFor({ state: 'detached' });
  });

  it('a group of settings the server refuses: its error at the field and in the summary, what was typed kept', async () => {
    const { page, url } = session;
    await page.goto(`${url}/settings`);
    const retention = page.getByTestId('settings-retention');
    await retention.getByLabel('Runs (days)').fill('90');
    await sendInstead(page, 'PUT', '/api/v1/retention', { runsDays: 0 });
    const answered = page.waitForResponse((r) => r.url().endsWith('/api/v1/retention') && r.request().method() === 'PUT');
    await retention.getByRole('button', { name: 'Save retention' }).click();
    expect((await answered).status()).toBe(400);
    await retention.getByTestId('form-errors').getByText('Not saved: 1 problem').waitFor();
    const [line] = await retention.getByTestId('form-errors').getByRole('listitem').allTextContents();
    expect(line).toMatch(/^Runs \(days\): .*1/);
    expect(line).not.toMatch(/body/);
    expect(await retention.locator('.mantine-NumberInput-error').allTextContents()).toEqual([line.slice('Runs (days): '.length)]);
    expect(await retention.getByLabel('Runs (days)').inputValue()).toBe('90');
  });

  it('raised no page error but the refused requests', () => {
    // Each 400 (the API key, the connection, the memory block, the retention) is logged by the browser as a failed load.
    expect(session.pageErrors).toEqual(Array(4).fill(expect.stringContaining('status of 400')));
  });
});
