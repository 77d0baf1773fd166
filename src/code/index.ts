import type { FastifyPluginAsync } from 'fastify';
import type { Agent } from '../agents/schemas.js';
import { type FilesService, MAX_FILE_BYTES } from '../conversations/files.js';
import type { Db } from '../db/database.js';
import type { ToolProvider } from '../runtime/tools/types.js';
import type { Tracing } from '../tracing/tracing.js';
import { codePlugin } from './plugin.js';
import type { CodeSandbox } from './sandbox/types.js';
import { type CodeObserver, CodeService, MAX_MODEL_OUTPUT_BYTES } from './service.js';
import { type CodeMaxima, CodeSettingsService, type TenantSettings } from './settings.js';
import { type CodeToolPolicies, type CodeToolSkills, codeToolProvider } from './tools.js';

export interface CodeDomainOptions {
  db: Db;
  /** Starts the sandbox code runs in, when code is first asked for; undefined (or unavailable): the code tools are not offered. */
  sandbox: () => Promise<CodeSandbox | undefined>;
  /** The server's maxima (configuration): each tenant's limits are at most these. */
  maxima: CodeMaxima;
  /** The tenant's settings, where its limits are kept (tenancy). */
  tenancy: TenantSettings;
  /** Where /input comes from and /output goes: the tenant's files (conversations). */
  files: FilesService;
  skills: CodeToolSkills;
  /** The TBAC decision the code tools ask, as every tool does (identity's policies). */
  policies: CodeToolPolicies;
  tracing?: Tracing;
  /** Absent when metrics are off. */
  observer?: CodeObserver;
}

export interface CodeDomain {
  code: CodeService;
  /** The routes of /api/v1/code/settings; the sandbox closes with the app. */
  plugin: FastifyPluginAsync;
  contributions: {
    /** code_run and skill_script_run, for agents that list the `code` group, where code runs. */
    toolProviders: { code: ToolProvider<Agent> };
  };
}

/** Builds the code domain: the code tools around the sandbox, their files and limits (docs/code-execution.md). */
export function createCodeDomain({
  db,
  sandbox,
  maxima,
  tenancy,
  files,
  skills,
  policies,
  tracing,
  observer,
}: CodeDomainOptions): CodeDomain {
  // The files API keeps files of at most 5 MiB, and a tool result stays well inside a run's bound: the
  // maxima a tenant is shown and held to are no higher than what can be kept.
  const settings = new CodeSettingsService(tenancy, {
    ...maxima,
    outputBytes: Math.min(maxima.outputBytes, MAX_MODEL_OUTPUT_BYTES),
    maxOutputFileBytes: Math.min(maxima.maxOutputFileBytes, MAX_FILE_BYTES),
  });
  const code = new CodeService({ db, sandbox, settings, files, tracing, observer });
  return {
    code,
    plugin: (app) => codePlugin(app, { code, close: () => code.close() }),
    contributions: { toolProviders: { code: codeToolProvider({ code, skills, policies }) } },
  };
}
