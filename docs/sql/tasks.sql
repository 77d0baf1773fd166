-- The SQL of the store queries of this domain, compiled from the samples beside each store on SQLite
-- and PostgreSQL: under `-- sqlite and postgres` when the two differ only in how parameters are written
-- ($1 there is ? on SQLite). Written by `npm run sql:sync`; do not edit (docs/architecture.md, "Reviewable SQL").

-- tasks/store/tasks.ts: listTasks (no filter)
-- sqlite and postgres
select
  "tasks".*,
  (
    select
      min("task_jobs"."available_at") as "m"
    from
      "task_jobs"
    where
      "task_jobs"."task_id" = "tasks"."id"
      and "task_jobs"."state" = $1
  ) as "queued_at"
from
  "tasks"
where
  "tasks"."id" in (
    select
      "id"
    from
      "tasks"
    where
      "tenant_id" = $2
      and "deleted_at" is null
  )
order by
  "tasks"."id" desc
limit
  $3
offset
  $4;

select
  count(*) as "n"
from
  "tasks"
where
  "tenant_id" = $1
  and "deleted_at" is null;

-- tasks/store/tasks.ts: listTasks (every filter)
-- sqlite and postgres
select
  "tasks".*,
  (
    select
      min("task_jobs"."available_at") as "m"
    from
      "task_jobs"
    where
      "task_jobs"."task_id" = "tasks"."id"
      and "task_jobs"."state" = $1
  ) as "queued_at"
from
  "tasks"
where
  "tasks"."id" in (
    select
      "id"
    from
      "tasks"
    where
      "tenant_id" = $2
      and "deleted_at" is null
      and "agent_id" = $3
      and "team_id" = $4
      and "app_id" = $5
      and "status" = $6
      and "type" = $7
  )
order by
  "tasks"."id" desc
limit
  $8
offset
  $9;

select
  count(*) as "n"
from
  "tasks"
where
  "tenant_id" = $1
  and "deleted_at" is null
  and "agent_id" = $2
  and "team_id" = $3
  and "app_id" = $4
  and "status" = $5
  and "type" = $6;

-- tasks/store/tasks.ts: findTask
-- sqlite and postgres
select
  "tasks".*,
  (
    select
      min("task_jobs"."available_at") as "m"
    from
      "task_jobs"
    where
      "task_jobs"."task_id" = "tasks"."id"
      and "task_jobs"."state" = $1
  ) as "queued_at"
from
  "tasks"
where
  "tasks"."tenant_id" = $2
  and "tasks"."id" = $3
  and "tasks"."deleted_at" is null;

-- tasks/store/tasks.ts: findTaskById
-- sqlite and postgres
select
  *
from
  "tasks"
where
  "id" = $1
  and "deleted_at" is null;

-- tasks/store/tasks.ts: insertTask
-- sqlite and postgres
insert into
  "tasks" (
    "team_id",
    "type",
    "schedule",
    "timezone",
    "priority",
    "due_at",
    "input",
    "requires_approval",
    "misfire_policy",
    "overlap_policy",
    "max_attempts",
    "backoff_seconds",
    "trigger_type",
    "trigger_event",
    "trigger_task_id",
    "webhook_secret",
    "approval_action",
    "approval_payload",
    "requested_by_type",
    "requested_by_id",
    "decision",
    "decided_by_type",
    "decided_by_id",
    "decided_at",
    "next_run_at",
    "last_run_id",
    "last_run_at",
    "last_error",
    "created_by",
    "updated_at",
    "deleted_at",
    "id",
    "tenant_id",
    "agent_id",
    "app_id",
    "name",
    "description",
    "status",
    "created_at"
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
    $26,
    $27,
    $28,
    $29,
    $30,
    $31,
    $32,
    $33,
    $34,
    $35,
    $36,
    $37,
    $38,
    $39
  );

-- tasks/store/tasks.ts: updateTask (started)
-- sqlite and postgres
update "tasks"
set
  "status" = $1,
  "last_run_at" = $2,
  "updated_at" = $3
where
  "id" = $4
  and "deleted_at" is null;

-- tasks/store/tasks.ts: updateTask (deleted)
-- sqlite and postgres
update "tasks"
set
  "deleted_at" = $1,
  "next_run_at" = $2,
  "updated_at" = $3
where
  "id" = $4
  and "deleted_at" is null;

-- tasks/store/tasks.ts: transitionTask
-- sqlite and postgres
update "tasks"
set
  "status" = $1,
  "decision" = $2,
  "decided_by_type" = $3,
  "decided_by_id" = $4,
  "decided_at" = $5,
  "next_run_at" = $6,
  "updated_at" = $7
where
  "id" = $8
  and "status" in ($9)
  and "deleted_at" is null;

-- tasks/store/tasks.ts: recordRunEnd
-- sqlite and postgres
update "tasks"
set
  "status" = $1,
  "last_error" = $2,
  "updated_at" = $3
where
  "id" = $4
  and "last_run_id" = $5;

-- tasks/store/tasks.ts: listPendingApproval
-- sqlite and postgres
select
  "tasks".*,
  (
    select
      min("task_jobs"."available_at") as "m"
    from
      "task_jobs"
    where
      "task_jobs"."task_id" = "tasks"."id"
      and "task_jobs"."state" = $1
  ) as "queued_at"
from
  "tasks"
where
  "tasks"."id" in (
    select
      "id"
    from
      "tasks"
    where
      "tenant_id" = $2
      and "deleted_at" is null
      and "status" = $3
  )
order by
  "tasks"."id" asc
limit
  $4
offset
  $5;

select
  count(*) as "n"
from
  "tasks"
where
  "tenant_id" = $1
  and "deleted_at" is null
  and "status" = $2;

-- tasks/store/tasks.ts: dueSchedules
-- sqlite and postgres
select
  *
from
  "tasks"
where
  "type" = $1
  and "next_run_at" <= $2
  and "deleted_at" is null
order by
  "next_run_at"
limit
  $3;

-- tasks/store/tasks.ts: claimFireTime
-- sqlite and postgres
update "tasks"
set
  "next_run_at" = $1,
  "updated_at" = $2
where
  "id" = $3
  and "next_run_at" = $4
  and "deleted_at" is null;

-- tasks/store/tasks.ts: eventListeners
-- sqlite and postgres
select
  *
from
  "tasks"
where
  "tenant_id" = $1
  and "trigger_type" = $2
  and "trigger_task_id" = $3
  and "trigger_event" = $4
  and "deleted_at" is null;

-- tasks/store/tasks.ts: countAwaitingApproval
-- sqlite and postgres
select
  count(*) as "n"
from
  "tasks"
where
  "deleted_at" is null
  and "status" = $1;

-- tasks/store/jobs.ts: insertJob
-- sqlite and postgres
insert into
  "task_jobs" (
    "id",
    "tenant_id",
    "task_id",
    "kind",
    "reason",
    "input",
    "serial",
    "priority_rank",
    "due_at",
    "state",
    "attempts",
    "max_attempts",
    "backoff_seconds",
    "available_at",
    "lease_owner",
    "lease_expires_at",
    "claimed_by",
    "run_id",
    "error",
    "created_at",
    "updated_at",
    "traceparent"
  )
values
  ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22);

-- tasks/store/jobs.ts: setJobInput
-- sqlite and postgres
update "task_jobs"
set
  "input" = $1
where
  "id" = $2;

-- tasks/store/jobs.ts: findJobByRun
-- sqlite and postgres
select
  *
from
  "task_jobs"
where
  "run_id" = $1;

-- tasks/store/jobs.ts: jobsOfTask
-- sqlite and postgres
select
  *
from
  "task_jobs"
where
  "task_id" = $1
  and "state" in ($2, $3, $4)
order by
  "id";

-- tasks/store/jobs.ts: claimNextJobs
-- sqlite
with
  "c" as materialized (
    select
      "j"."id"
    from
      "task_jobs" as "j"
    where
      "j"."state" = ?
      and "j"."available_at" <= ?
      and (
        "j"."serial" = ?
        or not exists (
          select
            "p"."id"
          from
            "task_jobs" as "p"
          where
            "p"."task_id" = "j"."task_id"
            and "p"."id" <> "j"."id"
            and (
              "p"."state" in (?, ?)
              or (
                "p"."state" = ?
                and "p"."id" < "j"."id"
              )
            )
        )
      )
    order by
      "j"."priority_rank" desc,
      coalesce(j.due_at, '9999-12-31T23:59:59.999Z'),
      "j"."id" asc
    limit
      ?
  )
update "task_jobs"
set
  "state" = ?,
  "lease_owner" = ?,
  "claimed_by" = ?,
  "lease_expires_at" = ?,
  "attempts" = "attempts" + ?,
  "updated_at" = ?
from
  "c"
where
  "task_jobs"."id" = "c"."id"
returning
  *;

-- postgres
with
  "c" as materialized (
    select
      "j"."id"
    from
      "task_jobs" as "j"
    where
      "j"."state" = $1
      and "j"."available_at" <= $2
      and (
        "j"."serial" = $3
        or not exists (
          select
            "p"."id"
          from
            "task_jobs" as "p"
          where
            "p"."task_id" = "j"."task_id"
            and "p"."id" <> "j"."id"
            and (
              "p"."state" in ($4, $5)
              or (
                "p"."state" = $6
                and "p"."id" < "j"."id"
              )
            )
        )
      )
    order by
      "j"."priority_rank" desc,
      coalesce(j.due_at, '9999-12-31T23:59:59.999Z'),
      "j"."id" asc
    limit
      $7
    for update
      skip locked
  )
update "task_jobs"
set
  "state" = $8,
  "lease_owner" = $9,
  "claimed_by" = $10,
  "lease_expires_at" = $11,
  "attempts" = "attempts" + $12,
  "updated_at" = $13
from
  "c"
where
  "task_jobs"."id" = "c"."id"
returning
  *;

-- tasks/store/jobs.ts: claimJob
-- sqlite and postgres
update "task_jobs"
set
  "state" = $1,
  "lease_owner" = $2,
  "claimed_by" = $3,
  "lease_expires_at" = $4,
  "attempts" = "attempts" + $5,
  "updated_at" = $6
where
  "id" = $7
  and "state" = $8
returning
  *;

-- tasks/store/jobs.ts: markJobRunning
-- sqlite and postgres
update "task_jobs"
set
  "state" = $1,
  "run_id" = $2,
  "lease_expires_at" = $3,
  "updated_at" = $4
where
  "id" = $5
  and "state" = $6
  and "lease_owner" = $7;

-- tasks/store/jobs.ts: renewJobLeases
-- sqlite
with
  "c" as materialized (
    select
      "id"
    from
      "task_jobs"
    where
      "id" in (?, ?)
      and "lease_owner" = ?
      and "state" = ?
  )
update "task_jobs"
set
  "lease_expires_at" = ?
from
  "c"
where
  "task_jobs"."id" = "c"."id";

-- postgres
with
  "c" as materialized (
    select
      "id"
    from
      "task_jobs"
    where
      "id" in ($1, $2)
      and "lease_owner" = $3
      and "state" = $4
    for update
      skip locked
  )
update "task_jobs"
set
  "lease_expires_at" = $5
from
  "c"
where
  "task_jobs"."id" = "c"."id";

-- tasks/store/jobs.ts: moveJob (of a run)
-- sqlite and postgres
update "task_jobs"
set
  "state" = $1,
  "error" = $2,
  "updated_at" = $3
where
  "id" = $4
  and "state" in ($5)
  and "run_id" = $6;

-- tasks/store/jobs.ts: moveJob (of a lease)
-- sqlite and postgres
update "task_jobs"
set
  "state" = $1,
  "lease_owner" = $2,
  "lease_expires_at" = $3,
  "updated_at" = $4
where
  "id" = $5
  and "state" in ($6)
  and "lease_expires_at" = $7
  and "lease_owner" = $8;

-- tasks/store/jobs.ts: moveJob (of no lease)
-- sqlite and postgres
update "task_jobs"
set
  "state" = $1,
  "updated_at" = $2
where
  "id" = $3
  and "state" in ($4)
  and "lease_expires_at" is null;

-- tasks/store/jobs.ts: expiredClaims
-- sqlite and postgres
select
  *
from
  "task_jobs"
where
  "state" = $1
  and "lease_expires_at" < $2
limit
  $3;

-- tasks/store/jobs.ts: runningJobs
-- sqlite and postgres
select
  *
from
  "task_jobs"
where
  "state" = $1
  and "updated_at" < $2
order by
  "updated_at"
limit
  $3;

-- tasks/store/jobs.ts: queueStats
-- sqlite and postgres
select
  "state",
  count(*) as "n"
from
  "task_jobs"
where
  "state" in ($1, $2, $3)
group by
  "state";

select
  min(available_at) as "at"
from
  "task_jobs"
where
  "state" = $1
  and "available_at" <= $2;

-- tasks/store/fires.ts: insertFire
-- sqlite and postgres
insert into
  "task_fires" (
    "id",
    "tenant_id",
    "task_id",
    "source",
    "fire_key",
    "scheduled_for",
    "decided_at",
    "decision",
    "reason",
    "missed",
    "job_id",
    "detail"
  )
values
  ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)
on conflict ("task_id", "fire_key") do nothing;

-- tasks/store/fires.ts: findFire
-- sqlite and postgres
select
  *
from
  "task_fires"
where
  "task_id" = $1
  and "fire_key" = $2;

-- tasks/store/fires.ts: listFires
-- sqlite and postgres
select
  *
from
  "task_fires"
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
  "task_fires"
where
  "tenant_id" = $1
  and "task_id" = $2;

-- tasks/store/export.ts: exportSources
-- sqlite and postgres
select
  *
from
  "tasks"
where
  "tenant_id" = $1
order by
  "id"
limit
  $2;

select
  *
from
  "tasks"
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
  "task_jobs"
where
  "tenant_id" = $1
order by
  "id"
limit
  $2;

select
  *
from
  "task_jobs"
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
  "task_fires"
where
  "tenant_id" = $1
order by
  "id"
limit
  $2;

select
  *
from
  "task_fires"
where
  "tenant_id" = $1
  and ("id") > ($2)
order by
  "id"
limit
  $3;

-- tasks/store/export.ts: newestWebhookSecret
-- sqlite and postgres
select
  "id",
  "webhook_secret"
from
  "tasks"
where
  "webhook_secret" is not null
order by
  "id" desc
limit
  $1;
