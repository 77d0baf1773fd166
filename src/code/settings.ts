import { type Static, Type } from 'typebox';
import { InvalidInput } from '../errors.js';
import type { Actor } from '../tenancy/permissions.js';
import type { CodeLimits } from './sandbox/types.js';

/**
 * A tenant's code execution limits (docs/code-execution.md, "Limits"), kept in its settings under
 * `code` (tenancy's settings, audited there). Each is at most the server's maximum (configuration);
 * a limit the tenant never set is that maximum, and so is one stored above a maximum lowered since.
 */

/** The server's maxima: each execution's limits, and how many executions of one tenant run at once. */
export interface CodeMaxima extends CodeLimits {
  concurrentExecutions: number;
}

const FIELDS = {
  wallMs: 'wall time of one execution, in milliseconds',
  cpuMs: 'CPU time of one execution, in milliseconds',
  memoryMb: 'memory of one execution (the process and WebAssembly), in MiB',
  outputBytes: 'bytes of stdout, and of stderr, kept (the rest is dropped and flagged truncated)',
  maxOutputFiles: 'how many files one execution may leave in /output',
  maxOutputFileBytes: 'the largest file one execution may leave in /output, in bytes',
  concurrentExecutions: 'how many executions of the tenant run at once (in this server process); one more is a code_busy tool error',
} as const satisfies Record<keyof CodeMaxima, string>;

type Field = keyof typeof FIELDS;
const FIELD_NAMES = Object.keys(FIELDS) as Field[];

const limitsSchema = (described: (field: Field) => string) =>
  Type.Object(
    {
      wallMs: Type.Integer({ minimum: 1, description: described('wallMs') }),
      cpuMs: Type.Integer({ minimum: 1, description: described('cpuMs') }),
      memoryMb: Type.Integer({ minimum: 1, description: described('memoryMb') }),
      outputBytes: Type.Integer({ minimum: 1, description: described('outputBytes') }),
      maxOutputFiles: Type.Integer({ minimum: 0, description: described('maxOutputFiles') }),
      maxOutputFileBytes: Type.Integer({ minimum: 1, description: described('maxOutputFileBytes') }),
      concurrentExecutions: Type.Integer({ minimum: 1, description: described('concurrentExecutions') }),
    },
    { additionalProperties: false },
  );

const CodeLimitValues = limitsSchema((f) => FIELDS[f]);
export type CodeLimitValues = Static<typeof CodeLimitValues>;

export const CodeSettingsView = Type.Object({
  available: Type.Boolean({ description: 'whether code runs on this server (false: the code tools are not offered)' }),
  unavailableReason: Type.Union([Type.String(), Type.Null()], { description: 'why not, when it does not' }),
  limits: CodeLimitValues,
  maxima: limitsSchema((f) => `the server's maximum: ${FIELDS[f]}`),
});

const settable = (f: Field) =>
  Type.Optional(
    Type.Union([Type.Integer({ minimum: f === 'maxOutputFiles' ? 0 : 1 }), Type.Null()], {
      description: `${FIELDS[f]}; at most the server's maximum; null: the server's maximum`,
    }),
  );

export const CodeSettingsInput = Type.Object(
  {
    wallMs: settable('wallMs'),
    cpuMs: settable('cpuMs'),
    memoryMb: settable('memoryMb'),
    outputBytes: settable('outputBytes'),
    maxOutputFiles: settable('maxOutputFiles'),
    maxOutputFileBytes: settable('maxOutputFileBytes'),
    concurrentExecutions: settable('concurrentExecutions'),
  },
  { additionalProperties: false },
);
export type CodeSettingsInput = Partial<Record<Field, number | null>>;

const SETTING = 'code';

/** What the settings need of tenancy: the tenant's settings read, and merged in its transaction (audited). */
export interface TenantSettings {
  getSettings(tenantId: string): Promise<Record<string, unknown>>;
  updateSettings(
    tenantId: string,
    patch: (current: Record<string, unknown>) => Record<string, unknown>,
    actor: Actor,
  ): Promise<Record<string, unknown>>;
}

/** The values a tenant set (integers only; anything else stored there is ignored). */
function ownOf(settings: Record<string, unknown>): Partial<Record<Field, number>> {
  const stored = settings[SETTING];
  const own: Partial<Record<Field, number>> = {};
  if (!stored || typeof stored !== 'object') return own;
  for (const f of FIELD_NAMES) {
    const v = (stored as Record<string, unknown>)[f];
    if (Number.isInteger(v)) own[f] = v as number;
  }
  return own;
}

export class CodeSettingsService {
  constructor(
    private readonly tenancy: TenantSettings,
    readonly maxima: CodeMaxima,
  ) {}

  /** The tenant's limits now: what it set, each within the server's maximum. */
  async limits(tenantId: string): Promise<CodeLimitValues> {
    return this.effective(ownOf(await this.tenancy.getSettings(tenantId)));
  }

  /** Fields left out keep their value, null returns one to the server's maximum; above a maximum is a 400 naming it. */
  async set(tenantId: string, patch: CodeSettingsInput, actor: Actor): Promise<CodeLimitValues> {
    const over = FIELD_NAMES.filter((f) => typeof patch[f] === 'number' && (patch[f] as number) > this.maxima[f]);
    if (over.length) {
      const errors = over.map((f) => ({ path: `body.${f}`, message: `must be at most ${this.maxima[f]} (the server's maximum)` }));
      throw new InvalidInput(`${errors[0].path} ${errors[0].message}`, errors);
    }
    const settings = await this.tenancy.updateSettings(
      tenantId,
      (current) => {
        const next: Partial<Record<Field, number>> = { ...ownOf(current) };
        for (const f of FIELD_NAMES) {
          const v = patch[f];
          if (v === null) delete next[f];
          else if (v !== undefined) next[f] = v;
        }
        return { [SETTING]: next };
      },
      actor,
    );
    return this.effective(ownOf(settings));
  }

  private effective(own: Partial<Record<Field, number>>): CodeLimitValues {
    const out = { ...this.maxima };
    for (const f of FIELD_NAMES) if (own[f] !== undefined) out[f] = Math.min(own[f], this.maxima[f]);
    return out;
  }
}
