import type * as store from './store.js';

/** The shapes of access tokens: their claims, their stored state, and a token the hot path verified. */

export interface Act {
  sub: string;
  act?: Act;
}

export type AccessTokenKind = 'exchange' | 'client_credentials';

export interface AccessClaims {
  iss: string;
  sub: string;
  aud: string;
  client_id: string;
  scope: string;
  iat: number;
  exp: number;
  jti: string;
  act?: Act;
  tenant_id: string;
}

/** A token's row with the state of its source credentials: its agent key (identity's) and its API key (tenancy's). */
export interface TokenState extends store.TokenRecord {
  /** Whether the API key the token was issued to still exists unrevoked (null: none). */
  api_key_in_force: boolean | null;
}

/**
 * A token whose signature and claims verified, as the authorization hot path keeps it (by the token
 * itself, in `ctx.hot.verified`): its claims (shared, never changed) and what the hot path derives
 * from them once per token rather than once per request.
 */
export interface VerifiedToken {
  readonly claims: AccessClaims;
  /** The agents the token names (subject, audience, actors), checked on every use. */
  readonly agents: readonly string[];
  /** Derived by the caller on first use and kept with the token (authorize.ts). */
  derived?: unknown;
}
