/**
 * Row types of every table, as Kysely sees them.
 *
 * Both dialects store the same shapes: timestamps are ISO-8601 UTC strings with milliseconds
 * (fixed width, so they sort and compare as text), JSON is text, booleans are 0/1 integers.
 * That keeps one set of queries valid on SQLite and PostgreSQL.
 */
export interface TenantTable {
  id: string;
  name: string;
  settings: string;
  created_at: string;
}

export interface ApiKeyTable {
  id: string;
  tenant_id: string;
  name: string;
  /** SHA-256 of the secret part, hex. The secret itself is never stored. */
  secret_hash: string;
  permissions: string;
  created_by: string | null;
  created_at: string;
  revoked_at: string | null;
}

export interface AuditEventTable {
  id: string;
  tenant_id: string;
  actor_type: string;
  actor_id: string | null;
  action: string;
  resource_type: string;
  resource_id: string | null;
  detail: string;
  created_at: string;
}

export interface AgentTable {
  id: string;
  tenant_id: string;
  app_id: string;
  team_id: string | null;
  name: string;
  role: string | null;
  description: string | null;
  model: string;
  system_prompt: string | null;
  context_prompt: string | null;
  status: string;
  hosting: string;
  tools: string;
  configuration: string;
  created_at: string;
  updated_at: string;
}

export interface Database {
  tenants: TenantTable;
  api_keys: ApiKeyTable;
  audit_events: AuditEventTable;
  agents: AgentTable;
}
