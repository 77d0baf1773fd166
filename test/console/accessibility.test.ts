import axe from 'axe-core';
import type { Page } from 'playwright-core';
import { beforeAll, expect, it } from 'vitest';
import { execute } from '../helpers/execute.js';
import { describeConsole } from './browser.js';

/*
 * The console's accessibility (issue 39): every page, in the light and the dark theme, scanned by
 * axe-core in the browser with no critical or serious violation; one h1 per page; a "Skip to content"
 * link first; and, 390 px wide, no list page wider than the screen. The pages hold data (an agent, a
 * run, tasks, approvals, a skill, keys, a policy), so that their tables and badges are scanned too.
 */

// axe-core's own source, to run in the page (in Node it only exports it).
const AXE_SOURCE = axe.source;

interface AxeViolation {
  id: string;
  impact: 'minor' | 'moderate' | 'serious' | 'critical' | null;
  help: string;
  nodes: { target: unknown[]; failureSummary?: string }[];
}

/** axe-core's critical and serious violations of the page as it stands, one line per element. */
async function seriousViolations(page: Page): Promise<string[]> {
  // Evaluated by the DevTools protocol, not as an inline script: the console's CSP forbids those.
  if (!(await page.evaluate('typeof window.axe !== "undefined"'))) await page.evaluate(AXE_SOURCE);
  const violations = (await page.evaluate('window.axe.run(document).then((r) => r.violations)')) as AxeViolation[];
  return violations
    .filter((v) => v.impact === 'critical' || v.impact === 'serious')
    .flatMap((v) =>
      v.nodes.map((n) => `${v.impact} ${v.id} (${v.help}) at ${JSON.stringify(n.target)}: ${n.failureSummary?.replace(/\s+/g, ' ')}`),
    );
}

describeConsole('the console’s accessibility', 'test/console/accessibility.test.ts', (session) => {
  const ids = { agent: '', run: '', conversation: '', task: '', base: '', document: '' };
  /** Each page: its path, its h1, and a text that shows once its data has arrived. */
  let pages: { path: string; h1: string | RegExp; shows: string | RegExp; open?: (page: Page) => Promise<void> }[] = [];

  beforeAll(async () => {
    const { t, key } = session;
    const api = t.api(key);
    // Its tool calls to skill_discover wait for a person: an approval of a tool call, and a run awaiting it.
    const agent = await t.agent(key, {
      name: 'Support',
      appId: 'demo',
      description: 'Answers questions about orders',
      configuration: { approval: { rules: [{ tool: 'skill_discover', reason: 'look before searching' }] } },
    });
    ids.agent = agent.id;
    await t.agent(key, { name: 'Billing', appId: 'demo' });
    const answered = await execute(api, agent.id, { message: 'Where is order A-17?' });
    expect(answered.run?.status, JSON.stringify(answered.error)).toBe('completed');
    ids.run = answered.run!.runId;
    ids.conversation = answered.run!.conversationId!;
    const waiting = await execute(api, agent.id, { message: '/tool skill_discover {"query":"orders"}' });
    expect(waiting.run?.status, JSON.stringify(waiting.error)).toBe('awaiting_approval');
    const task = await api.POST('/api/v1/tasks', { body: { name: 'Weekly report', description: 'Sum up the week', agentId: agent.id } });
    expect(task.response.status, JSON.stringify(task.error)).toBe(201);
    ids.task = task.data!.id;
    const pending = await api.POST('/api/v1/tasks', {
      body: { name: 'Refund B-9', description: 'Refund 10 EUR', agentId: agent.id, requiresApproval: true },
    });
    expect(pending.response.status, JSON.stringify(pending.error)).toBe(201);
    const skill = await api.POST('/api/skills', {
      body: { name: 'order-lookup', description: 'Finds an order by its number', instructions: 'Ask for the order number first.' },
    });
    expect(skill.response.status, JSON.stringify(skill.error)).toBe(201);
    const assigned = await api.POST('/api/skills/{id}/assign', { params: { path: { id: skill.data!.id } }, body: { agentId: agent.id } });
    expect(assigned.response.status, JSON.stringify(assigned.error)).toBeLessThan(300);
    const readOnly = await api.POST('/api/v1/api-keys', { body: { name: 'Read-only dashboard', permissions: ['agents:read'] } });
    expect(readOnly.response.status, JSON.stringify(readOnly.error)).toBe(201);
    const policy = await api.POST('/api/v1/identity/tbac/policies', {
      body: { callerAgentId: agent.id, calleeAgentId: agent.id, toolName: 'search' },
    });
    expect(policy.response.status, JSON.stringify(policy.error)).toBe(201);
    const base = await api.POST('/api/v1/knowledge-bases', { body: { name: 'Handbook', description: 'How we work' } });
    expect(base.response.status, JSON.stringify(base.error)).toBe(201);
    const document = await api.POST('/api/v1/knowledge-bases/{id}/documents', {
      params: { path: { id: base.data!.id } },
      body: { title: 'Leave', content: 'Parental leave lasts sixteen weeks at full pay.' },
    });
    expect(document.response.status, JSON.stringify(document.error)).toBe(202);
    ids.base = base.data!.id;
    ids.document = document.data!.id;

    pages = [
      { path: '/agents', h1: 'Agents', shows: 'Support' },
      {
        path: '/agents',
        h1: 'Agents',
        shows: 'Support',
        // A row's menu and the dialog it opens.
        open: async (page) => {
          await page.getByRole('button', { name: 'Actions for Billing' }).click();
          await page.getByRole('menuitem', { name: 'Delete…' }).click();
          await page.getByRole('dialog', { name: 'Delete agent' }).waitFor();
        },
      },
      { path: `/agents/${ids.agent}`, h1: 'Support', shows: 'Budget' },
      { path: '/agents/new', h1: 'New agent', shows: 'Create agent' },
      { path: `/playground?agentId=${ids.agent}&conversationId=${ids.conversation}`, h1: 'Playground', shows: 'Where is order A-17?' },
      { path: '/runs', h1: 'Runs', shows: 'awaiting_approval' },
      // Its input, once the run has arrived.
      { path: `/runs/${ids.run}`, h1: 'Run', shows: 'Where is order A-17?' },
      { path: '/tasks', h1: 'Tasks', shows: 'Weekly report' },
      {
        path: '/tasks',
        h1: 'Tasks',
        shows: 'Weekly report',
        open: async (page) => {
          await page.getByRole('button', { name: 'New task' }).click();
          await page.getByRole('dialog', { name: 'New task' }).waitFor();
        },
      },
      { path: `/tasks/${ids.task}`, h1: 'Weekly report', shows: 'Sum up the week' },
      { path: '/approvals', h1: 'Approvals', shows: 'look before searching' },
      {
        path: '/approvals',
        h1: 'Approvals',
        shows: 'look before searching',
        open: async (page) => {
          await page
            .getByTestId('approval')
            .filter({ hasText: 'look before searching' })
            .getByRole('button', { name: 'Edit arguments…' })
            .click();
          await page.getByRole('dialog', { name: 'Approve with edited arguments' }).waitFor();
        },
      },
      {
        path: '/identity',
        h1: 'Identity',
        shows: 'Make deny',
        // An agent chosen: its keys and delegations show too.
        open: async (page) => {
          await page.getByLabel('Agent', { exact: true }).first().click();
          await page.getByRole('option', { name: 'Support' }).click();
          await page.getByRole('button', { name: 'Rotate key' }).waitFor();
        },
      },
      { path: '/usage', h1: 'Usage', shows: 'Cost and tokens' },
      {
        path: '/usage',
        h1: 'Usage',
        shows: 'API keys',
        open: async (page) => {
          await page.getByRole('tab', { name: 'API keys' }).click();
          await page.getByText('Read-only dashboard').waitFor();
        },
      },
      {
        path: '/usage',
        h1: 'Usage',
        shows: 'Audit log',
        open: async (page) => {
          await page.getByRole('tab', { name: 'Audit log' }).click();
          await page.getByRole('tabpanel', { name: 'Audit log' }).getByRole('table').waitFor();
        },
      },
      { path: `/memory?agentId=${ids.agent}`, h1: 'Memory', shows: / blocks, / },
      { path: '/connectors', h1: 'Connectors', shows: / connected$/ },
      { path: '/settings', h1: 'Settings', shows: 'Limits and budget' },
      { path: '/knowledge', h1: 'Knowledge', shows: 'Handbook' },
      { path: `/knowledge/${ids.base}`, h1: 'Handbook', shows: 'Leave' },
      { path: `/knowledge/${ids.base}?document=${ids.document}&position=0`, h1: 'Handbook', shows: 'sixteen weeks' },
      { path: '/skills', h1: 'Skills', shows: 'order-lookup' },
      {
        path: '/skills',
        h1: 'Skills',
        shows: 'order-lookup',
        open: async (page) => {
          await page.getByRole('button', { name: 'order-lookup' }).click();
          await page.getByRole('heading', { name: 'order-lookup' }).waitFor();
        },
      },
    ];
  });

  /** Opens `where` and waits for its h1 and its data; the page must have exactly one h1. */
  async function visit(page: Page, where: (typeof pages)[number]) {
    await page.goto(`${session.url}${where.path}`);
    await page.getByRole('heading', { level: 1, name: where.h1, exact: typeof where.h1 === 'string' }).waitFor();
    await page.getByText(where.shows).first().waitFor();
    await where.open?.(page);
    // Mantine's transitions (menus, badges fading in) settle before colours are measured.
    await page.waitForTimeout(300);
    expect(await page.getByRole('heading', { level: 1 }).count(), `h1 on ${where.path}`).toBe(1);
  }

  async function useScheme(page: Page, scheme: 'light' | 'dark') {
    await page.evaluate(`localStorage.setItem('agentry.colorScheme', '${scheme}')`);
  }

  for (const scheme of ['light', 'dark'] as const) {
    it(`every page has one h1 and no critical or serious axe-core violation, ${scheme} theme`, async () => {
      const { page } = session;
      await useScheme(page, scheme);
      const found: string[] = [];
      for (const where of pages) {
        await visit(page, where);
        expect(await page.evaluate('document.documentElement.dataset.mantineColorScheme')).toBe(scheme);
        found.push(...(await seriousViolations(page)).map((line) => `${where.path}: ${line}`));
      }
      expect(found, found.join('\n')).toEqual([]);
    });
  }

  it('"Skip to content" is the first stop of the keyboard and moves focus to the page’s main content', async () => {
    const { page } = session;
    await visit(page, pages[0]!);
    await page.keyboard.press('Tab');
    const skip = page.getByRole('link', { name: 'Skip to content' });
    expect(await page.evaluate('document.activeElement?.textContent')).toBe('Skip to content');
    // Shown on the screen once focused (it sits above the top edge until then).
    expect((await skip.boundingBox())!.y).toBeGreaterThanOrEqual(0);
    await page.keyboard.press('Enter');
    expect(await page.evaluate('document.activeElement?.tagName')).toBe('MAIN');
    expect(await page.getByRole('banner').count()).toBe(1);
    expect(await page.getByRole('navigation').count()).toBeGreaterThanOrEqual(1);
    expect(await page.getByRole('main').count()).toBe(1);
  });

  it('390 px wide, no page is wider than the screen: tables scroll inside their container', async () => {
    const { page } = session;
    await page.setViewportSize({ width: 390, height: 800 });
    try {
      // Every page without a dialog open: the lists, a run, a task, an agent's form, memory, knowledge, settings.
      for (const where of pages.filter((p) => !p.open)) {
        await visit(page, where);
        const [scrollWidth, width] = (await page.evaluate('[document.documentElement.scrollWidth, window.innerWidth]')) as number[];
        expect(scrollWidth, `${where.path} is ${scrollWidth} px wide on a 390 px screen`).toBeLessThanOrEqual(width!);
      }
    } finally {
      await page.setViewportSize({ width: 1280, height: 800 });
    }
  });

  it('the sign-in page, in both themes, has an h1 and no critical or serious violation', async () => {
    const { page } = session;
    await page.getByRole('button', { name: 'Sign out' }).click();
    const found: string[] = [];
    for (const scheme of ['light', 'dark'] as const) {
      await useScheme(page, scheme);
      await page.goto(`${session.url}/sign-in`);
      await page.getByRole('heading', { level: 1, name: 'Sign in to Agentry' }).waitFor();
      await page.waitForTimeout(300);
      found.push(...(await seriousViolations(page)).map((line) => `${scheme}: ${line}`));
    }
    expect(found, found.join('\n')).toEqual([]);
  });

  it('raised no page error', () => {
    expect(session.pageErrors).toEqual([]);
  });
});
