/** Identity's caches (verified tokens, revocation state, policies, modes, platform keys, badges) are TtlCaches on the app's clock. */
export { TtlCache } from '../cache.js';

/** How long the hot path may trust what it read about policies, modes and token revocation. */
export const DECISION_CACHE_MS = 1_000;
