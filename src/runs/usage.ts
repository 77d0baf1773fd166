import * as store from './store.js';

/**
 * What other domains may count of runs, inside their own transactions (tenancy's limits: running
 * runs, the month's spend and what active runs reserve, at admission). The runs domain keeps the SQL (store.ts); app.ts hands
 * this to tenancy, which declares the shape it needs (tenancy/limits.ts RunUsage).
 */
export const runUsage = {
  spendAndReservedSince: store.spendAndReservedSince,
  runningRuns: store.runningRuns,
};
