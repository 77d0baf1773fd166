import { expect, it } from 'vitest';
import { execute } from '../helpers/execute.js';
import { describeConsole } from './browser.js';

/*
 * A run's output files on its page (issue 39): the files its code tools left in /output, listed from
 * GET /api/v1/files?runId= with their type and size, each a download of the file's bytes; a run that
 * made none shows no files section.
 */

const CODE = [
  'open("/output/report.csv", "w").write("a,b\\n1,2\\n")',
  'open("/output/notes.txt", "w").write("done")',
  'print("wrote two files")',
].join('\n');

describeConsole('a run’s files', 'test/console/run-files.test.ts', (session) => {
  it('lists the files a run’s code left, each a download; a run without files shows none', async () => {
    const { page, t, key, url } = session;
    const agent = await t.agent(key, { name: 'Filer', tools: [{ type: 'builtin', name: 'code' }] });
    const message = `/tool code_run ${JSON.stringify({ language: 'python', code: CODE })}`;
    const { run, error } = await execute(t.api(key), agent.id, { message });
    expect(run?.toolCalls[0].result, JSON.stringify(error)).toMatchObject({ exitCode: 0 });
    const listed = (await t.api(key).GET('/api/v1/files', { params: { query: { runId: run!.runId } } })).data!.files;
    expect(listed.map((f) => f.name).sort()).toEqual(['notes.txt', 'report.csv']);

    await page.goto(`${url}/runs/${run!.runId}`);
    const files = page.getByTestId('run-files');
    await files.getByRole('heading', { name: 'Files' }).waitFor();
    await expect.poll(() => files.getByTestId('run-file').count()).toBe(2);
    const report = files.getByTestId('run-file').filter({ hasText: 'report.csv' });
    await report.getByText('text/csv').waitFor();
    const download = page.waitForEvent('download');
    await report.getByRole('button', { name: 'Download report.csv' }).click();
    const saved = await download;
    expect(saved.suggestedFilename()).toBe('report.csv');
    const fs = await import('node:fs');
    expect(fs.readFileSync((await saved.path())!, 'utf8')).toBe('a,b\n1,2\n');

    const plain = await execute(t.api(key), agent.id, { message: 'hello' });
    await page.goto(`${url}/runs/${plain.run!.runId}`);
    await page.getByTestId('run-timeline').waitFor();
    // Once the list has answered (its loader gone), nothing is shown for it.
    await page.getByLabel('Loading the run’s files').waitFor({ state: 'detached' });
    expect(await page.getByTestId('run-files').count()).toBe(0);
  });

  it('raised no page error', () => {
    expect(session.pageErrors).toEqual([]);
  });
});
