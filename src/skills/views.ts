import type { Principal } from '../tenancy/permissions.js';
import { assignmentConfigColumn, metadataColumn } from './columns.js';
import type { Assignment, Skill } from './schemas.js';
import type * as store from './store.js';

/** Skills and assignments as the API shows them, from their rows. */

/** Who acts: a request's principal, or the approver of a task. */
export type Caller = Pick<Principal, 'tenantId' | 'actor'>;

function fileLists(files: store.FileBrief[]) {
  return {
    references: files.filter((f) => f.kind === 'reference').map((f) => ({ name: f.name, size: f.size })),
    scripts: files.filter((f) => f.kind === 'script').map((f) => ({ name: f.name, language: f.language ?? 'text', size: f.size })),
  };
}

export function toSkill(row: store.SkillRow, files: store.FileBrief[]): Skill {
  return {
    id: row.id,
    name: row.name,
    description: row.description,
    category: row.category,
    source: row.source as Skill['source'],
    storeId: row.store_id,
    status: row.status as Skill['status'],
    instructions: row.instructions,
    metadata: metadataColumn(row.metadata),
    ...fileLists(files.filter((f) => f.skill_id === row.id)),
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

export function toAssignment(
  row: Pick<store.AssignmentRow, 'skill_id' | 'agent_id' | 'enabled' | 'priority' | 'config' | 'assigned_by' | 'created_at' | 'updated_at'>,
): Assignment {
  return {
    skillId: row.skill_id,
    agentId: row.agent_id,
    enabled: Boolean(row.enabled),
    priority: Number(row.priority),
    config: assignmentConfigColumn(row.config),
    assignedBy: row.assigned_by,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

/** The assignment half of a row of `store.agentAssignments`. */
export function assignmentOf(row: store.AgentAssignmentRow): Assignment {
  return toAssignment({ ...row, skill_id: row.id, created_at: row.assigned_at, updated_at: row.assignment_updated_at });
}

export interface SkillBrief {
  id: string;
  name: string;
  description: string;
  /** The `version` its metadata declares (SKILL.md front matter), or null. */
  version: string | null;
}
