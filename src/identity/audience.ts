import { parseAgentSpiffeId } from './spiffe.js';

/**
 * The three equivalent ways to name an agent as an audience (spec 2.9):
 * - SPIFFE ID `spiffe://{trust_domain}/tenant/<tenant_id>/agent/<agent_id>`,
 * - client ID URL `{base_url}/api/v1/identity/agents/<agent_id>/client-metadata.json`,
 * - the bare agent id.
 */

export interface AudienceRef {
  agentId: string;
  /** Present when the value was a SPIFFE ID: it must match the agent's tenant. */
  tenantId?: string;
}

const BARE_ID = /^[A-Za-z0-9_-]{1,64}$/;

export function clientIdUrl(publicBaseUrl: string, agentId: string) {
  return `${publicBaseUrl}/api/v1/identity/agents/${agentId}/client-metadata.json`;
}

export function agentJwksUrl(publicBaseUrl: string, agentId: string) {
  return `${publicBaseUrl}/api/v1/identity/agents/${agentId}/jwks.json`;
}

/** Which agent an audience value names, or null when it is none of the three formats. */
export function parseAudience(value: string, trustDomain: string, publicBaseUrl: string): AudienceRef | null {
  if (value.startsWith('spiffe:')) {
    const parsed = parseAgentSpiffeId(value, trustDomain);
    return parsed && BARE_ID.test(parsed.agentId) ? parsed : null;
  }
  const prefix = `${publicBaseUrl}/api/v1/identity/agents/`;
  const suffix = '/client-metadata.json';
  if (value.startsWith(prefix) && value.endsWith(suffix)) {
    const agentId = value.slice(prefix.length, value.length - suffix.length);
    return BARE_ID.test(agentId) ? { agentId } : null;
  }
  return BARE_ID.test(value) ? { agentId: value } : null;
}
