import type { Kysely } from 'kysely';
import type { AgentsService } from '../agents/service.js';
import type { Db } from '../db/database.js';
import type { Database } from '../db/schema.js';
import { Conflict, InvalidInput, NotFound } from '../errors.js';
import { now } from '../ids.js';
import { type ResourceEvent, recordAudit } from '../tenancy/audit.js';
import type { AssignBody, Assignment, Skill, UpdateAssignmentBody } from './schemas.js';
import * as store from './store.js';
import { type Caller, toAssignment } from './views.js';

const MAX_CONFIG_BYTES = 16 * 1024;

function checkConfig(config: Record<string, unknown> | undefined) {
  if (config && Buffer.byteLength(JSON.stringify(config)) > MAX_CONFIG_BYTES) {
    throw new InvalidInput(`config must be at most ${MAX_CONFIG_BYTES} bytes of JSON`, [
      { path: 'body.config', message: `must be at most ${MAX_CONFIG_BYTES} bytes of JSON` },
    ]);
  }
}

/**
 * Skills' assignments to agents: assign, change, unassign, the grant an approved skill request makes,
 * and the hooks that copy or drop an agent's assignments with the agent.
 */
export class SkillAssignments {
  constructor(
    private readonly db: Db,
    private readonly agents: AgentsService,
    /** Acquires a store skill for the tenant (SkillsService.acquire), for a grant that names one. */
    private readonly acquire: (caller: Caller, storeId: string) => Promise<Skill>,
  ) {}

  private async requireSkill(db: Kysely<Database>, tenantId: string, id: string) {
    const row = await store.findSkill(db, tenantId, id);
    if (!row) throw new NotFound('skill');
    return row;
  }

  async assign(caller: Caller, skillId: string, body: AssignBody): Promise<Assignment> {
    checkConfig(body.config);
    const skill = await this.requireSkill(this.db.kysely, caller.tenantId, skillId);
    await this.agents.getRow(caller.tenantId, body.agentId);
    if (skill.status !== 'active')
      throw new Conflict('skill_archived', 'the skill is archived; restore it (PATCH status active) before assigning it');
    const at = now();
    const row: store.AssignmentRow = {
      skill_id: skillId,
      agent_id: body.agentId,
      tenant_id: caller.tenantId,
      enabled: 1,
      priority: body.priority ?? 0,
      config: JSON.stringify(body.config ?? {}),
      assigned_by: caller.actor.id,
      created_at: at,
      updated_at: at,
    };
    const alreadyAssigned = () => new InvalidInput(`the skill is already assigned to agent ${body.agentId}`, undefined, 'already_assigned');
    try {
      await this.db.kysely.transaction().execute(async (trx) => {
        if (await store.findAssignment(trx, caller.tenantId, skillId, body.agentId)) throw alreadyAssigned();
        await store.insertAssignment(trx, row);
        await this.audit(trx, caller, {
          action: 'skill.assigned',
          resourceId: skillId,
          detail: { agentId: body.agentId, priority: row.priority },
        });
      });
    } catch (err) {
      if (store.isUniqueViolation(err)) throw alreadyAssigned();
      throw err;
    }
    return toAssignment(row);
  }

  private async requireAssignment(trx: Kysely<Database>, tenantId: string, skillId: string, agentId: string) {
    await this.requireSkill(trx, tenantId, skillId);
    const row = await store.findAssignment(trx, tenantId, skillId, agentId);
    if (!row) throw new NotFound('assignment', 'the skill is not assigned to that agent (assignment not found)');
    return row;
  }

  async unassign(caller: Caller, skillId: string, agentId: string): Promise<void> {
    await this.db.kysely.transaction().execute(async (trx) => {
      await this.requireAssignment(trx, caller.tenantId, skillId, agentId);
      await store.deleteAssignment(trx, caller.tenantId, skillId, agentId);
      await this.audit(trx, caller, { action: 'skill.unassigned', resourceId: skillId, detail: { agentId } });
    });
  }

  async update(caller: Caller, skillId: string, agentId: string, body: UpdateAssignmentBody): Promise<Assignment> {
    checkConfig(body.config);
    return this.db.kysely.transaction().execute(async (trx) => {
      const current = await this.requireAssignment(trx, caller.tenantId, skillId, agentId);
      const patch: Parameters<typeof store.updateAssignment>[2] = { updated_at: now() };
      if (body.enabled !== undefined) patch.enabled = body.enabled ? 1 : 0;
      if (body.priority !== undefined) patch.priority = body.priority;
      if (body.config !== undefined) patch.config = JSON.stringify(body.config);
      await store.updateAssignment(trx, { tenantId: caller.tenantId, skillId, agentId }, patch);
      await this.audit(trx, caller, {
        action: 'skill.assignment_updated',
        resourceId: skillId,
        detail: { agentId, fields: Object.keys(body) },
      });
      return toAssignment({ ...current, ...patch });
    });
  }

  /**
   * What approving a `skill_request` does: acquires the store skill first when the request named one
   * the tenant does not have yet, then assigns the skill to the agent (or enables a disabled assignment).
   */
  async grant(caller: Caller, input: { agentId: string; skillId?: string; storeId?: string; taskId: string }): Promise<Assignment> {
    let skillId = input.skillId;
    if (!skillId && input.storeId) {
      const acquired = await store.findSkillByStoreId(this.db.kysely, caller.tenantId, input.storeId);
      skillId = acquired?.id ?? (await this.acquire(caller, input.storeId)).id;
    }
    if (!skillId) throw new InvalidInput('the approved request names no skill');
    const existing = await store.findAssignment(this.db.kysely, caller.tenantId, skillId, input.agentId);
    if (!existing) return this.assign(caller, skillId, { agentId: input.agentId, priority: 0 });
    if (existing.enabled) return toAssignment(existing);
    return this.update(caller, skillId, input.agentId, { enabled: true });
  }

  /** Duplicate: the copy gets the original's assignments (enabled, priority, config, assignedBy). */
  copyAssignments = async (trx: Kysely<Database>, tenantId: string, fromId: string, toId: string) => {
    await store.copyAssignments(trx, tenantId, { fromAgentId: fromId, toAgentId: toId, at: now() });
  };

  /** Delete: the agent's assignments go with it (the audit trail keeps what happened). */
  forgetAgent = async (trx: Kysely<Database>, tenantId: string, agentId: string) => {
    await store.deleteAgentAssignments(trx, tenantId, agentId);
  };

  private audit(trx: Kysely<Database>, caller: Caller, event: ResourceEvent) {
    return recordAudit(trx, { tenantId: caller.tenantId, actor: caller.actor, resourceType: 'skill', ...event });
  }
}
