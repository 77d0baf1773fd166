import type {
  KyselyPlugin,
  OperationNode,
  PluginTransformQueryArgs,
  PluginTransformResultArgs,
  QueryResult,
  RootOperationNode,
  UnknownRow,
} from 'kysely';
import { LRUCache } from 'lru-cache';

/**
 * Knows when cached reads of a table may be out of date. Hot reads (API keys on every request,
 * agents) are served from memory; every write to their table makes earlier cached values stale:
 *
 * - writes from this process: the ChangeTrackingPlugin sees every insert/update/delete Kysely runs
 *   and bumps the table before the statement executes;
 * - other processes on SQLite (the CLI, a second server on the same file): `PRAGMA data_version`
 *   changes when another connection commits, checked before each cached read; then all is stale;
 * - other replicas on PostgreSQL: a statement trigger NOTIFYs `agentry_changes` with the table name
 *   when the writing transaction commits (migration 0007), and the signal bus bumps the table here.
 *   While the listening connection is down, nothing is served from memory (see setLive).
 *
 * Stamps come from one counter that only grows, so a cached value is current exactly when its
 * table's stamp has not moved since the value was read.
 */
export class ChangeFeed {
  private counter = 0;
  private allChangedAt = 0;
  private readonly changedAt = new Map<string, number>();
  private live: boolean;

  /**
   * @param externalChanges returns true when another process changed the database since the last
   *   call (SQLite's data_version); absent on PostgreSQL, where notifications say so instead.
   * @param live whether cached reads may be served from the start (PostgreSQL waits for LISTEN).
   */
  constructor(
    private readonly externalChanges: (() => boolean) | null = null,
    live = true,
  ) {
    this.live = live;
  }

  /** The table's current stamp, or null when cached values must not be used at all. */
  stamp(table: string): number | null {
    if (!this.live) return null;
    if (this.externalChanges?.()) this.allChangedAt = ++this.counter;
    return Math.max(this.changedAt.get(table) ?? 0, this.allChangedAt);
  }

  changed(table: string): void {
    this.changedAt.set(table, ++this.counter);
  }

  changedAll(): void {
    this.allChangedAt = ++this.counter;
  }

  /** Off while change notifications cannot arrive (lost listener); on again with everything stale. */
  setLive(live: boolean): void {
    this.changedAll();
    this.live = live;
  }
}

/** The table an insert, update, delete or merge writes, or null for anything else. */
function writtenTable(node: RootOperationNode): string | null {
  switch (node.kind) {
    case 'InsertQueryNode':
      return tableName(node.into);
    case 'UpdateQueryNode':
      return tableName(node.table);
    case 'DeleteQueryNode':
      return tableName(node.from.froms[0]);
    case 'MergeQueryNode':
      return tableName(node.into);
    default:
      return null;
  }
}

function tableName(node: OperationNode | undefined): string | null {
  if (!node) return null;
  if (node.kind === 'AliasNode') return tableName((node as unknown as { node: OperationNode }).node);
  if (node.kind === 'TableNode') return (node as unknown as { table: { identifier: { name: string } } }).table.identifier.name;
  return null;
}

/** Bumps the written table in the feed for every write statement this process runs through Kysely. */
export class ChangeTrackingPlugin implements KyselyPlugin {
  constructor(private readonly feed: ChangeFeed) {}

  transformQuery(args: PluginTransformQueryArgs): RootOperationNode {
    const table = writtenTable(args.node);
    if (table) this.feed.changed(table);
    return args.node;
  }

  async transformResult(args: PluginTransformResultArgs): Promise<QueryResult<UnknownRow>> {
    return args.result;
  }
}

/**
 * A bounded in-memory cache of reads from one table (or a join of several), trusted only while the
 * stamps of those tables are unchanged. Values are frozen: callers share them. Misses (undefined)
 * are not cached. Entries have no time to live: the stamps decide whether one is current, and `max`
 * (least recently used out first) bounds the memory. A TTL would make every hit read the clock and
 * check the entry's age, and an authenticated GET makes three hits. So it is no TtlCache (cache.ts):
 * it is trusted by stamps, not by time, and reads no clock.
 */
export class ReadCache<V extends object> {
  private readonly entries: LRUCache<string, { stamp: number; value: V }>;
  private readonly tables: readonly string[];

  constructor(
    private readonly feed: ChangeFeed,
    tables: string | readonly string[],
    options: { max: number },
  ) {
    this.tables = typeof tables === 'string' ? [tables] : tables;
    this.entries = new LRUCache({ max: options.max });
  }

  /** The newest stamp of the tables: every change moves it, as stamps come from one growing counter. */
  private stamp(): number | null {
    if (this.tables.length === 1) return this.feed.stamp(this.tables[0]);
    let newest = 0;
    for (const table of this.tables) {
      const stamp = this.feed.stamp(table);
      if (stamp === null) return null;
      newest = Math.max(newest, stamp);
    }
    return newest;
  }

  /** The cached value while it is current; otherwise `load()`'s, remembered if nothing changed meanwhile. */
  async get(key: string, load: () => Promise<V | undefined>): Promise<V | undefined> {
    const stamp = this.stamp();
    if (stamp === null) return load();
    const hit = this.entries.get(key);
    if (hit && hit.stamp === stamp) return hit.value;
    const value = await load();
    // A write that started while loading may or may not be in `value`: keep it only if none did.
    if (value !== undefined && this.stamp() === stamp) this.entries.set(key, { stamp, value: deepFreeze(value) });
    return value;
  }

  clear(): void {
    this.entries.clear();
  }
}

function deepFreeze<T>(value: T): T {
  // Typed arrays (Buffers) cannot be frozen; they are never handed to callers to write.
  if (value && typeof value === 'object' && !Object.isFrozen(value) && !ArrayBuffer.isView(value)) {
    Object.freeze(value);
    for (const v of Object.values(value)) deepFreeze(v);
  }
  return value;
}
