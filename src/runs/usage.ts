import * as store from './store.js';

/**
 * What other domains may count of runs, inside their own transactions (tenancy's limits: running
 * runs and the month's spend at admission). The runs domain keeps the SQL (store.ts); app.ts hands
 * this to tenancy, which declares the shape it needs (tenancy/limits.ts RunUsage).
 */
export const runUsage = {
  spendSince: store.spendSince,
  spendAndLargestSince: store.spendAndLargestSince,
  runningRuns: store.runningRuns,
};
