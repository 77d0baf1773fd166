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

export interface SkillTable {
  id: string;
  tenant_id: string;
  name: string;
  description: string;
  category: string | null;
  source: string;
  store_id: string | null;
  status: string;
  instructions: string;
  metadata: string;
  front_matter: string;
  created_by: string | null;
  created_at: string;
  updated_at: string;
}

export interface SkillFileTable {
  skill_id: string;
  tenant_id: string;
  kind: string;
  name: string;
  language: string | null;
  content: string;
  size: number;
  position: number;
}

export interface SkillAssignmentTable {
  skill_id: string;
  agent_id: string;
  tenant_id: string;
  enabled: number;
  priority: number;
  config: string;
  assigned_by: string | null;
  created_at: string;
  updated_at: string;
}

export interface ConnectorConnectionTable {
  id: string;
  tenant_id: string;
  connector_id: string;
  /** JSON, secrets included; never returned unmasked. */
  configuration: string;
  connected_by: string | null;
  created_at: string;
  updated_at: string;
}

export interface ConnectorRequestTable {
  id: string;
  tenant_id: string;
  agent_id: string;
  connector_id: string;
  reason: string;
  status: string;
  task_id: string | null;
  requested_by: string | null;
  decided_by: string | null;
  created_at: string;
  decided_at: string | null;
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
  skills: SkillTable;
  skill_files: SkillFileTable;
  skill_assignments: SkillAssignmentTable;
  connector_connections: ConnectorConnectionTable;
  connector_requests: ConnectorRequestTable;
}
