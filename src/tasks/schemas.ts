import { Type, type Static } from 'typebox';
import { Id, Json, Literals, Nullable, PageQuery, Timestamp } from '../http/schemas.js';
import { OPTIONAL_BODY } from '../http/validation.js';

const TASK_STATUSES = ['pending', 'awaiting_approval', 'running', 'completed', 'failed', 'cancelled'] as const;
const TASK_TYPES = ['one_time', 'scheduled', 'triggered'] as const;
const PRIORITIES = ['low', 'medium', 'high', 'critical'] as const;
export type Priority = (typeof PRIORITIES)[number];
/** Dispatch order: higher first. */
export const PRIORITY_RANK: Record<Priority, number> = { low: 0, medium: 1, high: 2, critical: 3 };
const MISFIRE_POLICIES = ['skip', 'fire_once'] as const;
const OVERLAP_POLICIES = ['skip', 'queue', 'allow'] as const;
const TRIGGER_EVENTS = ['task.completed', 'task.failed'] as const;

const literals = <const T extends readonly string[]>(values: T, description?: string) =>
  Literals(values, description ? { description } : {});

const Scope = Type.String({ minLength: 1, maxLength: 128 });

const RetryPolicy = Type.Object(
  {
    maxAttempts: Type.Integer({
      minimum: 1,
      maximum: 10,
      default: 1,
      description: 'runs per piece of work, the first included; 1: no automatic retry',
    }),
    backoffSeconds: Type.Integer({
      minimum: 0,
      maximum: 86_400,
      default: 10,
      description: 'wait before the first retry; doubled for each later one',
    }),
  },
  { additionalProperties: false },
);

const TriggerInput = Type.Object(
  {
    type: Type.Optional(
      literals(['webhook', 'event'] as const, 'webhook: POST /api/v1/hooks/{taskId}, signed; event: another task completed or failed'),
    ),
    event: Type.Optional(literals(TRIGGER_EVENTS)),
    taskId: Type.Optional(Id),
  },
  { additionalProperties: false },
);

export const CreateTaskBody = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 200 }),
    description: Type.String({ minLength: 1, maxLength: 100_000, description: 'what the agent should do; executed as a message' }),
    agentId: Id,
    teamId: Type.Optional(Scope),
    appId: Type.Optional(Type.String({ minLength: 1, maxLength: 128, description: "default: the agent's app" })),
    type: Type.Optional(literals(TASK_TYPES)),
    schedule: Type.Optional(
      Type.String({ minLength: 1, maxLength: 128, description: 'cron expression, five fields; scheduled tasks only' }),
    ),
    timezone: Type.Optional(Type.String({ minLength: 1, maxLength: 64, description: 'IANA time zone of the schedule (default UTC)' })),
    priority: Type.Optional(literals(PRIORITIES)),
    dueAt: Type.Optional(
      Type.String({ format: 'date-time', description: 'deadline of a one-time task; earlier deadlines dispatch first' }),
    ),
    input: Type.Optional(Json),
    requiresApproval: Type.Optional(Type.Boolean()),
    misfirePolicy: Type.Optional(literals(MISFIRE_POLICIES, 'scheduled tasks: what a cron time found late does (default skip)')),
    overlapPolicy: Type.Optional(literals(OVERLAP_POLICIES, 'scheduled and triggered tasks: a fire while work is active (default skip)')),
    retryPolicy: Type.Optional(Type.Partial(RetryPolicy, { additionalProperties: false })),
    trigger: Type.Optional(TriggerInput),
  },
  { additionalProperties: false },
);
export type CreateTaskBody = Static<typeof CreateTaskBody>;

export const RunTaskBody = Type.Object(
  { input: Type.Optional(Type.Record(Type.String(), Type.Unknown(), { description: 'merged over the task input for this run' })) },
  { additionalProperties: false, [OPTIONAL_BODY]: true },
);

export const ListTasksQuery = Type.Object(
  {
    ...PageQuery,
    agentId: Type.Optional(Id),
    teamId: Type.Optional(Scope),
    appId: Type.Optional(Scope),
    status: Type.Optional(literals(TASK_STATUSES)),
    type: Type.Optional(literals(TASK_TYPES)),
  },
  { additionalProperties: false },
);

const ActorSchema = Type.Object({ type: Type.String(), id: Nullable(Type.String()) });
const ErrorSchema = Type.Object({ code: Type.String(), message: Type.String() });

const Trigger = Nullable(
  Type.Union([
    Type.Object({
      type: Type.Literal('webhook'),
      url: Type.String(),
      secret: Type.Optional(Type.String({ description: 'shown once, at creation' })),
    }),
    Type.Object({ type: Type.Literal('event'), event: Type.String(), taskId: Type.String() }),
  ]),
);

const Approval = Nullable(
  Type.Object({
    action: Nullable(Type.String({ description: 'registered action performed on approval; null: approval lets the agent run' })),
    payload: Nullable(Json),
    requestedBy: Nullable(ActorSchema),
    decision: Nullable(Type.Union([Type.Literal('approved'), Type.Literal('rejected')])),
    decidedBy: Nullable(ActorSchema),
    decidedAt: Nullable(Timestamp),
  }),
);

export const TaskSummary = Type.Object({
  id: Type.String(),
  name: Type.String(),
  description: Type.String(),
  agentId: Type.String(),
  teamId: Nullable(Type.String()),
  appId: Type.String(),
  type: Type.String(),
  schedule: Nullable(Type.String()),
  priority: Type.String(),
  dueAt: Nullable(Timestamp),
  status: Type.String({ description: TASK_STATUSES.join(', ') }),
  lastRunAt: Nullable(Timestamp),
  nextRunAt: Nullable(Timestamp),
  createdAt: Timestamp,
});

export const Task = Type.Evaluate(
  Type.Intersect([
    TaskSummary,
    Type.Object({
      timezone: Nullable(Type.String()),
      input: Json,
      requiresApproval: Type.Boolean(),
      misfirePolicy: Type.String(),
      overlapPolicy: Type.String(),
      retryPolicy: RetryPolicy,
      trigger: Trigger,
      approval: Approval,
      lastRunId: Nullable(Type.String()),
      lastError: Nullable(ErrorSchema),
      queuedAt: Nullable(
        Type.String({
          format: 'date-time',
          description:
            'when the earliest queued work (a one-time run, a fire, an automatic retry) may start; null: none queued. Work queued makes the task cancellable whatever its status',
        }),
      ),
      updatedAt: Timestamp,
    }),
  ]),
  { $id: 'Task', title: 'Task' },
);
export type Task = Static<typeof Task>;

export const Fire = Type.Object({
  id: Type.String(),
  source: Type.String({ description: 'schedule, webhook or event' }),
  scheduledFor: Nullable(Timestamp),
  decidedAt: Timestamp,
  decision: Type.String({ description: 'fired (work queued), queued (waits for the active run), skipped' }),
  reason: Nullable(Type.String({ description: 'misfire, overlap, already_queued, awaiting_approval' })),
  missed: Type.Integer({ description: 'cron times passed over by this decision' }),
  jobId: Nullable(Type.String()),
  detail: Json,
});

export const RunStarted = Type.Object({
  runId: Nullable(Type.String({ description: 'null for an approval task whose action was performed (no agent run)' })),
  status: Type.String(),
  startedAt: Timestamp,
  taskId: Type.String(),
  conversationId: Nullable(Type.String()),
});

export const HookAccepted = Type.Object({
  accepted: Type.Literal(true),
  taskId: Type.String(),
  fireId: Type.String(),
  decision: Type.String(),
  reason: Nullable(Type.String()),
  duplicate: Type.Boolean({ description: 'the same signed delivery was received before; nothing new happens' }),
});
