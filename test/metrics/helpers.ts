/** The value of one sample of a Prometheus text exposition, or undefined when no sample has exactly these labels. */
export function sample(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  for (const line of text.split('\n')) {
    if (line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m || m[1] !== name) continue;
    const got = Object.fromEntries([...(m[2] ?? '').matchAll(/([a-zA-Z_]\w*)="((?:[^"\\]|\\.)*)"/g)].map((l) => [l[1], l[2]]));
    if (Object.keys(got).length !== Object.keys(labels).length) continue;
    if (Object.entries(labels).every(([k, v]) => got[k] === v)) return Number(m[3]);
  }
  return undefined;
}

/** Every label set of a metric's samples in the exposition. */
export function labelSets(text: string, name: string): Record<string, string>[] {
  const sets: Record<string, string>[] = [];
  for (const line of text.split('\n')) {
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m || m[1] !== name) continue;
    sets.push(Object.fromEntries([...(m[2] ?? '').matchAll(/([a-zA-Z_]\w*)="((?:[^"\\]|\\.)*)"/g)].map((l) => [l[1], l[2]])));
  }
  return sets;
}
