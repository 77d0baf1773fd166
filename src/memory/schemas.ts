import { Type, type Static } from 'typebox';
import { UserId } from '../conversations/schemas.js';
import { Id, Literals, Nullable, PageQuery, Timestamp } from '../http/schemas.js';

/** Characters (Unicode code points) one block holds at most: every block is in every run's system prompt. */
export const MEMORY_BLOCK_MAX_CHARS = 5_000;
/** Blocks per scope at most: the agent's own, and each user's. */
export const MEMORY_MAX_BLOCKS = 16;

export const MEMORY_CHANGES = ['created', 'set', 'appended', 'replaced', 'deleted'] as const;
export type MemoryChange = (typeof MEMORY_CHANGES)[number];

const Label = Type.String({
  pattern: '^[A-Za-z0-9_-]{1,64}$',
  examples: ['user_preferences'],
  description: 'the block’s name, e.g. persona or user_preferences (letters, digits, _ and -, at most 64)',
});
const Value = Type.String({
  maxLength: MEMORY_BLOCK_MAX_CHARS,
  description: `the block’s text, at most ${MEMORY_BLOCK_MAX_CHARS} characters`,
});

export const MemoryParams = Type.Object({ id: Id });
export const MemoryBlockParams = Type.Object({ id: Id, label: Label });

/** Without userId, the agent-wide blocks (every run of the agent sees those); with it, that end user's. */
export const ScopeQuery = Type.Object({ userId: Type.Optional(UserId) }, { additionalProperties: false });
export type ScopeQuery = Static<typeof ScopeQuery>;

export const VersionsQuery = Type.Object({ ...ScopeQuery.properties, ...PageQuery }, { additionalProperties: false });

export const PutMemoryBody = Type.Object(
  {
    value: Value,
    version: Type.Optional(
      Type.Integer({
        minimum: 1,
        description: 'the version you read: refused with 409 version_mismatch when the block has changed since (absent: last write wins)',
      }),
    ),
  },
  { additionalProperties: false },
);
export type PutMemoryBody = Static<typeof PutMemoryBody>;

const Actor = Type.Object({
  type: Type.String({ description: 'api_key, access_token, agent, ...' }),
  id: Nullable(Type.String()),
});

export const MemoryBlock = Type.Object({
  label: Type.String(),
  userId: Nullable(Type.String({ description: 'the end user whose block this is; null: agent-wide' })),
  value: Type.String(),
  chars: Type.Integer({ description: 'characters the value holds' }),
  limit: Type.Integer({ description: 'characters the value may hold' }),
  version: Type.Integer({ description: 'counts every change of the label, deletes too' }),
  createdAt: Timestamp,
  updatedAt: Timestamp,
  updatedBy: Actor,
});
export type MemoryBlock = Static<typeof MemoryBlock>;

export const MemoryBlockList = Type.Object({
  blocks: Type.Array(MemoryBlock),
  limits: Type.Object({
    maxBlocks: Type.Integer({ description: 'blocks this scope may hold' }),
    maxChars: Type.Integer({ description: 'characters one block may hold' }),
  }),
});

export const MemoryVersion = Type.Object({
  version: Type.Integer(),
  change: Literals(MEMORY_CHANGES),
  value: Nullable(Type.String({ description: 'the text after the change; null: deleted' })),
  previousValue: Nullable(Type.String({ description: 'the text before it; null: the block did not exist' })),
  actor: Actor,
  runId: Nullable(Type.String({ description: 'the run whose tool call made the change (an agent’s)' })),
  createdAt: Timestamp,
});
export type MemoryVersion = Static<typeof MemoryVersion>;

export const MemoryVersionPage = Type.Object({
  versions: Type.Array(MemoryVersion),
  total: Type.Integer(),
  page: Type.Integer(),
  limit: Type.Integer(),
});
