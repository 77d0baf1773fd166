import { Type } from 'typebox';

/** The request header of idempotent POSTs (execute, chat, stream, conversation messages, task creation). */
export const IdempotencyHeaders = Type.Object({
  'idempotency-key': Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: 255,
      pattern: '^[\\x20-\\x7E]+$',
      description:
        'A key the client chooses (1-255 printable ASCII characters) to make retries safe: for 24 hours the same key with the same request answers the original run or task instead of starting another; with a different request, 422 idempotency_key_reused.',
    }),
  ),
});

/** Set on an answer that replays what an earlier request with the same Idempotency-Key started. */
export const REPLAYED_HEADER = 'idempotent-replayed';
