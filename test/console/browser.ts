import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { type BrowserContext, chromium } from 'playwright-core';

/*
 * One headless Chromium per test file, driven by playwright-core: Debian's own build (.ci/run installs
 * it with apt-get install chromium), a fresh profile each time, nothing reaching out to the network.
 */

const CHROMIUM = '/usr/bin/chromium';
export const hasChromium = fs.existsSync(CHROMIUM);
export const CONSOLE_DIST = path.resolve(import.meta.dirname, '../../packages/console/dist');
export const SCREENSHOTS = path.resolve(import.meta.dirname, '../../docs');

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

export async function launchBrowser(viewport = { width: 1280, height: 800 }): Promise<TestBrowser> {
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
