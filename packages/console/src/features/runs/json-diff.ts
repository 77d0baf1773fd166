/**
 * What an approver changed in a tool call's arguments: the leaves (dotted paths) that were removed,
 * added or changed between the model's arguments and the approved ones, in the model's order.
 */
export interface ArgumentChange {
  path: string;
  kind: 'removed' | 'added' | 'changed';
  before?: unknown;
  after?: unknown;
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

function leaves(value: unknown, prefix: string, out: Map<string, unknown>): Map<string, unknown> {
  if (isObject(value) && Object.keys(value).length) {
    for (const [k, v] of Object.entries(value)) leaves(v, prefix ? `${prefix}.${k}` : k, out);
  } else if (Array.isArray(value) && value.length) {
    for (const [i, v] of value.entries()) leaves(v, `${prefix}[${i}]`, out);
  } else {
    out.set(prefix || '(arguments)', value);
  }
  return out;
}

export function diffArguments(before: unknown, after: unknown): ArgumentChange[] {
  const a = leaves(before, '', new Map());
  const b = leaves(after, '', new Map());
  const changes: ArgumentChange[] = [];
  for (const [path, value] of a) {
    if (!b.has(path)) changes.push({ path, kind: 'removed', before: value });
    else if (JSON.stringify(value) !== JSON.stringify(b.get(path)))
      changes.push({ path, kind: 'changed', before: value, after: b.get(path) });
  }
  for (const [path, value] of b) if (!a.has(path)) changes.push({ path, kind: 'added', after: value });
  return changes;
}
