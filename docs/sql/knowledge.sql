-- The SQL of the store queries of this domain, compiled from the samples beside each store on SQLite
-- and PostgreSQL: under `-- sqlite and postgres` when the two differ only in how parameters are written
-- ($1 there is ? on SQLite). Written by `npm run sql:sync`; do not edit (docs/architecture.md, "Reviewable SQL").

-- knowledge/store.ts: insertBase
-- sqlite and postgres
insert into
  "knowledge_bases" (
    "id",
    "tenant_id",
    "name",
    "description",
    "embedding_model",
    "rerank_model",
    "chunk_max_chars",
    "chunk_overlap_chars",
    "document_count",
    "chunk_count",
    "created_at",
    "updated_at"
  )
values
  ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12);

-- knowledge/store.ts: findBase
-- sqlite and postgres
select
  *
from
  "knowledge_bases"
where
  "tenant_id" = $1
  and "id" = $2;

-- knowledge/store.ts: listBases
-- sqlite and postgres
select
  *
from
  "knowledge_bases"
where
  "tenant_id" = $1
order by
  "id" desc
limit
  $2
offset
  $3;

select
  count(*) as "n"
from
  "knowledge_bases"
where
  "tenant_id" = $1;

-- knowledge/store.ts: countBases
-- sqlite and postgres
select
  count(*) as "n"
from
  "knowledge_bases"
where
  "tenant_id" = $1;

-- knowledge/store.ts: basesAmong (every base)
-- sqlite and postgres
select
  *
from
  "knowledge_bases"
where
  "tenant_id" = $1
order by
  "name"
limit
  $2;

-- knowledge/store.ts: basesAmong (some bases)
-- sqlite and postgres
select
  *
from
  "knowledge_bases"
where
  "tenant_id" = $1
  and "id" in ($2, $3)
order by
  "name"
limit
  $4;

-- knowledge/store.ts: lockForCreate
-- sqlite: none

-- postgres
select
  pg_advisory_xact_lock(hashtextextended ($1, 0));

-- knowledge/store.ts: updateBase
-- sqlite and postgres
update "knowledge_bases"
set
  "name" = $1,
  "updated_at" = $2
where
  "tenant_id" = $3
  and "id" = $4;

-- knowledge/store.ts: addToBaseCounts
-- sqlite and postgres
update "knowledge_bases"
set
  "document_count" = "document_count" + $1,
  "chunk_count" = "chunk_count" + $2
where
  "id" = $3;

-- knowledge/store.ts: deleteBase
-- sqlite
delete from "knowledge_documents"
where
  "tenant_id" = ?
  and "knowledge_base_id" = ?;

delete from "knowledge_document_contents"
where
  "tenant_id" = ?
  and "knowledge_base_id" = ?;

delete from "knowledge_chunks"
where
  "tenant_id" = ?
  and "knowledge_base_id" = ?;

delete from "knowledge_bases"
where
  "tenant_id" = ?
  and "id" = ?;

-- postgres
delete from "knowledge_documents"
where
  "tenant_id" = $1
  and "knowledge_base_id" = $2;

delete from "knowledge_document_contents"
where
  "tenant_id" = $1
  and "knowledge_base_id" = $2;

delete from "knowledge_chunks"
where
  "tenant_id" = $1
  and "knowledge_base_id" = $2;

delete from "knowledge_terms"
where
  "knowledge_base_id" = $1
  and exists (
    select
      "id"
    from
      "knowledge_bases"
    where
      "tenant_id" = $2
      and "id" = $3
  );

delete from "knowledge_bases"
where
  "tenant_id" = $1
  and "id" = $2;

-- knowledge/store.ts: insertDocument
-- sqlite and postgres
insert into
  "knowledge_documents" (
    "id",
    "tenant_id",
    "knowledge_base_id",
    "file_id",
    "filename",
    "title",
    "source_url",
    "tags",
    "metadata",
    "media_type",
    "byte_size",
    "version",
    "indexed_version",
    "status",
    "failure_reason",
    "progress",
    "chunk_count",
    "attempts",
    "available_at",
    "lease_owner",
    "lease_expires_at",
    "created_at",
    "updated_at",
    "indexed_at"
  )
values
  (
    $1,
    $2,
    $3,
    $4,
    $5,
    $6,
    $7,
    $8,
    $9,
    $10,
    $11,
    $12,
    $13,
    $14,
    $15,
    $16,
    $17,
    $18,
    $19,
    $20,
    $21,
    $22,
    $23,
    $24
  );

insert into
  "knowledge_document_contents" ("document_id", "tenant_id", "knowledge_base_id", "version", "content")
values
  ($1, $2, $3, $4, $5);

-- knowledge/store.ts: documentContent
-- sqlite and postgres
select
  "content"
from
  "knowledge_document_contents"
where
  "document_id" = $1
  and "version" = $2;

-- knowledge/store.ts: findDocument
-- sqlite and postgres
select
  *
from
  "knowledge_documents"
where
  "tenant_id" = $1
  and "knowledge_base_id" = $2
  and "id" = $3;

-- knowledge/store.ts: listDocuments (every)
-- sqlite and postgres
select
  *
from
  "knowledge_documents"
where
  "tenant_id" = $1
  and "knowledge_base_id" = $2
order by
  "id" desc
limit
  $3
offset
  $4;

select
  count(*) as "n"
from
  "knowledge_documents"
where
  "tenant_id" = $1
  and "knowledge_base_id" = $2;

-- knowledge/store.ts: listDocuments (of a status)
-- sqlite and postgres
select
  *
from
  "knowledge_documents"
where
  "tenant_id" = $1
  and "knowledge_base_id" = $2
  and "status" = $3
order by
  "id" desc
limit
  $4
offset
  $5;

select
  count(*) as "n"
from
  "knowledge_documents"
where
  "tenant_id" = $1
  and "knowledge_base_id" = $2
  and "status" = $3;

-- knowledge/store.ts: countDocuments
-- sqlite and postgres
select
  count(*) as "n"
from
  "knowledge_documents"
where
  "tenant_id" = $1
  and "knowledge_base_id" = $2;

-- knowledge/store.ts: searchableDocuments
-- sqlite and postgres
select
  "id",
  "title",
  "source_url",
  "tags",
  "metadata"
from
  "knowledge_documents"
where
  "tenant_id" = $1
  and "knowledge_base_id" = $2
  and "indexed_version" is not null;

-- knowledge/store.ts: documentTitles
-- sqlite and postgres
select
  "id",
  "title",
  "source_url"
from
  "knowledge_documents"
where
  "tenant_id" = $1
  and "id" in ($2, $3);

-- knowledge/store.ts: replaceDocument
-- sqlite and postgres
update "knowledge_documents"
set
  "version" = $1,
  "status" = $2,
  "updated_at" = $3
where
  "tenant_id" = $4
  and "id" = $5;

update "knowledge_document_contents"
set
  "version" = $1,
  "content" = $2
where
  "tenant_id" = $3
  and "document_id" = $4;

-- knowledge/store.ts: deleteDocument
-- sqlite
delete from "knowledge_documents"
where
  "tenant_id" = ?
  and "knowledge_base_id" = ?
  and "id" = ?
returning
  "chunk_count";

delete from "knowledge_document_contents"
where
  "tenant_id" = ?
  and "document_id" = ?;

delete from "knowledge_chunks"
where
  "document_id" = ?;

-- postgres
delete from "knowledge_documents"
where
  "tenant_id" = $1
  and "knowledge_base_id" = $2
  and "id" = $3
returning
  "chunk_count";

delete from "knowledge_document_contents"
where
  "tenant_id" = $1
  and "document_id" = $2;

with
  gone as (
    delete from knowledge_chunks
    where
      document_id = $1
    returning
      tsv
  )
select
  t.lexeme as term,
  count(*) as chunks
from
  gone
  cross join lateral unnest(gone.tsv) as t
group by
  t.lexeme
union all
select
  '',
  count(*)
from
  gone;

-- knowledge/store.ts: requeueBase
-- sqlite and postgres
update "knowledge_documents"
set
  "status" = $1,
  "progress" = $2,
  "attempts" = $3,
  "failure_reason" = $4,
  "available_at" = $5,
  "lease_owner" = $6,
  "lease_expires_at" = $7,
  "updated_at" = $8
where
  "tenant_id" = $9
  and "knowledge_base_id" = $10;

-- knowledge/store.ts: claimDocuments
-- sqlite
with
  "c" as materialized (
    select
      "id"
    from
      "knowledge_documents"
    where
      (
        (
          "status" = ?
          and "available_at" <= ?
        )
        or (
          "status" = ?
          and "lease_expires_at" < ?
        )
      )
    order by
      "available_at",
      "id"
    limit
      ?
  )
update "knowledge_documents"
set
  "status" = ?,
  "lease_owner" = ?,
  "lease_expires_at" = ?,
  "attempts" = "attempts" + ?,
  "updated_at" = ?
from
  "c"
where
  "knowledge_documents"."id" = "c"."id"
returning
  *;

-- postgres
with
  "c" as materialized (
    select
      "id"
    from
      "knowledge_documents"
    where
      (
        (
          "status" = $1
          and "available_at" <= $2
        )
        or (
          "status" = $3
          and "lease_expires_at" < $4
        )
      )
    order by
      "available_at",
      "id"
    limit
      $5
    for update
      skip locked
  )
update "knowledge_documents"
set
  "status" = $6,
  "lease_owner" = $7,
  "lease_expires_at" = $8,
  "attempts" = "attempts" + $9,
  "updated_at" = $10
from
  "c"
where
  "knowledge_documents"."id" = "c"."id"
returning
  *;

-- knowledge/store.ts: renewLeases
-- sqlite and postgres
update "knowledge_documents"
set
  "lease_expires_at" = $1
where
  "id" in ($2)
  and "lease_owner" = $3
  and "status" = $4;

-- knowledge/store.ts: updateHeld
-- sqlite and postgres
update "knowledge_documents"
set
  "progress" = $1
where
  "id" = $2
  and "version" = $3
  and "lease_owner" = $4
  and "status" = $5;

-- knowledge/store.ts: deleteChunks
-- sqlite
delete from "knowledge_chunks"
where
  "document_id" = ?;

-- postgres
with
  gone as (
    delete from knowledge_chunks
    where
      document_id = $1
    returning
      tsv
  )
select
  t.lexeme as term,
  count(*) as chunks
from
  gone
  cross join lateral unnest(gone.tsv) as t
group by
  t.lexeme
union all
select
  '',
  count(*)
from
  gone;

-- knowledge/store.ts: documentTermCounts
-- sqlite and postgres
select
  t.lexeme as term,
  count(*) as chunks
from
  knowledge_chunks c
  cross join lateral unnest(c.tsv) as t
where
  c.document_id = $1
group by
  t.lexeme
union all
select
  '',
  count(*)
from
  knowledge_chunks
where
  document_id = $2;

-- knowledge/store.ts: addToTermCounts
-- sqlite and postgres
insert into
  knowledge_terms (knowledge_base_id, term, chunks)
select
  $1,
  d.term,
  d.chunks
from
  unnest($2::text[], $3::int[]) as d (term, chunks)
order by
  d.term
on conflict (knowledge_base_id, term) do update
set
  chunks = knowledge_terms.chunks + excluded.chunks
returning
  term,
  chunks;

-- knowledge/store.ts: insertChunks (sketches only)
-- sqlite
insert into
  "knowledge_chunks" (
    "tenant_id",
    "knowledge_base_id",
    "document_id",
    "version",
    "position",
    "heading_path",
    "text",
    "char_count",
    "token_count",
    "embedding_model",
    "embedding",
    "embedding_int8"
  )
values
  (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?);

-- postgres
insert into
  "knowledge_chunks" (
    "tenant_id",
    "knowledge_base_id",
    "document_id",
    "version",
    "position",
    "heading_path",
    "text",
    "char_count",
    "token_count",
    "embedding_model",
    "embedding",
    "embedding_levels",
    "embedding_uint8"
  )
values
  ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13);

-- knowledge/store.ts: insertChunks (with pgvector)
-- sqlite
insert into
  "knowledge_chunks" (
    "tenant_id",
    "knowledge_base_id",
    "document_id",
    "version",
    "position",
    "heading_path",
    "text",
    "char_count",
    "token_count",
    "embedding_model",
    "embedding",
    "embedding_int8"
  )
values
  (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?);

-- postgres
insert into
  "knowledge_chunks" (
    "tenant_id",
    "knowledge_base_id",
    "document_id",
    "version",
    "position",
    "heading_path",
    "text",
    "char_count",
    "token_count",
    "embedding_model",
    "embedding",
    "embedding_levels",
    "embedding_uint8",
    "embedding_vector"
  )
values
  ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14);

-- knowledge/store.ts: hasVectorColumn
-- sqlite and postgres
select
  to_regclass('knowledge_chunks_vector_384') is not null as ready;

-- knowledge/store.ts: vectorExtension
-- sqlite and postgres
select
  exists (
    select
    from
      pg_available_extensions () as e
    where
      e.name = 'vector'
  ) as available,
  to_regtype('vector') is not null as created;

-- knowledge/store.ts: createVectorExtension
-- sqlite and postgres
create extension if not exists vector;

-- knowledge/store.ts: addVectorColumn
-- sqlite and postgres
alter table knowledge_chunks
add column if not exists embedding_vector vector;

-- knowledge/store.ts: createWithoutVectorIndex
-- sqlite and postgres
select
  to_regclass('knowledge_chunks_without_vector') is not null as made;

-- knowledge/store.ts: chunksWithoutVector
-- sqlite and postgres
select
  seq,
  embedding
from
  knowledge_chunks
where
  seq > $1
  and embedding_vector is null
  and octet_length(embedding) between 4 and 8000
order by
  seq
limit
  $2;

-- knowledge/store.ts: setVectors
-- sqlite and postgres
update knowledge_chunks
set
  embedding_vector = v.embedding
from
  (
    values
      ($1::bigint, $2::vector)
  ) as v (seq, embedding)
where
  knowledge_chunks.seq = v.seq
  and knowledge_chunks.embedding_vector is null;

-- knowledge/store.ts: vectorDimensions
-- sqlite and postgres
select distinct
  vector_dims (embedding_vector) as dims
from
  knowledge_chunks
where
  embedding_vector is not null;

-- knowledge/store.ts: tryLockVectorUpkeep
-- sqlite and postgres
select
  pg_try_advisory_lock(hashtextextended ('knowledge/vector-upkeep', 0)) as locked;

-- knowledge/store.ts: unlockVectorUpkeep
-- sqlite and postgres
select
  pg_advisory_unlock(hashtextextended ('knowledge/vector-upkeep', 0));

-- knowledge/store.ts: createVectorIndex
-- sqlite and postgres
begin;

select
  pg_advisory_xact_lock(hashtextextended ('knowledge/vector-index', 0));

create index if not exists knowledge_chunks_vector_384 on knowledge_chunks using hnsw ((embedding_vector::vector (384)) vector_cosine_ops)
where
  vector_dims (embedding_vector) = 384;

commit;

-- knowledge/store.ts: pgvectorNearest (every document)
-- sqlite and postgres
begin;

select
  set_config('hnsw.iterative_scan', 'relaxed_order', true),
  set_config('hnsw.ef_search', $1, true);

with
  nearest as materialized (
    select
      seq,
      embedding,
      embedding_vector::vector (2) <=> $1::vector (2) as distance
    from
      knowledge_chunks
    where
      vector_dims (embedding_vector) = 2
      and tenant_id = $2
      and knowledge_base_id = $3
      and embedding_model = $4
    order by
      embedding_vector::vector (2) <=> $5::vector (2)
    limit
      $6
  )
select
  seq,
  embedding
from
  nearest
order by
  distance,
  seq;

commit;

-- knowledge/store.ts: pgvectorNearest (some documents)
-- sqlite and postgres
begin;

select
  set_config('hnsw.iterative_scan', 'relaxed_order', true),
  set_config('hnsw.ef_search', $1, true);

with
  nearest as materialized (
    select
      seq,
      embedding,
      embedding_vector::vector (2) <=> $1::vector (2) as distance
    from
      knowledge_chunks
    where
      vector_dims (embedding_vector) = 2
      and tenant_id = $2
      and knowledge_base_id = $3
      and embedding_model = $4
      and document_id in ($5, $6)
    order by
      embedding_vector::vector (2) <=> $7::vector (2)
    limit
      $8
  )
select
  seq,
  embedding
from
  nearest
order by
  distance,
  seq;

commit;

-- knowledge/store.ts: pgvectorExact (every document)
-- sqlite and postgres
select
  seq,
  embedding
from
  knowledge_chunks
where
  vector_dims (embedding_vector) = 2
  and tenant_id = $1
  and knowledge_base_id = $2
  and embedding_model = $3
order by
  embedding_vector <=> $4::vector,
  seq
limit
  $5;

-- knowledge/store.ts: pgvectorExact (some documents)
-- sqlite and postgres
select
  seq,
  embedding
from
  knowledge_chunks
where
  vector_dims (embedding_vector) = 2
  and tenant_id = $1
  and knowledge_base_id = $2
  and embedding_model = $3
  and document_id in ($4, $5)
order by
  embedding_vector <=> $6::vector,
  seq
limit
  $7;

-- knowledge/store.ts: lexicalSearch (every document)
-- sqlite and postgres
select
  rowid as seq,
  - bm25 (knowledge_chunks_fts, 1.0, 0.0) as score
from
  knowledge_chunks_fts ($1)
order by
  bm25 (knowledge_chunks_fts, 1.0, 0.0),
  rowid
limit
  $2;

-- knowledge/store.ts: lexicalSearch (some documents)
-- sqlite and postgres
select
  c.seq,
  - bm25 (knowledge_chunks_fts, 1.0, 0.0) as score
from
  knowledge_chunks_fts ($1)
  join knowledge_chunks c on c.seq = knowledge_chunks_fts.rowid
where
  c.tenant_id = $2
  and c.document_id in ($3, $4)
order by
  bm25 (knowledge_chunks_fts, 1.0, 0.0),
  c.seq
limit
  $5;

-- knowledge/store.ts: weighWords
-- sqlite and postgres
select
  w.word,
  min(coalesce(k.chunks, 0)) as df,
  max(n.chunks) as n
from
  unnest($1::text[]) as w (word)
  cross join lateral unnest(to_tsvector('english', w.word)) as t
  left join knowledge_terms k on k.knowledge_base_id = $2
  and k.term = t.lexeme
  left join knowledge_terms n on n.knowledge_base_id = $3
  and n.term = ''
group by
  w.word;

-- knowledge/store.ts: rankWeighted (every match ranked)
-- sqlite and postgres
select
  c.seq,
  (
    $1::float8 * ts_rank(c.tsv, plainto_tsquery('english', $2), 1) + $3::float8 * ts_rank(c.tsv, plainto_tsquery('english', $4), 1)
  ) as score
from
  knowledge_chunks c
where
  c.tsv @@ websearch_to_tsquery('english', $5)
  and c.tenant_id || '' = $6
  and c.knowledge_base_id || '' = $7
order by
  score desc,
  c.seq
limit
  $8;

-- knowledge/store.ts: rankWeighted (bounded: the rarest words, and every word)
-- sqlite and postgres
select
  c.seq,
  (
    $1::float8 * ts_rank(c.tsv, plainto_tsquery('english', $2), 1) + $3::float8 * ts_rank(c.tsv, plainto_tsquery('english', $4), 1)
  ) as score
from
  knowledge_chunks c
where
  c.seq = any (
    array(
      (
        select
          c.seq
        from
          knowledge_chunks c
        where
          c.tsv @@ websearch_to_tsquery('english', $5)
          and c.tenant_id || '' = $6
          and c.knowledge_base_id || '' = $7
        limit
          $8
      )
      union
      (
        select
          c.seq
        from
          knowledge_chunks c
        where
          c.tsv @@ websearch_to_tsquery('english', $9)
          and c.tenant_id || '' = $10
          and c.knowledge_base_id || '' = $11
        limit
          $12
      )
    )
  )
order by
  score desc,
  c.seq
limit
  $13;

-- knowledge/store.ts: rankWeighted (bounded, some documents)
-- sqlite and postgres
select
  c.seq,
  (
    $1::float8 * ts_rank(c.tsv, plainto_tsquery('english', $2), 1) + $3::float8 * ts_rank(c.tsv, plainto_tsquery('english', $4), 1)
  ) as score
from
  knowledge_chunks c
where
  c.seq = any (
    array(
      (
        select
          c.seq
        from
          knowledge_chunks c
        where
          c.tsv @@ websearch_to_tsquery('english', $5)
          and c.tenant_id || '' = $6
          and c.knowledge_base_id || '' = $7
          and c.document_id in ($8, $9)
        limit
          $10
      )
      union
      (
        select
          c.seq
        from
          knowledge_chunks c
        where
          c.tsv @@ websearch_to_tsquery('english', $11)
          and c.tenant_id || '' = $12
          and c.knowledge_base_id || '' = $13
          and c.document_id in ($14, $15)
        limit
          $16
      )
      union
      (
        select
          c.seq
        from
          knowledge_chunks c
        where
          c.tsv @@ websearch_to_tsquery('english', $17)
          and c.tenant_id || '' = $18
          and c.knowledge_base_id || '' = $19
          and c.document_id in ($20, $21)
        limit
          $22
      )
    )
  )
order by
  score desc,
  c.seq
limit
  $23;

-- knowledge/store.ts: vectorPage (every document)
-- sqlite and postgres
select
  "seq",
  "embedding"
from
  "knowledge_chunks"
where
  "tenant_id" = $1
  and "knowledge_base_id" = $2
  and "embedding_model" = $3
  and "seq" > $4
order by
  "seq"
limit
  $5;

-- knowledge/store.ts: vectorPage (some documents)
-- sqlite and postgres
select
  "seq",
  "embedding"
from
  "knowledge_chunks"
where
  "tenant_id" = $1
  and "knowledge_base_id" = $2
  and "embedding_model" = $3
  and "seq" > $4
  and "document_id" in ($5, $6)
order by
  "seq"
limit
  $7;

-- knowledge/store.ts: nearestVectors (every document)
-- sqlite and postgres
with
  candidates as (
    select
      seq
    from
      knowledge_chunks indexed by knowledge_chunks_vectors
    where
      tenant_id = $1
      and knowledge_base_id = $2
      and embedding_model = $3
    order by
      vec_distance_l2 (vec_int8 (embedding_int8), vec_int8 ($4)),
      seq
    limit
      $5
  )
select
  c.seq,
  coalesce(vec_distance_cosine (c.embedding, $6), 1) as distance
from
  candidates
  join knowledge_chunks c on c.seq = candidates.seq
order by
  distance,
  c.seq
limit
  $7;

-- knowledge/store.ts: nearestVectors (some documents)
-- sqlite and postgres
with
  candidates as (
    select
      seq
    from
      knowledge_chunks indexed by knowledge_chunks_vectors
    where
      tenant_id = $1
      and knowledge_base_id = $2
      and embedding_model = $3
      and document_id in ($4, $5)
    order by
      vec_distance_l2 (vec_int8 (embedding_int8), vec_int8 ($6)),
      seq
    limit
      $7
  )
select
  c.seq,
  coalesce(vec_distance_cosine (c.embedding, $8), 1) as distance
from
  candidates
  join knowledge_chunks c on c.seq = candidates.seq
order by
  distance,
  c.seq
limit
  $9;

-- knowledge/store.ts: sparseVectorCandidates (every document)
-- sqlite and postgres
select
  seq,
  embedding
from
  knowledge_chunks
where
  seq in (
    select
      seq
    from
      knowledge_chunks
    where
      tenant_id = $1
      and knowledge_base_id = $2
      and embedding_model = $3
    order by
      get_byte(embedding_uint8, $4::int) * $5::int + get_byte(embedding_uint8, $6::int) * $7::int desc,
      seq
    limit
      $8
  )
order by
  seq;

-- knowledge/store.ts: sparseVectorCandidates (some documents)
-- sqlite and postgres
select
  seq,
  embedding
from
  knowledge_chunks
where
  seq in (
    select
      seq
    from
      knowledge_chunks
    where
      tenant_id = $1
      and knowledge_base_id = $2
      and embedding_model = $3
      and document_id in ($4, $5)
    order by
      get_byte(embedding_uint8, $6::int) * $7::int desc,
      seq
    limit
      $8
  )
order by
  seq;

-- knowledge/store.ts: vectorCandidates (every document)
-- sqlite and postgres
select
  seq,
  embedding
from
  knowledge_chunks
where
  seq in (
    select
      seq
    from
      knowledge_chunks
    where
      tenant_id = $1
      and knowledge_base_id = $2
      and embedding_model = $3
    order by
      bit_count(embedding_levels & $4::varbit) + bit_count(embedding_levels & $5::varbit) - bit_count(embedding_levels & $6::varbit) - bit_count(embedding_levels & $7::varbit),
      seq
    limit
      $8
  )
order by
  seq;

-- knowledge/store.ts: vectorCandidates (some documents)
-- sqlite and postgres
select
  seq,
  embedding
from
  knowledge_chunks
where
  seq in (
    select
      seq
    from
      knowledge_chunks
    where
      tenant_id = $1
      and knowledge_base_id = $2
      and embedding_model = $3
      and document_id in ($4, $5)
    order by
      bit_count(embedding_levels & $6::varbit) + bit_count(embedding_levels & $7::varbit) - bit_count(embedding_levels & $8::varbit) - bit_count(embedding_levels & $9::varbit),
      seq
    limit
      $10
  )
order by
  seq;

-- knowledge/store.ts: findChunk
-- sqlite and postgres
select
  "position",
  "heading_path",
  "text"
from
  "knowledge_chunks"
where
  "tenant_id" = $1
  and "knowledge_base_id" = $2
  and "document_id" = $3
  and "version" = $4
  and "position" = $5;

-- knowledge/store.ts: chunksBySeq
-- sqlite and postgres
select
  "seq",
  "knowledge_base_id",
  "document_id",
  "position",
  "heading_path",
  "text"
from
  "knowledge_chunks"
where
  "tenant_id" = $1
  and "seq" in ($2, $3);

-- knowledge/store.ts: exportSources
-- sqlite and postgres
select
  *
from
  "knowledge_bases"
where
  "tenant_id" = $1
order by
  "id"
limit
  $2;

select
  *
from
  "knowledge_bases"
where
  "tenant_id" = $1
  and ("id") > ($2)
order by
  "id"
limit
  $3;

select
  "d".*,
  "c"."content"
from
  "knowledge_documents" as "d"
  inner join "knowledge_document_contents" as "c" on "c"."document_id" = "d"."id"
where
  "d"."tenant_id" = $1
order by
  "d"."id"
limit
  $2;

select
  "d".*,
  "c"."content"
from
  "knowledge_documents" as "d"
  inner join "knowledge_document_contents" as "c" on "c"."document_id" = "d"."id"
where
  "d"."tenant_id" = $1
  and "d"."id" > $2
order by
  "d"."id"
limit
  $3;

-- knowledge/usage/store.ts: insertUsage
-- sqlite and postgres
insert into
  "knowledge_usage" (
    "id",
    "tenant_id",
    "knowledge_base_id",
    "document_id",
    "run_id",
    "kind",
    "model",
    "input_tokens",
    "output_tokens",
    "created_at"
  )
values
  ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10);

-- knowledge/usage/store.ts: dailyKnowledgeUsage (every run)
-- sqlite and postgres
select
  substr(created_at, 1, 10) as "day",
  "knowledge_base_id",
  "kind",
  "model",
  count(*) as "calls",
  sum("input_tokens") as "input_tokens",
  sum("output_tokens") as "output_tokens"
from
  "knowledge_usage"
where
  "tenant_id" = $1
  and "created_at" >= $2
  and "created_at" < $3
group by
  substr(created_at, 1, 10),
  "knowledge_base_id",
  "kind",
  "model"
order by
  substr(created_at, 1, 10),
  "knowledge_base_id",
  "kind",
  "model";

-- knowledge/usage/store.ts: dailyKnowledgeUsage (one run)
-- sqlite and postgres
select
  substr(created_at, 1, 10) as "day",
  "knowledge_base_id",
  "kind",
  "model",
  count(*) as "calls",
  sum("input_tokens") as "input_tokens",
  sum("output_tokens") as "output_tokens"
from
  "knowledge_usage"
where
  "tenant_id" = $1
  and "created_at" >= $2
  and "created_at" < $3
  and "run_id" = $4
group by
  substr(created_at, 1, 10),
  "knowledge_base_id",
  "kind",
  "model"
order by
  substr(created_at, 1, 10),
  "knowledge_base_id",
  "kind",
  "model";

-- knowledge/usage/store.ts: deleteUsageBefore
-- sqlite and postgres
delete from "knowledge_usage"
where
  "id" in (
    select
      "id"
    from
      "knowledge_usage"
    where
      "tenant_id" = $1
      and "created_at" < $2
    limit
      $3
  );

-- knowledge/usage/store.ts: exportSources
-- sqlite and postgres
select
  *
from
  "knowledge_usage"
where
  "tenant_id" = $1
order by
  "id"
limit
  $2;

select
  *
from
  "knowledge_usage"
where
  "tenant_id" = $1
  and ("id") > ($2)
order by
  "id"
limit
  $3;
