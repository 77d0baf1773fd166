/**
 * The passages a run's answer drew on: the `citations` a tool's result carries (knowledge_search's,
 * docs/knowledge.md "Agents"), in the order of the calls. Recorded with the tool calls themselves, so
 * a run's citations are read back from them: its execute answer, its `done` event, its record.
 */

/** Citations one run answers at most (knowledge_search gives 20 a call at most). */
const MAX_CITATIONS = 200;

export function citationsOf(toolCalls: readonly { result?: unknown }[]): Record<string, unknown>[] {
  const out: Record<string, unknown>[] = [];
  for (const call of toolCalls) {
    const citations = (call.result as { citations?: unknown } | null | undefined)?.citations;
    if (!Array.isArray(citations)) continue;
    for (const c of citations) {
      if (c && typeof c === 'object' && !Array.isArray(c) && out.length < MAX_CITATIONS) out.push(c as Record<string, unknown>);
    }
  }
  return out;
}
