-- The SQL of the store queries of this domain, compiled from the samples beside each store on SQLite
-- and PostgreSQL: under `-- sqlite and postgres` when the two differ only in how parameters are written
-- ($1 there is ? on SQLite). Written by `npm run sql:sync`; do not edit (docs/architecture.md, "Reviewable SQL").

-- skills/connectors/store.ts: findConnection
-- sqlite and postgres
select
  *
from
  "connector_connections"
where
  "tenant_id" = $1
  and "connector_id" = $2;

-- skills/connectors/store.ts: listConnections
-- sqlite and postgres
select
  *
from
  "connector_connections"
where
  "tenant_id" = $1;

-- skills/connectors/store.ts: insertConnection
-- sqlite and postgres
insert into
  "connector_connections" ("id", "tenant_id", "connector_id", "configuration", "connected_by", "created_at", "updated_at")
values
  ($1, $2, $3, $4, $5, $6, $7);

-- skills/connectors/store.ts: updateConnection
-- sqlite and postgres
update "connector_connections"
set
  "configuration" = $1,
  "updated_at" = $2
where
  "tenant_id" = $3
  and "id" = $4;

-- skills/connectors/store.ts: deleteConnection
-- sqlite and postgres
delete from "connector_connections"
where
  "tenant_id" = $1
  and "connector_id" = $2;

-- skills/connectors/store.ts: insertRequest
-- sqlite and postgres
insert into
  "connector_requests" (
    "id",
    "tenant_id",
    "agent_id",
    "connector_id",
    "reason",
    "status",
    "task_id",
    "requested_by",
    "decided_by",
    "created_at",
    "decided_at"
  )
values
  ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11);

-- skills/connectors/store.ts: findRequest
-- sqlite and postgres
select
  *
from
  "connector_requests"
where
  "tenant_id" = $1
  and "id" = $2;

-- skills/connectors/store.ts: updateRequest
-- sqlite and postgres
update "connector_requests"
set
  "status" = $1,
  "decided_by" = $2,
  "decided_at" = $3
where
  "tenant_id" = $4
  and "id" = $5;

-- skills/connectors/store.ts: listRequests (no filter)
-- sqlite and postgres
select
  *
from
  "connector_requests"
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
  "connector_requests"
where
  "tenant_id" = $1;

-- skills/connectors/store.ts: listRequests (every filter)
-- sqlite and postgres
select
  *
from
  "connector_requests"
where
  "tenant_id" = $1
  and "status" = $2
  and "agent_id" = $3
  and "connector_id" = $4
order by
  "id" desc
limit
  $5
offset
  $6;

select
  count(*) as "n"
from
  "connector_requests"
where
  "tenant_id" = $1
  and "status" = $2
  and "agent_id" = $3
  and "connector_id" = $4;

-- skills/connectors/store.ts: requestsOfAgent
-- sqlite and postgres
select
  *
from
  "connector_requests"
where
  "tenant_id" = $1
  and "agent_id" = $2
order by
  "id";

-- skills/connectors/store.ts: newestConnection
-- sqlite and postgres
select
  "tenant_id",
  "connector_id",
  "configuration"
from
  "connector_connections"
order by
  "id" desc
limit
  $1;

-- skills/store.ts: listSkills (no filter)
-- sqlite and postgres
select
  *
from
  "skills"
where
  "tenant_id" = $1
order by
  "name"
limit
  $2
offset
  $3;

select
  count(*) as "n"
from
  "skills"
where
  "tenant_id" = $1;

-- skills/store.ts: listSkills (every filter)
-- sqlite and postgres
select
  *
from
  "skills"
where
  "tenant_id" = $1
  and "category" = $2
  and "status" = $3
  and "source" = $4
  and (
    lower(name) like $5 escape '\'
    or lower(description) like $6 escape '\'
  )
order by
  "name"
limit
  $7
offset
  $8;

select
  count(*) as "n"
from
  "skills"
where
  "tenant_id" = $1
  and "category" = $2
  and "status" = $3
  and "source" = $4
  and (
    lower(name) like $5 escape '\'
    or lower(description) like $6 escape '\'
  );

-- skills/store.ts: listCategories
-- sqlite and postgres
select distinct
  "category"
from
  "skills"
where
  "tenant_id" = $1
  and "status" = $2
  and "category" is not null
order by
  "category";

-- skills/store.ts: findSkill
-- sqlite and postgres
select
  *
from
  "skills"
where
  "tenant_id" = $1
  and "id" = $2;

-- skills/store.ts: findSkillByName
-- sqlite and postgres
select
  *
from
  "skills"
where
  "tenant_id" = $1
  and "name" = $2;

-- skills/store.ts: findSkillByStoreId
-- sqlite and postgres
select
  *
from
  "skills"
where
  "tenant_id" = $1
  and "store_id" = $2;

-- skills/store.ts: acquiredStoreSkills
-- sqlite and postgres
select
  *
from
  "skills"
where
  "tenant_id" = $1
  and "store_id" is not null;

-- skills/store.ts: insertSkill
-- sqlite and postgres
insert into
  "skills" (
    "id",
    "tenant_id",
    "name",
    "description",
    "category",
    "source",
    "store_id",
    "status",
    "instructions",
    "metadata",
    "front_matter",
    "created_by",
    "created_at",
    "updated_at"
  )
values
  ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14);

-- skills/store.ts: updateSkill
-- sqlite and postgres
update "skills"
set
  "updated_at" = $1,
  "name" = $2,
  "description" = $3,
  "category" = $4,
  "instructions" = $5,
  "metadata" = $6,
  "status" = $7
where
  "tenant_id" = $8
  and "id" = $9;

-- skills/store.ts: fileBriefs
-- sqlite and postgres
select
  "skill_id",
  "kind",
  "name",
  "language",
  "size"
from
  "skill_files"
where
  "tenant_id" = $1
  and "skill_id" in ($2, $3)
order by
  "skill_id",
  "kind",
  "position";

-- skills/store.ts: skillFiles (every kind)
-- sqlite and postgres
select
  *
from
  "skill_files"
where
  "tenant_id" = $1
  and "skill_id" = $2
order by
  "kind",
  "position";

-- skills/store.ts: skillFiles (one kind)
-- sqlite and postgres
select
  *
from
  "skill_files"
where
  "tenant_id" = $1
  and "skill_id" = $2
  and "kind" = $3
order by
  "kind",
  "position";

-- skills/store.ts: replaceFiles
-- sqlite and postgres
delete from "skill_files"
where
  "tenant_id" = $1
  and "skill_id" = $2
  and "kind" = $3;

insert into
  "skill_files" ("name", "content", "language", "size", "skill_id", "tenant_id", "kind", "position")
values
  ($1, $2, $3, $4, $5, $6, $7, $8),
  ($9, $10, $11, $12, $13, $14, $15, $16);

-- skills/store.ts: findAssignment
-- sqlite and postgres
select
  *
from
  "skill_assignments"
where
  "tenant_id" = $1
  and "skill_id" = $2
  and "agent_id" = $3;

-- skills/store.ts: insertAssignment
-- sqlite and postgres
insert into
  "skill_assignments" (
    "skill_id",
    "agent_id",
    "tenant_id",
    "enabled",
    "priority",
    "config",
    "assigned_by",
    "created_at",
    "updated_at"
  )
values
  ($1, $2, $3, $4, $5, $6, $7, $8, $9);

-- skills/store.ts: updateAssignment
-- sqlite and postgres
update "skill_assignments"
set
  "updated_at" = $1,
  "enabled" = $2,
  "priority" = $3,
  "config" = $4
where
  "tenant_id" = $5
  and "skill_id" = $6
  and "agent_id" = $7;

-- skills/store.ts: deleteAssignment
-- sqlite and postgres
delete from "skill_assignments"
where
  "tenant_id" = $1
  and "skill_id" = $2
  and "agent_id" = $3;

-- skills/store.ts: deleteAgentAssignments
-- sqlite and postgres
delete from "skill_assignments"
where
  "tenant_id" = $1
  and "agent_id" = $2;

-- skills/store.ts: skillAssignments
-- sqlite and postgres
select
  *
from
  "skill_assignments"
where
  "tenant_id" = $1
  and "skill_id" = $2
order by
  "priority" desc,
  "created_at";

-- skills/store.ts: agentAssignments (every)
-- sqlite and postgres
select
  "s".*,
  "a"."agent_id",
  "a"."enabled",
  "a"."priority",
  "a"."config",
  "a"."assigned_by",
  "a"."created_at" as "assigned_at",
  "a"."updated_at" as "assignment_updated_at"
from
  "skill_assignments" as "a"
  inner join "skills" as "s" on "s"."id" = "a"."skill_id"
  and "s"."tenant_id" = "a"."tenant_id"
where
  "a"."tenant_id" = $1
  and "a"."agent_id" = $2
order by
  "a"."priority" desc,
  "s"."name";

-- skills/store.ts: agentAssignments (usable only)
-- sqlite and postgres
select
  "s".*,
  "a"."agent_id",
  "a"."enabled",
  "a"."priority",
  "a"."config",
  "a"."assigned_by",
  "a"."created_at" as "assigned_at",
  "a"."updated_at" as "assignment_updated_at"
from
  "skill_assignments" as "a"
  inner join "skills" as "s" on "s"."id" = "a"."skill_id"
  and "s"."tenant_id" = "a"."tenant_id"
where
  "a"."tenant_id" = $1
  and "a"."agent_id" = $2
  and "a"."enabled" = $3
  and "s"."status" = $4
order by
  "a"."priority" desc,
  "s"."name";

-- skills/store.ts: copyAssignments
-- sqlite and postgres
select
  *
from
  "skill_assignments"
where
  "tenant_id" = $1
  and "agent_id" = $2;

insert into
  "skill_assignments" ("agent_id", "created_at", "updated_at")
values
  ($1, $2, $3);

-- skills/store.ts: exportSources
-- sqlite and postgres
select
  *
from
  "skills"
where
  "tenant_id" = $1
order by
  "id"
limit
  $2;

select
  *
from
  "skills"
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
  "skill_files"
where
  "tenant_id" = $1
order by
  "skill_id",
  "kind",
  "name"
limit
  $2;

select
  *
from
  "skill_files"
where
  "tenant_id" = $1
  and ("skill_id", "kind", "name") > ($2, $3, $4)
order by
  "skill_id",
  "kind",
  "name"
limit
  $5;

select
  *
from
  "skill_assignments"
where
  "tenant_id" = $1
order by
  "skill_id",
  "agent_id"
limit
  $2;

select
  *
from
  "skill_assignments"
where
  "tenant_id" = $1
  and ("skill_id", "agent_id") > ($2, $3)
order by
  "skill_id",
  "agent_id"
limit
  $4;

select
  *
from
  "connector_connections"
where
  "tenant_id" = $1
order by
  "id"
limit
  $2;

select
  *
from
  "connector_connections"
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
  "connector_requests"
where
  "tenant_id" = $1
order by
  "id"
limit
  $2;

select
  *
from
  "connector_requests"
where
  "tenant_id" = $1
  and ("id") > ($2)
order by
  "id"
limit
  $3;
