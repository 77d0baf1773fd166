import { type Agentry, AgentryError } from '@agentry/client';

/** A connector of the catalog, with this tenant's connection (secrets masked). */
export type Connector = Awaited<ReturnType<Agentry['connectors']['list']>>['connectors'][number];
export type ConnectorField = Connector['fields'][number];

/**
 * A refused configuration's complaints by field name: the server names them
 * `body.configuration.<field>` (or as a JSON pointer); any other complaint is kept under ''.
 */
export function configurationErrorsOf(err: unknown): Record<string, string> {
  const out: Record<string, string> = {};
  if (!(err instanceof AgentryError)) return out;
  for (const e of err.errors ?? []) {
    const match = /configuration[./]([^./]+)/.exec(e.path);
    out[match?.[1] ?? ''] ??= e.message;
  }
  return out;
}

/** A configuration value as shown (secrets come masked from the server). */
export const shown = (value: unknown) => (typeof value === 'boolean' ? (value ? 'yes' : 'no') : String(value ?? ''));
