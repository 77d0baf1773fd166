import type { Kysely } from 'kysely';
import type { AgentsService } from '../agents/service.js';
import { ReadCache } from '../db/changes.js';
import type { Db } from '../db/database.js';
import type { Database } from '../db/schema.js';
import { isUniqueViolation } from '../db/unique-violation.js';
import { Conflict, NotFound } from '../errors.js';
import { newId, now } from '../ids.js';
import { recordAudit } from '../tenancy/audit.js';
import type { Actor, Principal } from '../tenancy/permissions.js';
import {
  MEMORY_BLOCK_MAX_CHARS,
  MEMORY_CHANGES,
  MEMORY_MAX_BLOCKS,
  type MemoryBlock,
  type MemoryChange,
  type MemoryVersion,
} from './schemas.js';
import * as store from './store.js';

/**
 * An agent's memory blocks (docs/runtime.md, "Memory"): named texts that join the system prompt of
 * every run, agent-wide or one end user's. People edit them over HTTP, the agent through its memory
 * tools (tools.ts); every change is a version and an audit event, written in one transaction.
 */

/** Characters as people count them (code points), as the schemas' maxLength counts them. */
function charCount(text: string): number {
  let n = 0;
  for (const _ of text) n++;
  return n;
}

/** Who changes a block: a person's credential, or the agent in one of its runs. */
export interface MemoryWriter {
  tenantId: string;
  actor: Actor;
  runId?: string | null;
}

/** One block of an agent: of its scope (user null: the agent's own, agent-wide), by label. */
export interface BlockTarget {
  agentId: string;
  userId: string | null;
  label: string;
}

/** The next text of a block from its current row (undefined: none yet), or null to delete it. */
type Edit = (current: store.MemoryBlockRow | undefined) => { value: string; change: MemoryChange } | null;

/** Another writer changed the block between this writer's read and its write: read again and retry. */
class Raced extends Error {}

/** Attempts of one change when other writers keep changing the block in between. */
const MAX_ATTEMPTS = 5;

const blockView = (row: store.MemoryBlockRow): MemoryBlock => ({
  label: row.label,
  userId: row.user_id,
  value: row.value,
  chars: charCount(row.value),
  limit: MEMORY_BLOCK_MAX_CHARS,
  version: row.version,
  createdAt: row.created_at,
  updatedAt: row.updated_at,
  updatedBy: { type: row.updated_by_type, id: row.updated_by_id },
});

const versionView = (row: store.MemoryVersionRow): MemoryVersion => ({
  version: row.version,
  change: (MEMORY_CHANGES as readonly string[]).includes(row.change) ? (row.change as MemoryChange) : 'set',
  value: row.value,
  previousValue: row.previous_value,
  actor: { type: row.actor_type, id: row.actor_id },
  runId: row.run_id,
  createdAt: row.created_at,
});

const tooLong = (label: string, chars: number) =>
  new Conflict(
    'memory_block_full',
    `block ${label} would hold ${chars} characters, more than its limit of ${MEMORY_BLOCK_MAX_CHARS}: condense it (memory_replace, or PUT the block) first`,
  );

export class MemoryService {
  /** What runs see of an agent's memory (agent-wide and one user's blocks): read at every run's start. */
  private readonly cachedForRun: ReadCache<MemoryBlock[]>;
  private readonly db: Db;
  private readonly agents: AgentsService;

  constructor({ db, agents }: { db: Db; agents: AgentsService }) {
    this.db = db;
    this.agents = agents;
    this.cachedForRun = new ReadCache(db.changes, 'memory_blocks', { max: 10_000 });
  }

  // ---------------------------------------------------------------- people (HTTP)

  async list(tenantId: string, agentId: string, userId: string | null) {
    await this.agents.get(tenantId, agentId);
    const rows = await store.listBlocks(this.db.kysely, { tenantId, agentId, userId });
    return { blocks: rows.map(blockView), limits: { maxBlocks: MEMORY_MAX_BLOCKS, maxChars: MEMORY_BLOCK_MAX_CHARS } };
  }

  async get(tenantId: string, { agentId, userId, label }: BlockTarget): Promise<MemoryBlock> {
    await this.agents.get(tenantId, agentId);
    const row = await store.findBlock(this.db.kysely, { tenantId, agentId, userId }, label);
    if (!row) throw new NotFound('memory block');
    return blockView(row);
  }

  /**
   * Sets the block's text, making the block when there is none. With `expectedVersion`, only if the
   * block is still at that version. The same text again changes nothing (no version, no event).
   */
  async put(
    principal: Principal,
    target: BlockTarget,
    input: { value: string; expectedVersion?: number },
  ): Promise<{ block: MemoryBlock; created: boolean }> {
    const { label } = target;
    await this.agents.get(principal.tenantId, target.agentId);
    let created = false;
    const row = await this.write({ tenantId: principal.tenantId, actor: principal.actor }, target, (current) => {
      if (input.expectedVersion !== undefined && current?.version !== input.expectedVersion) {
        throw new Conflict(
          'version_mismatch',
          current
            ? `block ${label} is at version ${current.version}, not ${input.expectedVersion}: read it again`
            : `block ${label} does not exist (any more)`,
        );
      }
      created = !current;
      if (current && current.value === input.value) return { value: current.value, change: 'set' };
      return { value: input.value, change: current ? 'set' : 'created' };
    });
    return { block: blockView(row!), created };
  }

  async delete(principal: Principal, target: BlockTarget): Promise<void> {
    await this.agents.get(principal.tenantId, target.agentId);
    await this.write({ tenantId: principal.tenantId, actor: principal.actor }, target, (current) => {
      if (!current) throw new NotFound('memory block');
      return null;
    });
  }

  /** A label's versions, newest first; they outlive the block (a deleted block's history stays). */
  async versions(tenantId: string, { agentId, userId, label }: BlockTarget, { page, limit }: { page: number; limit: number }) {
    await this.agents.get(tenantId, agentId);
    const { rows, total } = await store.listVersions(this.db.kysely, { tenantId, agentId, userId }, label, {
      limit,
      offset: (page - 1) * limit,
    });
    if (total === 0) throw new NotFound('memory block');
    return { versions: rows.map(versionView), total, page, limit };
  }

  // ---------------------------------------------------------------- runs (system prompt, tools)

  /** The agent-wide blocks, then the user's (when there is one): what a run of the agent sees. Shared and frozen. */
  async forRun(tenantId: string, agentId: string, userId: string | null): Promise<readonly MemoryBlock[]> {
    const blocks = await this.cachedForRun.get(`${tenantId}|${agentId}|${userId ?? ''}`, async () =>
      (await store.blocksForRun(this.db.kysely, tenantId, agentId, userId)).map(blockView),
    );
    return blocks ?? [];
  }

  /** Adds text at the end of a block (on a line of its own), making the block when there is none. */
  append(writer: MemoryWriter, target: BlockTarget, text: string): Promise<MemoryBlock> {
    return this.agentWrite(writer, target, (current) => {
      if (!current) return { value: text, change: 'created' };
      return { value: current.value ? `${current.value}\n${text}` : text, change: 'appended' };
    });
  }

  /** Replaces the one occurrence of `old` in a block with `replacement` (empty: removes it). */
  replace(writer: MemoryWriter, target: BlockTarget, old: string, replacement: string): Promise<MemoryBlock> {
    return this.agentWrite(writer, target, (current) => {
      if (!current) throw new NotFound('memory block', `there is no block ${target.label}: memory_append makes one`);
      const at = current.value.indexOf(old);
      if (at < 0) throw new Conflict('text_not_found', `block ${target.label} does not hold that text (it must match exactly)`);
      if (current.value.indexOf(old, at + 1) >= 0) {
        throw new Conflict(
          'text_ambiguous',
          `block ${target.label} holds that text more than once: give more of it, so it names one place`,
        );
      }
      return { value: current.value.slice(0, at) + replacement + current.value.slice(at + old.length), change: 'replaced' };
    });
  }

  /**
   * A change the agent makes in one of its runs: to the user's block when the run is with a user,
   * else to its own. The agent's own blocks are shared by all its users, so in a user's conversation
   * the agent cannot change them (one user must not rewrite what every user's runs are told).
   */
  private async agentWrite(writer: MemoryWriter, target: BlockTarget, edit: Edit) {
    if (target.userId !== null) {
      const visible = await this.forRun(writer.tenantId, target.agentId, target.userId);
      // The blocks the run sees (read from memory): the label as the user's own, or only as the agent's.
      const held = (userId: string | null) => visible.some((b) => b.label === target.label && b.userId === userId);
      const shared = !held(target.userId) && held(null);
      if (shared) {
        throw new Conflict(
          'memory_block_read_only',
          `block ${target.label} is the agent's own, shared by all its users; in a conversation with a user only that user's blocks change: use another label`,
        );
      }
    }
    return blockView((await this.write(writer, target, edit))!);
  }

  /** Drops everything the agent remembers, in the transaction deleting it (an AgentsService delete hook). */
  readonly forgetAgent = (trx: Kysely<Database>, tenantId: string, agentId: string) => store.deleteAgentMemory(trx, tenantId, agentId);

  // ---------------------------------------------------------------- the one write path

  /**
   * Applies `edit` to the block's current row in one transaction with its version and audit event.
   * The row is written only if it is still the one read (its version), and a new block only if no
   * other writer made it first (the unique indexes); otherwise the change is tried again on what that
   * writer left. Answers the row written, or null when the block was deleted.
   */
  private async write(writer: MemoryWriter, target: BlockTarget, edit: Edit): Promise<store.MemoryBlockRow | null> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.db.kysely.transaction().execute((trx) => this.writeOnce(trx, writer, target, edit));
      } catch (err) {
        if (!(err instanceof Raced || isUniqueViolation(err))) throw err;
        if (attempt >= MAX_ATTEMPTS) {
          throw new Conflict('memory_block_busy', `block ${target.label} kept changing while this change was written; try again`);
        }
      }
    }
  }

  private async writeOnce(trx: Kysely<Database>, writer: MemoryWriter, { agentId, userId, label }: BlockTarget, edit: Edit) {
    const scope: store.BlockScope = { tenantId: writer.tenantId, agentId, userId };
    const current = await store.findBlock(trx, scope, label);
    const next = edit(current);
    const at = now();
    const by = { updated_by_type: writer.actor.type, updated_by_id: writer.actor.id };
    let row: store.MemoryBlockRow | null;
    if (next === null) {
      if (!current) throw new NotFound('memory block');
      if (!(await store.deleteBlock(trx, { tenantId: scope.tenantId, id: current.id, version: current.version }))) throw new Raced();
      row = null;
    } else {
      if (current && next.value === current.value) return current;
      const chars = charCount(next.value);
      if (chars > MEMORY_BLOCK_MAX_CHARS) throw tooLong(label, chars);
      if (current) {
        const patch = { ...by, value: next.value, version: current.version + 1, updated_at: at };
        if (!(await store.updateBlock(trx, { tenantId: scope.tenantId, id: current.id, version: current.version }, patch)))
          throw new Raced();
        row = { ...current, ...patch };
      } else {
        await store.lockScopeForCreate(trx, scope, this.db.dialect);
        // A writer that held the lock before may have made this very block: then this write changes it.
        if (await store.findBlock(trx, scope, label)) throw new Raced();
        if ((await store.countBlocks(trx, scope)) >= MEMORY_MAX_BLOCKS) {
          throw new Conflict(
            'memory_block_limit',
            `${scope.userId === null ? 'the agent' : `user ${scope.userId}`} already has ${MEMORY_MAX_BLOCKS} memory blocks, the most one scope holds: delete or reuse one`,
          );
        }
        const version = (await store.lastVersion(trx, scope, label)) + 1;
        row = {
          id: newId(),
          tenant_id: scope.tenantId,
          agent_id: scope.agentId,
          user_id: scope.userId,
          label,
          value: next.value,
          version,
          created_at: at,
          updated_at: at,
          ...by,
        };
        await store.insertBlock(trx, row);
      }
    }
    const change: MemoryChange = next?.change ?? 'deleted';
    const version = row ? row.version : current!.version + 1;
    await store.insertVersion(trx, {
      id: newId(),
      tenant_id: scope.tenantId,
      agent_id: scope.agentId,
      user_id: scope.userId,
      label,
      version,
      change,
      value: row?.value ?? null,
      previous_value: current?.value ?? null,
      actor_type: writer.actor.type,
      actor_id: writer.actor.id,
      run_id: writer.runId ?? null,
      created_at: at,
    });
    await recordAudit(trx, {
      tenantId: scope.tenantId,
      actor: writer.actor,
      action: `memory_block.${change === 'created' || change === 'deleted' ? change : 'updated'}`,
      resourceType: 'memory_block',
      resourceId: (row ?? current)!.id,
      // The text stays in the versions (it may be personal data); the event says what changed.
      detail: {
        agentId: scope.agentId,
        userId: scope.userId,
        label,
        version,
        change,
        chars: row ? charCount(row.value) : 0,
        ...(writer.runId ? { runId: writer.runId } : {}),
      },
    });
    return row;
  }
}
