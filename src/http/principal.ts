/** The permissions an API key or access token can carry (spec section 5, CONTRACT.md). */
export const PERMISSIONS = ['agents:read', 'agents:write', 'settings:read', 'settings:write', 'skills:read', 'skills:write'] as const;

export type Permission = (typeof PERMISSIONS)[number];

export const isPermission = (value: string): value is Permission => (PERMISSIONS as readonly string[]).includes(value);

/** Who is acting: recorded on every audit event. */
export interface Actor {
  type: 'api_key' | 'access_token' | 'cli' | 'system' | 'agent';
  id: string | null;
}

/** The authenticated caller of a request. */
export interface Principal {
  tenantId: string;
  actor: Actor;
  permissions: ReadonlySet<Permission>;
  /**
   * The agent an agent's own access token (client_credentials with its private key) is bound to: such
   * a principal reaches only that agent (http/auth.ts, agentScope).
   */
  agentId?: string;
  /**
   * The API key the credential is, or was minted from (a client_credentials access token): the
   * request counts against that key's request limit, in the same count as the key's own requests.
   */
  apiKeyId?: string;
  /** The API key's own request limit, when it has one (overrides the tenant's). */
  rateLimitPerMinute?: number | null;
}
