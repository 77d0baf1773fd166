-- The SQL of the store queries of this domain, compiled from the samples beside each store on SQLite
-- and PostgreSQL: under `-- sqlite and postgres` when the two differ only in how parameters are written
-- ($1 there is ? on SQLite). Written by `npm run sql:sync`; do not edit (docs/architecture.md, "Reviewable SQL").

-- idempotency/store.ts: claimKey
-- sqlite and postgres
insert into
  "idempotency_keys" ("tenant_id", "key", "fingerprint", "created_at", "expires_at")
values
  ($1, $2, $3, $4, $5)
on conflict ("tenant_id", "key") do nothing;

-- idempotency/store.ts: findKey
-- sqlite and postgres
select
  *
from
  "idempotency_keys"
where
  "tenant_id" = $1
  and "key" = $2;

-- idempotency/store.ts: recordOutcome
-- sqlite and postgres
update "idempotency_keys"
set
  "run_id" = $1,
  "task_id" = $2,
  "message_id" = $3,
  "response_status" = $4
where
  "tenant_id" = $5
  and "key" = $6
  and "created_at" = $7;

-- idempotency/store.ts: deleteKey (any claim)
-- sqlite and postgres
delete from "idempotency_keys"
where
  "tenant_id" = $1
  and "key" = $2;

-- idempotency/store.ts: deleteKey (this claim)
-- sqlite and postgres
delete from "idempotency_keys"
where
  "tenant_id" = $1
  and "key" = $2
  and "created_at" = $3;

-- idempotency/store.ts: deleteExpired
-- sqlite and postgres
delete from "idempotency_keys"
where
  "expires_at" <= $1;
