/** The hot path's caches (verified tokens, revocation state, policies, modes) are TtlCaches. */
export { TtlCache } from '../cache.js';

/** How long the hot path may trust what it read about policies, modes and token revocation. */
export const DECISION_CACHE_MS = 1_000;
