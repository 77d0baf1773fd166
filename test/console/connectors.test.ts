import { expect, it } from 'vitest';
import { describeConsole, docsScreenshot, signIn } from './browser.js';

/*
 * The connectors page (issue 39): the catalog with the tenant's connections, a connector connected
 * with its configuration (a secret never shown again), changed, and disconnected after a dialog
 * naming it, each checked against the API; a required field left blank said before sending, the
 * server's refusal of a value shown at its field with what was typed kept; a read-only key greyed out.
 */

const TOKEN = 'ghp_abcdefghijklmnopqrstuvwxyz012345';

describeConsole('the connectors page', 'test/console/connectors.test.ts', (session) => {
  const card = (name: string) =>
    session.page.getByTestId('connector').filter({ has: session.page.getByRole('heading', { name, exact: true }) });
  const github = async () =>
    (await session.t.api(session.key).GET('/api/v1/connectors/{id}', { params: { path: { id: 'github' } } })).data!;

  async function open() {
    const { page } = session;
    await page.getByRole('navigation').getByRole('link', { name: 'Connectors' }).click();
    await page.getByRole('heading', { name: 'Connectors' }).waitFor();
    await card('GitHub').waitFor();
  }

  it('a connector is connected, its connection changed, then disconnected after naming it', async () => {
    const { page } = session;
    await open();
    await card('GitHub').getByText('not connected').waitFor();
    await card('GitHub').getByRole('button', { name: 'Connect…' }).click();
    const dialog = page.getByRole('dialog', { name: 'Connect GitHub' });

    // Required left blank: said before anything is sent.
    await dialog.getByRole('button', { name: 'Connect', exact: true }).click();
    await dialog.getByText('required', { exact: true }).waitFor();
    expect((await github()).connected).toBe(false);

    // The server refuses the token's shape: at its field, the typed values kept.
    await dialog.getByLabel('Access token').fill('not-a-token');
    await dialog.getByLabel('Organization').fill('acme');
    await dialog.getByRole('button', { name: 'Connect', exact: true }).click();
    // At its field (exactly its text: the form's summary says it too, after the field's name).
    await dialog.getByText('does not look like a valid value for this field', { exact: true }).waitFor();
    expect(await dialog.getByLabel('Organization').inputValue()).toBe('acme');
    expect(await dialog.getByLabel('Access token').inputValue()).toBe('not-a-token');
    expect((await github()).connected).toBe(false);

    await dialog.getByLabel('Access token').fill(TOKEN);
    await dialog.getByRole('button', { name: 'Connect', exact: true }).click();
    await dialog.waitFor({ state: 'detached' });
    await card('GitHub').getByText('connected', { exact: true }).waitFor();
    await card('GitHub').getByText('acme').waitFor();
    expect(await card('GitHub').textContent()).not.toContain(TOKEN);
    expect((await github()).connection?.configuration).toMatchObject({ organization: 'acme', accessToken: '********' });
    await page
      .getByTestId('connectors-count')
      .getByText(/^1 of \d+ connected$/)
      .waitFor();
    await docsScreenshot(page, 'connectors');

    // An edit sends what changed: the secret left blank stays as it was.
    await card('GitHub').getByRole('button', { name: 'Edit…' }).click();
    const edit = page.getByRole('dialog', { name: 'Edit GitHub' });
    expect(await edit.getByLabel('Access token').inputValue()).toBe('');
    await edit.getByLabel('Organization').fill('acme-labs');
    await edit.getByRole('button', { name: 'Save' }).click();
    await edit.waitFor({ state: 'detached' });
    await card('GitHub').getByText('acme-labs').waitFor();
    expect((await github()).connection?.configuration).toMatchObject({ organization: 'acme-labs', accessToken: '********' });

    await card('GitHub').getByRole('button', { name: 'Disconnect…' }).click();
    const confirm = page.getByRole('dialog', { name: 'Disconnect' });
    await confirm.getByText(/Disconnect GitHub\? Its configuration, credentials included, is deleted/).waitFor();
    await confirm.getByRole('button', { name: 'Cancel' }).click();
    expect((await github()).connected).toBe(true);
    await card('GitHub').getByRole('button', { name: 'Disconnect…' }).click();
    await confirm.getByRole('button', { name: 'Disconnect GitHub' }).click();
    await confirm.waitFor({ state: 'detached' });
    await card('GitHub').getByText('not connected').waitFor();
    expect((await github()).connected).toBe(false);
  });

  it('a key that may only read sees the connections; connecting and disconnecting are greyed out', async () => {
    const { page, t, key, url } = session;
    await t
      .api(key)
      .POST('/api/v1/connectors/{id}/connect', { params: { path: { id: 'github' } }, body: { configuration: { accessToken: TOKEN } } });
    const reader = await t.key(key, ['agents:read', 'settings:read']);
    await page.getByRole('button', { name: 'Sign out' }).click();
    await signIn(page, url, reader);
    await open();
    for (const button of [
      card('GitHub').getByRole('button', { name: 'Edit…' }),
      card('GitHub').getByRole('button', { name: 'Disconnect…' }),
    ]) {
      expect(await button.isDisabled()).toBe(true);
      expect(await button.getAttribute('title')).toBe('this key lacks settings:write');
    }
    const connects = await page.getByRole('button', { name: 'Connect…' }).all();
    expect(connects.length).toBeGreaterThan(0);
    for (const button of connects) expect(await button.isDisabled()).toBe(true);
    await page.getByRole('button', { name: 'Sign out' }).click();
    await signIn(page, url, key);
  });

  it('raised no page error', () => {
    // The refused token (400) is logged by the browser as a failed resource load.
    expect(session.pageErrors.filter((e) => !e.startsWith('console: Failed to load resource'))).toEqual([]);
  });
});
