import { onTestFinished } from 'vitest';

/**
 * fetch-event-source reads `window` and `document` (browser globals): minimal ones for Node, for the
 * test that calls this, removed when it ends. The worker runs other files after this one in the same
 * process (isolate: false), and libraries take a global `window` for a browser (hey-api's reads
 * `location`), so nothing may stay behind.
 */
export function browserShims() {
  const g = globalThis as Record<string, unknown>;
  const installed = (['window', 'document'] as const).filter((name) => g[name] === undefined);
  g.window ??= { fetch: globalThis.fetch, setTimeout, clearTimeout };
  g.document ??= { hidden: false, addEventListener() {}, removeEventListener() {} };
  onTestFinished(() => {
    for (const name of installed) delete g[name];
  });
}
