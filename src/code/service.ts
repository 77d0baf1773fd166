import type { FilesService } from '../conversations/files.js';
import { MAX_FILE_BYTES } from '../conversations/files.js';
import type { Db } from '../db/database.js';
import { newId } from '../ids.js';
import { ToolError } from '../runtime/tools/types.js';
import { recordAudit } from '../tenancy/audit.js';
import type { Actor } from '../tenancy/permissions.js';
import { traceCodeExecution } from '../tracing/code.js';
import type { TraceContext, Tracing } from '../tracing/tracing.js';
import type { CodeFile, CodeLanguage, CodeLimits, CodeResult, CodeSandbox } from './sandbox/types.js';
import type { CodeLimitValues, CodeSettingsService } from './settings.js';
import * as store from './store.js';

/**
 * Code executions around the sandbox (docs/code-execution.md): the tenant's limits and how many of its
 * executions run at once, the files mounted at /input, what /output left saved as files of the
 * tenant, and what the model is told. Each execution is a span, a metric and an audit event.
 */

/** How many files one execution reads at /input, and their bytes together. */
const MAX_INPUT_FILES = 32;
const MAX_INPUT_BYTES = 20 * 1024 * 1024;
/** The most of stdout, and of stderr, the model is given whatever the limits say (a tool result stays well inside a run's 5 MiB). */
export const MAX_MODEL_OUTPUT_BYTES = 1024 * 1024;
/** How long past its wall time a slot stays held by an execution whose replica never said it ended. */
const SLOT_GRACE_MS = 60_000;
/** The most of the output a limit's tool error quotes. */
const ERROR_OUTPUT_CHARS = 2000;

/** One execution as the metrics are told it (metrics/code.ts). */
export type CodeObserver = (execution: { language: string; outcome: string; seconds: number }) => void;

/** The tool call an execution serves. */
export interface CodeCall {
  tenantId: string;
  agentId: string;
  runId: string;
  toolCallId: string | null;
  conversationId: string | null;
  signal: AbortSignal;
  /** Traced, the tool call's span: the parent of the execution's. */
  trace?: TraceContext;
}

export interface CodeRequest {
  language: CodeLanguage;
  code: string;
  /** Files of the tenant named by the call, mounted at /input with the conversation's attachments. */
  fileIds: string[];
  args?: string[];
  /** A skill's script: where it is (argv[0]), the skill's files mounted at /skill. */
  script?: { skillId: string; path: string; skillFiles: CodeFile[] };
}

export interface CodeServiceOptions {
  db: Db;
  /**
   * Starts the sandbox (called once, when code is first asked for: an app whose agents never run code
   * starts none); undefined or unavailable: no code runs and the tools are not offered.
   */
  sandbox: () => Promise<CodeSandbox | undefined>;
  settings: CodeSettingsService;
  files: FilesService;
  tracing?: Tracing;
  observer?: CodeObserver;
}

/** An /input path for a file's name: one segment, never `.` or `..`; a name taken twice gets its id in front. */
function inputPath(name: string, id: string, taken: Set<string>): string {
  let path = name.replace(/[/\\]/g, '_');
  if (path === '.' || path === '..' || !path) path = 'file';
  if (taken.has(path)) path = `${id}-${path}`;
  taken.add(path);
  return path;
}

const quote = (text: string) => (text.length > ERROR_OUTPUT_CHARS ? `...${text.slice(-ERROR_OUTPUT_CHARS)}` : text);

function outcomeOf(result: CodeResult): string {
  if (result.limit) return result.limit.code;
  return result.exitCode === 0 && !result.exception ? 'ok' : 'failed';
}

export class CodeService {
  private started: Promise<CodeSandbox | undefined> | undefined;

  constructor(private readonly o: CodeServiceOptions) {}

  /** The sandbox, started at the first call. */
  private sandbox(): Promise<CodeSandbox | undefined> {
    this.started ??= this.o.sandbox();
    return this.started;
  }

  /** Stops the sandbox's processes, if it was started (the app closes). */
  async close(): Promise<void> {
    const sandbox = await this.started;
    await sandbox?.close();
  }

  /** Whether code runs here, and why not. */
  async availability(): Promise<{ available: true } | { available: false; reason: string }> {
    const sandbox = await this.sandbox();
    return sandbox ? sandbox.availability() : { available: false, reason: 'code execution is off on this server (CODE_EXECUTION=off)' };
  }

  get settings(): CodeSettingsService {
    return this.o.settings;
  }

  /**
   * Runs one execution for a tool call: its result for the model, or a ToolError (a limit that ended
   * it, a file that is not the tenant's, the tenant's executions all busy).
   */
  async execute(call: CodeCall, request: CodeRequest): Promise<Record<string, unknown>> {
    const sandbox = await this.sandbox();
    const availability = await this.availability();
    if (!sandbox || !availability.available) {
      throw new ToolError('code_unavailable', `code cannot run here: ${availability.available ? 'no sandbox' : availability.reason}`);
    }
    const limits = await this.o.settings.limits(call.tenantId);
    const inputs = await this.inputs(call, request.fileIds);
    const slot = await this.takeSlot(call.tenantId, limits);
    if (!slot) {
      throw new ToolError(
        'code_busy',
        `this organisation already runs ${limits.concurrentExecutions} code executions, its limit (concurrentExecutions); try again when one has ended`,
      );
    }
    let result: CodeResult;
    try {
      const job = {
        language: request.language,
        code: request.code,
        scriptPath: request.script ? `/skill/${request.script.path}` : undefined,
        args: request.args,
        skillFiles: request.script?.skillFiles,
        inputFiles: inputs.map((f) => ({ path: f.path, content: f.content })),
        limits: jobLimits(limits),
        signal: call.signal,
      };
      const run = () => sandbox.run(job);
      const info = { language: request.language, script: request.script?.path };
      result = this.o.tracing ? await traceCodeExecution(this.o.tracing, info, run, call.trace) : await run();
    } finally {
      // A release that fails leaves the slot to its expiry.
      await store.releaseSlot(this.o.db.kysely, call.tenantId, slot.slot, slot.holder).catch(() => {});
    }
    this.o.observer?.({ language: request.language, outcome: outcomeOf(result), seconds: result.durationMs / 1000 });
    const actor: Actor = { type: 'agent', id: call.agentId };
    // What a limit cut short is not kept: its /output may be half written.
    const files = result.limit
      ? []
      : await this.o.files.saveMade({
          tenantId: call.tenantId,
          actor,
          runId: call.runId,
          toolCallId: call.toolCallId,
          files: result.files,
        });
    await recordAudit(this.o.db.kysely, {
      tenantId: call.tenantId,
      actor,
      action: 'code.executed',
      resourceType: 'run',
      resourceId: call.runId,
      detail: {
        toolCallId: call.toolCallId,
        language: request.language,
        ...(request.script ? { skillId: request.script.skillId, script: request.script.path } : {}),
        exitCode: result.exitCode,
        limit: result.limit?.code ?? null,
        durationMs: result.durationMs,
        files: files.map((f) => f.id),
      },
    });
    if (result.limit) {
      const output = [result.stdout && `stdout: ${quote(result.stdout)}`, result.stderr && `stderr: ${quote(result.stderr)}`].filter(
        Boolean,
      );
      throw new ToolError(result.limit.code, [result.limit.message, ...output].join('\n'));
    }
    return {
      exitCode: result.exitCode,
      exception: result.exception ?? null,
      stdout: result.stdout,
      stderr: result.stderr,
      stdoutTruncated: result.stdoutTruncated,
      stderrTruncated: result.stderrTruncated,
      files: files.map((f) => ({ id: f.id, name: f.name, size: f.size, mediaType: f.contentType, url: `/api/v1/files/${f.id}/content` })),
      inputs: inputs.map((f) => ({ fileId: f.id, path: `/input/${f.path}` })),
      durationMs: result.durationMs,
    };
  }

  /**
   * One of the tenant's `concurrentExecutions` slots, shared by every replica (code_slots), or none when
   * all are held. Leases keep real time: they measure whether the execution is still running somewhere.
   */
  private async takeSlot(tenantId: string, limits: CodeLimitValues): Promise<{ slot: number; holder: string } | undefined> {
    const at = Date.now();
    const now = new Date(at).toISOString();
    const expiresAt = new Date(at + limits.wallMs + SLOT_GRACE_MS).toISOString();
    const holder = newId();
    const held = new Set(await store.heldSlots(this.o.db.kysely, tenantId, limits.concurrentExecutions, now));
    for (let slot = 0; slot < limits.concurrentExecutions; slot++) {
      if (held.has(slot)) continue;
      if (await store.takeSlot(this.o.db.kysely, { tenantId, slot, holder, now, expiresAt })) return { slot, holder };
    }
    return undefined;
  }

  /** The files mounted at /input: the conversation's attachments and the files named, within the input bounds. */
  private async inputs(call: CodeCall, fileIds: string[]) {
    const { files, missing } = await this.o.files.inputFiles(call.tenantId, { conversationId: call.conversationId, ids: fileIds });
    if (missing.length) {
      const at = fileIds.indexOf(missing[0]);
      throw new ToolError('file_not_found', `files.${at} (${missing[0]}) names no file of this organisation`);
    }
    const bytes = files.reduce((sum, f) => sum + f.content.byteLength, 0);
    if (files.length > MAX_INPUT_FILES || bytes > MAX_INPUT_BYTES) {
      throw new ToolError(
        'code_input_limit',
        `the files for /input (${files.length}, ${bytes} bytes) are over the bounds of ${MAX_INPUT_FILES} files and ${MAX_INPUT_BYTES} bytes`,
      );
    }
    const taken = new Set<string>();
    return files.map((f) => ({ id: f.id, path: inputPath(f.name, f.id, taken), content: f.content }));
  }
}

/** The limits one job runs under: the tenant's, its outputs within what the model and the files API take. */
function jobLimits(limits: CodeLimitValues): CodeLimits {
  return {
    wallMs: limits.wallMs,
    cpuMs: limits.cpuMs,
    memoryMb: limits.memoryMb,
    outputBytes: Math.min(limits.outputBytes, MAX_MODEL_OUTPUT_BYTES),
    maxOutputFiles: limits.maxOutputFiles,
    maxOutputFileBytes: Math.min(limits.maxOutputFileBytes, MAX_FILE_BYTES),
  };
}
