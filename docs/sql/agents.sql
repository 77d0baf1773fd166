-- The SQL of the store queries of this domain, compiled from the samples beside each store on SQLite
-- and PostgreSQL: under `-- sqlite and postgres` when the two differ only in how parameters are written
-- ($1 there is ? on SQLite). Written by `npm run sql:sync`; do not edit (docs/architecture.md, "Reviewable SQL").

-- agents/store.ts: listAgents (no filter)
-- sqlite and postgres
select
  "id",
  "name",
  "role",
  "description",
  "model",
  "status",
  "hosting",
  "team_id",
  "app_id",
  "created_at"
from
  "agents"
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
  "agents"
where
  "tenant_id" = $1;

-- agents/store.ts: listAgents (every filter)
-- sqlite and postgres
select
  "id",
  "name",
  "role",
  "description",
  "model",
  "status",
  "hosting",
  "team_id",
  "app_id",
  "created_at"
from
  "agents"
where
  "tenant_id" = $1
  and "app_id" = $2
  and "team_id" = $3
  and "status" = $4
  and lower(name) like $5 escape '\'
order by
  "id" desc
limit
  $6
offset
  $7;

select
  count(*) as "n"
from
  "agents"
where
  "tenant_id" = $1
  and "app_id" = $2
  and "team_id" = $3
  and "status" = $4
  and lower(name) like $5 escape '\';

-- agents/store.ts: findAgent
-- sqlite and postgres
select
  *
from
  "agents"
where
  "tenant_id" = $1
  and "id" = $2;

-- agents/store.ts: findAgentIdentityAnyTenant
-- sqlite and postgres
select
  "id",
  "tenant_id",
  "name",
  "status",
  "hosting",
  "tools",
  "updated_at"
from
  "agents"
where
  "id" = $1;

-- agents/store.ts: findAgentBudget
-- sqlite and postgres
select
  "id",
  "monthly_budget_usd"
from
  "agents"
where
  "tenant_id" = $1
  and "id" = $2;

-- agents/store.ts: setAgentBudget
-- sqlite and postgres
update "agents"
set
  "monthly_budget_usd" = $1
where
  "tenant_id" = $2
  and "id" = $3;

-- agents/store.ts: existingAgentIds
-- sqlite and postgres
select
  "id"
from
  "agents"
where
  "tenant_id" = $1
  and "id" in ($2, $3);

-- agents/store.ts: insertAgent
-- sqlite and postgres
insert into
  "agents" (
    "id",
    "tenant_id",
    "app_id",
    "team_id",
    "name",
    "role",
    "description",
    "model",
    "system_prompt",
    "context_prompt",
    "status",
    "hosting",
    "tools",
    "configuration",
    "monthly_budget_usd",
    "created_at",
    "updated_at"
  )
values
  ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17);

-- agents/store.ts: updateAgent
-- sqlite and postgres
update "agents"
set
  "name" = $1,
  "updated_at" = $2
where
  "tenant_id" = $3
  and "id" = $4;

-- agents/store.ts: transitionAgent
-- sqlite and postgres
update "agents"
set
  "status" = $1,
  "updated_at" = $2
where
  "tenant_id" = $3
  and "id" = $4
  and "status" = $5;

-- agents/store.ts: deleteAgent
-- sqlite and postgres
delete from "agents"
where
  "tenant_id" = $1
  and "id" = $2;

-- agents/store.ts: listApps
-- sqlite and postgres
select
  "app_id",
  count(*) as "n"
from
  "agents"
where
  "tenant_id" = $1
group by
  "app_id"
order by
  "app_id";

-- agents/store.ts: exportSources
-- sqlite and postgres
select
  *
from
  "agents"
where
  "tenant_id" = $1
order by
  "id"
limit
  $2;

select
  *
from
  "agents"
where
  "tenant_id" = $1
  and ("id") > ($2)
order by
  "id"
limit
  $3;
