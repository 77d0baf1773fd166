import type { Migration, MigrationProvider } from 'kysely';
import * as m0001 from './0001_foundation.js';
import * as m0002 from './0002_runtime.js';
import * as m0006 from './0006_limits.js';
import * as m0003 from './0003_identity.js';
import * as m0005 from './0005_tasks.js';
import * as m0004 from './0004_skills.js';
import * as m0007 from './0007_change_notifications.js';
import * as m0008 from './0008_message_run_index.js';
import * as m0009 from './0009_skill_change_notifications.js';
import * as m0010 from './0010_job_claim_order.js';
import * as m0011 from './0011_partial_run_indexes.js';
import * as m0013 from './0013_idempotency_keys.js';
import * as m0014 from './0014_tool_approvals.js';
import * as m0015 from './0015_context_and_structured_output.js';
import * as m0016 from './0016_memory.js';
import * as m0019 from './0019_trace_context.js';
import * as m0017 from './0017_run_event_compaction.js';
import * as m0020 from './0020_run_finish_reason.js';
import * as m0021 from './0021_run_cost_reservation.js';
import * as m0022 from './0022_file_provenance.js';
import * as m0023 from './0023_code_slots.js';
import * as m0024 from './0024_knowledge.js';
import * as m0025 from './0025_knowledge_rerank.js';
import * as m0026 from './0026_knowledge_fts_base.js';
import * as m0027 from './0027_knowledge_vector_sketch.js';
import * as m0028 from './0028_knowledge_usage.js';
import * as m0029 from './0029_knowledge_pgvector.js';
import * as m0030 from './0030_knowledge_terms.js';
import * as m0031 from './0031_knowledge_document_contents.js';
import { sealedBoxMigration, type SealedBoxMigrationContext } from './0012_one_sealed_box.js';

/**
 * Every migration, in order. Migrations are code (Kysely's schema builder), so one list serves
 * both dialects; names are versioned and never edited once released.
 */
const migrations: Record<string, Migration> = {
  '0001_foundation': m0001,
  '0002_runtime': m0002,
  '0006_limits': m0006,
  '0003_identity': m0003,
  '0005_tasks': m0005,
  '0004_skills': m0004,
  '0007_change_notifications': m0007,
  '0008_message_run_index': m0008,
  '0009_skill_change_notifications': m0009,
  '0010_job_claim_order': m0010,
  '0011_partial_run_indexes': m0011,
  '0013_idempotency_keys': m0013,
  '0014_tool_approvals': m0014,
  '0015_context_and_structured_output': m0015,
  '0016_memory': m0016,
  '0019_trace_context': m0019,
  '0017_run_event_compaction': m0017,
  '0020_run_finish_reason': m0020,
  '0021_run_cost_reservation': m0021,
  '0022_file_provenance': m0022,
  '0023_code_slots': m0023,
  '0024_knowledge': m0024,
  '0025_knowledge_rerank': m0025,
  '0026_knowledge_fts_base': m0026,
  '0027_knowledge_vector_sketch': m0027,
  '0028_knowledge_usage': m0028,
  '0029_knowledge_pgvector': m0029,
  '0030_knowledge_terms': m0030,
  '0031_knowledge_document_contents': m0031,
};

/** What a migration needs besides the database: only the master key, to re-seal stored secrets (0012). */
export type MigrationContext = SealedBoxMigrationContext;

export function migrationProvider(context: MigrationContext = {}): MigrationProvider {
  return { getMigrations: async () => ({ ...migrations, '0012_one_sealed_box': sealedBoxMigration(context) }) };
}
