import type { ToolSpec } from '../agents/schemas.js';

/**
 * The agent badge: a W3C VC 2.0 credential secured with JOSE (`typ: vc+jwt`, `cty: vc`). The JWT
 * payload IS the credential (no `vc` claim); the registered claims repeat it: `iss` = `issuer`,
 * `sub` = `credentialSubject.id` (the SPIFFE ID), `jti` = `id`, `iat`/`exp` = `validFrom`/`validUntil`.
 * It describes what the agent can do: its tools and the skills it may use (id, name, version). Tool sources
 * are described without secrets: never an MCP server's URL or headers.
 */

export const BADGE_LIFETIME_S = 86_400;
const VC_CONTEXT_V2 = 'https://www.w3.org/ns/credentials/v2';

const BUILTIN_TOOLS: Record<string, string[]> = {
  skills: ['skill_discover', 'skill_query', 'skill_request'],
  connectors: ['connector_discover', 'connector_request'],
};

export interface ToolCapability {
  type: 'builtin' | 'mcp' | 'agent' | 'a2a';
  name?: string;
  tools?: string[];
  agentId?: string;
}

function toolCapabilities(tools: ToolSpec[]): ToolCapability[] {
  return tools.map((t): ToolCapability => {
    if (t.type === 'builtin') return { type: 'builtin', name: t.name, tools: BUILTIN_TOOLS[t.name] ?? [] };
    if (t.type === 'mcp') return { type: 'mcp', ...(t.name ? { name: t.name } : {}), ...(t.allowedTools ? { tools: t.allowedTools } : {}) };
    if (t.type === 'a2a') return { type: 'a2a', name: t.name, tools: [`a2a_${t.name}`] };
    return { type: 'agent', agentId: t.agentId, ...(t.name ? { name: t.name } : {}) };
  });
}

export interface BadgeSubject {
  spiffeId: string;
  agentId: string;
  tenantId: string;
  name: string;
  hosting: string;
  tools: ToolSpec[];
  /** The skills the agent may use now: assigned, enabled, active. */
  skills: { id: string; name: string; version: string | null }[];
}

/**
 * Who issues a badge, its id, and when it is valid (`iat` to `exp`, seconds since the epoch).
 * `compact` drops the per-source detail and keeps counts, for agents whose full list would not fit
 * the 5 KB metadata document.
 */
export interface BadgeIssue {
  issuer: string;
  id: string;
  iat: number;
  exp: number;
  compact?: boolean;
}

/** The credential (= JWT payload, minus the registered claims the signer adds). */
export function badgeCredential(subject: BadgeSubject, { issuer, id, iat, exp, compact = false }: BadgeIssue) {
  const capabilities = compact
    ? {
        toolSources: subject.tools.length,
        toolTypes: [...new Set(subject.tools.map((t) => t.type))],
        truncated: true,
        skillCount: subject.skills.length,
        skills: [],
      }
    : { tools: toolCapabilities(subject.tools), skills: subject.skills };
  return {
    '@context': [VC_CONTEXT_V2],
    id,
    type: ['VerifiableCredential', 'AgentCapabilityCredential'],
    issuer,
    validFrom: new Date(iat * 1000).toISOString(),
    validUntil: new Date(exp * 1000).toISOString(),
    credentialSubject: {
      id: subject.spiffeId,
      type: 'Agent',
      agentId: subject.agentId,
      tenantId: subject.tenantId,
      name: subject.name,
      hosting: subject.hosting,
      capabilities,
    },
  };
}
