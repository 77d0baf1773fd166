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
  rate_limit_per_minute: number | null;
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
  monthly_budget_usd: number | null;
  created_at: string;
  updated_at: string;
}

export interface ConversationTable {
  id: string;
  tenant_id: string;
  agent_id: string;
  app_id: string | null;
  name: string | null;
  status: string;
  metadata: string;
  message_count: number;
  last_message_at: string | null;
  duration_ms: number;
  active_run_id: string | null;
  created_by: string | null;
  created_at: string;
  updated_at: string;
  deleted_at: string | null;
}

export interface MessageTable {
  id: string;
  tenant_id: string;
  conversation_id: string;
  run_id: string | null;
  role: string;
  content: string;
  tool_calls: string | null;
  token_usage: string | null;
  attachments: string | null;
  created_at: string;
}

export interface RunTable {
  id: string;
  tenant_id: string;
  agent_id: string;
  conversation_id: string | null;
  task_id: string | null;
  kind: string;
  status: string;
  model: string;
  input: string;
  options: string;
  output: string;
  error: string | null;
  cost: number;
  input_tokens: number;
  output_tokens: number;
  duration_ms: number | null;
  tool_calls: string;
  steps: string;
  warnings: string;
  cancel_requested: number;
  lease_owner: string | null;
  lease_expires_at: string | null;
  created_at: string;
  started_at: string | null;
  completed_at: string | null;
}

export interface RunEventTable {
  run_id: string;
  seq: number;
  event: string;
  data: string;
}

export interface FileTable {
  id: string;
  tenant_id: string;
  name: string;
  content_type: string;
  size: number;
  data: string;
  created_by: string | null;
  created_at: string;
}

export interface Database {
  tenants: TenantTable;
  api_keys: ApiKeyTable;
  audit_events: AuditEventTable;
  agents: AgentTable;
  conversations: ConversationTable;
  messages: MessageTable;
  runs: RunTable;
  run_events: RunEventTable;
  files: FileTable;
}
