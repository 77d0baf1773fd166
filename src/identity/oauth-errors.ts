/**
 * Errors of the OAuth endpoints (token, introspection): RFC 6749 section 5.2 bodies
 * `{ error, error_description }`, HTTP 400, except `invalid_client` (401), `server_error` (500) and
 * `temporarily_unavailable` (503: the database cannot be reached).
 * RFC 6749 limits both strings to printable ASCII without `"` and `\`; `oauthDescription` enforces it.
 */

export type OAuthErrorCode =
  | 'invalid_request'
  | 'invalid_client'
  | 'invalid_grant'
  | 'unauthorized_client'
  | 'unsupported_grant_type'
  | 'invalid_scope'
  | 'invalid_target'
  | 'insufficient_scope'
  /** The authorization endpoint: no response type is supported (RFC 6749 4.1.2.1); it exists to say so. */
  | 'unsupported_response_type'
  /** Too many token requests from one client (429; registered for the token endpoint by RFC 8628). */
  | 'slow_down'
  | 'server_error'
  /** The database cannot be reached (503 with Retry-After), as RFC 6749 4.1.2.1 names it. */
  | 'temporarily_unavailable';

export class OAuthError extends Error {
  constructor(
    readonly error: OAuthErrorCode,
    readonly description: string,
    readonly status: number = error === 'server_error'
      ? 500
      : error === 'temporarily_unavailable'
        ? 503
        : error === 'invalid_client'
          ? 401
          : 400,
    readonly headers: Record<string, string> = {},
  ) {
    super(description);
  }

  body() {
    return { error: this.error, error_description: oauthDescription(this.description) };
  }
}

/** Printable ASCII (%x20-21 / %x23-5B / %x5D-7E): anything else becomes `?`; at most 400 characters. */
function oauthDescription(text: string): string {
  return text.replace(/[^\x20\x21\x23-\x5B\x5D-\x7E]/g, '?').slice(0, 400);
}
