import { afterAll, beforeAll, expect, it } from 'vitest';
import { shoutWaits } from '../approvals/helpers.js';
import { execute } from '../helpers/execute.js';
import { startMcpServer } from '../helpers/mcp-server.js';
import { describeConsole } from './browser.js';

/*
 * The approvals inbox as a person uses it (issue 39): each card decides on its own (one pending
 * decision does not put every Approve button into loading), and a dialog stays open with what was
 * typed until the server has accepted the decision, showing its refusal when it does not.
 */

describeConsole('the approvals inbox', 'test/console/approvals.test.ts', (session) => {
  let mcp: Awaited<ReturnType<typeof startMcpServer>>;
  let agentId: string;
  beforeAll(async () => {
    mcp = await startMcpServer();
    agentId = (await session.t.agent(session.key, { name: 'Loud', tools: [{ type: 'mcp', url: mcp.url }], configuration: shoutWaits() }))
      .id;
  });
  afterAll(() => mcp?.close());

  /** A run whose `shout` waits for a person; the approval's id. */
  async function waitingShout(text: string) {
    const { t, key } = session;
    const res = await execute(t.api(key), agentId, { message: `/tool shout {"text":"${text}"}` });
    expect(res.run?.status, JSON.stringify(res.error)).toBe('awaiting_approval');
    const pending = await t.api(key).GET('/api/v1/approvals', { params: { query: { status: 'pending', limit: 100 } } });
    return pending.data!.approvals.find((a) => a.toolCall?.runId === res.run!.runId)!.id;
  }
  const card = (text: string) => session.page.getByTestId('approval').filter({ hasText: text });

  async function openInbox() {
    const { page } = session;
    await page
      .getByRole('navigation')
      .getByRole('link', { name: /^Agents/ })
      .click();
    await page
      .getByRole('navigation')
      .getByRole('link', { name: /^Approvals/ })
      .click();
    await page.getByRole('heading', { name: 'Approvals' }).waitFor();
  }

  it('a decision under way holds its own card only: the other cards’ buttons stay ready', async () => {
    const { page } = session;
    const first = await waitingShout('first');
    await waitingShout('second');
    await openInbox();
    // The first card's approval answers only when the test lets it.
    let release = () => {};
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    await page.route(`**/api/v1/approvals/${first}/approve`, async (route) => {
      await held;
      await route.continue();
    });
    await card('"first"').getByRole('button', { name: 'Approve', exact: true }).click();
    await expect
      .poll(() => card('"first"').getByRole('button', { name: 'Approve', exact: true }).getAttribute('data-loading'))
      .toBe('true');
    const other = card('"second"').getByRole('button', { name: 'Approve', exact: true });
    expect(await other.getAttribute('data-loading')).toBeNull();
    expect(await other.isEnabled()).toBe(true);
    release();
    await card('"first"').waitFor({ state: 'detached' });
    await page.unroute(`**/api/v1/approvals/${first}/approve`);
    await other.click();
    await card('"second"').waitFor({ state: 'detached' });
  });

  it('a refused rejection keeps the dialog open, with the reason typed and the server’s words', async () => {
    const { t, key, page } = session;
    const id = await waitingShout('stale');
    await openInbox();
    // Someone else decides first; this page still shows the approval as pending.
    expect((await t.api(key).POST('/api/v1/approvals/{id}/approve', { params: { path: { id } }, body: {} })).response.status).toBe(200);
    await card('"stale"').getByRole('button', { name: 'Reject…' }).click();
    const dialog = page.getByRole('dialog', { name: 'Reject' });
    await dialog.getByLabel('Reason').fill('too loud for a Monday');
    await dialog.getByRole('button', { name: 'Reject', exact: true }).click();
    await dialog.getByText(/not pending|already/i).waitFor();
    expect(await dialog.getByLabel('Reason').inputValue()).toBe('too loud for a Monday');
    await dialog.getByRole('button', { name: 'Cancel' }).click();
    await dialog.waitFor({ state: 'detached' });
  });

  it('a task awaiting approval is approved or rejected on its own page', async () => {
    const { t, key, page, url } = session;
    const create = (name: string) =>
      t.api(key).POST('/api/v1/tasks', { body: { name, description: 'Refund 40 EUR', agentId, requiresApproval: true } });
    const approved = (await create('Refund A-17')).data!;
    const rejected = (await create('Refund B-9')).data!;
    for (const [task, button, decision] of [
      [approved, 'Approve', 'approved'],
      [rejected, 'Reject', 'rejected'],
    ] as const) {
      await page.goto(`${url}/tasks/${task.id}`);
      await page.getByRole('heading', { name: task.name }).waitFor();
      await page.getByRole('button', { name: button, exact: true }).click();
      await page.getByRole('button', { name: button, exact: true }).waitFor({ state: 'detached' });
      const after = (await t.api(key).GET('/api/v1/tasks/{id}', { params: { path: { id: task.id } } })).data!;
      expect(after.approval!.decision).toBe(decision);
    }
  });

  it('raised no page error', () => {
    // The refused rejection's 409 is logged by the browser as a failed resource load.
    expect(session.pageErrors.filter((e) => !e.startsWith('console: Failed to load resource'))).toEqual([]);
  });
});
