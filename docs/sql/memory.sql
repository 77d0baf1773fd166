-- The SQL of the store queries of this domain, compiled from the samples beside each store on SQLite
-- and PostgreSQL: under `-- sqlite and postgres` when the two differ only in how parameters are written
-- ($1 there is ? on SQLite). Written by `npm run sql:sync`; do not edit (docs/architecture.md, "Reviewable SQL").

-- memory/store.ts: listBlocks (agent-wide)
-- sqlite and postgres
select
  *
from
  "memory_blocks"
where
  "tenant_id" = $1
  and "agent_id" = $2
  and "user_id" is null
order by
  "label";

-- memory/store.ts: listBlocks (a user's)
-- sqlite and postgres
select
  *
from
  "memory_blocks"
where
  "tenant_id" = $1
  and "agent_id" = $2
  and "user_id" = $3
order by
  "label";

-- memory/store.ts: blocksForRun (without a user)
-- sqlite and postgres
select
  *
from
  "memory_blocks"
where
  "tenant_id" = $1
  and "agent_id" = $2
  and "user_id" is null
order by
  "user_id" nulls first,
  "label";

-- memory/store.ts: blocksForRun (with a user)
-- sqlite and postgres
select
  *
from
  "memory_blocks"
where
  "tenant_id" = $1
  and "agent_id" = $2
  and (
    "user_id" is null
    or "user_id" = $3
  )
order by
  "user_id" nulls first,
  "label";

-- memory/store.ts: findBlock (agent-wide)
-- sqlite and postgres
select
  *
from
  "memory_blocks"
where
  "tenant_id" = $1
  and "agent_id" = $2
  and "user_id" is null
  and "label" = $3;

-- memory/store.ts: findBlock (a user's)
-- sqlite and postgres
select
  *
from
  "memory_blocks"
where
  "tenant_id" = $1
  and "agent_id" = $2
  and "user_id" = $3
  and "label" = $4;

-- memory/store.ts: lockScopeForCreate
-- sqlite: none

-- postgres
select
  pg_advisory_xact_lock(hashtextextended ($1, 0));

-- memory/store.ts: countBlocks
-- sqlite and postgres
select
  count(*) as "n"
from
  "memory_blocks"
where
  "tenant_id" = $1
  and "agent_id" = $2
  and "user_id" = $3;

-- memory/store.ts: insertBlock
-- sqlite and postgres
insert into
  "memory_blocks" (
    "id",
    "tenant_id",
    "agent_id",
    "user_id",
    "label",
    "value",
    "version",
    "created_at",
    "updated_at",
    "updated_by_type",
    "updated_by_id"
  )
values
  ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11);

-- memory/store.ts: updateBlock
-- sqlite and postgres
update "memory_blocks"
set
  "value" = $1,
  "version" = $2,
  "updated_at" = $3,
  "updated_by_type" = $4,
  "updated_by_id" = $5
where
  "tenant_id" = $6
  and "id" = $7
  and "version" = $8;

-- memory/store.ts: deleteBlock
-- sqlite and postgres
delete from "memory_blocks"
where
  "tenant_id" = $1
  and "id" = $2
  and "version" = $3;

-- memory/store.ts: lastVersion
-- sqlite and postgres
select
  max("version") as "v"
from
  "memory_block_versions"
where
  "tenant_id" = $1
  and "agent_id" = $2
  and "user_id" = $3
  and "label" = $4;

-- memory/store.ts: insertVersion
-- sqlite and postgres
insert into
  "memory_block_versions" (
    "id",
    "tenant_id",
    "agent_id",
    "user_id",
    "label",
    "version",
    "change",
    "value",
    "previous_value",
    "actor_type",
    "actor_id",
    "run_id",
    "created_at"
  )
values
  ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13);

-- memory/store.ts: listVersions
-- sqlite and postgres
select
  *
from
  "memory_block_versions"
where
  "tenant_id" = $1
  and "agent_id" = $2
  and "user_id" = $3
  and "label" = $4
order by
  "version" desc
limit
  $5
offset
  $6;

select
  count(*) as "n"
from
  "memory_block_versions"
where
  "tenant_id" = $1
  and "agent_id" = $2
  and "user_id" = $3
  and "label" = $4;

-- memory/store.ts: deleteAgentMemory
-- sqlite and postgres
delete from "memory_blocks"
where
  "tenant_id" = $1
  and "agent_id" = $2;

delete from "memory_block_versions"
where
  "tenant_id" = $1
  and "agent_id" = $2;

-- memory/store.ts: exportSources
-- sqlite and postgres
select
  *
from
  "memory_blocks"
where
  "tenant_id" = $1
order by
  "id"
limit
  $2;

select
  *
from
  "memory_blocks"
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
  "memory_block_versions"
where
  "tenant_id" = $1
order by
  "id"
limit
  $2;

select
  *
from
  "memory_block_versions"
where
  "tenant_id" = $1
  and ("id") > ($2)
order by
  "id"
limit
  $3;
