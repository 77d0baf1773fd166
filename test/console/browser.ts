import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { type BrowserContext, chromium, type Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe } from 'vitest';
import { startApp, type TestApp } from '../helpers/app.js';

/*
 * One headless Chromium per test file, driven by playwright-core: Debian's own build (.ci/run installs
 * it with apt-get install chromium), a fresh profile each time, nothing reaching out to the network.
 */

const CHROMIUM = '/usr/bin/chromium';
export const hasChromium = fs.existsSync(CHROMIUM);
export const CONSOLE_DIST = path.resolve(import.meta.dirname, '../../packages/console/dist');
const SCREENSHOTS = path.resolve(import.meta.dirname, '../../docs');

/** The built console must exist: `npm run build` (pretest) builds it, as `npm install` does. */
export function requireConsoleBuild() {
  if (!fs.existsSync(path.join(CONSOLE_DIST, 'index.html'))) {
    throw new Error(`no built console in ${CONSOLE_DIST}: run npm run build (or npm run build -w @agentry/console) first`);
  }
}

export interface TestBrowser {
  context: BrowserContext;
  close(): Promise<void>;
}

async function launchBrowser(viewport = { width: 1280, height: 800 }): Promise<TestBrowser> {
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'agentry-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    viewport,
    colorScheme: 'light',
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--no-first-run',
      '--disable-dev-shm-usage',
    ],
  });
  return {
    context,
    async close() {
      await context.close();
      fs.rmSync(profile, { recursive: true, force: true });
    },
  };
}

/**
 * A page of a new browser. Its waits give up after 15 s, below a test's own timeout, so that a failed
 * wait says what it waited for; what it raises goes to `errors`: uncaught exceptions and console errors,
 * among them Content-Security-Policy violations.
 */
export async function openRecordedPage(errors: string[]): Promise<{ browser: TestBrowser; page: Page }> {
  const browser = await launchBrowser();
  const page = await browser.context.newPage();
  page.setDefaultTimeout(15_000);
  page.on('pageerror', (err) => errors.push(`pageerror: ${err.message}`));
  page.on('console', (message) => {
    if (message.type() === 'error') errors.push(`console: ${message.text()}`);
  });
  return { browser, page };
}

/** After a failed test, a screenshot of what the page showed, named in the log for whoever reads it. */
export function screenshotFailures(prefix: string, page: () => Page | undefined) {
  afterEach(async (context) => {
    const shown = page();
    if (context.task.result?.state !== 'fail' || !shown) return;
    const file = path.join(os.tmpdir(), `${prefix}-${context.task.name.replace(/\W+/g, '-').slice(0, 60)}.png`);
    await shown.screenshot({ path: file }).catch(() => {});
    console.warn(`screenshot of the failed page: ${file}`);
  });
}

/**
 * A screenshot of docs/console.md, `console-<name>.png`: written into docs/ with AGENTRY_WRITE_SCREENSHOTS=1
 * (npm run screenshots), else into the temporary folder, so that every run takes it (and can fail on it)
 * while leaving docs/ as it was. Transitions are finished first, so a dialog is not caught half faded;
 * `fullPage` takes a page longer than the window whole.
 */
export async function docsScreenshot(page: Page, name: string, { fullPage = false } = {}) {
  const folder = process.env.AGENTRY_WRITE_SCREENSHOTS === '1' ? SCREENSHOTS : os.tmpdir();
  await page.screenshot({ path: path.join(folder, `console-${name}.png`), animations: 'disabled', fullPage });
}

/** Signs in with an API key on the console's first page, as a person does, and waits for the agents page. */
/** Reads of a conversation's messages (what the console refetches as a turn ends). */
export const CONVERSATION_MESSAGES = /\/api\/v1\/conversations\/[^/]+\/messages/;

export interface HeldResponses {
  /** Lets the held responses (and any later ones) through. */
  release(): void;
  /** How many requests were held. */
  count(): number;
  /** Releases them, waits until each was answered, and stops holding. */
  stop(): Promise<void>;
}

/**
 * Holds the answers to GET requests matching `pattern` (the real server's responses, fetched at once)
 * until `release()`: what the page shows before they arrive stays on screen while the test looks at it.
 * `first` holds only the first such request and lets the others through.
 */
export async function holdResponses(page: Page, pattern: RegExp, { first = false } = {}): Promise<HeldResponses> {
  let release!: () => void;
  const released = new Promise<void>((resolve) => {
    release = resolve;
  });
  const held: Promise<void>[] = [];
  await page.route(pattern, (route) => {
    if (route.request().method() !== 'GET' || (first && held.length > 0)) return route.continue();
    const answered = (async () => {
      const response = await route.fetch();
      await released;
      await route.fulfill({ response });
    })();
    held.push(answered);
    return answered;
  });
  return {
    release,
    count: () => held.length,
    async stop() {
      release();
      await Promise.all(held);
      await page.unroute(pattern);
    },
  };
}

export async function signIn(page: Page, url: string, key: string) {
  await page.goto(url);
  await page.getByLabel('API key or access token').fill(key);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('heading', { name: 'Agents' }).waitFor();
}

/** What a console test file works with: the app serving the built console, its tenant's key, a signed-in page. */
export interface ConsoleSession {
  t: TestApp;
  url: string;
  key: string;
  browser: TestBrowser;
  page: Page;
  /** Uncaught exceptions and console errors of the page (CSP violations among them). */
  pageErrors: string[];
}

/**
 * The usual frame of a console test file: `describe` when Chromium is there (else skipped, saying
 * why), with an app serving the built console, a tenant ('Acme'), a page signed in with its key, a
 * screenshot of a failed test, and all of it closed after the file; `env` adds to the app's configuration. The session's fields are set once
 * the file's first beforeAll has run.
 */
export function describeConsole(
  name: string,
  file: string,
  body: (session: ConsoleSession) => void,
  /** The app's configuration beyond the test defaults, or what makes it (a mock provider started first...). */
  env: Record<string, string> | (() => Promise<Record<string, string>>) = {},
) {
  if (!hasChromium) console.warn(`${file} skipped: no /usr/bin/chromium (apt-get install chromium)`);
  (hasChromium ? describe : describe.skip)(name, () => {
    const session = { pageErrors: [] as string[] } as ConsoleSession;
    beforeAll(async () => {
      requireConsoleBuild();
      session.t = await startApp({ ...(typeof env === 'function' ? await env() : env), CONSOLE_DIR: CONSOLE_DIST });
      session.url = await session.t.listen();
      ({ key: session.key } = await session.t.tenant('Acme'));
      ({ browser: session.browser, page: session.page } = await openRecordedPage(session.pageErrors));
      await signIn(session.page, session.url, session.key);
    });
    screenshotFailures(`agentry-${path.basename(file, '.test.ts')}-failed`, () => session.page);
    afterAll(async () => {
      await session.browser?.close();
      await session.t?.close();
    });
    body(session);
  });
}
