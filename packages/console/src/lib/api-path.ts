/**
 * An API path with every interpolated value as exactly one path segment: percent-encoded, so a `/`,
 * `?` or `#` in a route parameter (a crafted link) cannot reach another path or the query, and never
 * `.` or `..` (nor empty), which URL parsing would resolve into the parent path. Every path the console
 * calls with a value in it is built here: apiPath`/api/v1/tasks/${taskId}/runs`.
 */
export function apiPath(strings: TemplateStringsArray, ...values: (string | number)[]): string {
  let path = strings[0];
  values.forEach((value, i) => {
    path += pathSegment(value) + strings[i + 1];
  });
  return path;
}

/** One value as one path segment (see apiPath); throws for a value that cannot be one. */
function pathSegment(value: string | number): string {
  const text = String(value);
  if (text === '' || text === '.' || text === '..') throw new Error(`"${text}" cannot be an id in a path`);
  return encodeURIComponent(text);
}
