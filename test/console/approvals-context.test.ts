import { afterAll, beforeAll, expect, it } from 'vitest';
import { endedRun, pendingOf, shoutWaits } from '../approvals/helpers.js';
import { execute } from '../helpers/execute.js';
import { startMcpServer } from '../helpers/mcp-server.js';
import { describeConsole } from './browser.js';

/*
 * Approvals in context (issue 39): a card says whose agent asks, in which run, after what the user said,
 * under which rule and until when; decided calls say who decided, when and what they changed; several
 * calls are approved or rejected at once.
 */

describeConsole('approvals in context', 'test/console/approvals-context.test.ts', (session) => {
  let mcp: Awaited<ReturnType<typeof startMcpServer>>;
  let agentId: string;
  beforeAll(async () => {
    mcp = await startMcpServer();
    const agent = await session.t.agent(session.key, {
      name: 'Town crier',
      tools: [{ type: 'mcp', url: mcp.url }],
      configuration: shoutWaits({ timeoutSeconds: 3600 }),
    });
    agentId = agent.id;
  });
  afterAll(() => mcp?.close());

  /** A run whose `shout` waits for a person: its id and the approval's. */
  async function waitingShout(text: string) {
    const { t, key } = session;
    const res = await execute(t.api(key), agentId, { message: `/tool shout {"text":"${text}"}` });
    expect(res.run?.status, JSON.stringify(res.error)).toBe('awaiting_approval');
    const [approval] = await pendingOf(t, key, res.run!.runId);
    return { runId: res.run!.runId, approvalId: approval.id };
  }
  const card = (text: string) => session.page.getByTestId('approval').filter({ hasText: text });
  async function openInbox() {
    await session.page.goto(`${session.url}/approvals`);
    await session.page.getByRole('heading', { name: 'Approvals' }).waitFor();
  }

  it('a card shows the agent, the run, what led to the call, the rule and the expiry; once decided, who and what changed', async () => {
    const { page, t, key } = session;
    const { runId, approvalId } = await waitingShout('wake the town');
    await openInbox();
    const shown = card('wake the town');
    expect(await shown.getByTestId('approval-agent').textContent()).toBe('Town crier');
    expect(await shown.getByTestId('approval-run').getAttribute('href')).toBe(`/runs/${runId}`);
    await shown.getByTestId('approval-excerpt').getByText('/tool shout {"text":"wake the town"}').waitFor();
    await shown.getByText('shouting is loud').waitFor();
    expect(await shown.getByTestId('approval-expiry').textContent()).toBe('expires in 1 hour');

    await shown.getByRole('button', { name: 'Edit arguments…' }).click();
    await page.getByRole('textbox', { name: 'Arguments' }).fill('{"text":"good morning"}');
    await page.getByRole('button', { name: 'Approve with these' }).click();
    await shown.waitFor({ state: 'detached' });
    expect((await endedRun(t, key, runId)).output).toContain('GOOD MORNING');

    await page
      .locator('label')
      .filter({ hasText: /^approved$/ })
      .click();
    const decided = page.getByTestId('decided-approval').filter({ hasText: 'wake the town' });
    const by = (await t.api(key).GET('/api/v1/approvals/{id}', { params: { path: { id: approvalId } } })).data!.decision!.by!;
    expect(await decided.getByTestId('approval-decision').textContent()).toMatch(new RegExp(`^approved by api_key ${by.id} `));
    expect(await decided.locator('tr[data-change=changed] td').allTextContents()).toEqual(['text', '"wake the town"', '"good morning"']);
  });

  it('approves the selected calls at once, naming one decided meanwhile, and rejects others at once with one reason', async () => {
    const { page, t, key } = session;
    const a = await waitingShout('bulk one');
    const b = await waitingShout('bulk two');
    const c = await waitingShout('bulk three');
    await openInbox();
    await card('bulk one').getByRole('checkbox').check();
    await card('bulk two').getByRole('checkbox').check();
    await page.getByTestId('bulk-bar').getByText('2 selected').waitFor();
    // Someone else decides the second meanwhile: its refusal is named, the first is still approved.
    expect(
      (await t.api(key).POST('/api/v1/approvals/{id}/approve', { params: { path: { id: b.approvalId } }, body: {} })).response.status,
    ).toBe(200);
    await page.getByRole('button', { name: 'Approve selected' }).click();
    await card('bulk one').waitFor({ state: 'detached' });
    await card('bulk two').waitFor({ state: 'detached' });
    const refused = page.getByRole('alert').filter({ hasText: 'Some were not decided' });
    expect(await refused.textContent()).toMatch(/shout: .*already approved/);
    expect(await card('bulk three').count()).toBe(1);
    for (const run of [a, b]) expect((await endedRun(t, key, run.runId)).status).toBe('completed');

    await card('bulk three').getByRole('checkbox').check();
    await page.getByRole('button', { name: 'Reject selected…' }).click();
    const dialog = page.getByRole('dialog', { name: 'Reject 1 tool call' });
    await dialog.getByLabel('Reason').fill('not before noon');
    await dialog.getByRole('button', { name: 'Reject all' }).click();
    await card('bulk three').waitFor({ state: 'detached' });
    const rejected = (await t.api(key).GET('/api/v1/approvals/{id}', { params: { path: { id: c.approvalId } } })).data!;
    expect(rejected).toMatchObject({ status: 'rejected', decision: { reason: 'not before noon' } });
  });

  it('reads each run its cards quote once: two calls of one run share the request, and waiting asks nothing again', async () => {
    const { page, t, key } = session;
    const pair = await execute(t.api(key), agentId, { message: '/tool shout {"text":"pair one"}\n/tool shout {"text":"pair two"}' });
    expect(pair.run?.status, JSON.stringify(pair.error)).toBe('awaiting_approval');
    await pendingOf(t, key, pair.run!.runId, 2);
    const single = await waitingShout('alone');
    const reads: string[] = [];
    const record = (request: { method(): string; url(): string }) => {
      const path = new URL(request.url()).pathname;
      if (request.method() === 'GET' && /\/api\/v1\/runs\/[^/]+$/.test(path)) reads.push(path.slice(path.lastIndexOf('/') + 1));
    };
    page.on('request', record);
    try {
      await openInbox();
      await expect.poll(() => page.getByTestId('approval-excerpt').filter({ hasText: 'pair one' }).count()).toBe(2);
      await card('alone').getByTestId('approval-excerpt').waitFor();
      // Longer than a run page's 5 s between reads of a waiting run: what a card quotes does not change meanwhile.
      await page.waitForTimeout(6_000);
    } finally {
      page.off('request', record);
    }
    expect(reads.filter((id) => id === pair.run!.runId)).toHaveLength(1);
    expect(reads.filter((id) => id === single.runId)).toHaveLength(1);
  });

  it('raised no page error', () => {
    // The refused approval's 409 is logged by the browser as a failed resource load.
    expect(session.pageErrors.filter((e) => !e.startsWith('console: Failed to load resource'))).toEqual([]);
  });
});
