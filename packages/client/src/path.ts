/**
 * One value as one path segment: percent-encoded (a `/`, `?` or `#` cannot reach another path), and
 * never `.` or `..`, which URL parsing resolves into the parent path (`/tasks/../runs` is `/runs`).
 */
export function seg(value: string): string {
  if (value === '.' || value === '..') throw new TypeError(`"${value}" cannot be an id in a path`);
  return encodeURIComponent(value);
}
