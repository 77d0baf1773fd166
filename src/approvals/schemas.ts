import { Type, type Static } from 'typebox';
import { Id, Literals, Nullable, PageQuery, Timestamp } from '../http/schemas.js';
import { OPTIONAL_BODY } from '../http/validation.js';

/** The approvals inbox (docs/runtime.md, "Tool calls that wait for approval"): tool calls and tasks waiting for a person. */

const APPROVAL_KINDS = ['tool_call', 'task'] as const;
const APPROVAL_STATUSES = ['pending', 'approved', 'rejected', 'expired', 'cancelled'] as const;

/** Edited arguments are held to this many characters of JSON (the tool's own schema checks them when the call runs). */
export const MAX_ARGUMENTS_CHARS = 100_000;

const Actor = Type.Object({ type: Type.String(), id: Nullable(Type.String()) });

export const ApprovalItem = Type.Object(
  {
    id: Type.String({ description: 'the approval’s id (a task’s id for kind task)' }),
    kind: Literals(APPROVAL_KINDS),
    status: Literals(APPROVAL_STATUSES),
    agentId: Type.String(),
    reason: Type.String({ description: 'why it waits: the rule that matched, or the task’s description' }),
    createdAt: Timestamp,
    expiresAt: Nullable(Timestamp),
    toolCall: Nullable(
      Type.Object({
        runId: Type.String(),
        conversationId: Nullable(Type.String()),
        id: Type.String({ description: 'the tool call’s id in the run' }),
        name: Type.String(),
        arguments: Type.Unknown({ description: 'as the model gave them' }),
      }),
    ),
    task: Nullable(Type.Object({ id: Type.String(), name: Type.String(), description: Type.String() })),
    decision: Nullable(
      Type.Object({
        by: Nullable(Actor),
        at: Timestamp,
        reason: Nullable(Type.String()),
        arguments: Type.Optional(Type.Unknown({ description: 'approved with these arguments instead of the model’s' })),
      }),
    ),
  },
  { $id: 'Approval', title: 'Approval (a tool call or a task waiting for a person)' },
);
export type ApprovalItem = Static<typeof ApprovalItem>;

export const ListApprovalsQuery = Type.Object(
  {
    ...PageQuery,
    kind: Type.Optional(Literals(APPROVAL_KINDS)),
    status: Type.Optional(
      Literals(APPROVAL_STATUSES, { description: 'default pending (with runId: every status); tasks appear only while pending' }),
    ),
    agentId: Type.Optional(Id),
    runId: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 64,
        pattern: '^[\\x21-\\x7e]+$',
        description: 'the tool calls of this run only, in every status unless `status` is given (no tasks)',
      }),
    ),
  },
  { additionalProperties: false },
);
export type ListApprovalsQuery = Static<typeof ListApprovalsQuery>;

export const ApproveBody = Type.Object(
  {
    arguments: Type.Optional(
      Type.Record(Type.String(), Type.Unknown(), {
        description: `tool calls only: run the call with these arguments instead (at most ${MAX_ARGUMENTS_CHARS} characters of JSON)`,
      }),
    ),
  },
  { additionalProperties: false, [OPTIONAL_BODY]: true },
);
export type ApproveBody = Static<typeof ApproveBody>;

export const RejectBody = Type.Object(
  { reason: Type.String({ minLength: 1, maxLength: 2000, description: 'what the model is told as the tool’s result' }) },
  { additionalProperties: false },
);
export type RejectBody = Static<typeof RejectBody>;
