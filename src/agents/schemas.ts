import { Type, type Static } from 'typebox';
import { Id, Literals, Nullable, PageQuery, Timestamp } from '../http/schemas.js';
import { OPTIONAL_BODY } from '../http/validation.js';
import { ApprovalPolicy } from '../runtime/tools/approval-policy.js';
import { McpTool } from '../runtime/tools/mcp-source.js';

const AGENT_STATUSES = ['available', 'paused', 'registered'] as const;

const Name = Type.String({ minLength: 1, maxLength: 200 });
const Scope = Type.String({ minLength: 1, maxLength: 128 });
const Prompt = Type.String({ maxLength: 100_000 });
const ModelString = Type.String({
  minLength: 3,
  maxLength: 200,
  description: 'provider/model-name, e.g. openai/gpt-4o-mini or builtin/echo',
});
const ToolName = Type.String({ pattern: '^[a-zA-Z0-9_-]{1,64}$', description: 'name the model sees' });

const BuiltinTool = Type.Object(
  {
    type: Type.Literal('builtin'),
    name: Type.Union(
      [Type.Literal('skills'), Type.Literal('connectors'), Type.Literal('memory'), Type.Literal('code'), Type.Literal('knowledge')],
      {
        description:
          'skills: skill_discover, skill_query, skill_request; connectors: connector_discover, connector_request; memory: memory_read, memory_append, memory_replace; code: code_run, and skill_script_run while a skill is assigned (offered only where code runs: docs/code-execution.md); knowledge: knowledge_search over the knowledge bases listed in knowledgeBases, or all of the tenant’s (docs/knowledge.md) (memory, code and knowledge not given by default)',
      },
    ),
    knowledgeBases: Type.Optional(
      Type.Array(Id, {
        maxItems: 16,
        uniqueItems: true,
        description: 'knowledge only: the knowledge bases knowledge_search may search (absent: every knowledge base of the tenant)',
      }),
    ),
    enabled: Type.Optional(Type.Boolean({ description: 'false: the group is off (input only; an agent lists only the groups it has)' })),
  },
  { additionalProperties: false, title: 'Built-in tool group' },
);

export const AgentTool = Type.Object(
  {
    type: Type.Literal('agent'),
    agentId: Id,
    name: Type.Optional(ToolName),
    description: Type.Optional(Type.String({ maxLength: 2000 })),
  },
  { additionalProperties: false, title: 'Delegation to another agent' },
);

/** How many remote A2A agents one agent may call. */
export const MAX_A2A_AGENTS = 16;

/** A remote A2A agent as a tool (`a2a_<name>`), docs/clients.md "Calling remote A2A agents". */
export const A2aAgentTool = Type.Object(
  {
    type: Type.Literal('a2a'),
    name: Type.String({
      pattern: '^[a-zA-Z0-9_-]{1,60}$',
      description: 'the tool the model sees is a2a_<name> (what TBAC policies match)',
    }),
    cardUrl: Type.String({ format: 'uri', pattern: '^https?://', maxLength: 2048, description: "the remote agent's Agent Card" }),
    description: Type.Optional(Type.String({ maxLength: 2000 })),
    credential: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 8192,
        description:
          'the bearer credential the remote agent expects; sealed at rest and read back sealed (v1.…): sending that back keeps it',
      }),
    ),
  },
  { additionalProperties: false, title: 'Remote A2A agent' },
);
export type A2aAgentTool = Static<typeof A2aAgentTool>;

export const ToolSpec = Type.Union([BuiltinTool, McpTool, AgentTool, A2aAgentTool]);
export type ToolSpec = Static<typeof ToolSpec>;
const Tools = Type.Array(ToolSpec, { maxItems: 64 });
const CreateTools = Type.Array(ToolSpec, {
  maxItems: 64,
  description: "The agent's tools, as given (entries with enabled: false left out). Left out: the built-in groups skills and connectors.",
});
const UpdateTools = Type.Array(ToolSpec, {
  maxItems: 64,
  description:
    "Replaces the agent's MCP servers and delegations. The built-in groups are kept as they are, but for those the list " +
    'names: a group named with enabled: false is turned off; a list that names a group without enabled: false is the ' +
    'complete set (the tools read from the agent can be sent back as they are).',
});

const ON_ACTIVE_RUN = ['reject', 'enqueue', 'inject'] as const;

/** How many fallback models an agent may list. */
const MAX_FALLBACK_MODELS = 4;

/** Stored configuration: every key present, defaults filled in. */
export const Configuration = Type.Object(
  {
    temperature: Nullable(Type.Number({ minimum: 0, maximum: 2 })),
    maxSteps: Type.Integer({ minimum: 1, maximum: 50, description: 'model steps per run (tool round trips + 1)' }),
    maxTokens: Nullable(Type.Integer({ minimum: 1, maximum: 200_000, description: 'output token cap per model step' })),
    memoryWindow: Type.Integer({ minimum: 0, maximum: 1000, description: 'how many earlier conversation messages the model sees' }),
    onActiveRun: Literals(ON_ACTIVE_RUN, {
      description: 'what a message does while the agent still answers in the same conversation',
    }),
    toolTimeoutMs: Type.Integer({ minimum: 100, maximum: 600_000 }),
    // The model that summarises the turns the agent's model window no longer holds (docs/runtime.md); null: the agent's own.
    summaryModel: Nullable(ModelString),
    // Absent: no tool call waits (docs/runtime.md, "Tool calls that wait for approval").
    approval: Type.Optional(ApprovalPolicy),
    fallbackModels: Type.Array(ModelString, {
      maxItems: MAX_FALLBACK_MODELS,
      description:
        'models a step turns to, in order, when the agent’s model fails for good (its retries spent) or its breaker is open; any provider this server is configured for (docs/models.md)',
    }),
    publicAgentCard: Type.Boolean({
      description:
        'whether the agent’s A2A Agent Card is served without credentials (docs/clients.md, "Agent2Agent"); false: the card answers 404 as for an unknown agent, the authenticated A2A endpoint still works',
    }),
  },
  { additionalProperties: false },
);
export type Configuration = Static<typeof Configuration>;

/** Input configuration: any subset; null clears an optional setting. */
export const ConfigurationInput = Type.Partial(Configuration, { additionalProperties: false });
export type ConfigurationInput = Static<typeof ConfigurationInput>;

export const DEFAULT_CONFIGURATION: Configuration = {
  temperature: null,
  maxSteps: 10,
  maxTokens: null,
  memoryWindow: 50,
  onActiveRun: 'reject',
  toolTimeoutMs: 60_000,
  summaryModel: null,
  fallbackModels: [],
  // A2A clients discover agents by their card: public unless turned off.
  publicAgentCard: true,
};

export const DEFAULT_TOOLS: ToolSpec[] = [
  { type: 'builtin', name: 'skills' },
  { type: 'builtin', name: 'connectors' },
];

/** The tools an agent keeps from a list given on create: as given, without the groups turned off. */
export function toolsAsGiven(tools: ToolSpec[]): ToolSpec[] {
  return tools.flatMap((t): ToolSpec[] =>
    t.type !== 'builtin'
      ? [t]
      : t.enabled === false
        ? []
        : [{ type: 'builtin', name: t.name, ...(t.knowledgeBases ? { knowledgeBases: t.knowledgeBases } : {}) }],
  );
}

/**
 * The tools after an update: MCP servers and delegations are replaced. Built-in groups the list does
 * not name are kept (adding an MCP server must not take skill_query away), unless the list turns a
 * group on: then it is the complete set, as the agent's own tools read back and sent again are.
 */
export function toolsAfterUpdate(current: ToolSpec[], given: ToolSpec[]): ToolSpec[] {
  const named = given.flatMap((t) => (t.type === 'builtin' ? [t] : []));
  const complete = named.some((t) => t.enabled !== false);
  const kept = complete ? [] : current.filter((t) => t.type === 'builtin' && !named.some((n) => n.name === t.name));
  return [...kept, ...toolsAsGiven(given)];
}

export const Agent = Type.Object(
  {
    id: Type.String(),
    name: Type.String(),
    role: Nullable(Type.String()),
    description: Nullable(Type.String()),
    model: Type.String(),
    systemPrompt: Nullable(Type.String()),
    contextPrompt: Nullable(Type.String()),
    status: Literals(AGENT_STATUSES),
    hosting: Type.Union([Type.Literal('platform'), Type.Literal('external')]),
    teamId: Nullable(Type.String()),
    appId: Type.String(),
    tools: Tools,
    configuration: Configuration,
    createdAt: Timestamp,
    updatedAt: Timestamp,
  },
  { $id: 'Agent', title: 'Agent (full details)' },
);
export type Agent = Static<typeof Agent>;

export const AgentSummary = Type.Object({
  id: Type.String(),
  name: Type.String(),
  role: Nullable(Type.String()),
  description: Nullable(Type.String()),
  model: Type.String(),
  status: Type.String(),
  hosting: Type.String(),
  teamId: Nullable(Type.String()),
  appId: Type.String(),
  createdAt: Timestamp,
});

export const CreateAgentBody = Type.Object(
  {
    name: Name,
    appId: Scope,
    teamId: Type.Optional(Scope),
    role: Type.Optional(Type.String({ maxLength: 200 })),
    description: Type.Optional(Type.String({ maxLength: 5000 })),
    model: Type.Optional(ModelString),
    systemPrompt: Type.Optional(Prompt),
    contextPrompt: Type.Optional(Prompt),
    hosting: Type.Optional(
      Type.Union([Type.Literal('platform'), Type.Literal('external')], {
        description: 'external: hosted elsewhere, holds only an identity here (status registered, never executed)',
      }),
    ),
    tools: Type.Optional(CreateTools),
    configuration: Type.Optional(ConfigurationInput),
  },
  { additionalProperties: false },
);
export type CreateAgentBody = Static<typeof CreateAgentBody>;

export const UpdateAgentBody = Type.Object(
  {
    name: Type.Optional(Name),
    appId: Type.Optional(Scope),
    teamId: Type.Optional(Nullable(Scope)),
    role: Type.Optional(Nullable(Type.String({ maxLength: 200 }))),
    description: Type.Optional(Nullable(Type.String({ maxLength: 5000 }))),
    model: Type.Optional(ModelString),
    systemPrompt: Type.Optional(Nullable(Prompt)),
    contextPrompt: Type.Optional(Nullable(Prompt)),
    status: Type.Optional(
      Type.Union([Type.Literal('available'), Type.Literal('paused')], {
        description:
          'paused refuses new executions; a registered (external) agent can be paused (its identity is suspended) but never set to available (409 agent_not_executable): resume it instead',
      }),
    ),
    tools: Type.Optional(UpdateTools),
    configuration: Type.Optional(ConfigurationInput),
  },
  { additionalProperties: false },
);
export type UpdateAgentBody = Static<typeof UpdateAgentBody>;

export const DuplicateAgentBody = Type.Object({ name: Type.Optional(Name) }, { additionalProperties: false, [OPTIONAL_BODY]: true });

export const ListAgentsQuery = Type.Object(
  {
    page: PageQuery.page,
    limit: Type.Integer({ minimum: 1, maximum: 100, default: 20 }),
    appId: Type.Optional(Scope),
    teamId: Type.Optional(Scope),
    status: Type.Optional(Literals(AGENT_STATUSES)),
    q: Type.Optional(
      Type.String({ minLength: 1, maxLength: 100, description: 'only agents whose name contains this, case-insensitively' }),
    ),
  },
  { additionalProperties: false },
);
export type ListAgentsQuery = Static<typeof ListAgentsQuery>;
