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
-- sqlite and postgres
delete from "knowledge_chunks"
where
  "tenant_id" = $1
  and "knowledge_base_id" = $2;

delete from "knowledge_documents"
where
  "tenant_id" = $1
  and "knowledge_base_id" = $2;

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
    "content",
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
    $24,
    $25
  );

-- knowledge/store.ts: findDocument
-- sqlite and postgres
select
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
from
  "knowledge_documents"
where
  "tenant_id" = $1
  and "knowledge_base_id" = $2
  and "id" = $3;

-- knowledge/store.ts: listDocuments (every)
-- sqlite and postgres
select
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

-- knowledge/store.ts: deleteDocument
-- sqlite and postgres
delete from "knowledge_documents"
where
  "tenant_id" = $1
  and "knowledge_base_id" = $2
  and "id" = $3
returning
  "chunk_count";

delete from "knowledge_chunks"
where
  "document_id" = $1;

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
-- sqlite and postgres
delete from "knowledge_chunks"
where
  "document_id" = $1;

-- knowledge/store.ts: insertChunks
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

-- knowledge/store.ts: lexicalSearch (every document)
-- sqlite
select
  rowid as seq,
  - bm25 (knowledge_chunks_fts, 1.0, 0.0) as score
from
  knowledge_chunks_fts (?)
order by
  bm25 (knowledge_chunks_fts, 1.0, 0.0),
  rowid
limit
  ?;

-- postgres
with
  base as (
    select
      count(*) as n
    from
      knowledge_chunks c
    where
      c.tenant_id = $1
      and c.knowledge_base_id = $2
  )
select
  w.word,
  base.n,
  (
    select
      count(*)
    from
      knowledge_chunks c
    where
      c.tsv @@ plainto_tsquery('english', w.word)
      and c.tenant_id = $3
      and c.knowledge_base_id = $4
  ) as df
from
  unnest($5::text[]) as w (word),
  base;

-- knowledge/store.ts: lexicalSearch (some documents)
-- sqlite
select
  c.seq,
  - bm25 (knowledge_chunks_fts, 1.0, 0.0) as score
from
  knowledge_chunks_fts (?)
  join knowledge_chunks c on c.seq = knowledge_chunks_fts.rowid
where
  c.tenant_id = ?
  and c.document_id in (?, ?)
order by
  bm25 (knowledge_chunks_fts, 1.0, 0.0),
  c.seq
limit
  ?;

-- postgres
with
  base as (
    select
      count(*) as n
    from
      knowledge_chunks c
    where
      c.tenant_id = $1
      and c.knowledge_base_id = $2
  )
select
  w.word,
  base.n,
  (
    select
      count(*)
    from
      knowledge_chunks c
    where
      c.tsv @@ plainto_tsquery('english', w.word)
      and c.tenant_id = $3
      and c.knowledge_base_id = $4
  ) as df
from
  unnest($5::text[]) as w (word),
  base;

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
  *
from
  "knowledge_documents"
where
  "tenant_id" = $1
order by
  "id"
limit
  $2;

select
  *
from
  "knowledge_documents"
where
  "tenant_id" = $1
  and ("id") > ($2)
order by
  "id"
limit
  $3;
