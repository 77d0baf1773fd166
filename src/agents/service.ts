import type { Kysely } from 'kysely';
import { ReadCache } from '../db/changes.js';
import type { Db } from '../db/database.js';
import type { Database } from '../db/schema.js';
import { Conflict, InvalidInput, NotFound } from '../errors.js';
import { invalidPatterns } from '../runtime/tools/approval-policy.js';
import { newId, now } from '../ids.js';
import { parseModelId } from '../runtime/models/model-id.js';
import { MCP_HEADER_MAX_CHARS, mcpHeaderOwner } from '../runtime/tools/mcp-source.js';
import { type ResourceEvent, recordAudit } from '../tenancy/audit.js';
import { configurationColumn, toolsColumn } from './columns.js';
import type { Actor, Principal } from '../tenancy/permissions.js';
import {
  DEFAULT_CONFIGURATION,
  DEFAULT_TOOLS,
  MAX_A2A_AGENTS,
  toolsAfterUpdate,
  toolsAsGiven,
  type Agent,
  type Configuration,
  type ConfigurationInput,
  type CreateAgentBody,
  type ToolSpec,
  type UpdateAgentBody,
} from './schemas.js';
import * as store from './store.js';

function toAgent(row: store.AgentRow): Agent {
  return {
    id: row.id,
    name: row.name,
    role: row.role,
    description: row.description,
    model: row.model,
    systemPrompt: row.system_prompt,
    contextPrompt: row.context_prompt,
    status: row.status as Agent['status'],
    hosting: row.hosting as Agent['hosting'],
    teamId: row.team_id,
    appId: row.app_id,
    tools: toolsColumn(row.tools),
    configuration: { ...DEFAULT_CONFIGURATION, ...configurationColumn(row.configuration) },
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

function mergeConfiguration(base: Configuration, input: ConfigurationInput | undefined): Configuration {
  const merged = { ...base };
  for (const [key, value] of Object.entries(input ?? {})) {
    (merged as Record<string, unknown>)[key] = value === null ? DEFAULT_CONFIGURATION[key as keyof Configuration] : value;
  }
  return merged;
}

/** An approval rule's `matches` pattern must be a regular expression: 400 naming it, not a run failing later. */
function checkApprovalPolicy(configuration: Configuration) {
  if (!configuration.approval) return;
  const errors = invalidPatterns(configuration.approval).map((e) => ({
    path: `body.configuration.approval.${e.path}`,
    message: e.message,
  }));
  if (errors.length) throw new InvalidInput(`${errors[0].path.slice('body.'.length)} ${errors[0].message}`, errors);
}

/** Called inside the duplicate transaction, so other domains can copy what they attach to agents. */
export type DuplicateHook = (trx: Kysely<Database>, tenantId: string, fromId: string, toId: string) => Promise<void>;

/** Called inside the delete transaction, so other domains can drop what they attach to agents. */
export type DeleteHook = (trx: Kysely<Database>, tenantId: string, agentId: string) => Promise<void>;

export interface AgentsOptions {
  db: Db;
  /** The model of an agent created without one (DEFAULT_MODEL). */
  defaultModel: string;
  /** Why a model cannot be used with this server's configuration, or undefined (the model registry's); absent, any model. */
  modelUnavailable?: (model: string) => string | undefined;
  /** Seals tools' credentials at rest; absent, an agent whose tools carry credentials cannot be stored. */
  credentials?: CredentialSealer;
  /** Lazy port to the domains built after agents (skills, memory, identity): they drop what they attach to a deleted agent. */
  onDeleted?: DeleteHook;
  /** Lazy port to the domains built after agents (skills): they copy what they attach to a duplicated agent. */
  onDuplicated?: DuplicateHook;
  /** Why the server would refuse to connect to a tool's URL (the outbound guard), or null; absent, none is refused. */
  outboundRefusal?: (url: URL) => Promise<string | null>;
}

/** What identity documents (SVIDs, badges, standings) read of an agent. */
export type AgentIdentity = Pick<store.AgentRow, 'id' | 'tenant_id' | 'name' | 'status' | 'hosting' | 'tools' | 'updated_at'>;

export interface AgentPage {
  agents: {
    id: string;
    name: string;
    role: string | null;
    description: string | null;
    model: string;
    status: string;
    hosting: string;
    teamId: string | null;
    appId: string;
    createdAt: string;
  }[];
  total: number;
  page: number;
  limit: number;
}

/** Seals remote agents' credentials at rest (the one sealed-box format, identity/secret-box.ts); app.ts builds it. */
export interface CredentialSealer {
  seal(plain: string, owner: string): string;
  isSealed(value: string): boolean;
  /** Whether a sealed value opens for this owner. */
  opens(sealed: string, owner: string): boolean;
}

/**
 * The owner a remote A2A agent's credential is sealed for: the tenant and the card URL's origin (a
 * duplicated agent keeps working; a sealed value copied next to another origin does not open there).
 */
export const a2aCredentialOwner = (tenantId: string, cardUrl: string) => `${tenantId}/a2a-credential/${new URL(cardUrl).origin}`;

export class AgentsService {
  private readonly db: Db;
  private readonly defaultModel: string;
  private readonly modelUnavailable: (model: string) => string | undefined;
  private readonly sealer: CredentialSealer | undefined;
  private readonly onDeleted: DeleteHook | undefined;
  private readonly onDuplicated: DuplicateHook | undefined;
  private readonly outboundRefusal: ((url: URL) => Promise<string | null>) | undefined;
  /**
   * Agents are read far more often than written (every GET, run, task and delegation). Any write
   * to the agents table makes both caches stale at once, in every process (db/changes.ts).
   */
  private readonly cachedAgents: ReadCache<Agent>;
  private readonly cachedPages: ReadCache<AgentPage>;
  /** Agents' budgets, read at every run's start. */
  private readonly cachedBudgets: ReadCache<{ monthlyBudgetUsd: number | null }>;

  constructor({
    db,
    defaultModel,
    modelUnavailable = () => undefined,
    credentials,
    onDeleted,
    onDuplicated,
    outboundRefusal,
  }: AgentsOptions) {
    this.db = db;
    this.defaultModel = defaultModel;
    this.modelUnavailable = modelUnavailable;
    this.sealer = credentials;
    this.onDeleted = onDeleted;
    this.onDuplicated = onDuplicated;
    this.outboundRefusal = outboundRefusal;
    this.cachedAgents = new ReadCache(db.changes, 'agents', { max: 10_000 });
    this.cachedPages = new ReadCache(db.changes, 'agents', { max: 1_000 });
    this.cachedBudgets = new ReadCache(db.changes, 'agents', { max: 10_000 });
  }

  private checkModel(model: string) {
    const parsed = parseModelId(model);
    if (typeof parsed === 'string') throw new InvalidInput(`model ${parsed}`, [{ path: 'body.model', message: parsed }]);
  }

  /** Each fallback model: usable here, not the agent's own model, listed once. */
  private checkFallbackModels(model: string, fallbacks: readonly string[]) {
    const errors = fallbacks.flatMap((fallback, i) => {
      const problem =
        fallback === model
          ? 'is the agent’s own model'
          : fallbacks.indexOf(fallback) < i
            ? 'is listed twice'
            : this.modelUnavailable(fallback);
      return problem ? [{ path: `body.configuration.fallbackModels.${i}`, message: problem }] : [];
    });
    if (errors.length) {
      const i = errors[0].path.split('.').at(-1);
      throw new InvalidInput(`configuration.fallbackModels.${i} ${errors[0].message}`, errors);
    }
  }

  /**
   * Remote A2A agents' credentials and MCP servers' header values as stored: sealed (a value read
   * back sealed is kept as it is).
   */
  private sealCredentials(tenantId: string, tools: ToolSpec[]): ToolSpec[] {
    const seal = (plain: string, owner: string) => {
      if (!this.sealer) throw new Error("no credential sealer: tools' credentials cannot be stored");
      return this.sealer.isSealed(plain) ? plain : this.sealer.seal(plain, owner);
    };
    return tools.map((t) => {
      if (t.type === 'a2a' && t.credential !== undefined)
        return { ...t, credential: seal(t.credential, a2aCredentialOwner(tenantId, t.cardUrl)) };
      if (t.type === 'mcp' && t.headers) {
        const owner = mcpHeaderOwner(tenantId, t.url);
        return { ...t, headers: Object.fromEntries(Object.entries(t.headers).map(([name, value]) => [name, seal(value, owner)])) };
      }
      return t;
    });
  }

  /**
   * A value given already sealed must belong to its entry's URL origin (it is not replayed
   * elsewhere); one in clear is bounded as the schema cannot bound it (a sealed one is longer).
   */
  private checkSealedCredentials(tenantId: string, tools: ToolSpec[]) {
    const refuse = (path: string, message: string) => {
      throw new InvalidInput(`${path} ${message}`, [{ path: `body.${path}`, message }]);
    };
    tools.forEach((t, i) => {
      if (t.type === 'a2a' && t.credential !== undefined && this.sealer?.isSealed(t.credential)) {
        if (!this.sealer.opens(t.credential, a2aCredentialOwner(tenantId, t.cardUrl))) {
          refuse(
            `tools.${i}.credential`,
            'a sealed credential belongs to the card URL origin it was set for; send it in clear for this one',
          );
        }
      }
      if (t.type !== 'mcp') return;
      for (const [name, value] of Object.entries(t.headers ?? {})) {
        if (!this.sealer?.isSealed(value)) {
          if (value.length > MCP_HEADER_MAX_CHARS)
            refuse(`tools.${i}.headers.${name}`, `must hold at most ${MCP_HEADER_MAX_CHARS} characters`);
        } else if (!this.sealer.opens(value, mcpHeaderOwner(tenantId, t.url))) {
          refuse(
            `tools.${i}.headers.${name}`,
            'a sealed header value belongs to the server URL origin it was set for; send it in clear for this one',
          );
        }
      }
    });
  }

  /** Remote A2A agents: at most MAX_A2A_AGENTS, each name once (the tool is a2a_<name>). */
  private checkRemoteAgents(tools: ToolSpec[] | undefined) {
    const remote = (tools ?? []).flatMap((t, i) => (t.type === 'a2a' ? [{ i, name: t.name }] : []));
    if (remote.length > MAX_A2A_AGENTS) {
      throw new InvalidInput(`at most ${MAX_A2A_AGENTS} remote A2A agents`, [
        { path: 'body.tools', message: `at most ${MAX_A2A_AGENTS} entries of type a2a` },
      ]);
    }
    const twice = remote.find((r, k) => remote.findIndex((o) => o.name === r.name) !== k);
    if (twice)
      throw new InvalidInput(`tools.${twice.i}.name ${twice.name} is used twice`, [
        { path: `body.tools.${twice.i}.name`, message: 'another remote A2A agent has this name' },
      ]);
  }

  /**
   * MCP servers and remote A2A agents the server would refuse to reach (docs/runtime.md, "Outbound
   * requests") are a 400 on save, naming MCP_ALLOWED_HOSTS, rather than runs that go without their tools.
   * Before any transaction: a name's lookup may take a moment.
   */
  private async checkOutbound(tools: ToolSpec[] | undefined) {
    if (!tools || !this.outboundRefusal) return;
    const refusal = this.outboundRefusal;
    const errors = (
      await Promise.all(
        tools.map(async (t, i) => {
          const target =
            t.type === 'mcp' ? { field: 'url', url: t.url } : t.type === 'a2a' ? { field: 'cardUrl', url: t.cardUrl } : undefined;
          const why = target && (await refusal(new URL(target.url)));
          return why ? [{ path: `body.tools.${i}.${target.field}`, message: `the server does not connect there: ${why}` }] : [];
        }),
      )
    ).flat();
    if (errors.length) throw new InvalidInput(`${errors[0].path.slice('body.'.length)} ${errors[0].message}`, errors);
  }

  /** Delegation tools must name agents of the same tenant. */
  private async checkTools(trx: Kysely<Database>, tenantId: string, tools: ToolSpec[] | undefined, selfId?: string) {
    if (!tools) return;
    this.checkRemoteAgents(tools);
    this.checkSealedCredentials(tenantId, tools);
    const wanted = tools.flatMap((t, i) => (t.type === 'agent' ? [{ i, id: t.agentId }] : []));
    const found = await store.existingAgentIds(
      trx,
      tenantId,
      wanted.map((w) => w.id).filter((id) => id !== selfId),
    );
    const missing = wanted.filter((w) => w.id !== selfId && !found.has(w.id));
    const self = wanted.filter((w) => w.id === selfId);
    const errors = [
      ...missing.map((w) => ({ path: `body.tools.${w.i}.agentId`, message: 'names no agent in this tenant' })),
      ...self.map((w) => ({ path: `body.tools.${w.i}.agentId`, message: 'an agent cannot delegate to itself' })),
    ];
    if (errors.length) throw new InvalidInput(`tools.${errors[0].path.split('.')[2]}.agentId ${errors[0].message}`, errors);
  }

  async list(tenantId: string, filter: store.AgentFilter, page: number, limit: number): Promise<AgentPage> {
    const key = JSON.stringify([tenantId, filter.appId, filter.teamId, filter.status, filter.q, page, limit]);
    return (await this.cachedPages.get(key, () => this.readPage(tenantId, filter, page, limit)))!;
  }

  private async readPage(tenantId: string, filter: store.AgentFilter, page: number, limit: number): Promise<AgentPage> {
    const { rows, total } = await store.listAgents(this.db.kysely, { tenantId, filter, limit, offset: (page - 1) * limit });
    return {
      agents: rows.map((r) => ({
        id: r.id,
        name: r.name,
        role: r.role,
        description: r.description,
        model: r.model,
        status: r.status,
        hosting: r.hosting,
        teamId: r.team_id,
        appId: r.app_id,
        createdAt: r.created_at,
      })),
      total,
      page,
      limit,
    };
  }

  async getRow(tenantId: string, id: string): Promise<store.AgentRow> {
    const row = await store.findAgent(this.db.kysely, tenantId, id);
    if (!row) throw new NotFound('agent');
    return row;
  }

  /** The agent of any tenant, by id alone (public identity documents); undefined when there is none. */
  identityAnyTenant(id: string): Promise<AgentIdentity | undefined> {
    return store.findAgentIdentityAnyTenant(this.db.kysely, id);
  }

  /** The ids among `ids` that name agents of the tenant; `db` is the caller's transaction. */
  existingIds(db: Kysely<Database>, tenantId: string, ids: string[]): Promise<Set<string>> {
    return store.existingAgentIds(db, tenantId, ids);
  }

  /** The agent's monthly budget (null: none), or undefined when there is no such agent. */
  budget(tenantId: string, id: string) {
    return this.cachedBudgets.get(`${tenantId}:${id}`, async () => {
      const row = await store.findAgentBudget(this.db.kysely, tenantId, id);
      return row && { monthlyBudgetUsd: row.monthly_budget_usd };
    });
  }

  async setBudget(tenantId: string, id: string, budget: number | null, actor: Actor): Promise<void> {
    await this.db.kysely.transaction().execute(async (trx) => {
      const r = await store.setAgentBudget(trx, tenantId, id, budget);
      if (!Number(r.numUpdatedRows)) throw new NotFound('agent');
      await this.audit(trx, { tenantId, actor }, { action: 'agent.budget_updated', resourceId: id, detail: { monthlyBudgetUsd: budget } });
    });
  }

  /** The agent as the API shows it; shared and frozen, so callers must not change it. */
  async get(tenantId: string, id: string): Promise<Agent> {
    const agent = await this.find(tenantId, id);
    if (!agent) throw new NotFound('agent');
    return agent;
  }

  /** As get, but undefined when the tenant has no such agent. */
  async find(tenantId: string, id: string): Promise<Agent | undefined> {
    return this.cachedAgents.get(`${tenantId}:${id}`, async () => {
      const row = await store.findAgent(this.db.kysely, tenantId, id);
      return row && toAgent(row);
    });
  }

  async create(principal: Principal, input: CreateAgentBody): Promise<Agent> {
    const model = input.model ?? this.defaultModel;
    this.checkModel(model);
    const configuration = mergeConfiguration(DEFAULT_CONFIGURATION, input.configuration);
    this.checkFallbackModels(model, configuration.fallbackModels);
    checkApprovalPolicy(configuration);
    const external = input.hosting === 'external';
    const at = now();
    const row: store.AgentRow = {
      id: newId(),
      tenant_id: principal.tenantId,
      app_id: input.appId,
      team_id: input.teamId ?? null,
      name: input.name,
      role: input.role ?? null,
      description: input.description ?? null,
      model,
      system_prompt: input.systemPrompt ?? null,
      context_prompt: input.contextPrompt ?? null,
      status: external ? 'registered' : 'available',
      hosting: external ? 'external' : 'platform',
      tools: JSON.stringify(input.tools ? this.sealCredentials(principal.tenantId, toolsAsGiven(input.tools)) : DEFAULT_TOOLS),
      configuration: JSON.stringify(configuration),
      monthly_budget_usd: null,
      created_at: at,
      updated_at: at,
    };
    await this.checkOutbound(input.tools);
    await this.db.kysely.transaction().execute(async (trx) => {
      await this.checkTools(trx, principal.tenantId, input.tools);
      await store.insertAgent(trx, row);
      await this.audit(trx, principal, {
        action: 'agent.created',
        resourceId: row.id,
        detail: { name: row.name, model, hosting: row.hosting },
      });
    });
    return toAgent(row);
  }

  async update(principal: Principal, id: string, input: UpdateAgentBody): Promise<Agent> {
    if (input.model !== undefined) this.checkModel(input.model);
    await this.checkOutbound(input.tools);
    return this.db.kysely.transaction().execute(async (trx) => {
      const current = await store.findAgent(trx, principal.tenantId, id);
      if (!current) throw new NotFound('agent');
      if (input.status === 'available' && current.hosting === 'external') {
        throw new Conflict(
          'agent_not_executable',
          'a registered (externally hosted) agent never becomes available; resume it to make it registered again',
        );
      }
      await this.checkTools(trx, principal.tenantId, input.tools, id);
      const patch: Partial<store.AgentRow> = { updated_at: now() };
      if (input.name !== undefined) patch.name = input.name;
      if (input.appId !== undefined) patch.app_id = input.appId;
      if (input.teamId !== undefined) patch.team_id = input.teamId;
      if (input.role !== undefined) patch.role = input.role;
      if (input.description !== undefined) patch.description = input.description;
      if (input.model !== undefined) patch.model = input.model;
      if (input.systemPrompt !== undefined) patch.system_prompt = input.systemPrompt;
      if (input.contextPrompt !== undefined) patch.context_prompt = input.contextPrompt;
      if (input.status !== undefined) patch.status = input.status;
      if (input.tools !== undefined)
        patch.tools = JSON.stringify(this.sealCredentials(principal.tenantId, toolsAfterUpdate(toAgent(current).tools, input.tools)));
      if (input.configuration !== undefined || input.model !== undefined) {
        const configuration = mergeConfiguration(toAgent(current).configuration, input.configuration);
        this.checkFallbackModels(input.model ?? current.model, configuration.fallbackModels);
        checkApprovalPolicy(configuration);
        if (input.configuration !== undefined) patch.configuration = JSON.stringify(configuration);
      }
      await store.updateAgent(trx, principal.tenantId, id, patch);
      await this.audit(trx, principal, { action: 'agent.updated', resourceId: id, detail: { fields: Object.keys(input) } });
      return toAgent({ ...current, ...patch });
    });
  }

  async delete(principal: Principal, id: string): Promise<void> {
    await this.db.kysely.transaction().execute(async (trx) => {
      const result = await store.deleteAgent(trx, principal.tenantId, id);
      if (!Number(result.numDeletedRows)) throw new NotFound('agent');
      await this.onDeleted?.(trx, principal.tenantId, id);
      await this.audit(trx, principal, { action: 'agent.deleted', resourceId: id });
    });
  }

  /**
   * available -> paused, or paused -> available; a registered (external) agent: registered -> paused
   * (its identity is suspended) and paused -> registered. Anything else is a Conflict naming the state.
   */
  async setPaused(principal: Principal, id: string, paused: boolean): Promise<Agent> {
    return this.db.kysely.transaction().execute(async (trx) => {
      const current = await store.findAgent(trx, principal.tenantId, id);
      if (!current) throw new NotFound('agent');
      const running = current.hosting === 'external' ? 'registered' : 'available';
      const [from, to] = paused ? [running, 'paused'] : ['paused', running];
      if (current.status !== from) {
        throw paused
          ? new Conflict('agent_already_paused', 'the agent is already paused')
          : new Conflict('agent_not_paused', 'the agent is not paused');
      }
      const at = now();
      const result = await store.transitionAgent(trx, principal.tenantId, id, { from, to, at });
      if (!Number(result.numUpdatedRows)) throw new Conflict('agent_state_changed', 'the agent changed state meanwhile; retry');
      await this.audit(trx, principal, { action: paused ? 'agent.paused' : 'agent.resumed', resourceId: id });
      return toAgent({ ...current, status: to, updated_at: at });
    });
  }

  async duplicate(principal: Principal, id: string, name?: string): Promise<Agent> {
    return this.db.kysely.transaction().execute(async (trx) => {
      const source = await store.findAgent(trx, principal.tenantId, id);
      if (!source) throw new NotFound('agent');
      const at = now();
      const copy: store.AgentRow = {
        ...source,
        id: newId(),
        name: name ?? `${source.name} (copy)`.slice(0, 200),
        // A paused original yields an available copy: pausing is about that agent, not its design.
        status: source.hosting === 'external' ? 'registered' : 'available',
        created_at: at,
        updated_at: at,
      };
      await store.insertAgent(trx, copy);
      await this.onDuplicated?.(trx, principal.tenantId, source.id, copy.id);
      await this.audit(trx, principal, { action: 'agent.duplicated', resourceId: copy.id, detail: { from: source.id } });
      return toAgent(copy);
    });
  }

  listApps(tenantId: string) {
    return store.listApps(this.db.kysely, tenantId);
  }

  private audit(trx: Kysely<Database>, principal: Principal | { tenantId: string; actor: Actor }, event: ResourceEvent) {
    return recordAudit(trx, { tenantId: principal.tenantId, actor: principal.actor, resourceType: 'agent', ...event });
  }
}
