/**
 * One value as one path segment: percent-encoded, so a `/`, `?` or `#` cannot reach another path. A
 * `.` or `..` stays itself (URL parsing reads `%2E%2E` as `..` too); the client refuses a path holding
 * one when it sends it (refuseDotSegments), since the URL would resolve it into the parent path
 * (`/tasks/../runs` is `/runs`).
 */
export function seg(value: string): string {
  return encodeURIComponent(value);
}

/** Throws for a URL (before its query) with a `.` or `..` segment: such an id names another resource than its own. */
export function refuseDotSegments(url: string): void {
  const dot = url.split('/').find((segment) => segment === '.' || segment === '..');
  if (dot !== undefined) throw new TypeError(`"${dot}" cannot be an id in a path (${url})`);
}
