import { type Agentry, AgentryError } from '@agentry/client';
import { fieldErrorsIn } from '../../lib/form-errors';

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
    out[fieldNameIn(e.path) ?? ''] ??= e.message;
  }
  return out;
}

/** The configuration's path in an error (`body.configuration.token`, or as a JSON pointer): the field's name. */
const fieldNameIn = (path: string) => /configuration[./]([^./]+)/.exec(path)?.[1];

/**
 * Every complaint of a refused connection (the server's, or a required field left blank), for the
 * form's summary: `Access token: required`, by the field's label.
 */
export function configurationSummaryOf(err: unknown, fields: ConnectorField[]): string[] {
  const labels = new Map(fields.map((f) => [f.name, f.label]));
  return fieldErrorsIn(err).map((e) => {
    const name = fieldNameIn(e.path);
    return name ? `${labels.get(name) ?? name}: ${e.message}` : e.message;
  });
}

/** A configuration value as shown (secrets come masked from the server). */
export const shown = (value: unknown) => (typeof value === 'boolean' ? (value ? 'yes' : 'no') : String(value ?? ''));
