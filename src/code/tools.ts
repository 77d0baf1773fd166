import type { Agent } from '../agents/schemas.js';
import { ToolError, type RuntimeTool, type ToolContext, type ToolProvider } from '../runtime/tools/types.js';
import type { CodeLanguage } from './sandbox/types.js';
import type { CodeService } from './service.js';

/**
 * The code tools (docs/code-execution.md, "The tools"): `code_run` and `skill_script_run`, given to an
 * agent whose tools hold `{ "type": "builtin", "name": "code" }` when code runs on this server
 * (skill_script_run only while a skill is assigned to it). Ordinary tools: their input checked by the
 * registry, each call decided by TBAC (the agent calling a tool of its own), approval rules and the
 * tool timeout applied by the runtime as to every call, the call and its result in the run's events.
 */

/** What the tools need of identity: TBAC's decision for a tool name now (identity/policies.ts). */
export interface CodeToolPolicies {
  evaluate(tenantId: string, request: { caller: string; callee: string; tool: string }): Promise<{ allowed: boolean; reason: string }>;
}

/**
 * What the tools read of skills (the skills service): the skills the agent may use now, and one's files
 * as mounted at /skill, or why it may not run them. Declared here: skills lies above the configuration
 * the sandbox's types are part of.
 */
export interface CodeToolSkills {
  usableSkillBriefs(tenantId: string, agentId: string): Promise<readonly unknown[]>;
  mountFor(
    tenantId: string,
    agentId: string,
    idOrName: string,
  ): Promise<
    | { refused: 'skill_not_assigned' | 'skill_archived' }
    | { skill: { id: string; name: string }; files: { path: string; kind: string; content: string }[] }
  >;
}

const MAX_CODE_CHARS = 100_000;
const MAX_ARGS = 32;

const FILES = {
  type: 'array',
  maxItems: 20,
  items: { type: 'string', minLength: 1, maxLength: 64 },
  description:
    'ids of files of this organisation to read at /input (the conversation’s attachments are there already); their /input paths are in the result',
};

const MOUNTS =
  'Files: the conversation’s attachments (and the files you name) are read-only under /input; what you write to /output becomes files of this organisation, listed in the result with their ids. No network.';

const SCRIPT_LANGUAGES: Record<string, CodeLanguage> = { py: 'python', js: 'javascript', mjs: 'javascript' };

const hasCodeTools = (agent: Agent) => agent.tools.some((t) => t.type === 'builtin' && t.name === 'code');

interface CodeToolDef {
  name: string;
  description: string;
  inputSchema: Record<string, unknown>;
  run(ctx: ToolContext<Agent>, input: Record<string, unknown>): Promise<Record<string, unknown>>;
}

export function codeToolProvider({
  code,
  skills,
  policies,
}: {
  code: CodeService;
  skills: CodeToolSkills;
  policies: CodeToolPolicies;
}): ToolProvider<Agent> {
  const callOf = (ctx: ToolContext<Agent>) => ({
    tenantId: ctx.tenantId,
    agentId: ctx.agent.id,
    runId: ctx.runId,
    toolCallId: ctx.toolCallId ?? null,
    conversationId: ctx.conversationId,
    signal: ctx.signal,
    trace: ctx.trace,
  });

  const codeRun: CodeToolDef = {
    name: 'code_run',
    description: `Run Python 3 (Pyodide: the standard library, no packages to install) or JavaScript (QuickJS, no Node APIs) in a sandbox and get its stdout, stderr, exit code and output files. ${MOUNTS} Each run starts afresh; print what you need.`,
    inputSchema: {
      type: 'object',
      properties: {
        language: { type: 'string', enum: ['python', 'javascript'] },
        code: { type: 'string', minLength: 1, maxLength: MAX_CODE_CHARS, description: 'the program' },
        files: FILES,
      },
      required: ['language', 'code'],
      additionalProperties: false,
    },
    run: (ctx, input) =>
      code.execute(callOf(ctx), {
        language: input.language as CodeLanguage,
        code: input.code as string,
        fileIds: (input.files as string[] | undefined) ?? [],
      }),
  };

  const scriptRun: CodeToolDef = {
    name: 'skill_script_run',
    description: `Run a script of a skill assigned to you (skill_query lists its scripts) with arguments, as its instructions say. The skill’s files are read-only under /skill (the script is /skill/scripts/<name>). ${MOUNTS}`,
    inputSchema: {
      type: 'object',
      properties: {
        skillId: { type: 'string', minLength: 1, maxLength: 200, description: 'id or name of a skill assigned to you' },
        script: { type: 'string', minLength: 1, maxLength: 300, description: 'the script, e.g. scripts/match_invoices.py' },
        args: {
          type: 'array',
          maxItems: MAX_ARGS,
          items: { type: 'string', maxLength: 1000 },
          description: 'its arguments (sys.argv[1:]), e.g. ["/input/invoices.csv", "/input/payments.csv"]',
        },
        files: FILES,
      },
      required: ['skillId', 'script'],
      additionalProperties: false,
    },
    async run(ctx, input) {
      const mount = await skills.mountFor(ctx.tenantId, ctx.agent.id, input.skillId as string);
      if ('refused' in mount) {
        throw new ToolError(
          mount.refused,
          mount.refused === 'skill_archived'
            ? `the skill ${input.skillId} has been archived`
            : `the skill ${input.skillId} is not assigned to you (or its assignment is disabled)`,
        );
      }
      const wanted = (input.script as string).replace(/^\.?\//, '').replace(/^scripts\//, '');
      const script = mount.files.find((f) => f.kind === 'script' && f.path === `scripts/${wanted}`);
      if (!script) {
        const scripts = mount.files.filter((f) => f.kind === 'script').map((f) => f.path);
        throw new ToolError('script_not_found', `${mount.skill.name} has no script ${wanted}; it has: ${scripts.join(', ') || 'none'}`);
      }
      const language = SCRIPT_LANGUAGES[script.path.split('.').pop() ?? ''];
      if (!language) throw new ToolError('script_language', `${script.path} is neither Python (.py) nor JavaScript (.js, .mjs)`);
      return code.execute(callOf(ctx), {
        language,
        code: script.content,
        args: (input.args as string[] | undefined) ?? [],
        fileIds: (input.files as string[] | undefined) ?? [],
        script: {
          skillId: mount.skill.id,
          path: script.path,
          skillFiles: mount.files.map((f) => ({ path: f.path, content: Buffer.from(f.content, 'utf8') })),
        },
      });
    },
  };

  const governed = (def: CodeToolDef): RuntimeTool<Agent> => ({
    name: def.name,
    description: def.description,
    inputSchema: def.inputSchema,
    async execute(input, ctx) {
      const decision = await policies.evaluate(ctx.tenantId, { caller: ctx.agent.id, callee: ctx.agent.id, tool: def.name });
      if (!decision.allowed) throw new ToolError('access_denied', `TBAC denied ${def.name}: ${decision.reason}`);
      return def.run(ctx, input as Record<string, unknown>);
    },
  });
  const runTool = governed(codeRun);
  const scriptTool = governed(scriptRun);
  const none = { tools: [] };

  return async (ctx) => {
    if (!hasCodeTools(ctx.agent) || !(await code.availability()).available) return none;
    const skillsNow = await skills.usableSkillBriefs(ctx.tenantId, ctx.agent.id);
    return { tools: skillsNow.length ? [runTool, scriptTool] : [runTool] };
  };
}
