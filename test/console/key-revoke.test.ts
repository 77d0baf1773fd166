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
 * Usage -> API keys -> Revoke, as a person does it: a confirmation that says what will happen, a
 * warning when the key is the one the console is signed in with, the server's 409 for the tenant's
 * last all-permission key shown in the dialog, and a sign-out once the console's own key is revoked.
 */

const describeBrowser = hasChromium ? describe : describe.skip;
if (!hasChromium) console.warn('test/console/key-revoke.test.ts skipped: no /usr/bin/chromium (apt-get install chromium)');

const ALL = ['agents:read', 'agents:write', 'settings:read', 'settings:write', 'skills:read', 'skills:write'] as const;

let t: TestApp;
let browser: TestBrowser;
let page: Page;
let url: string;
let key: string;
const pageErrors: string[] = [];

const status = async (credential: string) => (await t.api(credential).GET('/api/v1/tenant')).response.status;
const dialog = () => page.getByRole('dialog', { name: 'Revoke API key' });
const revokeButtonOf = (name: string) => page.getByRole('row').filter({ hasText: name }).getByRole('button', { name: 'Revoke' });

async function openKeys() {
  await page
    .getByRole('navigation')
    .getByRole('link', { name: /^Usage/ })
    .click();
  await page.getByRole('tab', { name: 'API keys' }).click();
}

describeBrowser('revoking an API key in the console', () => {
  beforeAll(async () => {
    requireConsoleBuild();
    t = await startApp({ CONSOLE_DIR: CONSOLE_DIST });
    url = await t.listen();
    ({ key } = await t.tenant('Acme'));
    ({ browser, page } = await openRecordedPage(pageErrors));
    await signIn(page, url, key);
  });
  screenshotFailures('agentry-key-revoke-failed', () => page);
  afterAll(async () => {
    await browser?.close();
    await t?.close();
  });

  it('asks first and says what will happen; Keep keeps the key', async () => {
    const made = await t.api(key).POST('/api/v1/api-keys', { body: { name: 'reporting', permissions: ['agents:read'] } });
    expect(made.response.status).toBe(201);
    const reporting = made.data!.key;
    await openKeys();
    await revokeButtonOf('reporting').click();
    await dialog().getByText('It stops working at once').waitFor();
    expect(await dialog().getByText('This is the key you are signed in with').count()).toBe(0);
    await dialog().getByRole('button', { name: 'Keep' }).click();
    await dialog().waitFor({ state: 'detached' });
    expect(await status(reporting)).toBe(200);

    await revokeButtonOf('reporting').click();
    await dialog().getByRole('button', { name: 'Revoke' }).click();
    await page.getByRole('row').filter({ hasText: 'reporting' }).waitFor({ state: 'detached' });
    expect(await status(reporting)).toBe(401);
  });

  it('warns when it is the key the console is signed in with, and shows the 409 for the last all-permission key', async () => {
    await revokeButtonOf('initial admin key').click();
    await dialog().getByText('This is the key you are signed in with').waitFor();
    await dialog().getByRole('button', { name: 'Revoke' }).click();
    await dialog().getByText('Not revoked').waitFor();
    await dialog().getByText('last active key holding every permission').waitFor();
    await dialog().getByRole('button', { name: 'Keep' }).click();
    expect(await status(key)).toBe(200);
    await page.getByRole('tab', { name: 'API keys' }).waitFor();
  });

  it('once another all-permission key exists, revoking its own key signs the console out', async () => {
    const spare = await t.key(key, [...ALL]);
    await page.getByRole('tab', { name: 'Audit log' }).click();
    await page.getByRole('tab', { name: 'API keys' }).click();
    await revokeButtonOf('initial admin key').click();
    await dialog().getByText('This is the key you are signed in with').waitFor();
    await dialog().getByRole('button', { name: 'Revoke' }).click();
    await page.getByLabel('API key or access token').waitFor();
    expect(await status(key)).toBe(401);
    expect(await status(spare)).toBe(200);
  });

  it('raised no page error', () => {
    // The refused revocation's 409 is logged by the browser as a failed resource load.
    expect(pageErrors.filter((e) => !e.startsWith('console: Failed to load resource'))).toEqual([]);
  });
});
