-- The SQL of the store queries of this domain, compiled from the samples beside each store on SQLite
-- and PostgreSQL: under `-- sqlite and postgres` when the two differ only in how parameters are written
-- ($1 there is ? on SQLite). Written by `npm run sql:sync`; do not edit (docs/architecture.md, "Reviewable SQL").

-- code/store.ts: takeSlot
-- sqlite and postgres
insert into
  "code_slots" ("tenant_id", "slot", "holder", "expires_at")
values
  ($1, $2, $3, $4)
on conflict ("tenant_id", "slot") do update
set
  "holder" = $5,
  "expires_at" = $6
where
  "code_slots"."expires_at" <= $7;

-- code/store.ts: heldSlots
-- sqlite and postgres
select
  "slot"
from
  "code_slots"
where
  "tenant_id" = $1
  and "slot" < $2
  and "expires_at" > $3;

-- code/store.ts: releaseSlot
-- sqlite and postgres
delete from "code_slots"
where
  "tenant_id" = $1
  and "slot" = $2
  and "holder" = $3;
