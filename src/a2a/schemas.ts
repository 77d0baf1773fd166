import { type Static, Type } from 'typebox';
import { Id, Literals } from '../http/schemas.js';

/**
 * The A2A protocol's shapes (JSON-RPC binding, protocol 0.3, the wire of `message/send` and friends):
 * what a caller sends is checked here, what we answer is declared here for the OpenAPI document.
 * The JSON-RPC envelope is checked by the service (a malformed call answers a JSON-RPC error, not a problem).
 */

const TASK_STATES = [
  'submitted',
  'working',
  'input-required',
  'completed',
  'canceled',
  'failed',
  'rejected',
  'auth-required',
  'unknown',
] as const;
export type TaskState = (typeof TASK_STATES)[number];

/** A message's text, a part's and the parts' joined (execute's message limit). */
export const MAX_TEXT = 100_000;

const TextPart = Type.Object(
  {
    kind: Type.Literal('text'),
    text: Type.String({ maxLength: MAX_TEXT }),
    metadata: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
  },
  { additionalProperties: false },
);
/** Parts other than text are read as such only to be refused by name (-32005). */
const OtherPart = Type.Object({ kind: Type.Union([Type.Literal('file'), Type.Literal('data')]) });

const MessageIn = Type.Object(
  {
    kind: Type.Optional(Type.Literal('message')),
    role: Type.Union([Type.Literal('user'), Type.Literal('agent')]),
    parts: Type.Array(Type.Union([TextPart, OtherPart]), { minItems: 1, maxItems: 64 }),
    messageId: Type.String({ minLength: 1, maxLength: 200 }),
    contextId: Type.Optional(Id),
    taskId: Type.Optional(Id),
    referenceTaskIds: Type.Optional(Type.Array(Type.String(), { maxItems: 64 })),
    extensions: Type.Optional(Type.Array(Type.String(), { maxItems: 64 })),
    metadata: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
  },
  { additionalProperties: false },
);

export const MessageSendParams = Type.Object({
  message: MessageIn,
  configuration: Type.Optional(
    Type.Object({
      blocking: Type.Optional(Type.Boolean()),
      historyLength: Type.Optional(Type.Integer({ minimum: 0 })),
      acceptedOutputModes: Type.Optional(Type.Array(Type.String())),
      pushNotificationConfig: Type.Optional(Type.Unknown()),
    }),
  ),
  metadata: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
});
export type MessageSendParams = Static<typeof MessageSendParams>;

export const TaskQueryParams = Type.Object({
  id: Id,
  historyLength: Type.Optional(Type.Integer({ minimum: 0 })),
  metadata: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
});
export const TaskIdParams = Type.Object({ id: Id, metadata: Type.Optional(Type.Record(Type.String(), Type.Unknown())) });

const TextPartOut = Type.Object({ kind: Type.Literal('text'), text: Type.String() });

const MessageOut = Type.Object({
  kind: Type.Literal('message'),
  role: Type.Union([Type.Literal('user'), Type.Literal('agent')]),
  parts: Type.Array(TextPartOut),
  messageId: Type.String(),
  taskId: Type.Optional(Type.String()),
  contextId: Type.Optional(Type.String()),
});
export type A2aMessage = Static<typeof MessageOut>;

const TaskStatus = Type.Object({
  state: Literals(TASK_STATES),
  message: Type.Optional(MessageOut),
  timestamp: Type.Optional(Type.String()),
});

const Artifact = Type.Object({ artifactId: Type.String(), name: Type.Optional(Type.String()), parts: Type.Array(TextPartOut) });
export type A2aArtifact = Static<typeof Artifact>;

export const A2aTask = Type.Object(
  {
    kind: Type.Literal('task'),
    id: Type.String({ description: 'the Agentry run id' }),
    contextId: Type.String({ description: 'the Agentry conversation id' }),
    status: TaskStatus,
    artifacts: Type.Optional(Type.Array(Artifact)),
    history: Type.Optional(Type.Array(MessageOut)),
    metadata: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
  },
  { title: 'A2A Task' },
);
export type A2aTask = Static<typeof A2aTask>;

const JsonRpcId = Type.Union([Type.String(), Type.Number(), Type.Null()]);

export const JsonRpcRequest = Type.Object(
  {
    jsonrpc: Type.Literal('2.0'),
    id: Type.Optional(JsonRpcId),
    method: Type.String({ description: 'message/send, message/stream, tasks/get, tasks/cancel or tasks/resubscribe' }),
    params: Type.Optional(Type.Unknown()),
  },
  { title: 'A2A JSON-RPC request' },
);

export const JsonRpcResponse = Type.Object(
  {
    jsonrpc: Type.Literal('2.0'),
    id: JsonRpcId,
    result: Type.Optional(A2aTask),
    error: Type.Optional(
      Type.Object({
        code: Type.Integer({ description: '-32001 task not found, -32002 not cancelable, -326xx JSON-RPC' }),
        message: Type.String(),
        data: Type.Optional(Type.Unknown()),
      }),
    ),
  },
  { title: 'A2A JSON-RPC response' },
);
export type JsonRpcResponse = Static<typeof JsonRpcResponse>;

export const CardParams = Type.Object({ tenantId: Id, agentId: Id });

const SecurityScheme = Type.Record(Type.String(), Type.Unknown());

export const AgentCard = Type.Object(
  {
    protocolVersion: Type.String(),
    name: Type.String(),
    description: Type.String(),
    url: Type.String({ description: 'the JSON-RPC endpoint' }),
    preferredTransport: Type.String(),
    version: Type.String(),
    capabilities: Type.Object({ streaming: Type.Boolean(), pushNotifications: Type.Boolean(), stateTransitionHistory: Type.Boolean() }),
    defaultInputModes: Type.Array(Type.String()),
    defaultOutputModes: Type.Array(Type.String()),
    skills: Type.Array(
      Type.Object({ id: Type.String(), name: Type.String(), description: Type.String(), tags: Type.Array(Type.String()) }),
    ),
    securitySchemes: Type.Record(Type.String(), SecurityScheme),
    security: Type.Array(Type.Record(Type.String(), Type.Array(Type.String()))),
    provider: Type.Optional(Type.Object({ organization: Type.String(), url: Type.String() })),
  },
  { title: 'A2A Agent Card (protocol 0.3)' },
);
export type AgentCard = Static<typeof AgentCard>;
