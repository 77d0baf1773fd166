import { AgentryError, type FieldError } from '@agentry/client';

/*
 * A form's errors as a person reads them: every field error of the server's 400 (problem+json
 * `errors`, docs/api-conventions.md) or of the checks made before sending (form-limits.ts), each at
 * its field when the form shows that field, and all of them in a summary with readable names
 * ("Name", "MCP server 1 URL") instead of the server's paths (`body.tools.5.url`).
 */

/** Field errors found before anything was sent: the same shape as the server's, placed the same way. */
export class LocalFieldErrors extends Error {
  constructor(readonly errors: FieldError[]) {
    super(errors.length === 1 ? '1 field to correct' : `${errors.length} fields to correct`);
  }
}

/** A path's segments without the part of the request it is in: `body.tools.0.url` → tools, 0, url. */
export const segmentsOf = (path: string) =>
  path
    .replace(/^\/+/, '')
    .replace(/^(body|querystring|params)([./]|$)/, '')
    .split(/[/.]/)
    .filter(Boolean);

/** Segments after a field's own name, readable: `rules.0.tool` → `rules 1 › tool`. */
export const innerPath = (segments: string[]) =>
  segments
    .map((s, i) => (/^\d+$/.test(s) ? `${i === 0 ? '#' : ''}${Number(s) + 1}` : s))
    .join(' › ')
    .replace(/ › (\d+)/g, ' $1');

/** One error as the summary says it: `Name: must have at most 200 characters`. */
function readableError(error: FieldError, labels: Record<string, string>): string {
  const [field, ...rest] = segmentsOf(error.path);
  if (!field) return error.message;
  const name = [labels[field] ?? field, innerPath(rest)].filter(Boolean).join(' › ');
  return `${name}: ${error.message}`;
}

/** The field errors of a failed request (the server's, or found before sending); none for any other failure. */
export function fieldErrorsIn(err: unknown): FieldError[] {
  if (err instanceof LocalFieldErrors) return err.errors;
  if (err instanceof AgentryError) return err.errors ?? [];
  return [];
}

export interface PlacedErrors {
  /** Each field the form shows (a key of `labels`) with all of its messages, one per line. */
  fields: Record<string, string>;
  /** Every field error, readable, for the summary at the top of the form. */
  summary: string[];
}

/** Adds `message` to what `key` already shows: every error is kept, none replaces another. */
export function addMessage(into: Record<string, string>, key: string, message: string) {
  into[key] = into[key] ? `${into[key]}\n${message}` : message;
}

/** `err`'s field errors at the fields of a form whose fields are `labels`' keys (the body's top-level names). */
export function placeErrors(err: unknown, labels: Record<string, string>): PlacedErrors {
  const placed: PlacedErrors = { fields: {}, summary: [] };
  for (const error of fieldErrorsIn(err)) {
    placed.summary.push(readableError(error, labels));
    const [field, ...rest] = segmentsOf(error.path);
    if (field && field in labels) addMessage(placed.fields, field, rest.length ? `${innerPath(rest)}: ${error.message}` : error.message);
  }
  return placed;
}
