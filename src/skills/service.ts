import type { Kysely } from 'kysely';
import type { AgentsService } from '../agents/service.js';
import { ReadCache } from '../db/changes.js';
import type { Db } from '../db/database.js';
import type { Database } from '../db/schema.js';
import { Conflict, NotFound } from '../errors.js';
import { newId, now } from '../ids.js';
import { type ResourceEvent, recordAudit } from '../tenancy/audit.js';
import { readArchive, skillFromEntries } from './archive.js';
import { storeCatalog, type StoreSkill } from './catalog.js';
import { frontMatterColumn, metadataColumn } from './columns.js';
import {
  checkSkillFiles,
  inferLanguage,
  parseSkillMd,
  renderSkillMd,
  type ScriptFile,
  type SkillContent,
  type SkillFile,
} from './format.js';
import type { AssignBody, Assignment, CreateSkillBody, ImportSkillBody, Skill, UpdateAssignmentBody, UpdateSkillBody } from './schemas.js';
import { SkillAssignments } from './assignments.js';
import * as store from './store.js';
import { type Caller, type SkillBrief, assignmentOf, toAssignment, toSkill } from './views.js';

const scriptsWithLanguage = (scripts: { name: string; content: string; language?: string }[] | undefined): ScriptFile[] =>
  (scripts ?? []).map((s) => ({ name: s.name, content: s.content, language: s.language ?? inferLanguage(s.name) }));

const nameTaken = (name: string, existing?: store.SkillRow) =>
  new Conflict(
    'skill_name_taken',
    existing?.status === 'archived'
      ? `an archived skill is named ${name}; restore it (PATCH status active) or choose another name`
      : `a skill named ${name} already exists in this tenant`,
  );

/**
 * Skills of a tenant: custom ones (JSON, SKILL.md, archive), store ones (acquired from the catalog),
 * and their assignments to agents. Every mutation writes its audit event in its transaction.
 */
export interface SkillsOptions {
  db: Db;
  agents: AgentsService;
  /** The skill store's catalog (skills/store-catalog); the bundled one unless given. */
  catalog?: () => StoreSkill[];
}

export class SkillsService {
  /** What every run's system prompt names: read from memory until skills or assignments change. */
  private readonly usableBriefs: ReadCache<{ skills: SkillBrief[] }>;
  private readonly assignments: SkillAssignments;
  private readonly db: Db;
  private readonly agents: AgentsService;
  private readonly catalog: () => StoreSkill[];

  constructor({ db, agents, catalog = storeCatalog }: SkillsOptions) {
    this.db = db;
    this.agents = agents;
    this.catalog = catalog;
    this.usableBriefs = new ReadCache(db.changes, ['skills', 'skill_assignments'], { max: 10_000 });
    this.assignments = new SkillAssignments(db, agents, (caller, storeId) => this.acquire(caller, storeId));
    this.copyAssignments = this.assignments.copyAssignments;
    this.forgetAgent = this.assignments.forgetAgent;
  }

  private async views(tenantId: string, rows: store.SkillRow[]): Promise<Skill[]> {
    const files = await store.fileBriefs(
      this.db.kysely,
      tenantId,
      rows.map((r) => r.id),
    );
    return rows.map((r) => toSkill(r, files));
  }

  private async requireSkill(db: Kysely<Database>, tenantId: string, id: string) {
    const row = await store.findSkill(db, tenantId, id);
    if (!row) throw new NotFound('skill');
    return row;
  }

  // ---------------------------------------------------------------- reading

  async list(tenantId: string, query: { category?: string; status: string; source?: string; q?: string; page: number; limit: number }) {
    const filter = {
      category: query.category,
      source: query.source,
      q: query.q,
      status: query.status === 'all' ? undefined : query.status,
    };
    const { rows, total } = await store.listSkills(this.db.kysely, {
      tenantId,
      filter,
      limit: query.limit,
      offset: (query.page - 1) * query.limit,
    });
    return { skills: await this.views(tenantId, rows), total, page: query.page, limit: query.limit };
  }

  categories(tenantId: string) {
    return store.listCategories(this.db.kysely, tenantId);
  }

  async getSkill(tenantId: string, id: string): Promise<Skill> {
    const [skill] = await this.views(tenantId, [await this.requireSkill(this.db.kysely, tenantId, id)]);
    return skill;
  }

  /** A skill with every assignment (agent name and status included). */
  async get(tenantId: string, id: string) {
    const skill = await this.getSkill(tenantId, id);
    return { ...skill, assignments: await this.assignmentsOf(tenantId, id) };
  }

  private async assignmentsOf(tenantId: string, skillId: string) {
    const rows = await store.skillAssignments(this.db.kysely, tenantId, skillId);
    // Agents are the agents domain's: their names and states come from its (cached) service.
    const agents = await Promise.all(rows.map((r) => this.agents.find(tenantId, r.agent_id)));
    return rows.flatMap((r, i) => {
      const agent = agents[i];
      return agent ? [{ ...toAssignment(r), agentName: agent.name, agentStatus: agent.status }] : [];
    });
  }

  async agentsOf(tenantId: string, skillId: string) {
    await this.requireSkill(this.db.kysely, tenantId, skillId);
    const agents = await this.assignmentsOf(tenantId, skillId);
    return { agents, total: agents.length };
  }

  /** Every skill assigned to the agent (enabled or not, archived too), highest priority first. */
  async skillsOfAgent(tenantId: string, agentId: string) {
    await this.agents.getRow(tenantId, agentId);
    const rows = await store.agentAssignments(this.db.kysely, tenantId, agentId);
    const views = await this.views(tenantId, rows);
    const skills = rows.map((r, i) => ({ ...views[i], assignment: assignmentOf(r) }));
    return { skills, total: skills.length };
  }

  /** Skills the agent may use now: assignment enabled and skill active; highest priority first. */
  usableSkills(tenantId: string, agentId: string) {
    return store.agentAssignments(this.db.kysely, tenantId, agentId, { usableOnly: true });
  }

  /** Id, name, description and version of the skills the agent may use now, highest priority first. */
  async usableSkillBriefs(tenantId: string, agentId: string): Promise<readonly SkillBrief[]> {
    const cached = await this.usableBriefs.get(`${tenantId}:${agentId}`, async () => ({
      skills: (await this.usableSkills(tenantId, agentId)).map((r) => ({
        id: r.id,
        name: r.name,
        description: r.description,
        version: metadataColumn(r.metadata).version ?? null,
      })),
    }));
    return cached!.skills;
  }

  /** A skill of the tenant by id or name, with this agent's assignment of it if any. */
  async findForAgent(tenantId: string, agentId: string, idOrName: string) {
    const skill =
      (await store.findSkill(this.db.kysely, tenantId, idOrName)) ?? (await store.findSkillByName(this.db.kysely, tenantId, idOrName));
    if (!skill) return null;
    const assignment = await store.findAssignment(this.db.kysely, tenantId, skill.id, agentId);
    return { skill, assignment };
  }

  files(tenantId: string, skillId: string) {
    return store.skillFiles(this.db.kysely, tenantId, skillId);
  }

  /**
   * A skill's files as a code execution mounts them at /skill (the code domain's skill_script_run):
   * `SKILL.md` (its instructions), `references/<name>`, `scripts/<name>`. Only for a skill assigned to
   * the agent, enabled and active; otherwise why not.
   */
  async mountFor(
    tenantId: string,
    agentId: string,
    idOrName: string,
  ): Promise<
    | { refused: 'skill_not_assigned' | 'skill_archived' }
    | { skill: { id: string; name: string }; files: { path: string; kind: string; content: string }[] }
  > {
    const found = await this.findForAgent(tenantId, agentId, idOrName);
    if (!found?.assignment?.enabled) return { refused: 'skill_not_assigned' };
    if (found.skill.status !== 'active') return { refused: 'skill_archived' };
    const files = (await this.files(tenantId, found.skill.id)).map((f) => ({
      path: `${f.kind === 'script' ? 'scripts' : 'references'}/${f.name}`,
      kind: f.kind,
      content: f.content,
    }));
    return {
      skill: { id: found.skill.id, name: found.skill.name },
      files: [{ path: 'SKILL.md', kind: 'instructions', content: found.skill.instructions }, ...files],
    };
  }

  /** Active skills of the tenant matching a category and words, with the agent's assignment if any. */
  async discover(tenantId: string, agentId: string, filter: { category?: string; q?: string }) {
    const { rows } = await store.listSkills(this.db.kysely, { tenantId, filter: { ...filter, status: 'active' }, limit: 200, offset: 0 });
    const assigned = new Map((await store.agentAssignments(this.db.kysely, tenantId, agentId)).map((a) => [a.id, a]));
    return rows.map((row) => ({ row, assignment: assigned.get(row.id) }));
  }

  /** SKILL.md of a skill, and its files, for export. */
  async exportSkill(tenantId: string, id: string) {
    const row = await this.requireSkill(this.db.kysely, tenantId, id);
    const files = await store.skillFiles(this.db.kysely, tenantId, id);
    const skillMd = renderSkillMd({
      name: row.name,
      description: row.description,
      category: row.category,
      instructions: row.instructions,
      metadata: metadataColumn(row.metadata),
      frontMatter: frontMatterColumn(row.front_matter),
    });
    return { name: row.name, skillMd, files };
  }

  // ---------------------------------------------------------------- creating and changing

  createFromBody(caller: Caller, body: CreateSkillBody) {
    return this.create(caller, {
      name: body.name,
      description: body.description.trim(),
      category: body.category ?? null,
      instructions: body.instructions.trim(),
      metadata: body.metadata ?? {},
      frontMatter: {},
      references: body.references ?? [],
      scripts: scriptsWithLanguage(body.scripts),
    });
  }

  importSkillMd(caller: Caller, body: ImportSkillBody | { skillMd: string }, where = 'body.skillMd') {
    const parsed = parseSkillMd(body.skillMd, where);
    const extra = body as ImportSkillBody;
    return this.create(caller, { ...parsed, references: extra.references ?? [], scripts: scriptsWithLanguage(extra.scripts) });
  }

  async importArchive(caller: Caller, data: Buffer) {
    return this.create(caller, skillFromEntries(await readArchive(data)), { references: 'archive.references', scripts: 'archive.scripts' });
  }

  private async create(
    caller: Caller,
    content: SkillContent,
    where = { references: 'body.references', scripts: 'body.scripts' },
    origin: { storeId: string } | null = null,
  ): Promise<Skill> {
    checkSkillFiles(content, where);
    const at = now();
    const row: store.SkillRow = {
      id: newId(),
      tenant_id: caller.tenantId,
      name: content.name,
      description: content.description,
      category: content.category,
      source: origin ? 'store' : 'custom',
      store_id: origin?.storeId ?? null,
      status: 'active',
      instructions: content.instructions,
      metadata: JSON.stringify(content.metadata),
      front_matter: JSON.stringify(content.frontMatter),
      created_by: caller.actor.id,
      created_at: at,
      updated_at: at,
    };
    try {
      await this.db.kysely.transaction().execute(async (trx) => {
        if (origin && (await store.findSkillByStoreId(trx, caller.tenantId, origin.storeId))) {
          throw new Conflict('already_acquired', `the store skill ${origin.storeId} is already acquired by this tenant`);
        }
        const existing = await store.findSkillByName(trx, caller.tenantId, content.name);
        if (existing) throw nameTaken(content.name, existing);
        await store.insertSkill(trx, row);
        await this.writeFiles(trx, { tenantId: caller.tenantId, skillId: row.id }, content);
        await this.audit(trx, caller, {
          action: origin ? 'skill.acquired' : 'skill.created',
          resourceId: row.id,
          detail: { name: row.name, ...(origin ?? {}) },
        });
      });
    } catch (err) {
      // Two creations racing past the checks: the unique indexes decide.
      if (store.isUniqueViolation(err))
        throw origin ? new Conflict('already_acquired', `the store skill ${origin.storeId} is already acquired`) : nameTaken(content.name);
      throw err;
    }
    return this.getSkill(caller.tenantId, row.id);
  }

  /** Replaces the skill's references and scripts, each kind only when given. */
  private async writeFiles(
    trx: Kysely<Database>,
    skill: { tenantId: string; skillId: string },
    { references, scripts }: { references?: SkillFile[]; scripts?: ScriptFile[] },
  ) {
    const rows = (files: SkillFile[], language: (f: SkillFile) => string | null) =>
      files.map((f) => ({ name: f.name, content: f.content, language: language(f), size: Buffer.byteLength(f.content) }));
    if (references)
      await store.replaceFiles(
        trx,
        { ...skill, kind: 'reference' },
        rows(references, () => null),
      );
    if (scripts)
      await store.replaceFiles(
        trx,
        { ...skill, kind: 'script' },
        rows(scripts, (f) => (f as ScriptFile).language),
      );
  }

  async update(caller: Caller, id: string, body: UpdateSkillBody): Promise<Skill> {
    const references = body.references;
    const scripts = body.scripts ? scriptsWithLanguage(body.scripts) : undefined;
    try {
      await this.db.kysely.transaction().execute(async (trx) => {
        const current = await this.requireSkill(trx, caller.tenantId, id);
        const contentFields = Object.keys(body).filter((k) => k !== 'status');
        if (current.source === 'store' && contentFields.length) {
          throw new Conflict(
            'store_skill_read_only',
            'store skills cannot be edited; export it and import the copy as a custom skill, or change only its status',
          );
        }
        // Nothing to change (archiving an archived skill, an empty body): the skill stays as it is.
        if (!contentFields.length && (body.status === undefined || body.status === current.status)) return;
        if (body.name !== undefined && body.name !== current.name) {
          const existing = await store.findSkillByName(trx, caller.tenantId, body.name);
          if (existing) throw nameTaken(body.name, existing);
        }
        if (references || scripts) {
          // The size limits cover both kinds together, so the kind left alone counts as it stands.
          const stored = await store.skillFiles(trx, caller.tenantId, id);
          checkSkillFiles(
            {
              references: references ?? stored.filter((f) => f.kind === 'reference'),
              scripts: scripts ?? stored.filter((f) => f.kind === 'script').map((f) => ({ ...f, language: f.language ?? 'text' })),
            },
            { references: 'body.references', scripts: 'body.scripts' },
          );
        }
        const patch: Parameters<typeof store.updateSkill>[3] = { updated_at: now() };
        if (body.name !== undefined) patch.name = body.name;
        if (body.description !== undefined) patch.description = body.description.trim();
        if (body.category !== undefined) patch.category = body.category;
        if (body.instructions !== undefined) patch.instructions = body.instructions.trim();
        if (body.metadata !== undefined) patch.metadata = JSON.stringify(body.metadata);
        if (body.status !== undefined) patch.status = body.status;
        await store.updateSkill(trx, caller.tenantId, id, patch);
        await this.writeFiles(trx, { tenantId: caller.tenantId, skillId: id }, { references, scripts });
        if (contentFields.length)
          await this.audit(trx, caller, { action: 'skill.updated', resourceId: id, detail: { fields: contentFields } });
        if (body.status !== undefined && body.status !== current.status) {
          await this.audit(trx, caller, { action: body.status === 'archived' ? 'skill.archived' : 'skill.restored', resourceId: id });
        }
      });
    } catch (err) {
      if (store.isUniqueViolation(err)) throw nameTaken(body.name ?? '');
      throw err;
    }
    return this.getSkill(caller.tenantId, id);
  }

  /** Archives a skill (idempotent): gone from default lists, tools and prompts; assignments are kept. */
  archive(caller: Caller, id: string) {
    return this.update(caller, id, { status: 'archived' });
  }

  // ---------------------------------------------------------------- store

  private storeView(entry: StoreSkill, acquired?: store.SkillRow) {
    const size = (f: SkillFile) => Buffer.byteLength(f.content);
    return {
      id: entry.id,
      name: entry.name,
      description: entry.description,
      category: entry.category,
      references: entry.references.map((f) => ({ name: f.name, size: size(f) })),
      scripts: entry.scripts.map((f) => ({ name: f.name, language: f.language, size: size(f) })),
      acquired: Boolean(acquired),
      skillId: acquired?.id ?? null,
    };
  }

  async listStore(tenantId: string, category?: string) {
    const acquired = await store.acquiredStoreSkills(this.db.kysely, tenantId);
    const skills = this.catalog()
      .filter((s) => !category || s.category === category)
      .map((s) => this.storeView(s, acquired.get(s.id)));
    return { skills, total: skills.length };
  }

  storeEntry(storeId: string): StoreSkill | undefined {
    return this.catalog().find((s) => s.id === storeId);
  }

  async getStore(tenantId: string, storeId: string) {
    const entry = this.storeEntry(storeId);
    if (!entry) throw new NotFound('store skill');
    const acquired = await store.findSkillByStoreId(this.db.kysely, tenantId, storeId);
    return { ...this.storeView(entry, acquired), instructions: entry.instructions };
  }

  /** Copies a store skill into the tenant (source `store`); 409 when the tenant already has it. */
  acquire(caller: Caller, storeId: string): Promise<Skill> {
    const entry = this.storeEntry(storeId);
    if (!entry) throw new NotFound('store skill');
    return this.create(caller, entry, undefined, { storeId });
  }

  // ---------------------------------------------------------------- assignments (assignments.ts)

  assign(caller: Caller, skillId: string, body: AssignBody): Promise<Assignment> {
    return this.assignments.assign(caller, skillId, body);
  }

  unassign(caller: Caller, skillId: string, agentId: string): Promise<void> {
    return this.assignments.unassign(caller, skillId, agentId);
  }

  updateAssignment(caller: Caller, skillId: string, agentId: string, body: UpdateAssignmentBody): Promise<Assignment> {
    return this.assignments.update(caller, skillId, agentId, body);
  }

  /** What approving a `skill_request` does (SkillAssignments.grant). */
  grant(caller: Caller, input: { agentId: string; skillId?: string; storeId?: string; taskId: string }): Promise<Assignment> {
    return this.assignments.grant(caller, input);
  }

  /** Hooks for the agents domain: a duplicate copies the assignments, a delete drops them. */
  readonly copyAssignments: SkillAssignments['copyAssignments'];
  readonly forgetAgent: SkillAssignments['forgetAgent'];

  private audit(trx: Kysely<Database>, caller: Caller, event: ResourceEvent) {
    return recordAudit(trx, { tenantId: caller.tenantId, actor: caller.actor, resourceType: 'skill', ...event });
  }
}
