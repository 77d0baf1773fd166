import type { Page } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startApp, type TestApp } from '../helpers/app.js';
import { execute } from '../helpers/execute.js';
import {
  CONSOLE_DIST,
  CONVERSATION_MESSAGES,
  hasChromium,
  holdResponses,
  openRecordedPage,
  requireConsoleBuild,
  screenshotFailures,
  signIn,
  type TestBrowser,
} from './browser.js';

/*
 * A code tool call in the console (issue 37): the run view and the playground show its code, its
 * output and the files it made, each a download. A real server serving the built console, Chromium
 * driving it, the real sandbox running the code.
 */

const itBrowser = hasChromium ? it : it.skip;
if (!hasChromium) console.warn('test/console/code-calls.test.ts skipped: no /usr/bin/chromium (apt-get install chromium)');

let t: TestApp;
let browser: TestBrowser;
let page: Page;
let url: string;
let key: string;
const pageErrors: string[] = [];

beforeAll(async () => {
  if (!hasChromium) return;
  requireConsoleBuild();
  t = await startApp({ CONSOLE_DIR: CONSOLE_DIST, CODE_MAX_WALL_SECONDS: '120', CODE_MAX_CPU_SECONDS: '60' });
  url = await t.listen();
  ({ key } = await t.tenant('Coders'));
  ({ browser, page } = await openRecordedPage(pageErrors));
  await signIn(page, url, key);
});
screenshotFailures('agentry-console-code-failed', () => page);
afterAll(async () => {
  await browser?.close();
  await t?.close();
});

const CODE = 'open("/output/report.csv", "w").write("a,b\\n1,2\\n")\nprint("wrote the report")';
const call = `/tool code_run ${JSON.stringify({ language: 'python', code: CODE })}`;

itBrowser('the run view shows a code call’s code, output and file', async () => {
  const agent = await t.agent(key, { name: 'Coder', tools: [{ type: 'builtin', name: 'code' }] });
  const { run, error } = await execute(t.api(key), agent.id, { message: call });
  expect(run?.toolCalls[0].result, JSON.stringify(error)).toMatchObject({ exitCode: 0 });
  await page.goto(`${url}/runs/${run!.runId}`);
  const shown = page.getByTestId('run-timeline').getByTestId('code-call');
  await shown.getByTestId('code-stdout').filter({ hasText: 'wrote the report' }).waitFor();
  expect(await shown.getByTestId('code-source').textContent()).toContain('/output/report.csv');
  await shown.getByTestId('code-file').filter({ hasText: 'report.csv' }).waitFor();
});

itBrowser('the playground shows it in the tool call’s card, its file a download', async () => {
  const agent = (await t.api(key).GET('/api/v1/agents', { params: { query: {} } })).data!.agents.find((a) => a.name === 'Coder')!;
  await page.goto(`${url}/playground?agentId=${agent.id}`);
  // The conversation's reads are answered only once the test holds the streamed answer: a quick turn
  // (a loaded machine) could otherwise be stored before the test ever saw it stream.
  const held = await holdResponses(page, CONVERSATION_MESSAGES);
  try {
    await page.getByLabel('Message').fill(call);
    await page.getByLabel('Message').press('Enter');
    const answer = page.locator('[data-author=assistant]').last();
    await answer.getByTestId('live-answer').waitFor();
    const streamed = (await answer.elementHandle())!;
    const card = answer.getByTestId('tool-call').first();
    await card.waitFor();
    await card.getByRole('button').first().click();
    await card.getByTestId('code-stdout').filter({ hasText: 'wrote the report' }).waitFor({ timeout: 60_000 });
    const file = (await card.getByTestId('code-file').elementHandle())!;
    held.release();
    // The stored answer (its run's link) takes the streamed one's place as the same elements: a click on
    // the file as the turn ends lands on a button that stays (CI once lost one in that swap).
    await answer.getByTestId('turn-run').waitFor();
    expect(await answer.getByTestId('live-answer').count()).toBe(0);
    const connected = (el: object) => (el as { isConnected: boolean }).isConnected;
    expect(await streamed.evaluate(connected)).toBe(true);
    expect(await file.evaluate(connected)).toBe(true);
  } finally {
    await held.stop();
  }
  const button = page.locator('[data-author=assistant]').last().getByTestId('code-file').filter({ hasText: 'report.csv' });
  const download = page.waitForEvent('download');
  await button.click();
  // A download that does not start says why, where the button shows it (its title names a failed fetch).
  const saved = await download.catch(async (err: Error) => {
    throw new Error(`${err.message}; the button's title: ${await button.getAttribute('title')}`);
  });
  expect(saved.suggestedFilename()).toBe('report.csv');
  expect(pageErrors).toEqual([]);
});
