import { expect } from 'vitest';
import type { components, paths } from '../../packages/client/src/generated/openapi.js';

export type Approval = components['schemas']['Approval'];
type RunDetails = paths['/api/v1/runs/{runId}']['get']['responses'][200]['content']['application/json'];

/** What the approvals tests share: an agent whose MCP tool `shout` waits for a person, and waiting for a run's end. */

export interface Caller {
  request<T = unknown>(
    method: string,
    url: string,
    options?: { key?: string | null; body?: unknown },
  ): Promise<{ status: number; body: T; headers: Record<string, unknown> }>;
}

/** An approval policy where every `shout` waits, as the agent's configuration holds it. */
export function shoutWaits(extra: Record<string, unknown> = {}) {
  return { approval: { rules: [{ tool: 'shout', reason: 'shouting is loud' }], ...extra } };
}

/** The pending approvals of a run, as the inbox lists them (polled until there are `count`). */
export async function pendingOf(t: Caller, key: string, runId: string, count = 1) {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const res = await t.request<{ approvals: Approval[] }>('GET', '/api/v1/approvals?kind=tool_call&limit=100', { key });
    expect(res.status).toBe(200);
    const mine = res.body.approvals.filter((a) => a.toolCall?.runId === runId);
    if (mine.length >= count || Date.now() > deadline) return mine;
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** The run once it has ended (polled; the test fails with the run as it stood after 15 s). */
export async function endedRun(t: Caller, key: string, runId: string) {
  const deadline = Date.now() + 15_000;
  for (;;) {
    const res = await t.request<RunDetails>('GET', `/api/v1/runs/${runId}`, { key });
    expect(res.status).toBe(200);
    if (['completed', 'failed', 'cancelled'].includes(res.body.status) || Date.now() > deadline) return res.body;
    await new Promise((r) => setTimeout(r, 50));
  }
}
