import { Type, type Static, type TSchema } from 'typebox';
import { UserId } from '../conversations/schemas.js';
import { Literals, Nullable } from '../http/schemas.js';

/**
 * The OpenAI Chat Completions contract as this server speaks it (docs/clients.md, "OpenAI-compatible
 * endpoint"). Parameters a client may send are declared; those that would change what the answer
 * means and cannot be honoured are refused by the service, naming the parameter.
 */

/** A content part: text is understood; any other (image_url, input_audio, file) is declared so the service can refuse it by name. */
const ContentPart = Type.Object({ type: Type.String(), text: Type.Optional(Type.String()) }, { additionalProperties: true });

/** A message's content at most, in characters: execute's `message` cap (runs/routes.ts); the history's total is bounded by the 1 MiB body. */
export const MAX_MESSAGE_CHARS = 100_000;

const ChatMessage = Type.Object(
  {
    role: Literals(['system', 'developer', 'user', 'assistant', 'tool', 'function']),
    content: Type.Optional(
      Nullable(
        Type.Union([Type.String({ maxLength: MAX_MESSAGE_CHARS }), Type.Array(ContentPart)], {
          description: 'at most 100,000 characters (text parts joined), as execute’s message',
        }),
      ),
    ),
    name: Type.Optional(Type.String()),
    tool_calls: Type.Optional(Type.Array(Type.Unknown())),
    tool_call_id: Type.Optional(Type.String()),
    function_call: Type.Optional(Type.Unknown()),
    refusal: Type.Optional(Nullable(Type.String())),
  },
  { additionalProperties: true },
);
export type ChatMessage = Static<typeof ChatMessage>;

const ignored = (description: string) => ({ description: `accepted and ignored: ${description}` });

export const ChatCompletionBody = Type.Object(
  {
    model: Type.String({ minLength: 1, maxLength: 200, description: '`agent:<agentId>`, as GET /v1/models lists it' }),
    messages: Type.Array(ChatMessage, {
      minItems: 1,
      maxItems: 1000,
      description:
        'the last message is the user input; earlier user and assistant messages are the history the model sees; system and developer messages are added after the agent’s own system prompt',
    }),
    stream: Type.Optional(Nullable(Type.Boolean())),
    stream_options: Type.Optional(Nullable(Type.Object({ include_usage: Type.Optional(Type.Boolean()) }, { additionalProperties: true }))),
    max_tokens: Type.Optional(Nullable(Type.Integer({ minimum: 1, maximum: 200_000, description: 'the run’s maxTokens' }))),
    max_completion_tokens: Type.Optional(
      Nullable(Type.Integer({ minimum: 1, maximum: 200_000, description: 'the run’s maxTokens (wins over max_tokens)' })),
    ),
    n: Type.Optional(Nullable(Type.Integer({ minimum: 1, description: 'only 1' }))),
    tools: Type.Optional(
      Nullable(Type.Array(Type.Unknown(), { description: 'refused when not empty: the agent’s own tools run on the server' })),
    ),
    functions: Type.Optional(Nullable(Type.Array(Type.Unknown(), { description: 'refused when not empty, as tools' }))),
    tool_choice: Type.Optional(
      Nullable(Type.Unknown({ description: '"auto" (the agent’s tools), "none" (the run without tools); anything else is refused' })),
    ),
    function_call: Type.Optional(Nullable(Type.Unknown({ description: 'refused unless "auto" or "none"' }))),
    response_format: Type.Optional(
      Nullable(
        Type.Object(
          {
            type: Type.String({ description: '"text", "json_object" (any JSON object) or "json_schema"' }),
            json_schema: Type.Optional(
              Type.Object(
                {
                  name: Type.Optional(Type.String({ maxLength: 64 })),
                  description: Type.Optional(Type.String({ maxLength: 1024 })),
                  schema: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
                  strict: Type.Optional(Nullable(Type.Boolean())),
                },
                { description: 'the answer is validated against schema (one repair attempt, else invalid_output)' },
              ),
            ),
          },
          { additionalProperties: true, description: 'the answer’s shape; the content is then the validated JSON' },
        ),
      ),
    ),
    stop: Type.Optional(Nullable(Type.Union([Type.String(), Type.Array(Type.String())], { description: 'refused when set' }))),
    logprobs: Type.Optional(Nullable(Type.Boolean({ description: 'refused when true' }))),
    top_logprobs: Type.Optional(Nullable(Type.Integer({ description: 'refused when set' }))),
    logit_bias: Type.Optional(Nullable(Type.Record(Type.String(), Type.Number(), { description: 'refused when not empty' }))),
    metadata: Type.Optional(
      Nullable(
        Type.Record(Type.String(), Type.String({ maxLength: 512 }), {
          description:
            '`conversation_id` continues a server-side conversation (as the X-Agentry-Conversation-Id header); other keys are ignored',
        }),
      ),
    ),
    temperature: Type.Optional(Nullable(Type.Number(ignored('the agent’s configuration decides')))),
    top_p: Type.Optional(Nullable(Type.Number(ignored('the agent’s configuration decides')))),
    presence_penalty: Type.Optional(Nullable(Type.Number(ignored('sampling is the agent’s')))),
    frequency_penalty: Type.Optional(Nullable(Type.Number(ignored('sampling is the agent’s')))),
    seed: Type.Optional(Nullable(Type.Integer(ignored('sampling is the agent’s')))),
    parallel_tool_calls: Type.Optional(Nullable(Type.Boolean(ignored('no client tools')))),
    user: Type.Optional(
      Type.String({
        ...UserId,
        description:
          'the end user, as execute’s userId (letters, digits and . _ : @ + -, at most 128): the conversation is theirs and the agent’s memory tools change their blocks; without it, the run is the credential’s own and changes the agent-wide blocks',
      }),
    ),
    store: Type.Optional(Nullable(Type.Boolean(ignored('every run is recorded')))),
    reasoning_effort: Type.Optional(Nullable(Type.String(ignored('the agent’s model decides')))),
    service_tier: Type.Optional(Nullable(Type.String(ignored('one tier')))),
  },
  { additionalProperties: false },
);
export type ChatCompletionBody = Static<typeof ChatCompletionBody>;

const Usage = Type.Object({ prompt_tokens: Type.Integer(), completion_tokens: Type.Integer(), total_tokens: Type.Integer() });
export type Usage = Static<typeof Usage>;

const FinishReason = Type.Union([Type.Literal('stop'), Type.Literal('length')], {
  description: 'stop: the agent answered; length: max tokens or the agent’s maxSteps cut the answer short',
});
export type FinishReason = Static<typeof FinishReason>;

export const ChatCompletion = Type.Object({
  id: Type.String({ description: '`chatcmpl-<runId>`' }),
  object: Type.Literal('chat.completion'),
  created: Type.Integer({ description: 'Unix seconds, the run’s start' }),
  model: Type.String(),
  choices: Type.Array(
    Type.Object({
      index: Type.Integer(),
      message: Type.Object({ role: Type.Literal('assistant'), content: Type.String(), refusal: Type.Null() }),
      finish_reason: FinishReason,
      logprobs: Type.Null(),
    }),
  ),
  usage: Usage,
});
export type ChatCompletion = Static<typeof ChatCompletion>;

export const Model = Type.Object({
  id: Type.String({ description: '`agent:<agentId>`' }),
  object: Type.Literal('model'),
  created: Type.Integer({ description: 'Unix seconds, the agent’s creation' }),
  owned_by: Type.String({ description: 'the agent’s appId' }),
  name: Type.String({ description: 'the agent’s name' }),
  app_id: Type.String(),
  description: Nullable(Type.String()),
});
export type Model = Static<typeof Model>;

export const ModelList = Type.Object({ object: Type.Literal('list'), data: Type.Array(Model) });
export type ModelList = Static<typeof ModelList>;

const OpenAiError = Type.Object(
  {
    error: Type.Object({
      message: Type.String(),
      type: Type.String({
        description:
          'invalid_request_error, authentication_error, permission_error, rate_limit_error, insufficient_quota (a spent budget), server_error',
      }),
      code: Nullable(Type.String({ description: 'the stable code the rest of the API uses in its problems' })),
      param: Nullable(Type.String()),
    }),
  },
  { title: 'OpenAI error' },
);

/**
 * Error responses in OpenAI's shape, declared for JSON only: the app's error handler sends problems
 * (application/problem+json, serialized without these schemas) and the routes' onSend hook rewrites them.
 */
export function openAiErrors(...statuses: number[]): Record<number, TSchema> {
  const out: Record<number, TSchema> = {};
  for (const s of statuses)
    out[s] = { description: 'an OpenAI error', content: { 'application/json': { schema: OpenAiError } } } as unknown as TSchema;
  return out;
}

export const CHUNK_DESCRIPTION =
  'With "stream": true, Server-Sent Events of `data: <chat.completion.chunk JSON>` lines: the first delta holds the role, then content deltas, then one with finish_reason; with stream_options.include_usage a last chunk with empty choices and the usage; then `data: [DONE]`. A run that fails mid-stream sends `data: {"error":{...}}` and no [DONE].';
