import type { Static } from 'typebox';
import type { Agent, AgentTool } from '../agents/schemas.js';
import type { AgentsService } from '../agents/service.js';
import { OAuthError } from '../identity/oauth-errors.js';
import type { IdentityService } from '../identity/service.js';
import type { RunOutcome, RunsService } from '../runs/service.js';
import { ToolError, type RuntimeTool, type ToolContext, type ToolProvider, type ToolSet } from '../runtime/tools/types.js';

/** How long a delegated run waiting for a person is waited for at most (the caller's tool timeout usually ends it first). */
const CALLEE_APPROVAL_WAIT_MS = 60 * 60_000;

type AgentToolSpec = Static<typeof AgentTool>;

/** How deep agents may delegate to agents that delegate in turn (A -> B -> C ...). */
const MAX_DELEGATION_DEPTH = 3;
const TOKEN_TYPE_JWT = 'urn:ietf:params:oauth:token-type:jwt';

/** The input of every delegation tool; one object, so its check is compiled once (runtime/tools/input-schema.ts). */
const DELEGATION_INPUT = {
  type: 'object',
  properties: { message: { type: 'string', description: 'what to ask the agent', minLength: 1, maxLength: 100000 } },
  required: ['message'],
  additionalProperties: false,
};

const toolNameFor = (spec: AgentToolSpec, calleeName: string) =>
  spec.name ??
  `ask_${
    calleeName
      .toLowerCase()
      .replace(/[^a-z0-9_-]+/g, '_')
      .replace(/^_+|_+$/g, '')
      .slice(0, 56) || 'agent'
  }`;

/**
 * Delegation to other agents, as tools: an agent's `tools` may name another agent
 * (`{ "type": "agent", "agentId", "name"?, "description"? }`). Calling that tool goes the way an
 * external caller would: the caller gets a short-lived SVID, exchanges it (RFC 8693) for an access
 * token scoped to `tools:<tool name>` with the callee as audience, asks ExtAuthZ, and only when
 * allowed runs the callee with the message. A denial reaches the model as the tool's error result
 * and the run record. The TBAC tool name is the tool's name in the caller's list.
 */
export function delegationToolProvider(identity: IdentityService, agents: AgentsService, runs: () => RunsService): ToolProvider<Agent> {
  const delegationTools = async (ctx: ToolContext<Agent>, specs: AgentToolSpec[]): Promise<ToolSet<Agent>> => {
    const warnings: string[] = [];
    const tools: RuntimeTool<Agent>[] = [];
    for (const spec of specs) {
      // A deleted callee skips its tool; any other failure (the database away) is the run's.
      const callee = await agents.find(ctx.tenantId, spec.agentId);
      if (!callee) {
        warnings.push(`delegation tool for agent ${spec.agentId} skipped: the agent no longer exists`);
        continue;
      }
      const name = toolNameFor(spec, callee.name);
      tools.push({
        name,
        description:
          spec.description ??
          `Ask the agent "${callee.name}"${callee.role ? ` (${callee.role})` : ''} to handle a request${callee.description ? `: ${callee.description}` : ''}. Answers with its reply.`,
        inputSchema: DELEGATION_INPUT,
        async execute(input, toolCtx) {
          // Runs started by delegation know how deep they are: A -> B -> A loops stop.
          const depth = (toolCtx.delegationDepth ?? 0) + 1;
          if (depth > MAX_DELEGATION_DEPTH)
            throw new ToolError('delegation_too_deep', `agents may delegate at most ${MAX_DELEGATION_DEPTH} levels deep`);
          const caller = { tenantId: ctx.tenantId, actor: { type: 'agent' as const, id: ctx.agent.id } };
          // 1. The caller's identity, 2. a token for exactly this tool on this callee, 3. the decision.
          let accessToken: string;
          try {
            const svid = await identity.issueSvid({ ...caller, permissions: new Set() }, ctx.agent.id, [identity.issuer], 300);
            const exchanged = await identity.exchange({
              subject_token: svid.svid,
              subject_token_type: TOKEN_TYPE_JWT,
              audience: [callee.id],
              resource: [],
              scope: `tools:${name}`,
            });
            accessToken = exchanged.access_token;
          } catch (err) {
            if (err instanceof OAuthError)
              throw new ToolError('access_denied', `token exchange refused: ${err.error} (${err.description})`);
            throw err;
          }
          const decision = await identity.authorize(accessToken, name, callee.id);
          if (!decision.allowed) throw new ToolError('access_denied', `ExtAuthZ denied the call: ${decision.reason}`);

          const started = await runs().start({
            principal: caller,
            run: {
              kind: 'delegation',
              agent: callee,
              // The tool loop has checked the input against DELEGATION_INPUT: message is a non-empty string.
              input: { content: (input as { message: string }).message },
              // The callee acts for whoever the caller acts for: that user's memory, never all users' (memory/).
              where: {
                delegationDepth: depth,
                userId: toolCtx.userId ?? undefined,
                agentMemoryReadOnly: toolCtx.agentMemoryReadOnly,
                // Traced, the callee's run is the child of this tool call.
                trace: toolCtx.trace,
              },
              options: { onActiveRun: 'reject' },
            },
          });
          if (!('run' in started)) throw new ToolError('delegation_failed', 'the callee was busy');
          const handle = started.run;
          const onAbort = () =>
            void runs()
              .cancel(caller, handle.runId)
              // The caller's run is ending anyway; a callee that already ended cannot be cancelled.
              .catch(() => {});
          toolCtx.signal.addEventListener('abort', onAbort, { once: true });
          let run: RunOutcome;
          try {
            run = await runs().outcome(ctx.tenantId, handle);
            // A callee's tool call waiting for a person (in the callee's inbox): its run goes on once decided,
            // here or elsewhere; the caller waits for its end within the tool's timeout.
            if ((run.status as string) === 'awaiting_approval') {
              // Bounded by the tool's own timeout, whose abort cancels the callee (and so ends this wait).
              await runs().waitForTerminal(handle.runId, CALLEE_APPROVAL_WAIT_MS);
              run = await runs().outcomeOf(ctx.tenantId, handle.runId);
            }
          } finally {
            toolCtx.signal.removeEventListener('abort', onAbort);
          }
          if (run.status !== 'completed') {
            throw new ToolError('delegation_failed', `the agent's run ${run.status}${run.error ? `: ${run.error.message}` : ''}`);
          }
          return {
            output: run.output,
            agentId: callee.id,
            runId: run.runId,
            conversationId: run.conversationId,
            authorization: decision.reason,
            cost: run.cost,
          };
        },
      });
    }
    return { tools, warnings };
  };
  return async (ctx) => {
    const specs = ctx.agent.tools.filter((t): t is AgentToolSpec => t.type === 'agent');
    return specs.length ? delegationTools(ctx, specs) : { tools: [] };
  };
}
