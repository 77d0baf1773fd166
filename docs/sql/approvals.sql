-- The SQL of the store queries of this domain, compiled from the samples beside each store on SQLite
-- and PostgreSQL: under `-- sqlite and postgres` when the two differ only in how parameters are written
-- ($1 there is ? on SQLite). Written by `npm run sql:sync`; do not edit (docs/architecture.md, "Reviewable SQL").

-- approvals/store.ts: insertApprovals
-- sqlite and postgres
insert into
  "tool_approvals" (
    "id",
    "tenant_id",
    "agent_id",
    "run_id",
    "conversation_id",
    "tool_call_id",
    "tool_name",
    "arguments",
    "reason",
    "status",
    "on_timeout",
    "decided_arguments",
    "decision_reason",
    "decided_by_type",
    "decided_by_id",
    "decided_at",
    "resumed_at",
    "expires_at",
    "created_at"
  )
values
  ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19),
  ($20, $21, $22, $23, $24, $25, $26, $27, $28, $29, $30, $31, $32, $33, $34, $35, $36, $37, $38);

-- approvals/store.ts: findApproval
-- sqlite and postgres
select
  *
from
  "tool_approvals"
where
  "tenant_id" = $1
  and "id" = $2;

-- approvals/store.ts: listApprovals (no filter)
-- sqlite and postgres
select
  *
from
  "tool_approvals"
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
  "tool_approvals"
where
  "tenant_id" = $1;

-- approvals/store.ts: listApprovals (every filter)
-- sqlite and postgres
select
  *
from
  "tool_approvals"
where
  "tenant_id" = $1
  and "status" = $2
  and "agent_id" = $3
order by
  "id" desc
limit
  $4
offset
  $5;

select
  count(*) as "n"
from
  "tool_approvals"
where
  "tenant_id" = $1
  and "status" = $2
  and "agent_id" = $3;

-- approvals/store.ts: decide (by a person)
-- sqlite and postgres
update "tool_approvals"
set
  "status" = $1,
  "decided_arguments" = $2,
  "decision_reason" = $3,
  "decided_by_type" = $4,
  "decided_by_id" = $5,
  "decided_at" = $6
where
  "id" = $7
  and "status" = $8
  and "expires_at" > $9;

-- approvals/store.ts: decide (on timeout)
-- sqlite and postgres
update "tool_approvals"
set
  "status" = $1,
  "decision_reason" = $2,
  "decided_by_type" = $3,
  "decided_by_id" = $4,
  "decided_at" = $5
where
  "id" = $6
  and "status" = $7;

-- approvals/store.ts: untakenOfRun
-- sqlite and postgres
select
  *
from
  "tool_approvals"
where
  "run_id" = $1
  and "resumed_at" is null;

-- approvals/store.ts: markTaken
-- sqlite and postgres
update "tool_approvals"
set
  "resumed_at" = $1
where
  "id" in ($2, $3);

-- approvals/store.ts: countPending
-- sqlite and postgres
select
  count(*) as "n"
from
  "tool_approvals"
where
  "status" = $1;

-- approvals/store.ts: expired
-- sqlite and postgres
select
  *
from
  "tool_approvals"
where
  "status" = $1
  and "expires_at" <= $2
order by
  "expires_at"
limit
  $3;

-- approvals/store.ts: decidedRuns
-- sqlite and postgres
select distinct
  "a"."run_id"
from
  "tool_approvals" as "a"
where
  "a"."resumed_at" is null
  and "a"."status" in ($1, $2, $3)
  and not exists (
    select
      "p"."id"
    from
      "tool_approvals" as "p"
    where
      "p"."run_id" = "a"."run_id"
      and "p"."status" = $4
  )
limit
  $5;

-- approvals/store.ts: cancelOfRun
-- sqlite and postgres
update "tool_approvals"
set
  "status" = $1,
  "decided_at" = $2,
  "resumed_at" = $3
where
  "run_id" = $4
  and "resumed_at" is null
  and "status" = $5;

-- approvals/store.ts: closeUntaken
-- sqlite and postgres
update "tool_approvals"
set
  "resumed_at" = $1
where
  "run_id" = $2
  and "resumed_at" is null;

-- approvals/store.ts: deleteOfRuns
-- sqlite and postgres
delete from "tool_approvals"
where
  "run_id" in ($1, $2);

-- approvals/store.ts: exportSources
-- sqlite and postgres
select
  *
from
  "tool_approvals"
where
  "tenant_id" = $1
order by
  "id"
limit
  $2;

select
  *
from
  "tool_approvals"
where
  "tenant_id" = $1
  and ("id") > ($2)
order by
  "id"
limit
  $3;
