import type { AgentsService } from '../agents/service.js';
import type { Clock } from '../clock.js';
import type { Db } from '../db/database.js';
import { Conflict, InvalidInput, NotFound } from '../errors.js';
import { newId, now } from '../ids.js';
import { type ResourceEvent, recordAudit } from '../tenancy/audit.js';
import type { Principal } from '../tenancy/permissions.js';
import type { TenancyService } from '../tenancy/service.js';
import { DECISION_CACHE_MS, TtlCache } from './cache.js';
import { conditionsColumn } from './columns.js';
import * as store from './store.js';
import {
  DEFAULT_TBAC_MODE,
  TBAC_MODES,
  WILDCARD,
  conditionsError,
  decide,
  type Conditions,
  type Decision,
  type Effect,
  type Policy,
  type TbacMode,
  type ToolRequest,
} from './tbac.js';

export interface PolicyView extends Policy {
  description: string | null;
  createdAt: string;
  updatedAt: string;
}

export interface CreatePolicyInput {
  callerAgentId: string;
  calleeAgentId: string;
  toolName: string;
  effect?: Effect;
  description?: string | null;
  conditions?: Conditions | null;
}

export interface UpdatePolicyInput {
  effect?: Effect;
  description?: string | null;
  conditions?: Conditions | null;
}

function view(row: store.PolicyRow): PolicyView {
  return {
    id: row.id,
    callerAgentId: row.caller_agent_id,
    calleeAgentId: row.callee_agent_id,
    toolName: row.tool_name,
    effect: row.effect as Effect,
    description: row.description,
    conditions: conditionsColumn(row.conditions),
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

const byId = (a: Policy, b: Policy) => (a.id < b.id ? -1 : 1);

function withMode(decision: Decision, mode: TbacMode): Decision & { mode: TbacMode } {
  return { allowed: decision.allowed, reason: decision.reason, policyId: decision.policyId, mode };
}

/** The key in the tenant's settings JSON that holds its TBAC mode. */
const TBAC_MODE_SETTING = 'tbacMode';

/** TBAC policies of a tenant (CRUD) and the decision for a (caller, callee, tool) request. */
export class PolicyEngine {
  /** Hot-path caches: candidate policies by (tenant, caller, callee, tool), modes by tenant. */
  private readonly candidates: TtlCache<Policy[]>;
  private readonly modes: TtlCache<TbacMode>;

  constructor(
    private readonly db: Db,
    private readonly tenancy: TenancyService,
    private readonly agents: AgentsService,
    private readonly clock: Clock,
  ) {
    this.candidates = new TtlCache({ ttlMs: DECISION_CACHE_MS, clock });
    this.modes = new TtlCache({ ttlMs: DECISION_CACHE_MS, clock });
  }

  async list(tenantId: string, filter: store.PolicyFilter, page: number, limit: number) {
    const { rows, total } = await store.listPolicies(this.db.kysely, { tenantId, filter, limit, offset: (page - 1) * limit });
    return { policies: rows.map(view), total, page, limit };
  }

  /** Validates conditions and stores their timestamps in the one format (UTC, milliseconds). */
  private checkConditions(conditions: Conditions | null | undefined): Conditions | null | undefined {
    if (!conditions) return conditions;
    const problem = conditionsError(conditions);
    if (problem) throw new InvalidInput(`${problem.path} ${problem.message}`, [problem]);
    const out: Conditions = { ...conditions };
    if (out.notBefore) out.notBefore = new Date(out.notBefore).toISOString();
    if (out.notAfter) out.notAfter = new Date(out.notAfter).toISOString();
    return out;
  }

  /** Named agents must exist in the tenant (`*` stands for any). */
  private async checkAgents(trx: store.Executor, tenantId: string, input: CreatePolicyInput) {
    const named = (['callerAgentId', 'calleeAgentId'] as const).filter((f) => input[f] !== WILDCARD);
    const found = await this.agents.existingIds(
      trx,
      tenantId,
      named.map((f) => input[f]),
    );
    const errors = named.filter((f) => !found.has(input[f])).map((f) => ({ path: `body.${f}`, message: 'names no agent in this tenant' }));
    if (errors.length) throw new InvalidInput(`${errors[0].path} ${errors[0].message}`, errors);
  }

  async create(principal: Principal, input: CreatePolicyInput): Promise<PolicyView> {
    if (input.conditions !== undefined) input = { ...input, conditions: this.checkConditions(input.conditions) };
    const at = now();
    const row: store.PolicyRow = {
      id: newId(),
      tenant_id: principal.tenantId,
      caller_agent_id: input.callerAgentId,
      callee_agent_id: input.calleeAgentId,
      tool_name: input.toolName,
      effect: input.effect ?? 'allow',
      description: input.description ?? null,
      conditions: input.conditions ? JSON.stringify(input.conditions) : null,
      created_at: at,
      updated_at: at,
    };
    try {
      await this.db.kysely.transaction().execute(async (trx) => {
        await this.checkAgents(trx, principal.tenantId, input);
        await store.insertPolicy(trx, row);
        await this.audit(trx, principal, {
          action: 'tbac_policy.created',
          resourceId: row.id,
          detail: {
            callerAgentId: row.caller_agent_id,
            calleeAgentId: row.callee_agent_id,
            toolName: row.tool_name,
            effect: row.effect,
          },
        });
      });
    } catch (err) {
      if (store.isUniqueViolation(err)) {
        throw new Conflict('policy_exists', 'a policy for this (callerAgentId, calleeAgentId, toolName) already exists; update it instead');
      }
      throw err;
    }
    this.candidates.clear(); // after the commit, so no reader re-caches the old state
    return view(row);
  }

  async update(principal: Principal, id: string, input: UpdatePolicyInput): Promise<PolicyView> {
    if (input.conditions !== undefined) input = { ...input, conditions: this.checkConditions(input.conditions) };
    const updated = await this.db.kysely.transaction().execute(async (trx) => {
      const current = await store.findPolicy(trx, principal.tenantId, id);
      if (!current) throw new NotFound('policy');
      const patch: Partial<store.PolicyRow> = { updated_at: now() };
      if (input.effect !== undefined) patch.effect = input.effect;
      if (input.description !== undefined) patch.description = input.description;
      if (input.conditions !== undefined) patch.conditions = input.conditions ? JSON.stringify(input.conditions) : null;
      await store.updatePolicy(trx, principal.tenantId, id, patch);
      await this.audit(trx, principal, { action: 'tbac_policy.updated', resourceId: id, detail: { fields: Object.keys(input) } });
      return view({ ...current, ...patch });
    });
    this.candidates.clear();
    return updated;
  }

  async delete(principal: Principal, id: string): Promise<void> {
    await this.db.kysely.transaction().execute(async (trx) => {
      const current = await store.findPolicy(trx, principal.tenantId, id);
      if (!current) throw new NotFound('policy');
      await store.deletePolicy(trx, principal.tenantId, id);
      await this.audit(trx, principal, {
        action: 'tbac_policy.deleted',
        resourceId: id,
        detail: {
          callerAgentId: current.caller_agent_id,
          calleeAgentId: current.callee_agent_id,
          toolName: current.tool_name,
          effect: current.effect,
        },
      });
    });
    this.candidates.clear();
  }

  /** The tenant's mode, read from its settings (uncached). */
  async mode(tenantId: string): Promise<TbacMode> {
    const settings = await this.tenancy.getSettings(tenantId);
    const mode = settings[TBAC_MODE_SETTING];
    return TBAC_MODES.includes(mode as TbacMode) ? (mode as TbacMode) : DEFAULT_TBAC_MODE;
  }

  async setMode(principal: Principal, mode: TbacMode): Promise<TbacMode> {
    await this.tenancy.updateSettings(principal.tenantId, { [TBAC_MODE_SETTING]: mode }, principal.actor);
    this.modes.clear();
    return mode;
  }

  /**
   * The decision for a request: the deciding policy, else the tenant's mode. The candidate policies
   * are cached mapped and in id order, as the tie-break between equal policies wants them. Conditions
   * are judged `at` (epoch ms; default: now on the app's clock).
   */
  async evaluate(tenantId: string, request: ToolRequest, at = this.clock.now()): Promise<Decision & { mode: TbacMode }> {
    const key = `${tenantId}|${request.caller}|${request.callee}|${request.tool}`;
    const [policies, mode] = await Promise.all([
      this.candidates.through(key, async () => (await store.candidatePolicies(this.db.kysely, tenantId, request)).map(view).sort(byId)),
      this.modes.through(tenantId, () => this.mode(tenantId)),
    ]);
    return withMode(decide(policies, mode, request, at), mode);
  }

  private audit(trx: store.Executor, principal: Principal, event: ResourceEvent) {
    return recordAudit(trx, { tenantId: principal.tenantId, actor: principal.actor, resourceType: 'tbac_policy', ...event });
  }
}
