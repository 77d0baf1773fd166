import type { Page } from 'playwright-core';
import { beforeAll, expect, it } from 'vitest';
import { describeConsole } from './browser.js';

/*
 * The console's other forms that post (a task, an API key, a TBAC policy) report every error (issue 39):
 * what breaks the API's limits is said at its field and in a summary before anything is sent, and the
 * server's own 400 is shown the same way, with the fields' names, never a request path (`body.name`).
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

describeConsole('the forms’ errors', 'test/console/form-errors.test.ts', (session) => {
  beforeAll(async () => {
    await session.t.agent(session.key, { name: 'Support' });
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

  it('raised no page error but the refused request', () => {
    expect(session.pageErrors).toEqual([expect.stringContaining('status of 400')]);
  });
});
