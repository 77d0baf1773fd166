import { type Kysely, PostgresAdapter, sql } from 'kysely';

const isPostgres = (db: Kysely<unknown>) => db.getExecutor().adapter instanceof PostgresAdapter;

/**
 * Vector search's first pass (docs/knowledge.md, "Vector"): each chunk's embedding also as a small
 * sketch, in an index that holds what the pass reads, so it scans neither the chunks' text nor their
 * full vectors: on SQLite an int8 copy (compared by sqlite-vec); on PostgreSQL the same offset by 128
 * (read with get_byte at a word-sparse query's components) and each component's level as bits (sign
 * and strength; compared by bit_count, for a dense query). The few best candidates are then ranked by their exact cosine.
 * Existing chunks get theirs here; the conversions are the ones src/knowledge/embeddings.ts makes,
 * frozen as this migration's.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  const pg = isPostgres(db);
  if (pg) {
    await sql`alter table knowledge_chunks add column embedding_levels bit varying, add column embedding_uint8 bytea`.execute(db);
  } else {
    await sql`alter table knowledge_chunks add column embedding_int8 blob`.execute(db);
  }
  for (let after = 0; ; ) {
    const { rows } = await sql<{ seq: number | string; embedding: Uint8Array }>`select seq, embedding from knowledge_chunks
      where seq > ${after} order by seq limit 1000`.execute(db);
    if (!rows.length) break;
    const sketches = rows.map((r) => {
      const v = floats(r.embedding);
      return pg ? sql`(${Number(r.seq)}::bigint, ${levels(v)}::varbit, ${uint8(v)}::bytea)` : sql`(${Number(r.seq)}, ${int8(v)})`;
    });
    if (pg) {
      await sql`update knowledge_chunks set embedding_levels = sketches.levels, embedding_uint8 = sketches.uint8
        from (values ${sql.join(sketches)}) as sketches (seq, levels, uint8) where sketches.seq = knowledge_chunks.seq`.execute(db);
    } else {
      await sql`with sketches (seq, sketch) as (values ${sql.join(sketches)})
        update knowledge_chunks set embedding_int8 = (select sketch from sketches where sketches.seq = knowledge_chunks.seq)
        where seq in (select seq from sketches)`.execute(db);
    }
    after = Number(rows[rows.length - 1].seq);
  }
  // The pass's filter columns, its order key and the sketch, so it reads the index alone.
  if (pg) {
    await sql`create index knowledge_chunks_vectors on knowledge_chunks (tenant_id, knowledge_base_id, embedding_model, seq)
      include (document_id, embedding_levels, embedding_uint8)`.execute(db);
  } else {
    await sql`create index knowledge_chunks_vectors on knowledge_chunks (tenant_id, knowledge_base_id, embedding_model, seq, document_id, embedding_int8)`.execute(
      db,
    );
  }
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`drop index knowledge_chunks_vectors`.execute(db);
  if (isPostgres(db)) await sql`alter table knowledge_chunks drop column embedding_levels, drop column embedding_uint8`.execute(db);
  else await sql`alter table knowledge_chunks drop column embedding_int8`.execute(db);
}

function floats(bytes: Uint8Array): Float32Array {
  const copy = new Uint8Array(bytes.byteLength);
  copy.set(bytes);
  return new Float32Array(copy.buffer);
}

function int8(v: Float32Array): Buffer {
  const out = Buffer.alloc(v.length);
  for (let i = 0; i < v.length; i++) out.writeInt8(Math.max(-127, Math.min(127, Math.round(v[i] * 127))), i);
  return out;
}

function uint8(v: Float32Array): Buffer {
  const out = int8(v);
  for (let i = 0; i < out.length; i++) out[i] = (out.readInt8(i) + 128) & 0xff;
  return out;
}

function levels(v: Float32Array): string {
  let sum = 0;
  let n = 0;
  for (const x of v) {
    if (x !== 0) {
      sum += x * x;
      n++;
    }
  }
  const strong = n ? Math.sqrt(sum / n) : 0;
  const bits = ['', '', '', ''];
  for (const x of v) {
    bits[0] += x > 0 ? '1' : '0';
    bits[1] += x > strong ? '1' : '0';
    bits[2] += x < 0 ? '1' : '0';
    bits[3] += x < -strong ? '1' : '0';
  }
  return bits.join('');
}
