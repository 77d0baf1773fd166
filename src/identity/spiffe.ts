/**
 * SPIFFE ID syntax (SPIFFE-ID standard): `spiffe://<trust-domain>/<path>`.
 * Trust domain: lowercase letters, digits, `.`, `-`, `_` (no port, userinfo, percent-encoding), at
 * most 255 characters. Path: segments of `[a-zA-Z0-9.-_]`, none empty, `.` or `..`, no trailing
 * slash. The whole ID is at most 2048 bytes.
 */

const TRUST_DOMAIN = /^[a-z0-9._-]+$/;
const SEGMENT = /^[a-zA-Z0-9._-]+$/;
export const MAX_SPIFFE_ID_BYTES = 2048;
const MAX_TRUST_DOMAIN = 255;

/** Why a trust domain name is invalid, or null when it is valid. */
export function trustDomainError(td: string): string | null {
  if (!td) return 'must not be empty';
  if (td.length > MAX_TRUST_DOMAIN) return `must be at most ${MAX_TRUST_DOMAIN} characters`;
  if (!TRUST_DOMAIN.test(td)) {
    return 'must be a SPIFFE trust domain: lowercase letters, digits, ".", "-" and "_" only (no scheme, port, path or uppercase)';
  }
  return null;
}

export interface SpiffeId {
  trustDomain: string;
  /** Path segments, e.g. ['tenant', '<id>', 'agent', '<id>']. */
  segments: string[];
}

/** Parses and validates a SPIFFE ID; returns null for anything that breaks the syntax rules. */
export function parseSpiffeId(value: string): SpiffeId | null {
  if (typeof value !== 'string' || Buffer.byteLength(value, 'utf8') > MAX_SPIFFE_ID_BYTES) return null;
  if (!value.startsWith('spiffe://')) return null;
  const rest = value.slice('spiffe://'.length);
  const slash = rest.indexOf('/');
  const trustDomain = slash === -1 ? rest : rest.slice(0, slash);
  if (trustDomainError(trustDomain)) return null;
  if (slash === -1) return { trustDomain, segments: [] };
  const segments = rest.slice(slash + 1).split('/');
  for (const s of segments) {
    if (!s || s === '.' || s === '..' || !SEGMENT.test(s)) return null;
  }
  return { trustDomain, segments };
}

export function agentSpiffeId(trustDomain: string, tenantId: string, agentId: string): string {
  return `spiffe://${trustDomain}/tenant/${tenantId}/agent/${agentId}`;
}

/** The tenant and agent named by an agent SPIFFE ID of this trust domain, or null. */
export function parseAgentSpiffeId(value: string, trustDomain: string): { tenantId: string; agentId: string } | null {
  const id = parseSpiffeId(value);
  if (!id || id.trustDomain !== trustDomain) return null;
  const [t, tenantId, a, agentId, ...more] = id.segments;
  if (t !== 'tenant' || a !== 'agent' || !tenantId || !agentId || more.length) return null;
  return { tenantId, agentId };
}
