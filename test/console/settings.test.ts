import { expect, it } from 'vitest';
import { describeConsole, docsScreenshot, signIn } from './browser.js';

/*
 * The tenant's settings page (issue 39): a form per group (limits and budget, retention, code
 * execution) saved through the API and read back; a value outside the server's bounds refused at its
 * field before saving with what was typed kept, and a key without settings:write
 * seeing every form read-only with the reason.
 */

describeConsole('the settings page', 'test/console/settings.test.ts', (session) => {
  const form = (testId: string) => session.page.getByTestId(testId);

  async function open() {
    const { page } = session;
    await page.getByRole('navigation').getByRole('link', { name: 'Settings' }).click();
    await page.getByRole('heading', { name: 'Settings' }).waitFor();
  }

  it('each group saves what changed, and the API has it', async () => {
    const { page, t, key } = session;
    await open();
    await form('settings-limits').getByLabel('Monthly budget (USD)').fill('25.5');
    await form('settings-limits').getByLabel('Runs at once').fill('3');
    await form('settings-limits').getByRole('button', { name: 'Save limits and budget' }).click();
    await form('settings-limits').getByRole('status').getByText('Saved.').waitFor();
    expect((await t.api(key).GET('/api/v1/limits')).data).toMatchObject({
      monthlyBudgetUsd: 25.5,
      maxConcurrentRuns: 3,
      rateLimitPerMinute: null,
    });
    await page.getByTestId('settings-usage').getByText('$25.50').waitFor();
    await docsScreenshot(page, 'settings');

    await form('settings-retention').getByLabel('Runs (days)').fill('90');
    await form('settings-retention').getByLabel('Compact run events after (days)').fill('');
    await form('settings-retention').getByRole('button', { name: 'Save retention' }).click();
    await form('settings-retention').getByRole('status').getByText('Saved.').waitFor();
    expect((await t.api(key).GET('/api/v1/retention')).data).toMatchObject({
      runsDays: 90,
      runEventsCompactAfterDays: null,
      filesDays: null,
    });

    // A blank limit goes back to the server's maximum.
    await form('settings-code').getByLabel('Output files').fill('5');
    await form('settings-code').getByRole('button', { name: 'Save code execution' }).click();
    await form('settings-code').getByRole('status').getByText('Saved.').waitFor();
    const code = (await t.api(key).GET('/api/v1/code/settings')).data!;
    expect(code.limits.maxOutputFiles).toBe(5);
    await form('settings-code').getByLabel('Output files').fill('');
    await form('settings-code').getByRole('button', { name: 'Save code execution' }).click();
    await form('settings-code').getByRole('status').getByText('Saved.').waitFor();
    expect((await t.api(key).GET('/api/v1/code/settings')).data!.limits.maxOutputFiles).toBe(code.maxima.maxOutputFiles);
    // A key's own rate limit: 0 is refused before saving; 30 is saved, and blank gives it back the tenant's.
    await t.key(key, ['agents:read']);
    await page.reload();
    const row = form('settings-key-limits').getByTestId('key-rate-limit').filter({ hasText: 'agents:read' });
    const input = row.getByRole('textbox', { name: 'Requests per minute for agents:read' });
    await input.fill('0');
    await row.getByText('at least 1', { exact: true }).waitFor();
    expect(await row.getByRole('button', { name: 'Save the limit of agents:read' }).isDisabled()).toBe(true);
    await input.fill('30');
    await row.getByRole('button', { name: 'Save the limit of agents:read' }).click();
    const ownLimit = async () =>
      (await t.api(key).GET('/api/v1/api-keys', { params: { query: {} } })).data!.apiKeys.find((k) => k.name === 'agents:read')
        ?.rateLimitPerMinute;
    await expect.poll(ownLimit).toBe(30);
    await expect.poll(() => row.getByRole('button', { name: 'Save the limit of agents:read' }).isDisabled()).toBe(true);
    await input.fill('');
    await row.getByRole('button', { name: 'Save the limit of agents:read' }).click();
    await expect.poll(ownLimit).toBeNull();
    // A reload shows what the server holds.
    await page.reload();
    expect(await form('settings-retention').getByLabel('Runs (days)').inputValue()).toBe('90');
  });

  it('a value out of bounds is refused at its field before saving, and what was typed stays', async () => {
    const { t, key } = session;
    await open();
    const retention = form('settings-retention');
    await retention.getByLabel('Audit events (days)').fill('7');
    await retention.getByText('at least 30', { exact: true }).waitFor();
    expect(await retention.getByRole('button', { name: 'Save retention' }).isDisabled()).toBe(true);
    await retention.getByLabel('Audit events (days)').fill('');

    const code = form('settings-code');
    const { maxima } = (await t.api(key).GET('/api/v1/code/settings')).data!;
    await code.getByLabel('Memory (MiB)').fill(String(maxima.memoryMb + 1));
    await code.getByText(`at most ${maxima.memoryMb}`, { exact: true }).waitFor();
    expect(await code.getByRole('button', { name: 'Save code execution' }).isDisabled()).toBe(true);
    // What was typed stays, to be corrected; the server still holds the value before.
    expect(await code.getByLabel('Memory (MiB)').inputValue()).toBe(String(maxima.memoryMb + 1));
    expect((await t.api(key).GET('/api/v1/code/settings')).data!.limits.memoryMb).toBe(maxima.memoryMb);
  });

  it('a key that may only read sees every form read-only, saying why', async () => {
    const { page, t, key, url } = session;
    const reader = await t.key(key, ['agents:read', 'settings:read']);
    await page.getByRole('button', { name: 'Sign out' }).click();
    await signIn(page, url, reader);
    await open();
    for (const [testId, button] of [
      ['settings-limits', 'Save limits and budget'],
      ['settings-retention', 'Save retention'],
      ['settings-code', 'Save code execution'],
    ]) {
      await form(testId).getByText('Changing these is off: this key lacks settings:write.').waitFor();
      expect(await form(testId).getByRole('button', { name: button }).isDisabled()).toBe(true);
      expect(await form(testId).getByRole('textbox').first().isEditable()).toBe(false);
    }
    expect(await form('settings-limits').getByLabel('Monthly budget (USD)').inputValue()).toBe('25.5');
    await form('settings-key-limits').getByText('The keys are listed with settings:write: this key lacks settings:write.').waitFor();
    // Without settings:read there is nothing to show but why.
    const stranger = await t.key(key, ['agents:read']);
    await page.getByRole('button', { name: 'Sign out' }).click();
    await signIn(page, url, stranger);
    await open();
    await page.getByText('The settings are hidden: this key lacks settings:read.').waitFor();
    await page.getByRole('button', { name: 'Sign out' }).click();
    await signIn(page, url, key);
  });

  it('raised no page error', () => {
    expect(session.pageErrors).toEqual([]);
  });
});
