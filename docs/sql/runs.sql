-- The SQL of the store queries of this domain, compiled from the samples beside each store on SQLite
-- and PostgreSQL: under `-- sqlite and postgres` when the two differ only in how parameters are written
-- ($1 there is ? on SQLite). Written by `npm run sql:sync`; do not edit (docs/architecture.md, "Reviewable SQL").

-- runs/daily-usage/store.ts: dailyUsage
-- sqlite and postgres
select
  substr(created_at, 1, 10) as "day",
  "agent_id",
  "model",
  "status",
  count(*) as "runs",
  sum("cost") as "cost",
  sum("input_tokens") as "input_tokens",
  sum("output_tokens") as "output_tokens"
from
  "runs"
where
  "tenant_id" = $1
  and "created_at" >= $2
  and "created_at" < $3
group by
  substr(created_at, 1, 10),
  "agent_id",
  "model",
  "status"
order by
  substr(created_at, 1, 10),
  "agent_id";

-- runs/store.ts: findRun
-- sqlite and postgres
select
  *
from
  "runs"
where
  "tenant_id" = $1
  and "id" = $2;

-- runs/store.ts: findRunById
-- sqlite and postgres
select
  *
from
  "runs"
where
  "id" = $1;

-- runs/store.ts: listAgentRuns
-- sqlite and postgres
select
  *
from
  "runs"
where
  "tenant_id" = $1
  and "agent_id" = $2
order by
  "id" desc
limit
  $3
offset
  $4;

select
  count(*) as "n"
from
  "runs"
where
  "tenant_id" = $1
  and "agent_id" = $2;

-- runs/store.ts: listTenantRuns (no filter)
-- sqlite and postgres
select
  *
from
  "runs"
where
  "tenant_id" = $1
order by
  "created_at" desc,
  "id" desc
limit
  $2
offset
  $3;

select
  count(*) as "n"
from
  "runs"
where
  "tenant_id" = $1;

-- runs/store.ts: listTenantRuns (every filter)
-- sqlite and postgres
select
  *
from
  "runs"
where
  "tenant_id" = $1
  and "status" = $2
  and "kind" = $3
  and "agent_id" = $4
  and "created_at" >= $5
order by
  "created_at" desc,
  "id" desc
limit
  $6
offset
  $7;

select
  count(*) as "n"
from
  "runs"
where
  "tenant_id" = $1
  and "status" = $2
  and "kind" = $3
  and "agent_id" = $4
  and "created_at" >= $5;

-- runs/store.ts: listTaskRuns (any status)
-- sqlite and postgres
select
  *
from
  "runs"
where
  "tenant_id" = $1
  and "task_id" = $2
order by
  "id" desc
limit
  $3
offset
  $4;

select
  count(*) as "n"
from
  "runs"
where
  "tenant_id" = $1
  and "task_id" = $2;

-- runs/store.ts: listTaskRuns (one status)
-- sqlite and postgres
select
  *
from
  "runs"
where
  "tenant_id" = $1
  and "task_id" = $2
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
  "runs"
where
  "tenant_id" = $1
  and "task_id" = $2
  and "status" = $3;

-- runs/store.ts: deferRun
-- sqlite and postgres
insert into
  "runs" (
    "id",
    "tenant_id",
    "agent_id",
    "conversation_id",
    "task_id",
    "kind",
    "status",
    "model",
    "input",
    "options",
    "output",
    "error",
    "cost",
    "reserved_usd",
    "input_tokens",
    "output_tokens",
    "duration_ms",
    "tool_calls",
    "steps",
    "warnings",
    "cancel_requested",
    "lease_owner",
    "lease_expires_at",
    "created_at",
    "started_at",
    "completed_at"
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
    $25,
    $26
  );

-- runs/store.ts: deferEvents
-- sqlite and postgres
insert into
  "run_events" ("run_id", "seq", "event", "data")
values
  ($1, $2, $3, $4),
  ($5, $6, $7, $8);

insert into
  "run_events" ("run_id", "seq", "event", "data")
values
  ($1, $2, $3, $4);

-- runs/store.ts: finishRun (completed)
-- sqlite and postgres
update "runs"
set
  "status" = $1,
  "output" = $2,
  "error" = $3,
  "cost" = $4,
  "input_tokens" = $5,
  "output_tokens" = $6,
  "duration_ms" = $7,
  "tool_calls" = $8,
  "steps" = $9,
  "structured_output" = $10,
  "warnings" = $11,
  "finish_reason" = $12,
  "context_truncated" = $13,
  "completed_at" = $14,
  "lease_owner" = $15,
  "lease_expires_at" = $16
where
  "id" = $17
  and "status" in ($18, $19);

-- runs/store.ts: finishRun (cancelled)
-- sqlite and postgres
update "runs"
set
  "status" = $1,
  "error" = $2,
  "completed_at" = $3,
  "lease_owner" = $4,
  "lease_expires_at" = $5
where
  "id" = $6
  and "status" in ($7, $8, $9);

-- runs/store.ts: requestCancel
-- sqlite and postgres
update "runs"
set
  "cancel_requested" = $1
where
  "id" = $2;

-- runs/store.ts: cancelRequested
-- sqlite and postgres
select
  "id"
from
  "runs"
where
  "id" in ($1, $2)
  and "cancel_requested" = $3;

-- runs/store.ts: isRunActive
-- sqlite and postgres
select
  *
from
  "runs"
where
  "id" = $1;

-- runs/store.ts: renewLeases
-- sqlite and postgres
update "runs"
set
  "lease_expires_at" = $1
where
  "id" = $2
  and "lease_owner" = $3
  and "status" = $4;

update "runs"
set
  "lease_expires_at" = $1
where
  "id" = $2
  and "lease_owner" = $3
  and "status" = $4;

-- runs/store.ts: expiredRunsQuery
-- sqlite and postgres
select
  "id",
  "tenant_id",
  "conversation_id",
  "started_at",
  "created_at",
  "task_id",
  "traceparent",
  "tool_calls"
from
  "runs"
where
  "status" = 'running'
  and "lease_expires_at" < $1
limit
  $2;

-- runs/store.ts: expiredRuns
-- sqlite and postgres
select
  "id",
  "tenant_id",
  "conversation_id",
  "started_at",
  "created_at",
  "task_id",
  "traceparent",
  "tool_calls"
from
  "runs"
where
  "status" = 'running'
  and "lease_expires_at" < $1
limit
  $2;

-- runs/store.ts: spendAndReservedSince (tenant)
-- sqlite and postgres
select
  sum("cost") as "spent",
  sum(
    case
      when status in ('queued', 'running', 'awaiting_approval')
      and reserved_usd > cost then reserved_usd - cost
      else 0
    end
  ) as "held"
from
  "runs"
where
  "tenant_id" = $1
  and "created_at" >= $2;

-- runs/store.ts: spendAndReservedSince (agent)
-- sqlite and postgres
select
  sum("cost") as "spent",
  sum(
    case
      when status in ('queued', 'running', 'awaiting_approval')
      and reserved_usd > cost then reserved_usd - cost
      else 0
    end
  ) as "held"
from
  "runs"
where
  "tenant_id" = $1
  and "created_at" >= $2
  and "agent_id" = $3;

-- runs/store.ts: runningRuns (tenant)
-- sqlite and postgres
select
  count(*) as "n"
from
  "runs"
where
  "tenant_id" = $1
  and "status" = 'running';

-- runs/store.ts: runningRuns (agent)
-- sqlite and postgres
select
  count(*) as "n"
from
  "runs"
where
  "tenant_id" = $1
  and "status" = 'running'
  and "agent_id" = $2;

-- runs/store.ts: insertEvents
-- sqlite and postgres
insert into
  "run_events" ("run_id", "seq", "event", "data")
values
  ($1, $2, $3, $4),
  ($5, $6, $7, $8);

insert into
  "run_events" ("run_id", "seq", "event", "data")
values
  ($1, $2, $3, $4);

-- runs/store.ts: eventsAfter
-- sqlite and postgres
select
  "seq",
  "event",
  "data"
from
  "run_events"
where
  "run_id" = $1
  and "seq" > $2
order by
  "seq";

-- runs/store.ts: lastEvent
-- sqlite and postgres
select
  "seq",
  "event"
from
  "run_events"
where
  "run_id" = $1
order by
  "seq" desc
limit
  $2;

-- runs/store.ts: pauseRun
-- sqlite and postgres
update "runs"
set
  "output" = $1,
  "input_tokens" = $2,
  "output_tokens" = $3,
  "tool_calls" = $4,
  "steps" = $5,
  "warnings" = $6,
  "status" = $7,
  "lease_owner" = $8,
  "lease_expires_at" = $9
where
  "id" = $10
  and "status" in ($11);

-- runs/store.ts: claimPausedRun
-- sqlite and postgres
update "runs"
set
  "status" = $1,
  "lease_owner" = $2,
  "lease_expires_at" = $3,
  "cancel_requested" = $4
where
  "id" = $5
  and "status" = $6;

-- runs/store.ts: endPausedRun
-- sqlite and postgres
update "runs"
set
  "status" = $1,
  "error" = $2,
  "completed_at" = $3,
  "duration_ms" = $4,
  "lease_owner" = $5,
  "lease_expires_at" = $6
where
  "id" = $7
  and "status" = $8;

-- runs/store.ts: insertSuspension
-- sqlite and postgres
insert into
  "run_suspensions" ("run_id", "tenant_id", "state", "created_at")
values
  ($1, $2, $3, $4);

-- runs/store.ts: findSuspension
-- sqlite and postgres
select
  *
from
  "run_suspensions"
where
  "run_id" = $1;

-- runs/store.ts: deleteSuspension
-- sqlite and postgres
delete from "run_suspensions"
where
  "run_id" = $1;

-- runs/store.ts: deleteEndedRunsBefore
-- sqlite and postgres
begin;

select
  "id"
from
  "runs"
where
  "tenant_id" = $1
  and "created_at" < $2
  and "completed_at" is not null
limit
  $3;

delete from "run_events"
where
  "run_id" in ($1);

delete from "run_suspensions"
where
  "run_id" in ($1);

delete from "runs"
where
  "id" in ($1)
  and "completed_at" is not null;

commit;

-- runs/store.ts: compactRunEvents
-- sqlite and postgres
begin;

select
  "id"
from
  "runs"
where
  "tenant_id" = $1
  and "completed_at" is not null
  and "events_compacted_at" is null
  and "completed_at" < $2
limit
  $3;

delete from "run_events"
where
  "run_id" in ($1)
  and "seq" < (
    select
      max("last"."seq") as "seq"
    from
      "run_events" as "last"
    where
      "last"."run_id" = "run_events"."run_id"
  );

update "runs"
set
  "events_compacted_at" = $1
where
  "id" in ($2);

commit;

-- runs/store.ts: exportSources
-- sqlite and postgres
select
  *
from
  "runs"
where
  "tenant_id" = $1
order by
  "id"
limit
  $2;

select
  *
from
  "runs"
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
  "run_events"
where
  "run_id" in (
    select
      "id"
    from
      "runs"
    where
      "tenant_id" = $1
  )
order by
  "run_id",
  "seq"
limit
  $2;

select
  *
from
  "run_events"
where
  "run_id" in (
    select
      "id"
    from
      "runs"
    where
      "tenant_id" = $1
  )
  and ("run_id", "seq") > ($2, $3)
order by
  "run_id",
  "seq"
limit
  $4;

select
  *
from
  "run_suspensions"
where
  "tenant_id" = $1
order by
  "run_id"
limit
  $2;

select
  *
from
  "run_suspensions"
where
  "tenant_id" = $1
  and ("run_id") > ($2)
order by
  "run_id"
limit
  $3;
