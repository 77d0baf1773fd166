-- The SQL of the store queries of this domain, compiled from the samples beside each store on SQLite
-- and PostgreSQL: under `-- sqlite and postgres` when the two differ only in how parameters are written
-- ($1 there is ? on SQLite). Written by `npm run sql:sync`; do not edit (docs/architecture.md, "Reviewable SQL").

-- tenancy/store.ts: insertTenant
-- sqlite and postgres
insert into
  "tenants" ("id", "name", "settings", "created_at")
values
  ($1, $2, $3, $4);

-- tenancy/store.ts: findTenant
-- sqlite and postgres
select
  *
from
  "tenants"
where
  "id" = $1;

-- tenancy/store.ts: listTenants
-- sqlite and postgres
select
  *
from
  "tenants"
order by
  "id";

-- tenancy/store.ts: findTenantSettingsForUpdate (locked)
-- sqlite and postgres
select
  "settings"
from
  "tenants"
where
  "id" = $1
for update;

-- tenancy/store.ts: findTenantSettingsForUpdate (unlocked)
-- sqlite and postgres
select
  "settings"
from
  "tenants"
where
  "id" = $1;

-- tenancy/store.ts: updateTenantSettings
-- sqlite and postgres
update "tenants"
set
  "settings" = $1
where
  "id" = $2;

-- tenancy/store.ts: insertApiKey
-- sqlite and postgres
insert into
  "api_keys" (
    "id",
    "tenant_id",
    "name",
    "secret_hash",
    "permissions",
    "created_by",
    "created_at",
    "revoked_at",
    "rate_limit_per_minute"
  )
values
  ($1, $2, $3, $4, $5, $6, $7, $8, $9);

-- tenancy/store.ts: findApiKeyForAuth
-- sqlite and postgres
select
  "id",
  "tenant_id",
  "secret_hash",
  "permissions",
  "revoked_at",
  "rate_limit_per_minute"
from
  "api_keys"
where
  "id" = $1;

-- tenancy/store.ts: findApiKey
-- sqlite and postgres
select
  *
from
  "api_keys"
where
  "tenant_id" = $1
  and "id" = $2;

-- tenancy/store.ts: listApiKeys (active only)
-- sqlite and postgres
select
  *
from
  "api_keys"
where
  "tenant_id" = $1
  and "revoked_at" is null
order by
  "id" desc
limit
  $2
offset
  $3;

select
  count(*) as "n"
from
  "api_keys"
where
  "tenant_id" = $1
  and "revoked_at" is null;

-- tenancy/store.ts: listApiKeys (revoked too)
-- sqlite and postgres
select
  *
from
  "api_keys"
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
  "api_keys"
where
  "tenant_id" = $1;

-- tenancy/store.ts: listActiveKeyPermissions
-- sqlite and postgres
select
  "id",
  "permissions"
from
  "api_keys"
where
  "tenant_id" = $1
  and "revoked_at" is null;

-- tenancy/store.ts: revokeApiKey
-- sqlite and postgres
update "api_keys"
set
  "revoked_at" = $1
where
  "tenant_id" = $2
  and "id" = $3
  and "revoked_at" is null;

-- tenancy/store.ts: setApiKeyRateLimit
-- sqlite and postgres
update "api_keys"
set
  "rate_limit_per_minute" = $1
where
  "tenant_id" = $2
  and "id" = $3;

-- tenancy/store.ts: lockForAdmission
-- sqlite
update tenants
set
  settings = settings
where
  0;

-- postgres
select
  "id"
from
  "tenants"
where
  "id" = $1
for update;

-- tenancy/store.ts: insertAuditEvent
-- sqlite and postgres
insert into
  "audit_events" (
    "id",
    "tenant_id",
    "actor_type",
    "actor_id",
    "action",
    "resource_type",
    "resource_id",
    "detail",
    "created_at"
  )
values
  ($1, $2, $3, $4, $5, $6, $7, $8, $9);

-- tenancy/store.ts: insertAuditEvents
-- sqlite and postgres
insert into
  "audit_events" (
    "id",
    "tenant_id",
    "actor_type",
    "actor_id",
    "action",
    "resource_type",
    "resource_id",
    "detail",
    "created_at"
  )
values
  ($1, $2, $3, $4, $5, $6, $7, $8, $9),
  ($10, $11, $12, $13, $14, $15, $16, $17, $18);

insert into
  "audit_events" (
    "id",
    "tenant_id",
    "actor_type",
    "actor_id",
    "action",
    "resource_type",
    "resource_id",
    "detail",
    "created_at"
  )
values
  ($1, $2, $3, $4, $5, $6, $7, $8, $9);

-- tenancy/store.ts: listAuditEvents (no filter)
-- sqlite and postgres
select
  *
from
  "audit_events"
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
  "audit_events"
where
  "tenant_id" = $1;

-- tenancy/store.ts: listAuditEvents (every filter)
-- sqlite and postgres
select
  *
from
  "audit_events"
where
  "tenant_id" = $1
  and "action" = $2
  and "resource_type" = $3
  and "resource_id" = $4
  and "actor_id" = $5
  and "created_at" >= $6
  and "created_at" < $7
order by
  "id" desc
limit
  $8
offset
  $9;

select
  count(*) as "n"
from
  "audit_events"
where
  "tenant_id" = $1
  and "action" = $2
  and "resource_type" = $3
  and "resource_id" = $4
  and "actor_id" = $5
  and "created_at" >= $6
  and "created_at" < $7;

-- tenancy/store.ts: deleteAuditEventsBefore
-- sqlite and postgres
delete from "audit_events"
where
  "id" in (
    select
      "id"
    from
      "audit_events"
    where
      "tenant_id" = $1
      and "created_at" < $2
    limit
      $3
  );

-- tenancy/store.ts: exportSources
-- sqlite and postgres
select
  *
from
  "tenants"
where
  "id" = $1
order by
  "id"
limit
  $2;

select
  *
from
  "tenants"
where
  "id" = $1
  and ("id") > ($2)
order by
  "id"
limit
  $3;

select
  "id",
  "tenant_id",
  "name",
  "permissions",
  "created_by",
  "created_at",
  "revoked_at",
  "rate_limit_per_minute"
from
  "api_keys"
where
  "tenant_id" = $1
order by
  "id"
limit
  $2;

select
  "id",
  "tenant_id",
  "name",
  "permissions",
  "created_by",
  "created_at",
  "revoked_at",
  "rate_limit_per_minute"
from
  "api_keys"
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
  "audit_events"
where
  "tenant_id" = $1
order by
  "id"
limit
  $2;

select
  *
from
  "audit_events"
where
  "tenant_id" = $1
  and ("id") > ($2)
order by
  "id"
limit
  $3;
