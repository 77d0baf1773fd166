import type { Generated } from 'kysely';

/**
 * Row types of every table, as Kysely sees them.
 *
 * Both dialects store the same shapes: timestamps are ISO-8601 UTC strings with milliseconds
 * (fixed width, so they sort and compare as text), JSON is text, booleans are 0/1 integers.
 * That keeps one set of queries valid on SQLite and PostgreSQL.
 */
interface TenantTable {
  id: string;
  name: string;
  settings: string;
  created_at: string;
}

interface ApiKeyTable {
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

interface AuditEventTable {
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
  /** The end user the conversation is with (memory/): their memory blocks join its runs' system prompt. */
  user_id: string | null;
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
  /** When the retention sweep compacted the run's events down to its terminal one (0017); null: not yet. */
  events_compacted_at?: string | null;
  /** The W3C traceparent of the span the run was started in (0019), for work continuing it elsewhere. */
  traceparent?: string | null;
  /** The final answer validated against the run's response format, as JSON (0015); null without one. */
  structured_output?: string | null;
  /** Why the model stopped (0020): stop, length, content-filter, max_steps...; null when no step answered. */
  finish_reason?: string | null;
  /** 1 when older history was left out of the run's prompt without a summary (0020). */
  context_truncated?: number;
  /** The run's worst-case cost in USD, reserved against its budgets while it is active (0021). */
  reserved_usd?: number;
}

interface RunEventTable {
  run_id: string;
  seq: number;
  event: string;
  data: string;
}

interface FileTable {
  id: string;
  tenant_id: string;
  name: string;
  content_type: string;
  size: number;
  data: string;
  created_by: string | null;
  created_at: string;
  /** The run and tool call that made the file (a code execution's /output); null for an upload. */
  run_id: string | null;
  tool_call_id: string | null;
}

/** Platform signing keys. Status is derived from the timestamps (see identity/keys.ts). */
export interface IdentityPlatformKeyTable {
  kid: string;
  generation: number;
  public_jwk: string;
  /** AES-256-GCM sealed private JWK (identity/encryption.ts). */
  private_jwk: string;
  created_at: string;
  /** Signs from this time on; published from `created_at` (publish before sign). */
  activates_at: string;
  /** Stops signing at this time (a newer key takes over); published for the longest token lifetime after. */
  retires_at: string | null;
  revoked_at: string | null;
}

export interface IdentityAgentKeyTable {
  kid: string;
  tenant_id: string;
  agent_id: string;
  generation: number;
  public_jwk: string;
  private_jwk: string;
  /** active | rotated | revoked */
  status: string;
  created_at: string;
  rotated_at: string | null;
  /** Rotated keys stay published until then. */
  expires_at: string | null;
  revoked_at: string | null;
}

/** Every token the platform issued (and every client assertion seen, for replay protection). */
export interface IdentityTokenTable {
  jti: string;
  tenant_id: string;
  /** svid | exchange | client_credentials | assertion */
  kind: string;
  agent_id: string | null;
  client_id: string | null;
  /** The API key the token derives from: revoking the key deactivates the token. */
  api_key_id: string | null;
  /** The agent key the token derives from: revoking the key deactivates the token. */
  agent_key_id: string | null;
  parent_jti: string | null;
  issued_at: string;
  expires_at: string;
  revoked_at: string | null;
}

export interface TbacPolicyTable {
  id: string;
  tenant_id: string;
  caller_agent_id: string;
  callee_agent_id: string;
  tool_name: string;
  effect: string;
  description: string | null;
  conditions: string | null;
  created_at: string;
  updated_at: string;
}

export interface TaskTable {
  id: string;
  tenant_id: string;
  agent_id: string;
  app_id: string;
  team_id: string | null;
  name: string;
  description: string;
  type: string;
  schedule: string | null;
  timezone: string | null;
  priority: string;
  due_at: string | null;
  input: string;
  requires_approval: number;
  status: string;
  misfire_policy: string;
  overlap_policy: string;
  max_attempts: number;
  backoff_seconds: number;
  trigger_type: string | null;
  trigger_event: string | null;
  trigger_task_id: string | null;
  /** AES-256-GCM ciphertext of the webhook secret (tasks/secrets.ts); never the secret itself. */
  webhook_secret: string | null;
  approval_action: string | null;
  approval_payload: string | null;
  requested_by_type: string | null;
  requested_by_id: string | null;
  decision: string | null;
  decided_by_type: string | null;
  decided_by_id: string | null;
  decided_at: string | null;
  next_run_at: string | null;
  last_run_id: string | null;
  last_run_at: string | null;
  last_error: string | null;
  created_by: string | null;
  created_at: string;
  updated_at: string;
  deleted_at: string | null;
}

export interface TaskJobTable {
  id: string;
  tenant_id: string;
  task_id: string;
  kind: string;
  reason: string;
  input: string;
  serial: number;
  priority_rank: number;
  due_at: string | null;
  state: string;
  attempts: number;
  max_attempts: number;
  backoff_seconds: number;
  available_at: string;
  lease_owner: string | null;
  lease_expires_at: string | null;
  claimed_by: string | null;
  run_id: string | null;
  error: string | null;
  created_at: string;
  updated_at: string;
  /** The W3C traceparent of the fire or request that queued the job (0019); its span links to it. */
  traceparent: string | null;
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

export interface TaskFireTable {
  id: string;
  tenant_id: string;
  task_id: string;
  source: string;
  fire_key: string;
  scheduled_for: string | null;
  decided_at: string;
  decision: string;
  reason: string | null;
  missed: number;
  job_id: string | null;
  detail: string;
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

/** A client's Idempotency-Key and what the request that claimed it started (idempotency/store.ts). */
/** A conversation's running summary of the turns its model's window no longer holds (0015, conversations/). */
interface ConversationSummaryTable {
  conversation_id: string;
  tenant_id: string;
  summary: string;
  through_message_id: string;
  updated_at: string;
}

export interface IdempotencyKeyTable {
  tenant_id: string;
  key: string;
  fingerprint: string;
  run_id: string | null;
  task_id: string | null;
  message_id: string | null;
  response_status: number | null;
  created_at: string;
  expires_at: string;
}

/** An agent's memory block, agent-wide (user_id null) or one end user's (memory/store.ts). */
export interface MemoryBlockTable {
  id: string;
  tenant_id: string;
  agent_id: string;
  user_id: string | null;
  label: string;
  value: string;
  version: number;
  created_at: string;
  updated_at: string;
  updated_by_type: string;
  updated_by_id: string | null;
}

/** Every change of a memory block: the text after it (null: deleted) and before it. */
export interface MemoryBlockVersionTable {
  id: string;
  tenant_id: string;
  agent_id: string;
  user_id: string | null;
  label: string;
  version: number;
  change: string;
  value: string | null;
  previous_value: string | null;
  actor_type: string;
  actor_id: string | null;
  run_id: string | null;
  created_at: string;
}

/** A tool call waiting for a person, and its decision (approvals/store.ts). */
export interface ToolApprovalTable {
  id: string;
  tenant_id: string;
  agent_id: string;
  run_id: string;
  conversation_id: string | null;
  tool_call_id: string;
  tool_name: string;
  arguments: string;
  reason: string;
  status: string;
  on_timeout: string;
  decided_arguments: string | null;
  decision_reason: string | null;
  decided_by_type: string | null;
  decided_by_id: string | null;
  decided_at: string | null;
  resumed_at: string | null;
  expires_at: string;
  created_at: string;
}

/** What resuming a run awaiting approval needs (runs/store.ts). */
interface RunSuspensionTable {
  run_id: string;
  tenant_id: string;
  state: string;
  created_at: string;
}

/** A tenant's code execution running now (code/store.ts). */
interface CodeSlotTable {
  tenant_id: string;
  slot: number;
  /** The execution holding the slot. */
  holder: string;
  /** When the slot frees if its execution never says it ended (its replica died). */
  expires_at: string;
}

/** A tenant's knowledge base (docs/knowledge.md): its documents are chunked and embedded with its settings. */
export interface KnowledgeBaseTable {
  id: string;
  tenant_id: string;
  name: string;
  description: string | null;
  embedding_model: string;
  /** The model that re-ranks search candidates; null: none. */
  rerank_model: string | null;
  chunk_max_chars: number;
  chunk_overlap_chars: number;
  document_count: number;
  chunk_count: number;
  created_at: string;
  updated_at: string;
}

/** A document of a knowledge base, and its ingestion job (status, lease, attempts). */
export interface KnowledgeDocumentTable {
  id: string;
  tenant_id: string;
  knowledge_base_id: string;
  file_id: string | null;
  filename: string | null;
  title: string | null;
  source_url: string | null;
  /** JSON array of strings. */
  tags: string;
  /** JSON object. */
  metadata: string;
  media_type: string;
  byte_size: number;
  version: number;
  indexed_version: number | null;
  status: string;
  failure_reason: string | null;
  progress: number;
  chunk_count: number;
  attempts: number;
  available_at: string;
  lease_owner: string | null;
  lease_expires_at: string | null;
  created_at: string;
  updated_at: string;
  indexed_at: string | null;
}

/** The bytes of a document's current version (apart from its row, which its ingestion updates at each step). */
interface KnowledgeDocumentContentTable {
  document_id: string;
  tenant_id: string;
  knowledge_base_id: string;
  /** The document's version these bytes are. */
  version: number;
  content: Buffer;
}

/** A searchable passage of a document's indexed version; `seq` is the lexical index's row id. */
export interface KnowledgeChunkTable {
  seq: Generated<number | string>;
  tenant_id: string;
  knowledge_base_id: string;
  document_id: string;
  version: number;
  position: number;
  /** JSON array of strings. */
  heading_path: string;
  text: string;
  char_count: number;
  token_count: number;
  embedding_model: string;
  /** float32 little-endian, L2-normalised. */
  embedding: Buffer;
  /** SQLite only: the embedding's int8 sketch (vector search's first pass; migration 0027). */
  embedding_int8?: Buffer;
  /** PostgreSQL only: the embedding's levels as bits, a bit varying (vector search's first pass, dense queries; migration 0027). */
  embedding_levels?: string;
  /** PostgreSQL only: the int8 sketch offset by 128 (vector search's first pass, word-sparse queries; migration 0027). */
  embedding_uint8?: Buffer;
  /** PostgreSQL with pgvector only: the embedding as a `vector`, '[x,y,...]' (HNSW search; the pgvector upkeep adds it: knowledge/pgvector.ts). */
  embedding_vector?: string | null;
}

/** Tokens knowledge spent with a provider: embedding chunks or a query, re-ranking (migration 0028). */
export interface KnowledgeUsageTable {
  id: string;
  tenant_id: string;
  knowledge_base_id: string;
  /** The document whose ingestion spent them (kind `ingestion`). */
  document_id: string | null;
  /** The run whose knowledge_search spent them. */
  run_id: string | null;
  /** ingestion, query or rerank. */
  kind: string;
  model: string;
  input_tokens: number;
  output_tokens: number;
  created_at: string;
}

/**
 * PostgreSQL only (migration 0030): per base, each lexeme of its chunks' tsvectors and how many chunks
 * hold it, and under the empty term how many chunks the base has: lexical ranking's document frequencies.
 */
interface KnowledgeTermTable {
  knowledge_base_id: string;
  term: string;
  chunks: number;
}

export interface Database {
  tenants: TenantTable;
  api_keys: ApiKeyTable;
  audit_events: AuditEventTable;
  agents: AgentTable;
  conversations: ConversationTable;
  conversation_summaries: ConversationSummaryTable;
  messages: MessageTable;
  runs: RunTable;
  run_events: RunEventTable;
  files: FileTable;
  identity_platform_keys: IdentityPlatformKeyTable;
  identity_agent_keys: IdentityAgentKeyTable;
  identity_tokens: IdentityTokenTable;
  tbac_policies: TbacPolicyTable;
  tasks: TaskTable;
  task_jobs: TaskJobTable;
  task_fires: TaskFireTable;
  skills: SkillTable;
  skill_files: SkillFileTable;
  skill_assignments: SkillAssignmentTable;
  connector_connections: ConnectorConnectionTable;
  connector_requests: ConnectorRequestTable;
  idempotency_keys: IdempotencyKeyTable;
  tool_approvals: ToolApprovalTable;
  run_suspensions: RunSuspensionTable;
  memory_blocks: MemoryBlockTable;
  memory_block_versions: MemoryBlockVersionTable;
  code_slots: CodeSlotTable;
  knowledge_bases: KnowledgeBaseTable;
  knowledge_documents: KnowledgeDocumentTable;
  knowledge_document_contents: KnowledgeDocumentContentTable;
  knowledge_chunks: KnowledgeChunkTable;
  knowledge_usage: KnowledgeUsageTable;
  knowledge_terms: KnowledgeTermTable;
}
