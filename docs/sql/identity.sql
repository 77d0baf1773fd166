-- The SQL of the store queries of this domain, compiled from the samples beside each store on SQLite
-- and PostgreSQL: under `-- sqlite and postgres` when the two differ only in how parameters are written
-- ($1 there is ? on SQLite). Written by `npm run sql:sync`; do not edit (docs/architecture.md, "Reviewable SQL").

-- identity/store.ts: listPlatformKeys
-- sqlite and postgres
select
  *
from
  "identity_platform_keys"
order by
  "generation" asc;

-- identity/store.ts: insertPlatformKeyIfAbsent
-- sqlite and postgres
insert into
  "identity_platform_keys" (
    "kid",
    "generation",
    "public_jwk",
    "private_jwk",
    "created_at",
    "activates_at",
    "retires_at",
    "revoked_at"
  )
values
  ($1, $2, $3, $4, $5, $6, $7, $8)
on conflict ("generation") do nothing;

-- identity/store.ts: retirePlatformKeys
-- sqlite and postgres
update "identity_platform_keys"
set
  "retires_at" = $1
where
  "generation" < $2
  and "revoked_at" is null
  and (
    "retires_at" is null
    or "retires_at" > $3
  );

-- identity/store.ts: revokePlatformKey
-- sqlite and postgres
update "identity_platform_keys"
set
  "revoked_at" = $1
where
  "kid" = $2
  and "revoked_at" is null;

-- identity/store.ts: unretirePlatformKeys
-- sqlite and postgres
update "identity_platform_keys"
set
  "retires_at" = $1
where
  "retires_at" = $2
  and "retires_at" > $3
  and "revoked_at" is null;

-- identity/store.ts: newestSealedKeys
-- sqlite and postgres
select
  "kid",
  "private_jwk" as "sealed"
from
  "identity_platform_keys"
where
  "revoked_at" is null
order by
  "generation" desc
limit
  $1;

select
  "kid",
  "private_jwk" as "sealed"
from
  "identity_agent_keys"
order by
  "created_at" desc
limit
  $1;

-- identity/store.ts: revokePlatformKeys
-- sqlite and postgres
update "identity_platform_keys"
set
  "revoked_at" = $1
where
  "kid" in ($2, $3)
  and "revoked_at" is null;

-- identity/store.ts: listAgentKeys
-- sqlite and postgres
select
  *
from
  "identity_agent_keys"
where
  "tenant_id" = $1
  and "agent_id" = $2
order by
  "generation" desc;

-- identity/store.ts: findAgentKey
-- sqlite and postgres
select
  *
from
  "identity_agent_keys"
where
  "tenant_id" = $1
  and "agent_id" = $2
  and "kid" = $3;

-- identity/store.ts: insertAgentKeyIfAbsent
-- sqlite and postgres
insert into
  "identity_agent_keys" (
    "kid",
    "tenant_id",
    "agent_id",
    "generation",
    "public_jwk",
    "private_jwk",
    "status",
    "created_at",
    "rotated_at",
    "expires_at",
    "revoked_at"
  )
values
  ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
on conflict ("agent_id", "generation") do nothing;

-- identity/store.ts: insertAgentKey
-- sqlite and postgres
insert into
  "identity_agent_keys" (
    "kid",
    "tenant_id",
    "agent_id",
    "generation",
    "public_jwk",
    "private_jwk",
    "status",
    "created_at",
    "rotated_at",
    "expires_at",
    "revoked_at"
  )
values
  ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11);

-- identity/store.ts: rotateAgentKeys
-- sqlite and postgres
update "identity_agent_keys"
set
  "status" = $1,
  "rotated_at" = $2,
  "expires_at" = $3
where
  "tenant_id" = $4
  and "agent_id" = $5
  and "status" = $6;

-- identity/store.ts: updateAgentKey
-- sqlite and postgres
update "identity_agent_keys"
set
  "status" = $1,
  "revoked_at" = $2
where
  "tenant_id" = $3
  and "kid" = $4;

-- identity/store.ts: insertToken
-- sqlite and postgres
insert into
  "identity_tokens" (
    "jti",
    "tenant_id",
    "kind",
    "agent_id",
    "client_id",
    "api_key_id",
    "agent_key_id",
    "parent_jti",
    "issued_at",
    "expires_at",
    "revoked_at"
  )
values
  ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11);

-- identity/store.ts: findTokenStateByJti
-- sqlite and postgres
select
  "t"."tenant_id",
  "t"."kind",
  "t"."revoked_at",
  "t"."agent_key_id",
  "t"."api_key_id",
  "g"."status" as "agent_key_status"
from
  "identity_tokens" as "t"
  left join "identity_agent_keys" as "g" on "g"."kid" = "t"."agent_key_id"
where
  "t"."jti" = $1;

-- identity/store.ts: insertAssertionIfAbsent
-- sqlite and postgres
insert into
  "identity_tokens" (
    "jti",
    "tenant_id",
    "kind",
    "agent_id",
    "client_id",
    "api_key_id",
    "agent_key_id",
    "parent_jti",
    "issued_at",
    "expires_at",
    "revoked_at"
  )
values
  ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
on conflict ("jti") do nothing;

-- identity/store.ts: activeTokensOfAgentKey
-- sqlite and postgres
select
  "jti"
from
  "identity_tokens"
where
  "tenant_id" = $1
  and "agent_key_id" = $2
  and "revoked_at" is null;

-- identity/store.ts: activeTokensOfAgent
-- sqlite and postgres
select
  "jti"
from
  "identity_tokens"
where
  "tenant_id" = $1
  and "agent_id" = $2
  and "revoked_at" is null;

-- identity/store.ts: revokeAgentKeys
-- sqlite and postgres
update "identity_agent_keys"
set
  "status" = $1,
  "revoked_at" = $2
where
  "tenant_id" = $3
  and "agent_id" = $4
  and "status" != $5;

-- identity/store.ts: revokeTokens
-- sqlite and postgres
update "identity_tokens"
set
  "revoked_at" = $1
where
  "tenant_id" = $2
  and "jti" in ($3, $4);

-- identity/store.ts: activeChildTokens
-- sqlite and postgres
select
  "jti"
from
  "identity_tokens"
where
  "tenant_id" = $1
  and "parent_jti" in ($2, $3)
  and "revoked_at" is null;

-- identity/store.ts: pruneTokens
-- sqlite and postgres
delete from "identity_tokens"
where
  "expires_at" < $1;

-- identity/store.ts: listPolicies (no filter)
-- sqlite and postgres
select
  *
from
  "tbac_policies"
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
  "tbac_policies"
where
  "tenant_id" = $1;

-- identity/store.ts: listPolicies (every filter)
-- sqlite and postgres
select
  *
from
  "tbac_policies"
where
  "tenant_id" = $1
  and "caller_agent_id" = $2
  and "callee_agent_id" = $3
  and "tool_name" = $4
order by
  "id" desc
limit
  $5
offset
  $6;

select
  count(*) as "n"
from
  "tbac_policies"
where
  "tenant_id" = $1
  and "caller_agent_id" = $2
  and "callee_agent_id" = $3
  and "tool_name" = $4;

-- identity/store.ts: candidatePolicies
-- sqlite and postgres
select
  *
from
  "tbac_policies"
where
  "tenant_id" = $1
  and "caller_agent_id" in ($2, $3)
  and "callee_agent_id" in ($4, $5)
  and "tool_name" in ($6, $7);

-- identity/store.ts: findPolicy
-- sqlite and postgres
select
  *
from
  "tbac_policies"
where
  "tenant_id" = $1
  and "id" = $2;

-- identity/store.ts: insertPolicy
-- sqlite and postgres
insert into
  "tbac_policies" (
    "id",
    "tenant_id",
    "caller_agent_id",
    "callee_agent_id",
    "tool_name",
    "effect",
    "description",
    "conditions",
    "created_at",
    "updated_at"
  )
values
  ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10);

-- identity/store.ts: updatePolicy
-- sqlite and postgres
update "tbac_policies"
set
  "updated_at" = $1,
  "effect" = $2,
  "description" = $3,
  "conditions" = $4
where
  "tenant_id" = $5
  and "id" = $6;

-- identity/store.ts: deletePolicy
-- sqlite and postgres
delete from "tbac_policies"
where
  "tenant_id" = $1
  and "id" = $2;

-- identity/store.ts: exportSources
-- sqlite and postgres
select
  *
from
  "identity_agent_keys"
where
  "tenant_id" = $1
order by
  "kid"
limit
  $2;

select
  *
from
  "identity_agent_keys"
where
  "tenant_id" = $1
  and ("kid") > ($2)
order by
  "kid"
limit
  $3;

select
  *
from
  "identity_tokens"
where
  "tenant_id" = $1
order by
  "jti"
limit
  $2;

select
  *
from
  "identity_tokens"
where
  "tenant_id" = $1
  and ("jti") > ($2)
order by
  "jti"
limit
  $3;

select
  *
from
  "tbac_policies"
where
  "tenant_id" = $1
order by
  "id"
limit
  $2;

select
  *
from
  "tbac_policies"
where
  "tenant_id" = $1
  and ("id") > ($2)
order by
  "id"
limit
  $3;
