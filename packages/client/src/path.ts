/**
 * One value as one path segment: percent-encoded (a `/`, `?` or `#` cannot reach another path), and
 * never `.` or `..`, which URL parsing resolves into the parent path (`/tasks/../runs` is `/runs`).
 */
export function seg(value: string): string {
  refuseDotSegment(value);
  return encodeURIComponent(value);
}

/** Throws for `.` and `..`: as a path's segment, either names another resource than the id's. */
export function refuseDotSegment(value: unknown): void {
  if (value === '.' || value === '..') throw new TypeError(`"${value}" cannot be an id in a path`);
}
