import type { Locator, Page } from 'playwright-core';
import { expect, it } from 'vitest';
import { pdfSample } from '../fixtures/knowledge/samples.js';
import { describeConsole, docsScreenshot, signIn } from './browser.js';

/*
 * The console's Knowledge section (issue 38), as a person uses it against a real server: a base
 * created, files added through the file input and by dropping them, their ingestion followed without a
 * reload, a search tried, a passage opened from its link, a document deleted, and an agent's answer in
 * the playground citing the passage it drew on. Tests go on from the state the ones before left.
 */

const MARKDOWN = [
  '# Leave policy',
  'Parental leave lasts sixteen weeks at full pay, taken in one or two parts.',
  '## Holidays',
  'Every employee has twenty-eight days of holiday a year.',
].join('\n\n');
const HTML =
  '<!doctype html><html><head><title>Expenses</title></head><body><main><h1>Expenses</h1>' +
  '<p>Receipts are filed within thirty days of the purchase, through the finance portal.</p></main></body></html>';

/** Drops a file on `target` as a browser does with a file dragged from the desktop. */
async function dropFile(page: Page, target: Locator, name: string, data: Buffer, type: string) {
  const dataTransfer = await page.evaluateHandle(
    ([fileName, base64, mime]) => {
      // The page's DOM globals (this file is typed for Node).
      const g = globalThis as unknown as {
        atob(data: string): string;
        DataTransfer: new () => { items: { add(file: unknown): void } };
        File: new (parts: unknown[], name: string, options: { type: string }) => unknown;
      };
      const transfer = new g.DataTransfer();
      transfer.items.add(new g.File([Uint8Array.from(g.atob(base64), (c) => c.charCodeAt(0))], fileName, { type: mime }));
      return transfer;
    },
    [name, data.toString('base64'), type] as const,
  );
  await target.dispatchEvent('dragenter', { dataTransfer });
  await target.dispatchEvent('dragover', { dataTransfer });
  await target.dispatchEvent('drop', { dataTransfer });
}

describeConsole('the knowledge page', 'test/console/knowledge.test.ts', (session) => {
  let baseId: string;
  const row = (page: Page, text: string) => page.getByTestId('document').filter({ hasText: text });

  /** Waits until the document row shows `status`; the page asks the server again by itself (no reload). */
  const statusOf = async (page: Page, text: string, status: string) => {
    await row(page, text)
      .getByTestId('document-status')
      .filter({ hasText: new RegExp(`^${status}$`) })
      .waitFor({ timeout: 30_000 });
  };

  it('a base is created from the navigation; a taken name is said under the field', async () => {
    const { page, t, key } = session;
    await page.getByRole('navigation').getByRole('link', { name: 'Knowledge' }).click();
    await page.getByRole('heading', { name: 'Knowledge', exact: true }).waitFor();
    await page.getByText('No knowledge bases yet').waitFor();
    // Another base with the name to be refused.
    expect((await t.api(key).POST('/api/v1/knowledge-bases', { body: { name: 'Taken' } })).response.status).toBe(201);
    await page.reload();
    await page.getByRole('button', { name: 'New knowledge base' }).click();
    const dialog = page.getByRole('dialog', { name: 'New knowledge base' });
    await dialog.getByLabel('Name').fill('Taken');
    await dialog.getByRole('button', { name: 'Create' }).click();
    await dialog.getByText('a knowledge base named Taken exists already').waitFor();
    expect(await dialog.getByLabel('Name').getAttribute('aria-invalid')).toBe('true');
    await dialog.getByLabel('Name').fill('Handbook');
    // The server's 400 names the field: shown under the embedding model.
    await dialog.getByLabel('Embedding model').fill('nowhere/model');
    await dialog.getByRole('button', { name: 'Create' }).click();
    const refused = await t.api(key).POST('/api/v1/knowledge-bases', { body: { name: 'x', embeddingModel: 'nowhere/model' } });
    const { errors } = refused.error as { errors: { path: string; message: string }[] };
    expect(errors[0].path).toBe('body.embeddingModel');
    await dialog.getByText(errors[0].message, { exact: true }).waitFor();
    expect(await dialog.getByLabel('Embedding model').getAttribute('aria-invalid')).toBe('true');
    expect(await dialog.getByLabel('Name').getAttribute('aria-invalid')).not.toBe('true');
    await dialog.getByLabel('Embedding model').fill('builtin/hash-embedding');
    await dialog.getByLabel('Description').fill('How we work');
    await dialog.getByRole('button', { name: 'Create' }).click();
    await page.getByRole('heading', { name: 'Handbook' }).waitFor();
    baseId = new URL(page.url()).pathname.split('/').pop()!;
    const base = await t.api(key).GET('/api/v1/knowledge-bases/{id}', { params: { path: { id: baseId } } });
    expect(base.data).toMatchObject({ name: 'Handbook', description: 'How we work', embeddingModel: 'builtin/hash-embedding' });
    await page.getByText('No documents yet').waitFor();
  });

  it('a Markdown file chosen and an HTML file dropped are uploaded and become ready without a reload', async () => {
    const { page } = session;
    await page
      .getByTestId('document-file-input')
      .setInputFiles({ name: 'leave.md', mimeType: 'text/markdown', buffer: Buffer.from(MARKDOWN) });
    await dropFile(page, page.getByTestId('document-drop-zone'), 'expenses.html', Buffer.from(HTML), 'text/html');
    await statusOf(page, 'Leave policy', 'ready');
    await statusOf(page, 'Expenses', 'ready');
    expect(await row(page, 'Leave policy').textContent()).toContain('leave.md');
    await page.getByTestId('base-figures').filter({ hasText: '2 documents' }).waitFor();
  });

  it('a PDF without a text layer fails, and its row says why', async () => {
    const { page } = session;
    await page
      .getByTestId('document-file-input')
      .setInputFiles({ name: 'scan.pdf', mimeType: 'application/pdf', buffer: Buffer.from(pdfSample([null])) });
    await statusOf(page, 'scan.pdf', 'failed');
    expect(await row(page, 'scan.pdf').getByTestId('failure-reason').textContent()).toContain('no text layer');
  });

  it('a file over 5 MiB is refused in words, before it is sent', async () => {
    const { page } = session;
    await page
      .getByTestId('document-file-input')
      .setInputFiles({ name: 'huge.txt', mimeType: 'text/plain', buffer: Buffer.alloc(5 * 1024 * 1024 + 1, 'a') });
    await page.getByTestId('upload-problems').getByText('huge.txt is too large: a document may be at most 5 MiB').waitFor();
    expect(await row(page, 'huge.txt').count()).toBe(0);
  });

  it('a search ranks the expected passage first with the query’s words marked; its link opens the passage', async () => {
    const { page, url } = session;
    await page.getByLabel('Query').fill('how long is parental leave');
    await page.getByRole('button', { name: 'Search', exact: true }).click();
    const first = page.getByTestId('search-passage').first();
    await first.waitFor();
    expect(await first.getByRole('link').textContent()).toBe('Leave policy');
    expect(await first.textContent()).toContain('position 0');
    // How the vectors were compared, in words (a lexical search says nothing of vectors).
    expect(await page.getByTestId('search-results').textContent()).toMatch(/passages, hybrid search \(vectors compared by int8 sketches/);
    expect(await first.getByTestId('passage-snippet').locator('mark').allTextContents()).toEqual(
      expect.arrayContaining([expect.stringMatching(/^parental$/i), expect.stringMatching(/^leave$/i)]),
    );
    await first.getByRole('link').click();
    await page.getByTestId('passage-text').filter({ hasText: 'Parental leave lasts sixteen weeks at full pay' }).waitFor();
    const link = new URL(page.url());
    expect(link.pathname).toBe(`/knowledge/${baseId}`);
    expect(link.searchParams.get('position')).toBe('0');
    // The link works on its own: a reload (the server answers the console for /knowledge/...) shows it again.
    await page.goto(link.toString());
    await page.getByTestId('passage-text').filter({ hasText: 'Parental leave lasts sixteen weeks' }).waitFor();
    // A link to a position the document does not have says the passage is not there.
    await page.goto(`${url}/knowledge/${baseId}?document=${link.searchParams.get('document')}&position=99`);
    await page.getByTestId('passage-gone').waitFor();
    await page.getByRole('button', { name: 'Close the passage' }).click();
    await page.getByTestId('passage').waitFor({ state: 'detached' });
  });

  it('a deleted document leaves the list and search, after a confirmation naming it', async () => {
    const { page } = session;
    const search = async (query: string) => {
      await page.getByLabel('Query').fill(query);
      await page
        .locator('label')
        .filter({ hasText: /^lexical$/ })
        .click();
      expect(await page.getByRole('radio', { name: 'lexical' }).isChecked()).toBe(true);
      await page.getByRole('button', { name: 'Search', exact: true }).click();
    };
    await search('receipts purchase');
    await page.getByTestId('search-passage').first().getByRole('link', { name: 'Expenses' }).waitFor();
    await row(page, 'Expenses').getByRole('button', { name: 'Delete…' }).click();
    const dialog = page.getByRole('dialog', { name: 'Delete document' });
    await dialog.getByText('Delete Expenses?').waitFor();
    await dialog.getByRole('button', { name: 'Delete', exact: true }).click();
    await row(page, 'Expenses').waitFor({ state: 'detached' });
    await search('receipts');
    await page.getByTestId('search-empty').getByText('No passage matches “receipts”').waitFor();
    expect(await page.getByTestId('search-passage').count()).toBe(0);
  });

  it('a document replaced by a new file is version 2, its new text searchable once ready', async () => {
    const { page } = session;
    const revised = `${MARKDOWN}\n\n## Sick leave\n\nSick days need a doctor’s note after the third day.`;
    await row(page, 'Leave policy')
      .getByLabel('New version of Leave policy')
      .setInputFiles({
        name: 'leave-2027.md',
        mimeType: 'text/markdown',
        buffer: Buffer.from(revised),
      });
    await row(page, 'leave-2027.md').getByRole('cell', { name: '2', exact: true }).waitFor({ timeout: 30_000 });
    await statusOf(page, 'leave-2027.md', 'ready');
    await page.getByLabel('Query').fill('doctor note sick days');
    await page.getByRole('button', { name: 'Search', exact: true }).click();
    await page.getByTestId('search-passage').first().getByTestId('passage-snippet').filter({ hasText: 'doctor’s note' }).waitFor();
    await docsScreenshot(page, 'knowledge', { fullPage: true });
  });

  it('a text written in the page is added as a Markdown document', async () => {
    const { page } = session;
    await page.getByRole('button', { name: 'Add text…' }).click();
    const dialog = page.getByRole('dialog', { name: 'Add a text' });
    await dialog.getByLabel('Title').fill('Office hours');
    await dialog.getByLabel('Text (Markdown)').fill('# Office\n\nThe office opens at **eight** and closes at six.');
    await dialog.getByRole('button', { name: 'Add', exact: true }).click();
    await dialog.waitFor({ state: 'detached' });
    await statusOf(page, 'Office hours', 'ready');
    expect(await row(page, 'Office hours').textContent()).toContain('text/markdown');
  });

  it('an agent searching the base answers in the playground; the citation under the answer opens the passage', async () => {
    const { page, t, key, url } = session;
    const agent = await t.agent(key, { name: 'Librarian', tools: [{ type: 'builtin', name: 'knowledge', knowledgeBases: [baseId] }] });
    await page.goto(`${url}/playground?agentId=${agent.id}`);
    await page.getByLabel('Message').fill(`/tool knowledge_search ${JSON.stringify({ query: 'parental leave weeks', k: 1 })}`);
    await page.getByLabel('Message').press('Enter');
    const citation = page.locator('[data-author=assistant]').last().getByTestId('citation');
    await citation.waitFor({ timeout: 30_000 });
    expect(await citation.count()).toBe(1);
    expect(await citation.textContent()).toContain('position 0');
    expect(await citation.textContent()).toContain('Parental leave lasts sixteen weeks');
    await citation.getByRole('link', { name: 'Leave policy' }).click();
    await page.getByRole('heading', { name: 'Handbook' }).waitFor();
    await page.getByTestId('passage-text').filter({ hasText: 'Parental leave lasts sixteen weeks at full pay' }).waitFor();
  });

  it('a base is edited and deleted from the list, the confirmation naming it and its documents', async () => {
    const { page, t, key } = session;
    await page.getByRole('navigation').getByRole('link', { name: 'Knowledge' }).click();
    const handbook = page.getByTestId('knowledge-base').filter({ hasText: 'Handbook' });
    // The counts by status load after the document count: wait for them rather than read them once.
    await handbook
      .getByTestId('base-status')
      .filter({ hasText: '3 documents' })
      .filter({ hasText: /2 ready.*1 failed/ })
      .waitFor();
    await handbook.getByRole('button', { name: 'Actions for Handbook' }).click();
    await page.getByRole('menuitem', { name: 'Edit…' }).click();
    const edit = page.getByRole('dialog', { name: 'Edit Handbook' });
    await edit.getByLabel('Description').fill('How we work, 2027');
    await edit.getByRole('button', { name: 'Save' }).click();
    await handbook.getByText('How we work, 2027').waitFor();
    // Only the description changed, so only it was sent: the documents were not queued again.
    const audit = await t
      .api(key)
      .GET('/api/v1/audit-events', { params: { query: { resourceId: baseId, action: 'knowledge_base.updated' } } });
    expect(audit.data!.events.map((e) => e.detail)).toEqual([{ fields: ['description'], reindex: false }]);

    await handbook.getByRole('button', { name: 'Actions for Handbook' }).click();
    await page.getByRole('menuitem', { name: 'Delete…' }).click();
    const confirm = page.getByRole('dialog', { name: 'Delete knowledge base' });
    await confirm.getByText('Delete Handbook and its 3 documents?').waitFor();
    await confirm.getByRole('button', { name: 'Delete Handbook' }).click();
    await handbook.waitFor({ state: 'detached' });
    const gone = await t.api(key).GET('/api/v1/knowledge-bases/{id}', { params: { path: { id: baseId } } });
    expect(gone.response.status).toBe(404);
  });

  it('a key that may only read sees the base and searches it; what would change it is greyed out', async () => {
    const { page, t, key, url } = session;
    const base = (await t.api(key).POST('/api/v1/knowledge-bases', { body: { name: 'Read only' } })).data!;
    await t.api(key).POST('/api/v1/knowledge-bases/{id}/documents', {
      params: { path: { id: base.id } },
      body: { content: 'The canteen serves lunch from noon.', title: 'Canteen' },
    });
    const reader = await t.key(key, ['agents:read']);
    await page.getByRole('button', { name: 'Sign out' }).click();
    await signIn(page, url, reader);
    await page.goto(`${url}/knowledge/${base.id}`);
    await page.getByRole('heading', { name: 'Read only' }).waitFor();
    await statusOf(page, 'Canteen', 'ready');
    for (const name of ['Choose files', 'Add text…', 'Edit…', 'Delete…', 'Replace…']) {
      const buttons = await page.getByRole('button', { name, exact: true }).all();
      expect(buttons.length, name).toBeGreaterThan(0);
      for (const button of buttons) expect(await button.isDisabled(), name).toBe(true);
    }
    await page.getByText('Adding is off: this key lacks agents:write').waitFor();
    await page.getByLabel('Query').fill('lunch');
    await page.getByRole('button', { name: 'Search', exact: true }).click();
    await page.getByTestId('search-passage').first().getByRole('link', { name: 'Canteen' }).waitFor();
  });

  it('raised no page error', () => {
    // The refused name (409) and the missing passage (404) are logged by the browser as failed loads.
    expect(session.pageErrors.filter((e) => !e.startsWith('console: Failed to load resource'))).toEqual([]);
  });
});
