-- The SQL of the store queries of this domain, compiled from the samples beside each store on SQLite
-- and PostgreSQL: under `-- sqlite and postgres` when the two differ only in how parameters are written
-- ($1 there is ? on SQLite). Written by `npm run sql:sync`; do not edit (docs/architecture.md, "Reviewable SQL").

-- conversations/store.ts: listConversations (no filter)
-- sqlite and postgres
select
  *
from
  "conversations"
where
  "tenant_id" = $1
  and "deleted_at" is null
order by
  "id" desc
limit
  $2
offset
  $3;

select
  count(*) as "n"
from
  "conversations"
where
  "tenant_id" = $1
  and "deleted_at" is null;

-- conversations/store.ts: listConversations (every filter)
-- sqlite and postgres
select
  *
from
  "conversations"
where
  "tenant_id" = $1
  and "deleted_at" is null
  and "agent_id" = $2
  and "status" = $3
  and "app_id" = $4
  and "user_id" = $5
order by
  "id" desc
limit
  $6
offset
  $7;

select
  count(*) as "n"
from
  "conversations"
where
  "tenant_id" = $1
  and "deleted_at" is null
  and "agent_id" = $2
  and "status" = $3
  and "app_id" = $4
  and "user_id" = $5;

-- conversations/store.ts: findConversation
-- sqlite and postgres
select
  *
from
  "conversations"
where
  "tenant_id" = $1
  and "id" = $2
  and "deleted_at" is null;

-- conversations/store.ts: insertConversation
-- sqlite and postgres
insert into
  "conversations" (
    "id",
    "tenant_id",
    "agent_id",
    "app_id",
    "name",
    "status",
    "metadata",
    "message_count",
    "last_message_at",
    "duration_ms",
    "active_run_id",
    "created_by",
    "created_at",
    "updated_at",
    "deleted_at",
    "user_id"
  )
values
  ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16);

-- conversations/store.ts: updateConversation (update)
-- sqlite and postgres
update "conversations"
set
  "name" = $1,
  "status" = $2,
  "metadata" = $3,
  "updated_at" = $4
where
  "tenant_id" = $5
  and "id" = $6
  and "deleted_at" is null;

-- conversations/store.ts: updateConversation (delete)
-- sqlite and postgres
update "conversations"
set
  "deleted_at" = $1
where
  "tenant_id" = $2
  and "id" = $3
  and "deleted_at" is null;

-- conversations/store.ts: claimConversation
-- sqlite and postgres
update "conversations"
set
  "active_run_id" = $1,
  "message_count" = message_count + 1,
  "last_message_at" = $2,
  "duration_ms" = $3,
  "updated_at" = $4
where
  "tenant_id" = $5
  and "id" = $6
  and "active_run_id" is null
  and "deleted_at" is null
  and "status" = $7
returning
  "message_count";

-- conversations/store.ts: releaseConversation
-- sqlite and postgres
update "conversations"
set
  "active_run_id" = $1
where
  "id" = $2
  and "active_run_id" = $3;

-- conversations/store.ts: deferConversation
-- sqlite and postgres
insert into
  "conversations" (
    "id",
    "tenant_id",
    "agent_id",
    "app_id",
    "name",
    "status",
    "metadata",
    "message_count",
    "last_message_at",
    "duration_ms",
    "active_run_id",
    "created_by",
    "created_at",
    "updated_at",
    "deleted_at",
    "user_id"
  )
values
  ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16);

-- conversations/store.ts: deferMessage
-- sqlite and postgres
insert into
  "messages" (
    "id",
    "tenant_id",
    "conversation_id",
    "run_id",
    "role",
    "content",
    "tool_calls",
    "token_usage",
    "attachments",
    "created_at"
  )
values
  ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10),
  ($11, $12, $13, $14, $15, $16, $17, $18, $19, $20);

-- conversations/store.ts: insertMessage
-- sqlite and postgres
insert into
  "messages" (
    "id",
    "tenant_id",
    "conversation_id",
    "run_id",
    "role",
    "content",
    "tool_calls",
    "token_usage",
    "attachments",
    "created_at"
  )
values
  ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10);

-- conversations/store.ts: countMessages (count)
-- sqlite and postgres
update "conversations"
set
  "message_count" = message_count + $1,
  "last_message_at" = $2,
  "duration_ms" = $3,
  "updated_at" = $4
where
  "id" = $5
returning
  "message_count";

-- conversations/store.ts: countMessages (count and release)
-- sqlite and postgres
update "conversations"
set
  "message_count" = message_count + $1,
  "last_message_at" = $2,
  "duration_ms" = $3,
  "updated_at" = $4,
  "active_run_id" = case
    when active_run_id = $5 then null
    else active_run_id
  end
where
  "id" = $6
returning
  "message_count";

-- conversations/store.ts: messagesBefore (first page)
-- sqlite and postgres
select
  *
from
  "messages"
where
  "tenant_id" = $1
  and "conversation_id" = $2
order by
  "id" desc
limit
  $3;

-- conversations/store.ts: messagesBefore (before a message)
-- sqlite and postgres
select
  *
from
  "messages"
where
  "tenant_id" = $1
  and "conversation_id" = $2
  and "id" < $3
order by
  "id" desc
limit
  $4;

-- conversations/store.ts: history
-- sqlite and postgres
select
  "id",
  "role",
  "content",
  "tool_calls"
from
  "messages"
where
  "tenant_id" = $1
  and "conversation_id" = $2
order by
  "id" desc
limit
  $3;

-- conversations/store.ts: findSummary
-- sqlite and postgres
select
  "summary",
  "through_message_id"
from
  "conversation_summaries"
where
  "tenant_id" = $1
  and "conversation_id" = $2;

-- conversations/store.ts: saveSummary
-- sqlite and postgres
insert into
  "conversation_summaries" ("tenant_id", "conversation_id", "summary", "through_message_id", "updated_at")
values
  ($1, $2, $3, $4, $5)
on conflict ("conversation_id") do update
set
  "summary" = $6,
  "through_message_id" = $7,
  "updated_at" = $8;

-- conversations/store.ts: findMessage
-- sqlite and postgres
select
  "id"
from
  "messages"
where
  "tenant_id" = $1
  and "conversation_id" = $2
  and "id" = $3;

-- conversations/store.ts: findReply
-- sqlite and postgres
select
  *
from
  "messages"
where
  "tenant_id" = $1
  and "run_id" = $2
  and "role" = $3;

-- conversations/store.ts: stats
-- sqlite and postgres
select
  count(*) as "total",
  sum(
    case
      when "status" = $1 then 1
      else 0
    end
  ) as "active",
  sum(
    case
      when "status" = $2 then 1
      else 0
    end
  ) as "completed",
  sum(
    case
      when "status" = $3 then 1
      else 0
    end
  ) as "archived",
  sum("message_count") as "messages",
  avg("duration_ms") as "avgDuration"
from
  "conversations"
where
  "tenant_id" = $4
  and "deleted_at" is null;

-- conversations/store.ts: insertFile
-- sqlite and postgres
insert into
  "files" (
    "id",
    "tenant_id",
    "name",
    "content_type",
    "size",
    "data",
    "created_by",
    "created_at",
    "run_id",
    "tool_call_id"
  )
values
  ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10);

-- conversations/store.ts: findFile
-- sqlite and postgres
select
  *
from
  "files"
where
  "tenant_id" = $1
  and "id" = $2;

-- conversations/store.ts: deleteFile
-- sqlite and postgres
delete from "files"
where
  "tenant_id" = $1
  and "id" = $2
returning
  "name",
  "size";

-- conversations/store.ts: findFiles
-- sqlite and postgres
select
  *
from
  "files"
where
  "tenant_id" = $1
  and "id" in ($2, $3);

-- conversations/store.ts: listFiles (no filter)
-- sqlite and postgres
select
  "id",
  "name",
  "content_type",
  "size",
  "created_at",
  "run_id",
  "tool_call_id"
from
  "files"
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
  "files"
where
  "tenant_id" = $1;

-- conversations/store.ts: listFiles (by run)
-- sqlite and postgres
select
  "id",
  "name",
  "content_type",
  "size",
  "created_at",
  "run_id",
  "tool_call_id"
from
  "files"
where
  "tenant_id" = $1
  and "run_id" = $2
order by
  "id" desc
limit
  $3
offset
  $4;

select
  count(*) as "n"
from
  "files"
where
  "tenant_id" = $1
  and "run_id" = $2;

-- conversations/store.ts: conversationAttachments
-- sqlite and postgres
select
  "attachments"
from
  "messages"
where
  "tenant_id" = $1
  and "conversation_id" = $2
  and "attachments" is not null
order by
  "id" desc
limit
  $3;

-- conversations/store.ts: deleteConversationsBefore
-- sqlite and postgres
begin;

select
  "id"
from
  "conversations"
where
  "tenant_id" = $1
  and "updated_at" < $2
  and "active_run_id" is null
limit
  $3;

delete from "conversations"
where
  "id" in ($1)
  and "active_run_id" is null
returning
  "id";

delete from "messages"
where
  "tenant_id" = $1
  and "conversation_id" in ($2);

delete from "conversation_summaries"
where
  "tenant_id" = $1
  and "conversation_id" in ($2);

commit;

-- conversations/store.ts: deleteFilesBefore
-- sqlite and postgres
delete from "files"
where
  "id" in (
    select
      "id"
    from
      "files"
    where
      "tenant_id" = $1
      and "created_at" < $2
    limit
      $3
  );

-- conversations/store.ts: exportSources
-- sqlite and postgres
select
  *
from
  "conversations"
where
  "tenant_id" = $1
order by
  "id"
limit
  $2;

select
  *
from
  "conversations"
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
  "messages"
where
  "tenant_id" = $1
order by
  "id"
limit
  $2;

select
  *
from
  "messages"
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
  "files"
where
  "tenant_id" = $1
order by
  "id"
limit
  $2;

select
  *
from
  "files"
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
  "conversation_summaries"
where
  "tenant_id" = $1
order by
  "conversation_id"
limit
  $2;

select
  *
from
  "conversation_summaries"
where
  "tenant_id" = $1
  and ("conversation_id") > ($2)
order by
  "conversation_id"
limit
  $3;
