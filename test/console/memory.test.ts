import { expect, it } from 'vitest';
import { describeConsole, docsScreenshot, signIn } from './browser.js';

/*
 * An agent's memory blocks in the console (issue 39): reached from the agent's page, made, edited,
 * restored from their history and deleted after a dialog naming them, each checked against the API;
 * a text over the server's limit refused before it is sent, a refused save keeping what was typed,
 * one end user's blocks apart from the agent's, and a read-only key's greyed-out controls.
 */

describeConsole('memory blocks', 'test/console/memory.test.ts', (session) => {
  const block = (label: string) =>
    session.page.getByTestId('memory-block').filter({ has: session.page.getByRole('heading', { name: label }) });
  const putBlock = (agentId: string, label: string, value: string, userId?: string) =>
    session.t
      .api(session.key)
      .PUT('/api/v1/agents/{id}/memory/{label}', { params: { path: { id: agentId, label }, query: { userId } }, body: { value } });
  const read = async (agentId: string, label: string, userId?: string) =>
    session.t.api(session.key).GET('/api/v1/agents/{id}/memory/{label}', { params: { path: { id: agentId, label }, query: { userId } } });

  it('a block is made from the agent’s page, edited, restored from its history and deleted', async () => {
    const { page, t, key, url } = session;
    const agent = await t.agent(key, { name: 'Rememberer' });
    await page.goto(`${url}/agents/${agent.id}`);
    await page.getByRole('link', { name: 'Memory', exact: true }).first().waitFor();
    await page.getByRole('main').getByRole('link', { name: 'Memory', exact: true }).click();
    await page.getByRole('heading', { name: 'Memory' }).waitFor();
    await page.getByText('No blocks yet.').waitFor();

    await page.getByRole('button', { name: 'New block…' }).click();
    const editor = page.getByRole('dialog', { name: 'New memory block' });
    await editor.getByLabel('Name').fill('persona');
    await editor.getByLabel('Text').fill('You are terse.');
    await editor.getByRole('button', { name: 'Save' }).click();
    await editor.waitFor({ state: 'detached' });
    await block('persona').getByText('You are terse.').waitFor();
    expect((await read(agent.id, 'persona')).data).toMatchObject({ value: 'You are terse.', version: 1, userId: null });

    await block('persona').getByRole('button', { name: 'Edit…' }).click();
    const edit = page.getByRole('dialog', { name: 'Edit persona' });
    await edit.getByLabel('Text').fill('You are terse and kind.');
    await edit.getByRole('button', { name: 'Save' }).click();
    await edit.waitFor({ state: 'detached' });
    await block('persona').getByText('version 2').waitFor();
    expect((await read(agent.id, 'persona')).data?.value).toBe('You are terse and kind.');
    await docsScreenshot(page, 'memory');

    await block('persona').getByRole('button', { name: 'History…' }).click();
    const history = page.getByRole('dialog', { name: 'History of persona' });
    await expect.poll(() => history.getByTestId('memory-version').count()).toBe(2);
    // Who changed it, by the key's name (as the audit log names it), not its id.
    const me = (await t.api(key).GET('/api/v1/tenant')).data!;
    const { data: keys } = await t.api(key).GET('/api/v1/api-keys');
    const own = keys!.apiKeys.find((k) => k.id === me.credential.id)!;
    await expect.poll(() => history.getByTestId('memory-version').first().textContent()).toContain(`by api key ${own.name}`);
    expect(await history.textContent()).not.toContain(own.id);
    await docsScreenshot(page, 'memory-history');
    await history.getByRole('button', { name: 'Restore version 1' }).click();
    await history.waitFor({ state: 'detached' });
    await block('persona').getByText('version 3').waitFor();
    expect((await read(agent.id, 'persona')).data).toMatchObject({ value: 'You are terse.', version: 3 });

    await block('persona').getByRole('button', { name: 'Delete…' }).click();
    const confirm = page.getByRole('dialog', { name: 'Delete memory block' });
    await confirm.getByText(/Delete persona of the agent/).waitFor();
    await confirm.getByRole('button', { name: 'Delete persona' }).click();
    await block('persona').waitFor({ state: 'detached' });
    expect((await read(agent.id, 'persona')).response.status).toBe(404);
  });

  it('a text over the limit and a bad name are refused before saving; a refused save keeps what was typed', async () => {
    const { page, t, key, url } = session;
    const agent = await t.agent(key, { name: 'Limited' });
    await putBlock(agent.id, 'notes', 'first');
    await page.goto(`${url}/memory?agentId=${agent.id}`);
    await block('notes').waitFor();

    await page.getByRole('button', { name: 'New block…' }).click();
    const editor = page.getByRole('dialog', { name: 'New memory block' });
    await editor.getByLabel('Name').fill('has space');
    await editor.getByText('letters, digits, _ and - only, at most 64').waitFor();
    await editor.getByLabel('Name').fill('long');
    await editor.getByLabel('Text').fill('x'.repeat(5001));
    await editor.getByText('5001 characters, more than the 5000 a block holds: shorten it by 1').waitFor();
    expect(await editor.getByRole('button', { name: 'Save' }).isDisabled()).toBe(true);
    await editor.getByRole('button', { name: 'Cancel' }).click();

    // Someone else changes the block while it is open here: the save is refused, the text typed stays.
    await block('notes').getByRole('button', { name: 'Edit…' }).click();
    const edit = page.getByRole('dialog', { name: 'Edit notes' });
    await putBlock(agent.id, 'notes', 'theirs');
    await edit.getByLabel('Text').fill('mine, carefully written');
    await edit.getByRole('button', { name: 'Save' }).click();
    await edit.getByText(/is at version 2, not 1/).waitFor();
    expect(await edit.getByLabel('Text').inputValue()).toBe('mine, carefully written');
    expect((await read(agent.id, 'notes')).data?.value).toBe('theirs');
    await edit.getByRole('button', { name: 'Cancel' }).click();
  });

  it('one end user’s blocks are shown apart from the agent’s', async () => {
    const { page, t, key, url } = session;
    const agent = await t.agent(key, { name: 'Personal' });
    await putBlock(agent.id, 'house_rules', 'No spoilers.');
    await putBlock(agent.id, 'preferences', 'Likes tea.', 'user-42');
    await page.goto(`${url}/memory?agentId=${agent.id}`);
    await block('house_rules').waitFor();
    expect(await block('preferences').count()).toBe(0);
    // The agent's conversations name their users: the id is offered as it is typed.
    await t.api(key).POST('/api/v1/conversations', { body: { agentId: agent.id, userId: 'user-42' } });
    await page.getByText('One user').click();
    await page.getByRole('combobox', { name: 'End user id' }).fill('user');
    await page.getByRole('option', { name: 'user-42' }).click();
    expect(await page.getByRole('combobox', { name: 'End user id' }).inputValue()).toBe('user-42');
    await page.getByRole('button', { name: 'Show' }).click();
    await block('preferences').getByText('Likes tea.').waitFor();
    expect(await block('house_rules').count()).toBe(0);
    await page.getByTestId('memory-count').getByText('user user-42: 1 of 16 blocks').waitFor();
    expect(page.url()).toContain('userId=user-42');
  });

  it('a scope holding its 16 blocks greys out a new one, saying why', async () => {
    const { page, t, key, url } = session;
    const agent = await t.agent(key, { name: 'Full' });
    for (let i = 0; i < 16; i++) await putBlock(agent.id, `block_${i}`, `text ${i}`);
    await page.goto(`${url}/memory?agentId=${agent.id}`);
    await page.getByTestId('memory-count').getByText('16 of 16 blocks').waitFor();
    const add = page.getByRole('button', { name: 'New block…' });
    expect(await add.isDisabled()).toBe(true);
    expect(await add.getAttribute('title')).toBe('the agent (every user) already has 16 blocks, the most a scope holds');
  });

  it('a key that may only read sees the blocks and their history; what would change them is greyed out', async () => {
    const { page, t, key, url } = session;
    const agent = await t.agent(key, { name: 'Watched' });
    await putBlock(agent.id, 'facts', 'one');
    await putBlock(agent.id, 'facts', 'two');
    const reader = await t.key(key, ['agents:read']);
    await page.getByRole('button', { name: 'Sign out' }).click();
    await signIn(page, url, reader);
    await page.goto(`${url}/memory?agentId=${agent.id}`);
    await block('facts').getByText('two').waitFor();
    for (const button of [
      page.getByRole('button', { name: 'New block…' }),
      block('facts').getByRole('button', { name: 'Edit…' }),
      block('facts').getByRole('button', { name: 'Delete…' }),
    ]) {
      expect(await button.isDisabled()).toBe(true);
      expect(await button.getAttribute('title')).toBe('this key lacks agents:write');
    }
    await block('facts').getByRole('button', { name: 'History…' }).click();
    const history = page.getByRole('dialog', { name: 'History of facts' });
    expect(await history.getByRole('button', { name: 'Restore version 1' }).isDisabled()).toBe(true);
    await page.keyboard.press('Escape');
    await page.getByRole('button', { name: 'Sign out' }).click();
    await signIn(page, url, key);
  });

  it('raised no page error', () => {
    // The refused save (409) is logged by the browser as a failed resource load.
    expect(session.pageErrors.filter((e) => !e.startsWith('console: Failed to load resource'))).toEqual([]);
  });
});
