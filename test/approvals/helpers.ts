import type { Client } from 'openapi-fetch';
import { afterAll, afterEach, beforeAll, expect, vi } from 'vitest';
import type { components, paths } from '../../packages/client/src/generated/openapi.js';
import { startApp, type TestApp } from '../helpers/app.js';
import { type FakeProvider, responsesStream, startFakeProvider } from '../helpers/fake-provider.js';
import { startMcpServer } from '../helpers/mcp-server.js';

export type Approval = components['schemas']['Approval'];

/** What the approvals tests share: an agent whose MCP tool `shout` waits for a person, and waiting for a run's end. */

/** Whom the helpers call: anything with a typed client per key (a test app, a replica, a process through the SDK). */
export interface Caller {
  api(key?: string | null): Client<paths>;
}

/** An approval policy where every `shout` waits, as the agent's configuration holds it. */
export function shoutWaits(extra: Record<string, unknown> = {}) {
  return { approval: { rules: [{ tool: 'shout', reason: 'shouting is loud' }], ...extra } };
}

/** The pending approvals of a run, as the inbox lists them (polled until there are `count`, for 10 s). */
export async function pendingOf(t: Caller, key: string, runId: string, count = 1) {
  const res = await vi.waitFor(
    async () => {
      const res = await t.api(key).GET('/api/v1/approvals', { params: { query: { kind: 'tool_call', limit: 100 } } });
      const mine = res.data?.approvals.filter((a) => a.toolCall?.runId === runId) ?? [];
      if (res.response.ok && mine.length < count) throw new Error(`run ${runId} has ${mine.length} pending approvals of ${count}`);
      return { ...res, mine };
    },
    { timeout: 10_000, interval: 50 },
  );
  expect(res.response.status, JSON.stringify(res.error)).toBe(200);
  return res.mine;
}

/** The run once it has ended (polled; the test fails naming the run as it stood after 15 s). */
export async function endedRun(t: Caller, key: string, runId: string) {
  const res = await vi.waitFor(
    async () => {
      const res = await t.api(key).GET('/api/v1/runs/{runId}', { params: { path: { runId } } });
      if (res.data && !['completed', 'failed', 'cancelled'].includes(res.data.status)) {
        throw new Error(`run ${runId} has not ended: ${JSON.stringify(res.data)}`);
      }
      return res;
    },
    { timeout: 15_000, interval: 50 },
  );
  expect(res.response.status, JSON.stringify(res.error)).toBe(200);
  return res.data!;
}

/** A callee that pauses twice: an app on a fake OpenAI vendor, and an MCP server whose `shout` waits for a person. */
export interface TwoShouts {
  t: TestApp;
  key: string;
  vendor: FakeProvider;
  mcp: Awaited<ReturnType<typeof startMcpServer>>;
}

/** The callee's final answer, after both shouts. */
export const TWO_SHOUTS_ANSWER = 'Both shouts are done.';

/**
 * The two-shouts callee for a test file: started before its tests, closed after them (as much of it as
 * started), and after each test every scripted model answer was asked for (the run went through both
 * pauses to its answer). The fields are there once the file's tests run.
 */
export function useTwoShouts(): TwoShouts {
  const shouts = {} as Partial<TwoShouts>;
  beforeAll(async () => {
    shouts.vendor = await startFakeProvider();
    shouts.mcp = await startMcpServer();
    shouts.t = await startApp({ OPENAI_BASE_URL: shouts.vendor.baseUrl, OPENAI_API_KEY: 'sk-test-openai' });
    ({ key: shouts.key } = await shouts.t.tenant());
    await shouts.t.listen();
  });
  afterAll(async () => {
    await shouts.t?.close();
    await shouts.mcp?.close();
    await shouts.vendor?.close();
  });
  afterEach(() => {
    expect(shouts.vendor!.unused()).toBe(0);
  });
  return shouts as TwoShouts;
}

/** The callee: an agent on the vendor whose MCP tool `shout` waits for a person. */
export function shoutingAgent({ t, key, mcp }: TwoShouts) {
  return t.agent(key, { name: 'Helper', model: 'openai/gpt-5-mini', tools: [{ type: 'mcp', url: mcp.url }], configuration: shoutWaits() });
}

/**
 * The callee's model: shout "one", shout "two" (answered once `holdSecond` settles, when given), then
 * TWO_SHOUTS_ANSWER.
 */
export function scriptTwoShouts(vendor: FakeProvider, holdSecond?: Promise<unknown>) {
  const shout = (n: number, text: string) =>
    responsesStream({
      id: `resp_${n}`,
      items: [{ type: 'function_call', id: `fc_${n}`, call_id: `call_shout_${n}`, name: 'shout', arguments: [`{"text":"${text}"}`] }],
      usage: { input_tokens: 50, output_tokens: 10 },
    });
  vendor.script({ sse: shout(1, 'one') }, holdSecond ? { sse: shout(2, 'two'), hold: holdSecond } : { sse: shout(2, 'two') }, {
    sse: responsesStream({
      id: 'resp_3',
      items: [{ type: 'message', id: 'msg_3', text: [TWO_SHOUTS_ANSWER] }],
      usage: { input_tokens: 80, output_tokens: 6 },
    }),
  });
}

/** Approves the run's only pending approval (polled until there is one), a shout of `text`. */
export async function approveNext({ t, key }: TwoShouts, runId: string, text: string) {
  const pending = await pendingOf(t, key, runId);
  expect(pending).toHaveLength(1);
  expect(pending[0].toolCall).toMatchObject({ name: 'shout', arguments: { text } });
  const approved = await t.api(key).POST('/api/v1/approvals/{id}/approve', { params: { path: { id: pending[0].id } }, body: {} });
  expect(approved.response.status, JSON.stringify(approved.error)).toBe(200);
}
