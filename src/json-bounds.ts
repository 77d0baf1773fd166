/**
 * The one bound on JSON values this process takes from outside (docs/operations.md, "Limits"): a
 * request body, and whatever enters a run from a model or a remote server (tool inputs, tool results,
 * structured answers). Node's JSON.stringify, Ajv and most walkers recurse: a value nested a few
 * thousand levels deep overflows the stack wherever it is next serialised, so such values are refused
 * where they arrive, before anything walks them.
 */

/** Levels of nesting a JSON value may have (the value itself is one). No request, tool or answer needs more. */
export const MAX_JSON_DEPTH = 64;

/**
 * The JSON text a value entering a run may take (a tool's input or result, a structured answer): room
 * for the largest text a tool gathers (an A2A agent's reply, cut at 4 MiB), as much as a file upload.
 */
export const MAX_RUN_JSON_BYTES = 5 * 1024 * 1024;

/** True when `value` nests objects or arrays more than `levels` deep; the walk stops there, so it never recurses further. */
export function deeperThan(value: unknown, levels: number): boolean {
  if (value === null || typeof value !== 'object') return false;
  if (levels === 0) return true;
  if (Array.isArray(value)) {
    for (const item of value) if (deeperThan(item, levels - 1)) return true;
    return false;
  }
  const record = value as Record<string, unknown>;
  for (const key in record) if (deeperThan(record[key], levels - 1)) return true;
  return false;
}

/**
 * Why a value cannot enter a run, in words that complete "the <what> ..."; undefined when it can:
 * nested deeper than MAX_JSON_DEPTH, larger than MAX_RUN_JSON_BYTES as JSON, or not JSON at all (a
 * BigInt, a cycle). Checked before anything serialises the value, and cheap: the walk stops at the
 * depth bound, and only a value within it is serialised to measure it.
 */
export function outOfBounds(value: unknown): string | undefined {
  if (deeperThan(value, MAX_JSON_DEPTH)) return `nests deeper than ${MAX_JSON_DEPTH} levels`;
  let text: string | undefined;
  try {
    text = JSON.stringify(value);
  } catch (err) {
    return `is not JSON (${err instanceof Error ? err.message : String(err)})`;
  }
  if (text !== undefined && Buffer.byteLength(text) > MAX_RUN_JSON_BYTES) return `is larger than ${MAX_RUN_JSON_BYTES} bytes as JSON`;
  return undefined;
}
