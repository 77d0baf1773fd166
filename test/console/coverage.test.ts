import type { Locator, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { type ApiResult, startApp, type TestApp } from '../helpers/app.js';
import { execute } from '../helpers/execute.js';
import { zip } from '../skills/helpers.js';
import {
  CONSOLE_DIST,
  docsScreenshot,
  hasChromium,
  openRecordedPage,
  requireConsoleBuild,
  screenshotFailures,
  type TestBrowser,
} from './browser.js';

/*
 * What the console's issue asks for beyond e2e.test.ts's main flows, as a person would do it: a
 * read-only key's greyed-out controls, an OAuth access token, the dark theme, the keyboard, and each
 * page's actions, checked against the API of a real server (this process, SQLite). Nothing is mocked.
 * Tests go on from the state the ones before left (one browser per file).
 */

const describeBrowser = hasChromium ? describe : describe.skip;
if (!hasChromium) console.warn('test/console/coverage.test.ts skipped: no /usr/bin/chromium (apt-get install chromium)');

const PRICES = { 'builtin/echo': { input: 1_000, output: 2_000 } };

let t: TestApp;
let browser: TestBrowser;
let page: Page;
let url: string;
let key: string;
let readKey: string;
let agentId: string;
const pageErrors: string[] = [];

const SKILL_MD = (name: string, body: string) => `---
name: ${name}
description: How to answer questions about ${name}.
category: support
---

# ${name}

${body}
`;

async function signIn(credential: string) {
  await page.goto(url);
  // The tab may still hold a credential: the page restores it (a loader) before showing either.
  await page.getByRole('button', { name: /^Sign (in|out)$/ }).waitFor();
  if (await page.getByRole('button', { name: 'Sign out' }).isVisible()) {
    await page.getByRole('button', { name: 'Sign out' }).click();
  }
  await page.getByLabel('API key or access token').fill(credential);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('heading', { name: 'Agents' }).waitFor();
}

/** Goes to a console page by its navigation link, as a person does. */
async function open(label: string, heading = label) {
  await page
    .getByRole('navigation')
    .getByRole('link', { name: new RegExp(`^${label}`) })
    .click();
  await page.getByRole('heading', { name: heading, exact: true }).first().waitFor();
}

/**
 * The control is greyed out (disabled, not clickable) and says why when the pointer rests on it,
 * before any click: a tooltip, or the element's own title.
 */
async function expectGreyed(control: Locator, reason: string) {
  await control.waitFor();
  // The page may still show the state before a change the API already reports (its refetch follows the
  // action's answer), so wait for the control to follow; it is never clicked.
  await expect
    .poll(() => control.isDisabled(), { message: `${await control.textContent()} should be disabled`, timeout: 10_000 })
    .toBe(true);
  const title = await control.getAttribute('title');
  if (title?.includes(reason)) return;
  const tooltip = page.getByRole('tooltip').filter({ hasText: reason });
  const shownTooltips = page.locator('[role=tooltip]:visible');
  // A pointer that arrived while the page was still rendering may have missed the control's mouseenter;
  // on a loaded machine a re-render may also move the control while it is hovered, or take the tooltip
  // away before it is measured: each is tried again, three times at most.
  let measured: { box: { y: number; height: number }; tip: { y: number; height: number } } | undefined;
  for (let attempt = 1; !measured; attempt++) {
    try {
      // The previous control's tooltip gone first, so the one that shows is this control's.
      await page.mouse.move(0, 0);
      await expect.poll(() => shownTooltips.count()).toBe(0);
      await control.scrollIntoViewIfNeeded();
      await control.hover({ force: true });
      await tooltip.waitFor({ timeout: 3_000 });
      const [box, tip] = [await control.boundingBox(), await tooltip.boundingBox()];
      if (!box || !tip) throw new Error(`the tooltip "${reason}" went before it was measured`);
      measured = { box, tip };
    } catch (err) {
      if (attempt === 3) throw err;
    }
  }
  // Beside the control, not elsewhere on the page.
  const { box, tip } = measured;
  expect(Math.abs(tip.y + tip.height / 2 - (box.y + box.height / 2))).toBeLessThan(box.height / 2 + tip.height + 20);
  await page.mouse.move(0, 0);
}

/** Picks `option` in the Mantine Select labelled `label` (within `scope`). */
async function choose(label: string, option: string, scope: Pick<Page, 'getByLabel'> = page) {
  await scope
    .getByLabel(new RegExp(`^${label}( \\*)?$`))
    .first()
    .click();
  await page.getByRole('option', { name: option, exact: true }).click();
}

/** Drops a file on `target` as a browser does with a file dragged from the desktop. */
async function dropFile(target: Locator, name: string, data: Buffer, type: string) {
  const dataTransfer = await page.evaluateHandle(
    ([fileName, base64, mime]) => {
      // The page's DOM globals (this file is typed for Node).
      const g = globalThis as unknown as {
        atob(data: string): string;
        DataTransfer: new () => { items: { add(file: unknown): void } };
        File: new (parts: unknown[], name: string, options: { type: string }) => unknown;
      };
      const bytes = Uint8Array.from(g.atob(base64), (c: string) => c.charCodeAt(0));
      const transfer = new g.DataTransfer();
      transfer.items.add(new g.File([bytes], fileName, { type: mime }));
      return transfer;
    },
    [name, data.toString('base64'), type] as const,
  );
  await target.dispatchEvent('dragenter', { dataTransfer });
  await target.dispatchEvent('dragover', { dataTransfer });
  await target.dispatchEvent('drop', { dataTransfer });
}

/** `read` again until `ok` holds; after 15 s the test fails with the last value read. */
function until<T>(what: string, read: () => Promise<T>, ok: (value: T) => boolean): Promise<T> {
  return vi.waitFor(
    async () => {
      const value = await read();
      if (!ok(value)) throw new Error(`timed out waiting for ${what}: ${JSON.stringify(value)}`);
      return value;
    },
    { timeout: 15_000, interval: 100 },
  );
}

/** The token endpoint takes a form. */
const FORM = { 'content-type': 'application/x-www-form-urlencoded' };

describeBrowser('the console, page by page', () => {
  beforeAll(async () => {
    requireConsoleBuild();
    t = await startApp({ CONSOLE_DIR: CONSOLE_DIST, MODEL_PRICES: JSON.stringify(PRICES) });
    url = await t.listen();
    ({ key } = await t.tenant('Acme'));
    readKey = await t.key(key, ['agents:read', 'settings:read', 'skills:read']);
    agentId = (await t.agent(key, { name: 'Support', appId: 'demo' })).id;
    ({ browser, page } = await openRecordedPage(pageErrors));
  });
  screenshotFailures('agentry-console-failed', () => page);
  afterAll(async () => {
    await browser?.close();
    await t?.close();
  });

  it('greys out what a read-only key may not do, with the reason, on every page (the API refuses it too)', async () => {
    // Something to act on in each page: a task, one awaiting approval, a skill.
    const api = t.api(key);
    const task = await api.POST('/api/v1/tasks', { body: { name: 'Weekly report', description: 'Sum up the week', agentId } });
    expect(task.response.status, JSON.stringify(task.error)).toBe(201);
    const taskId = task.data!.id;
    const pending = await api.POST('/api/v1/tasks', {
      body: { name: 'Refund B-9', description: 'Refund 10 EUR', agentId, requiresApproval: true },
    });
    expect(pending.response.status, JSON.stringify(pending.error)).toBe(201);
    const skill = await api.POST('/api/skills/import', {
      body: SKILL_MD('greetings', 'Say hello.'),
      headers: { 'content-type': 'text/markdown' },
      bodySerializer: (md) => md,
    });
    expect(skill.response.status, JSON.stringify(skill.error)).toBe(201);
    const skillId = skill.data!.id;
    const assigned = await api.POST('/api/skills/{id}/assign', { params: { path: { id: skillId } }, body: { agentId } });
    expect(assigned.response.status, JSON.stringify(assigned.error)).toBeLessThan(300);

    await signIn(readKey);
    const lacks = (permission: string) => `this key lacks ${permission}`;

    // Agents: the list's New agent, the row's actions, the form's Save.
    await expectGreyed(page.getByRole('link', { name: 'New agent' }), lacks('agents:write'));
    await page.getByRole('button', { name: 'Actions for Support' }).click();
    for (const item of ['Pause', 'Duplicate', 'Delete…']) {
      await expectGreyed(page.getByRole('menuitem', { name: item }), lacks('agents:write'));
    }
    await page.keyboard.press('Escape');
    await page.getByRole('link', { name: 'Support' }).click();
    await expectGreyed(page.getByRole('button', { name: 'Save' }), lacks('agents:write'));

    // Tasks: New task, and a task's actions.
    await open('Tasks');
    await expectGreyed(page.getByRole('button', { name: 'New task' }), lacks('agents:write'));
    await page.getByRole('link', { name: 'Weekly report' }).click();
    for (const name of ['Run now', 'Cancel', 'Retry', 'Delete…']) {
      await expectGreyed(page.getByRole('button', { name, exact: true }), lacks('agents:write'));
    }

    // Approvals: approve and reject.
    await open('Approvals');
    const item = page.getByTestId('approval').filter({ hasText: 'Refund B-9' });
    await expectGreyed(item.getByRole('button', { name: 'Approve' }), lacks('agents:write'));
    await expectGreyed(item.getByRole('button', { name: /^Reject/ }), lacks('agents:write'));
    // A tool call waiting for approval: its arguments cannot be edited either.
    const careful = await t.agent(key, {
      name: 'Careful',
      configuration: { approval: { rules: [{ tool: 'skill_discover', reason: 'look before searching' }] } },
    });
    const waiting = await execute(api, careful.id, { message: '/tool skill_discover {"query":"orders"}' });
    expect(waiting.run?.status, JSON.stringify(waiting.data ?? waiting.error)).toBe('awaiting_approval');
    const call = page.getByTestId('approval').filter({ hasText: 'look before searching' });
    await expectGreyed(call.getByRole('button', { name: 'Edit arguments…' }), lacks('agents:write'));
    await expectGreyed(call.getByRole('button', { name: /^Reject/ }), lacks('agents:write'));

    // Identity: an agent's key rotation; the TBAC policy form and mode need settings:write.
    await open('Identity', 'TBAC policies');
    await choose('Agent', 'Support');
    await expectGreyed(page.getByRole('button', { name: 'Rotate key' }), lacks('agents:write'));
    await expectGreyed(page.getByRole('button', { name: 'Revoke' }).first(), lacks('agents:write'));
    await expectGreyed(page.getByRole('button', { name: 'Add policy' }), lacks('settings:write'));

    // Skills: import and assignment.
    await open('Skills');
    await expectGreyed(page.getByRole('button', { name: 'Choose a file' }), lacks('skills:write'));
    await page.getByText(`Importing is off: ${lacks('skills:write')}`).waitFor();
    await page.getByRole('button', { name: 'greetings' }).click();
    await expectGreyed(page.getByRole('button', { name: 'Assign', exact: true }), lacks('skills:write'));
    await expectGreyed(page.getByRole('button', { name: 'Unassign' }), lacks('skills:write'));

    // Usage: API keys are managed with settings:write.
    await open('Usage');
    await page.getByRole('tab', { name: 'API keys' }).click();
    await page.getByText(`${lacks('settings:write')}: API keys are managed with settings:write.`).waitFor();
    expect(await page.getByRole('button', { name: 'Create key' }).count()).toBe(0);

    // The API refuses the same key what the page greys out.
    const reader = t.api(readKey);
    for (const [route, call] of [
      ['/api/v1/agents', () => reader.POST('/api/v1/agents', { body: { name: 'x', appId: 'x' } })],
      [`/api/v1/tasks/${taskId}/run`, () => reader.POST('/api/v1/tasks/{id}/run', { params: { path: { id: taskId } }, body: {} })],
      [
        `/api/v1/identity/agents/${agentId}/keys/rotate`,
        () => reader.POST('/api/v1/identity/agents/{agentId}/keys/rotate', { params: { path: { agentId } } }),
      ],
      [
        `/api/skills/${skillId}/assign`,
        () => reader.POST('/api/skills/{id}/assign', { params: { path: { id: skillId } }, body: { agentId } }),
      ],
      ['/api/v1/api-keys', () => reader.POST('/api/v1/api-keys', { body: { name: 'x', permissions: ['agents:read'] } })],
    ] as [string, () => Promise<ApiResult>][]) {
      const refused = await call();
      expect(refused.response.status, `${route}: ${JSON.stringify(refused.error)}`).toBe(403);
    }
  });

  it('signs in with an OAuth access token (client_credentials from an API key), which is greyed out by its scope', async () => {
    const me = (await t.api(key).GET('/api/v1/tenant')).data!;
    const issued = await t.api().POST('/api/v1/identity/oauth/token', {
      body: { grant_type: 'client_credentials', scope: 'agents:read' },
      headers: { authorization: `Basic ${Buffer.from(`${me.credential.id}:${key}`).toString('base64')}`, ...FORM },
    });
    expect(issued.response.status, JSON.stringify(issued.error)).toBe(200);
    const token = issued.data!.access_token;
    expect((await t.api(token).GET('/api/v1/tenant')).data!.credential).toMatchObject({
      type: 'access_token',
      permissions: ['agents:read'],
    });

    await signIn(token);
    await page.getByRole('link', { name: 'Support' }).waitFor();
    expect(await page.evaluate(`sessionStorage.getItem('agentry.credential')`)).toBe(token);
    await expectGreyed(page.getByRole('link', { name: 'New agent' }), 'this token lacks agents:write');
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByRole('button', { name: 'Sign in' }).waitFor();

    // A delegation token (token exchange) is for agent-to-agent calls, not the API: the sign-in says so.
    const callee = await t.agent(key, { name: 'Callee' });
    const svid = await t.api(key).POST('/api/v1/identity/agents/{agentId}/svid', {
      params: { path: { agentId } },
      body: { audience: t.config.issuer, ttlSeconds: 60 },
    });
    expect(svid.response.status, JSON.stringify(svid.error)).toBe(200);
    const exchanged = await t.api().POST('/api/v1/identity/oauth/token', {
      body: {
        grant_type: 'urn:ietf:params:oauth:grant-type:token-exchange',
        subject_token: svid.data!.svid,
        subject_token_type: 'urn:ietf:params:oauth:token-type:jwt',
        audience: callee.id,
        scope: 'tools:search',
      },
      headers: FORM,
    });
    expect(exchanged.response.status, JSON.stringify(exchanged.error)).toBe(200);
    await page.getByLabel('API key or access token').fill(exchanged.data!.access_token);
    await page.getByRole('button', { name: 'Sign in' }).click();
    const refused = page.getByRole('alert').filter({ hasText: 'Not signed in' });
    await refused.waitFor();
    expect(await refused.textContent()).toMatch(/agent-to-agent|delegation/i);
    await t.api(key).DELETE('/api/v1/agents/{id}', { params: { path: { id: callee.id } } });
  });

  it('switches to the dark theme: dark background, light text, the charts follow, kept across a reload', async () => {
    await execute(t.api(key), agentId, { message: 'hello there' });
    await signIn(key);
    await open('Usage');
    await page.locator('.recharts-bar-rectangle').first().waitFor();
    const colours = () =>
      page.evaluate(`(() => {
        const body = getComputedStyle(document.body);
        const tick = document.querySelector('.recharts-cartesian-axis-tick-value');
        const grid = document.querySelector('.recharts-cartesian-grid line');
        return {
          background: body.backgroundColor,
          text: body.color,
          tick: tick ? getComputedStyle(tick).fill : null,
          grid: grid ? getComputedStyle(grid).stroke : null,
          scheme: document.documentElement.getAttribute('data-mantine-color-scheme'),
        };
      })()`) as Promise<{ background: string; text: string; tick: string | null; grid: string | null; scheme: string }>;
    const luminance = (rgb: string) => {
      const [r, g, b] = rgb.match(/\d+/g)!.map(Number);
      return 0.2126 * r + 0.7152 * g + 0.0722 * b;
    };
    const light = await colours();
    expect(light.scheme).toBe('light');
    expect(luminance(light.background)).toBeGreaterThan(200);
    expect(luminance(light.text)).toBeLessThan(80);

    await page.getByRole('button', { name: 'Dark theme' }).click();
    await page.getByRole('button', { name: 'Light theme' }).waitFor();
    const dark = await colours();
    expect(dark.scheme).toBe('dark');
    expect(luminance(dark.background)).toBeLessThan(60);
    expect(luminance(dark.text)).toBeGreaterThan(180);
    // The charts' axes and grid are drawn for the dark background, not left in their light colours.
    expect(dark.tick).not.toBe(light.tick);
    expect(luminance(dark.tick!)).toBeGreaterThan(luminance(light.tick!));
    expect(dark.grid).not.toBe(light.grid);
    expect(await page.evaluate(`localStorage.getItem('agentry.colorScheme')`)).toBe('dark');

    await page.reload();
    await page.locator('.recharts-bar-rectangle').first().waitFor();
    expect(await colours()).toEqual(dark);
    await docsScreenshot(page, 'dark');

    await page.getByRole('button', { name: 'Light theme' }).click();
    await page.getByRole('button', { name: 'Dark theme' }).waitFor();
    expect((await colours()).scheme).toBe('light');
  });

  it('is usable from the keyboard: Tab reaches the navigation and the main buttons, with a visible focus; Enter and Space act', async () => {
    await open('Agents');
    await page.mouse.move(0, 0);
    const focused = () =>
      page.evaluate(`(() => {
        const el = document.activeElement;
        if (!el) return null;
        const style = getComputedStyle(el);
        return {
          tag: el.tagName,
          text: (el.getAttribute('aria-label') || el.textContent || '').trim().slice(0, 40),
          href: el.getAttribute('href'),
          ring: style.outlineStyle !== 'none' && parseFloat(style.outlineWidth) > 0 || style.boxShadow !== 'none',
        };
      })()`) as Promise<{ tag: string; text: string; href: string | null; ring: boolean } | null>;
    /** Presses Tab until the focus is on the element whose text is `text`; every focus stop shows a ring. */
    const tabTo = async (text: string | RegExp, key = 'Tab') => {
      for (let i = 0; i < 60; i++) {
        await page.keyboard.press(key);
        const el = await focused();
        if (el && (typeof text === 'string' ? el.text === text : text.test(el.text))) {
          expect(el.ring, `focus on ${el.text} is visible`).toBe(true);
          return el;
        }
      }
      throw new Error(`Tab never reached ${text}`);
    };
    await page.evaluate('document.activeElement && document.activeElement.blur()');
    // The navigation: each link in turn; Enter follows one.
    const tasksLink = await tabTo('Tasks');
    expect(tasksLink.href).toMatch(/\/tasks$/);
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { name: 'Tasks', exact: true }).waitFor();
    // The page's main button: Space opens the new task dialog, Escape closes it.
    await tabTo('New task');
    await page.keyboard.press(' ');
    await page.getByRole('dialog').getByLabel('Name').waitFor();
    await page.keyboard.press('Escape');
    await page.getByRole('dialog').waitFor({ state: 'detached' });
    // Back up the page with Shift+Tab to the header's theme button: Enter switches the theme, and back.
    await tabTo('Dark theme', 'Shift+Tab');
    await page.keyboard.press('Enter');
    await page.getByRole('button', { name: 'Light theme' }).waitFor();
    await page.keyboard.press('Enter');
    await page.getByRole('button', { name: 'Dark theme' }).waitFor();
    // On the agents page: the row's actions menu opens with Enter, its items with the arrows.
    await open('Agents');
    await tabTo('Actions for Support');
    await page.keyboard.press('Enter');
    await page.getByRole('menuitem', { name: 'Pause' }).waitFor();
    await page.keyboard.press('Escape');
  });

  it('pauses, resumes, duplicates and deletes an agent (with a confirmation)', async () => {
    await open('Agents');
    /** Opens a row's actions menu and picks `item`; the menu closes before anything else is clicked. */
    const menuAction = async (menu: string, item: string) => {
      await page.getByRole('button', { name: menu, exact: true }).click();
      await page.getByRole('menuitem', { name: item }).click();
      await page.getByRole('menu').waitFor({ state: 'detached' });
    };
    const api = t.api(key);
    const agentPath = (id: string) => ({ params: { path: { id } } });
    const status = async () => (await api.GET('/api/v1/agents/{id}', agentPath(agentId))).data!.status;
    const row = page.getByRole('row').filter({ has: page.getByRole('link', { name: 'Support', exact: true }) });

    await menuAction('Actions for Support', 'Pause');
    await row.getByText('paused', { exact: true }).waitFor();
    expect(await status()).toBe('paused');

    await menuAction('Actions for Support', 'Resume');
    await row.getByText('available', { exact: true }).waitFor();
    expect(await status()).toBe('available');

    await menuAction('Actions for Support', 'Duplicate');
    await page.getByRole('link', { name: 'Support (copy)' }).waitFor();
    const { agents } = (await api.GET('/api/v1/agents')).data!;
    const copy = agents.find((a) => a.name === 'Support (copy)');
    expect(copy).toMatchObject({ appId: 'demo' });

    // Delete asks first; Cancel keeps the agent, Delete removes it.
    await menuAction('Actions for Support (copy)', 'Delete…');
    const dialog = page.getByRole('dialog', { name: 'Delete agent' });
    await dialog.getByText('Support (copy)').waitFor();
    await dialog.getByRole('button', { name: 'Cancel' }).click();
    await dialog.waitFor({ state: 'detached' });
    expect((await api.GET('/api/v1/agents/{id}', agentPath(copy!.id))).response.status).toBe(200);
    await menuAction('Actions for Support (copy)', 'Delete…');
    await dialog.getByRole('button', { name: 'Delete', exact: true }).click();
    await page.getByRole('link', { name: 'Support (copy)' }).waitFor({ state: 'detached' });
    expect((await api.GET('/api/v1/agents/{id}', agentPath(copy!.id))).response.status).toBe(404);
  });

  it('runs a task now, cancels, retries and deletes it; a webhook task shows its URL and secret once', async () => {
    const api = t.api(key);
    const taskPath = (id: string) => ({ params: { path: { id } } });
    const create = async (name: string, description: string) => {
      const created = await api.POST('/api/v1/tasks', { body: { name, description, agentId, type: 'scheduled', schedule: '0 3 * * *' } });
      expect(created.response.status, JSON.stringify(created.error)).toBe(201);
      return created.data!.id;
    };
    const runsOf = (taskId: string) => async () => (await api.GET('/api/v1/tasks/{id}/runs', taskPath(taskId))).data!.runs;
    const statusOf = (taskId: string) => async () => (await api.GET('/api/v1/tasks/{id}', taskPath(taskId))).data!.status;
    const button = (name: string) => page.getByRole('button', { name, exact: true });

    // A slow run: started now, then cancelled. What the state does not allow is greyed out with why.
    const slow = await create('Slow digest', '/delay 3000\nsummarise the week');
    await open('Tasks');
    await page.getByRole('link', { name: 'Slow digest' }).click();
    await page.getByRole('heading', { name: 'Slow digest' }).waitFor();
    await expectGreyed(button('Retry'), 'only a failed task is retried (this one is pending)');
    await button('Run now').click();
    await until('a run of the task', runsOf(slow), (runs) => runs.length === 1);
    await page.getByRole('tabpanel').getByRole('link').first().waitFor();
    await page.getByText('running', { exact: true }).first().waitFor();
    await button('Cancel').click();
    await until('the cancelled run', runsOf(slow), (runs) => runs[0]?.status === 'cancelled');
    expect(await statusOf(slow)()).toBe('cancelled');
    await expectGreyed(button('Cancel'), 'nothing to cancel: the task is cancelled');
    expect(await page.getByRole('alert').count()).toBe(0);

    // Delete asks first: Keep keeps it.
    await button('Delete…').click();
    const dialog = page.getByRole('dialog', { name: 'Delete task' });
    await dialog.getByRole('button', { name: 'Keep' }).click();
    await dialog.waitFor({ state: 'detached' });
    expect((await api.GET('/api/v1/tasks/{id}', taskPath(slow))).response.status).toBe(200);
    await button('Delete…').click();
    await dialog.getByRole('button', { name: 'Delete', exact: true }).click();
    await page.getByRole('heading', { name: 'Tasks', exact: true }).waitFor();
    expect((await api.GET('/api/v1/tasks/{id}', taskPath(slow))).response.status).toBe(404);
    await page.getByRole('link', { name: 'Slow digest' }).waitFor({ state: 'detached' });

    // A run that fails, then retried from the page.
    const flaky = await create('Flaky import', '/fail upstream unavailable');
    await page.reload();
    await page.getByRole('link', { name: 'Flaky import' }).click();
    await button('Run now').click();
    await until('the failed task', statusOf(flaky), (status) => status === 'failed');
    await page.getByText('failed', { exact: true }).first().waitFor();
    // A locator, not a string predicate: the page's CSP refuses the eval Playwright polls a string with.
    // The 'failed' above may be the run's, listed first; the task's own status is read every 5 s.
    await expect.poll(() => button('Retry').first().isEnabled(), { timeout: 10_000 }).toBe(true);
    await button('Retry').click();
    const runs = await until('a second run', runsOf(flaky), (r) => r.length === 2 && r.every((run) => run.status === 'failed'));
    expect(runs).toHaveLength(2);
    await expect.poll(() => page.getByRole('tabpanel').getByRole('link').count()).toBe(2);
    await open('Tasks');

    // A webhook (triggered) task: its URL and secret are shown once, after creation.
    await page.getByRole('button', { name: 'New task' }).click();
    const form = page.getByRole('dialog', { name: 'New task' });
    await form.getByText('Webhook', { exact: false }).first().click();
    await form.getByLabel('Name').fill('Inbound order');
    await form.getByLabel(/^Description/).fill('Handle the order');
    await choose('Agent', 'Support', form);
    await form.getByRole('button', { name: 'Create task' }).click();
    const shown = page.getByRole('dialog', { name: 'Webhook created' });
    const secret = (await shown.getByTestId('webhook-secret').textContent())!;
    const { tasks } = (await api.GET('/api/v1/tasks')).data!;
    const webhook = (await api.GET('/api/v1/tasks/{id}', taskPath(tasks.find((x) => x.name === 'Inbound order')!.id))).data!;
    const { trigger } = webhook;
    if (trigger?.type !== 'webhook') throw new Error(`expected a webhook trigger, got ${JSON.stringify(trigger)}`);
    expect(trigger.url).toBeTruthy();
    await shown.getByText(trigger.url, { exact: true }).waitFor();
    expect(secret.length).toBeGreaterThan(16);
    // The API never shows the secret again, and neither does the page.
    expect(JSON.stringify(webhook)).not.toContain(secret);
    await page.keyboard.press('Escape');
    await page.getByRole('link', { name: 'Inbound order' }).click();
    await page.getByText(trigger.url).waitFor();
    expect(await page.content()).not.toContain(secret);
  });

  it('imports a SKILL.md and a zip by drag and drop, shows the content, assigns it to an agent with a priority', async () => {
    await open('Skills');
    const dropZone = page.getByText('Drop a SKILL.md, a zip or a tar here to import it');
    await dropFile(dropZone, 'SKILL.md', Buffer.from(SKILL_MD('shipping', 'Ship within two days.')), 'text/markdown');
    await page.getByRole('heading', { name: 'shipping' }).waitFor();
    await page.getByText('Ship within two days.', { exact: false }).waitFor();

    const archive = zip({
      'returns/SKILL.md': SKILL_MD('returns', 'Accept returns for 30 days.'),
      'returns/references/rules.md': '# Rules\n',
    });
    await dropFile(dropZone, 'returns.zip', archive, 'application/zip');
    await page.getByRole('heading', { name: 'returns' }).waitFor();
    await page.getByText('Accept returns for 30 days.', { exact: false }).waitFor();
    const { skills } = (await t.api(key).GET('/api/skills')).data!;
    expect(skills.map((s) => s.name).sort()).toEqual(['greetings', 'returns', 'shipping']);
    const returns = skills.find((s) => s.name === 'returns')!;

    await choose('Agent', 'Support');
    await page.getByLabel('Priority').fill('7');
    await page.getByRole('button', { name: 'Assign', exact: true }).click();
    await page.getByRole('cell', { name: 'priority 7' }).waitFor();
    const assigned = await t.api(key).GET('/api/skills/{id}/agents', { params: { path: { id: returns.id } } });
    expect(assigned.data!.agents).toEqual([expect.objectContaining({ agentId, priority: 7 })]);
  });

  it("shows an agent's SPIFFE ID, client metadata and decoded badge, and rotates and revokes its keys", async () => {
    await open('Identity', 'TBAC policies');
    await choose('Agent', 'Support');
    const metadata = (await t.api().GET('/api/v1/identity/agents/{agentId}/client-metadata.json', { params: { path: { agentId } } })).data!;
    await page.getByTestId('spiffe-id').filter({ hasText: metadata.spiffe_id }).waitFor();
    await page.getByText(metadata.client_id, { exact: true }).first().waitFor();
    // The page asks for the badge now (not the browser's cached copy): what it decodes is the API's badge
    // of this moment, skills assigned a test ago included.
    const decoded = page.locator('pre').filter({ hasText: '"credentialSubject"' });
    await decoded.filter({ hasText: '"name": "returns"' }).waitFor();
    const shown = JSON.parse((await decoded.textContent())!);
    const badge = JSON.parse(Buffer.from(metadata.badge.split('.')[1], 'base64url').toString());
    expect(shown.sub).toBe(metadata.spiffe_id);
    expect(shown.credentialSubject).toEqual(badge.credentialSubject);
    expect(shown.iss).toBe(badge.iss);
    const shownMetadata = JSON.parse((await page.locator('pre').filter({ hasText: '"jwks_uri"' }).textContent())!);
    expect(shownMetadata).toEqual({ ...metadata, badge: '(decoded beside)' });

    const keysOf = async () =>
      (await t.api(key).GET('/api/v1/identity/agents/{agentId}/keys', { params: { path: { agentId } } })).data!.keys;
    const before = await keysOf();
    await page.getByRole('button', { name: 'Rotate key' }).click();
    const after = await until('a new key', keysOf, (keys) => keys.length === before.length + 1);
    await expect.poll(() => page.getByRole('button', { name: 'Revoke' }).count()).toBe(after.filter((k) => k.status !== 'revoked').length);
    const old = after.find((k) => k.kid === before[0].kid)!;
    await page
      .getByRole('row')
      .filter({ hasText: old.kid.slice(0, 16) })
      .getByRole('button', { name: 'Revoke' })
      .click();
    await until(
      'the old key revoked',
      keysOf,
      (keys) => keys.find((k) => k.kid === old.kid)?.status === 'revoked' || !keys.some((k) => k.kid === old.kid),
    );
    await page
      .getByRole('row')
      .filter({ hasText: old.kid.slice(0, 16) })
      .getByRole('button', { name: 'Revoke' })
      .waitFor({ state: 'detached' });
  });

  it('creates an API key (shown once) and revokes it; filters the audit log; shows the budget and rate limit', async () => {
    const api = t.api(key);
    const set = await api.PUT('/api/v1/limits', { body: { monthlyBudgetUsd: 25, rateLimitPerMinute: 50_000 } });
    expect(set.response.status, JSON.stringify(set.error)).toBe(200);
    const limits = set.data!;
    await open('Usage');
    await page.getByText(`of $${limits.monthlyBudgetUsd},`, { exact: false }).waitFor();
    await page.getByText(`${limits.rateLimitPerMinute} requests/min`).waitFor();

    await page.getByRole('tab', { name: 'API keys' }).click();
    await page.getByRole('textbox', { name: 'Name' }).fill('reporting');
    await page.getByRole('button', { name: 'Create key' }).click();
    const once = page.getByRole('alert').filter({ hasText: 'shown this once' });
    const secret = (await once.locator('code').textContent())!;
    expect(secret).toMatch(/^agk_/);
    expect((await t.api(secret).GET('/api/v1/tenant')).data!.credential.permissions).toEqual(['agents:read']);
    const listed = (await api.GET('/api/v1/api-keys')).data;
    expect(JSON.stringify(listed)).not.toContain(secret);
    await once.getByRole('button').click();
    await once.waitFor({ state: 'detached' });
    expect(await page.content()).not.toContain(secret);

    await page.getByRole('row').filter({ hasText: 'reporting' }).getByRole('button', { name: 'Revoke' }).click();
    await page.getByRole('dialog', { name: 'Revoke API key' }).getByRole('button', { name: 'Revoke' }).click();
    // The list shows active keys (GET /api/v1/api-keys without revoked ones): the revoked key leaves it.
    await page.getByRole('row').filter({ hasText: 'reporting' }).waitFor({ state: 'detached' });
    expect((await t.api(secret).GET('/api/v1/tenant')).response.status).toBe(401);

    await page.getByRole('tab', { name: 'Audit log' }).click();
    await page.getByRole('textbox', { name: 'Action' }).fill('api_key.revoked');
    const expected = (await api.GET('/api/v1/audit-events', { params: { query: { action: 'api_key.revoked' } } })).data!.events;
    expect(expected.length).toBeGreaterThan(0);
    const rows = page.getByRole('tabpanel', { name: 'Audit log' }).getByRole('row');
    await expect.poll(() => rows.count()).toBe(expected.length);
    for (const text of await rows.allTextContents()) expect(text).toContain('api_key.revoked');
  });

  it('raised no page error (CSP included)', () => {
    expect(pageErrors.filter((e) => !e.startsWith('console: Failed to load resource'))).toEqual([]);
  });
});
