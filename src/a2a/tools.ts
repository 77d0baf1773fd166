import { randomUUID } from 'node:crypto';
import { Role, TaskState } from '@a2a-js/sdk';
import { type Client, ClientFactory, DefaultAgentCardResolver, JsonRpcTransportFactory, RestTransportFactory } from '@a2a-js/sdk/client';
import type { A2aAgentTool, Agent } from '../agents/schemas.js';
import { a2aCredentialOwner } from '../agents/service.js';
import type { Context } from '@opentelemetry/api';
import { type OutboundFetch, ToolError, type RuntimeTool, type ToolContext, type ToolProvider } from '../runtime/tools/types.js';

/** What the tools need of identity: TBAC's decision for a tool name now, on identity's clock (identity/policies.ts). */
export interface ToolPolicies {
  evaluate(tenantId: string, request: { caller: string; callee: string; tool: string }): Promise<{ allowed: boolean; reason: string }>;
}

/** Opens the credentials the agents service sealed (identity/secret-box.ts). */
export interface CredentialOpener {
  open(sealed: string, owner: string): string | null;
}

/** A remote agent is not one of this platform's: TBAC policies naming it match by tool name, with `*` as callee. */
const ANY_CALLEE = '*';

const A2A_INPUT = {
  type: 'object',
  properties: { message: { type: 'string', description: 'what to ask the remote agent', minLength: 1, maxLength: 100000 } },
  required: ['message'],
  additionalProperties: false,
};

type Task = Awaited<ReturnType<Client['getTask']>>;
type Part = Task['artifacts'][number]['parts'][number];
const textOf = (parts: Part[]) => parts.map((p) => (p.content?.$case === 'text' ? p.content.value : '')).join('');

/**
 * The official SDK's client speaking A2A 0.3 or 1.0 as the card says, every request through the guarded
 * fetch; the credential goes only to the card URL's origin, never to other hosts the card names.
 */
function clientFactory(
  fetch: OutboundFetch,
  credential: string | null,
  cardUrl: string,
  calls: { signal: AbortSignal; trace?: Context },
): ClientFactory {
  const origin = new URL(cardUrl).origin;
  const fetchImpl = (async (input: string | URL | Request, init?: RequestInit) => {
    const target = new URL(typeof input === 'object' && 'url' in input ? input.url : String(input));
    const headers = new Headers(init?.headers);
    if (credential && target.origin === origin) headers.set('authorization', `Bearer ${credential}`);
    else headers.delete('authorization');
    // Every request, the card's too, stops at the tool's timeout or the run's cancellation.
    const signals = init?.signal ? AbortSignal.any([init.signal, calls.signal]) : calls.signal;
    const response = await fetch(target, { ...init, headers, signal: signals }, calls.trace);
    // What is not a stream (the card, an error, a non-streamed answer) is read whole, so it is capped.
    const type = response.headers.get('content-type') ?? '';
    return type.includes('text/event-stream') ? response : capped(response, MAX_BODY_BYTES);
  }) as typeof globalThis.fetch;
  // Only these transports, each given the guarded fetch: the SDK's defaults (ClientFactoryOptions.default)
  // would add a RestTransportFactory on the global fetch, reached by any card naming HTTP+JSON.
  return new ClientFactory({
    transports: [
      new JsonRpcTransportFactory({ fetchImpl, legacyCompat: { enabled: true } }),
      new RestTransportFactory({ fetchImpl, legacyCompat: { enabled: true } }),
    ],
    cardResolver: new DefaultAgentCardResolver({ fetchImpl, legacyCompat: { enabled: true } }),
  });
}

/** A body read whole (a card, an error, a non-streamed answer): at most 1 MiB. */
const MAX_BODY_BYTES = 1024 * 1024;
/** The remote agent's text gathered for the tool's result: at most 4 MiB, then truncated with a marker. */
const MAX_TEXT = 4 * 1024 * 1024;
const TRUNCATED = "\n[truncated: the remote agent's reply passed 4 MiB]";
/** An error's message (a remote body may be in it): at most 1 KiB. */
const MAX_ERROR = 1024;
const clip = (text: string) => (text.length > MAX_ERROR ? `${text.slice(0, MAX_ERROR)}…` : text);

/** The response with its body read, refused past `limit` bytes (by Content-Length first, else while reading). */
async function capped(response: Response, limit: number): Promise<Response> {
  const tooLarge = () => new Error(`the remote response is larger than ${limit / 1024 / 1024} MiB`);
  if (Number(response.headers.get('content-length') ?? 0) > limit) {
    await response.body?.cancel().catch(() => {});
    throw tooLarge();
  }
  const chunks: Uint8Array[] = [];
  let size = 0;
  if (response.body) {
    const reader = response.body.getReader();
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      size += value.byteLength;
      if (size > limit) {
        await reader.cancel().catch(() => {});
        throw tooLarge();
      }
      chunks.push(value);
    }
  }
  const body = response.status === 204 || response.status === 304 ? null : Buffer.concat(chunks);
  return new Response(body, { status: response.status, statusText: response.statusText, headers: response.headers });
}

/** The best-effort `tasks/cancel` sent after the call stopped: bounded by its own short timeout. */
const CANCEL_TIMEOUT_MS = 5000;

/** A capped text: past 4 MiB, cut and marked. */
const cap = (text: string) => (text.length > MAX_TEXT ? text.slice(0, MAX_TEXT) + TRUNCATED : text);

/** A task's text: its artifacts' text parts in order, else its status message's. */
function taskText(task: Task): string {
  const artifacts = (task.artifacts ?? []).map((a) => textOf(a.parts ?? [])).join('');
  return artifacts || textOf(task.status?.message?.parts ?? []);
}

const FINAL = new Set([
  TaskState.TASK_STATE_COMPLETED,
  TaskState.TASK_STATE_FAILED,
  TaskState.TASK_STATE_CANCELED,
  TaskState.TASK_STATE_REJECTED,
]);

/**
 * Sends the message as a streamed task (or `message/send` when the card cannot stream: the SDK then yields
 * the final task or message alone) and gathers its text. The run's cancellation, or a stream that breaks,
 * cancels the remote task once the remote named it; stopped before that, there is no task id to cancel.
 */
async function ask(client: Client, message: string, signal: AbortSignal, cancel: (taskId: string) => void) {
  const request = {
    message: { messageId: randomUUID(), role: Role.ROLE_USER, parts: [{ content: { $case: 'text', value: message } }] },
  } as unknown as Parameters<Client['sendMessageStream']>[0];
  let taskId = '';
  let contextId = '';
  let text = '';
  let state: TaskState | undefined;
  let statusText = '';
  let cancelled = false;
  const cancelRemote = () => {
    if (!taskId || cancelled) return;
    cancelled = true;
    cancel(taskId);
  };
  signal.addEventListener('abort', cancelRemote, { once: true });
  try {
    for await (const event of client.sendMessageStream(request, { signal })) {
      const payload = event.payload;
      if (payload?.$case === 'task') {
        ({ id: taskId, contextId } = payload.value);
        state = payload.value.status?.state;
        // A task carries its text in its artifacts or status message (a non-streamed answer, or a final snapshot).
        const whole = taskText(payload.value);
        if (whole) text = cap(whole);
        statusText = textOf(payload.value.status?.message?.parts ?? []);
      } else if (payload?.$case === 'message') {
        // A remote agent may answer with a message instead of a task.
        text = cap(textOf(payload.value.parts));
        state = TaskState.TASK_STATE_COMPLETED;
      } else if (payload?.$case === 'artifactUpdate') {
        const chunk = textOf(payload.value.artifact?.parts ?? []);
        text = payload.value.append ? text + chunk : chunk;
        if (text.length > MAX_TEXT) {
          text = text.slice(0, MAX_TEXT) + TRUNCATED;
          state = TaskState.TASK_STATE_COMPLETED;
          cancelRemote();
          break;
        }
      } else if (payload?.$case === 'statusUpdate') {
        state = payload.value.status?.state;
        statusText = textOf(payload.value.status?.message?.parts ?? []);
      }
      if (state !== undefined && FINAL.has(state) && payload?.$case !== 'task') break;
    }
    // The stream closed with the task not ended: it is cancelled, and the call fails (remote_task_failed).
    if (state === undefined || !FINAL.has(state)) cancelRemote();
  } catch (err) {
    // A dropped stream or an abort: the remote task, if named and not ended, is cancelled (best effort).
    if (state === undefined || !FINAL.has(state)) cancelRemote();
    throw err;
  } finally {
    signal.removeEventListener('abort', cancelRemote);
  }
  return { taskId, contextId, text, state, statusText };
}

/**
 * Remote A2A agents as tools: an agent's `tools` may list `{ "type": "a2a", "name", "cardUrl",
 * "credential"? }`, each the tool `a2a_<name>`. A call asks TBAC for that tool name, then sends the
 * model's message to the remote agent as a streamed task (card and calls through the SSRF guard's
 * fetch, with the credential unsealed for the call), and answers its text. docs/clients.md.
 */
export function a2aToolProvider(
  fetch: OutboundFetch,
  policies: ToolPolicies,
  credentials: CredentialOpener,
  /** Hosts a credential may reach over plain http: those the operator lists (OutboundGuard.listsExplicitly). */
  plainHttpAllowed: (url: URL) => boolean,
): ToolProvider<Agent> {
  const toolFor = (ctx: ToolContext<Agent>, spec: A2aAgentTool): RuntimeTool<Agent> => {
    const name = `a2a_${spec.name}`;
    return {
      name,
      description:
        spec.description ?? `Ask the remote agent "${spec.name}" (A2A, ${spec.cardUrl}) to handle a request. Answers with its reply.`,
      inputSchema: A2A_INPUT,
      async execute(input, toolCtx) {
        const decision = await policies.evaluate(ctx.tenantId, { caller: ctx.agent.id, callee: ANY_CALLEE, tool: name });
        if (!decision.allowed) throw new ToolError('access_denied', `TBAC denied ${name}: ${decision.reason}`);
        const credential = spec.credential ? credentials.open(spec.credential, a2aCredentialOwner(ctx.tenantId, spec.cardUrl)) : null;
        if (spec.credential && !credential)
          throw new ToolError(
            'credential_unusable',
            `the credential of ${name} does not belong to this card URL (or cannot be opened here); set it again`,
          );
        if (credential && new URL(spec.cardUrl).protocol === 'http:' && !plainHttpAllowed(new URL(spec.cardUrl)))
          throw new ToolError(
            'credential_refused',
            `the credential of ${name} is sent only over https, or over http to a host MCP_ALLOWED_HOSTS names (or with MCP_ALLOW_PRIVATE_NETWORKS)`,
          );
        let answer: Awaited<ReturnType<typeof ask>>;
        try {
          // Requests stop at the tool's timeout or the run's cancellation; the tasks/cancel sent after that
          // has its own short timeout instead.
          const calls = { signal: toolCtx.signal, trace: toolCtx.trace };
          const client = await clientFactory(fetch, credential, spec.cardUrl, calls).createFromUrl(spec.cardUrl, '');
          const cancel = (taskId: string) => {
            calls.signal = AbortSignal.timeout(CANCEL_TIMEOUT_MS);
            void client.cancelTask({ id: taskId } as never).catch(() => {});
          };
          answer = await ask(client, (input as { message: string }).message, toolCtx.signal, cancel);
        } catch (err) {
          if (toolCtx.signal.aborted) throw err;
          const cause = (err as Error & { cause?: Error }).cause;
          throw new ToolError('remote_agent_unreachable', clip(`${(err as Error).message}${cause?.message ? ` (${cause.message})` : ''}`));
        }
        if (answer.state !== TaskState.TASK_STATE_COMPLETED) {
          const state = answer.state === undefined ? 'unknown' : TaskState[answer.state];
          throw new ToolError(
            'remote_task_failed',
            clip(`the remote task ended ${state}${answer.statusText ? `: ${answer.statusText}` : ''}`),
          );
        }
        return { output: answer.text, taskId: answer.taskId, contextId: answer.contextId };
      },
    };
  };
  return async (ctx) => {
    const specs = ctx.agent.tools.filter((t): t is A2aAgentTool => t.type === 'a2a');
    return { tools: specs.map((spec) => toolFor(ctx, spec)) };
  };
}
