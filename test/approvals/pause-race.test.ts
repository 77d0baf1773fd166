import OpenAI from 'openai';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import type { RunOutcome } from '../../src/runs/service.js';
import { startApp, type TestApp } from '../helpers/app.js';
import { type FakeProvider, responsesStream, startFakeProvider } from '../helpers/fake-provider.js';
import { startMcpServer } from '../helpers/mcp-server.js';
import { pendingOf, shoutWaits } from './helpers.js';

/**
 * The narrow race of a caller waiting for its callee (a delegated call, a /v1 chat completion): the
 * callee pauses for approval, and before the caller starts waiting for its end, the first call is
 * approved and the callee resumes here. The caller must still answer the callee's final answer, not
 * its second pause. The race is made certain: the caller is held (a spy on runs.outcome) until the
 * callee executes again, and the callee's second model call is held until the caller waits.
 */

let t: TestApp;
let key: string;
let vendor: FakeProvider;
let mcp: Awaited<ReturnType<typeof startMcpServer>>;

beforeAll(async () => {
  vendor = await startFakeProvider();
  mcp = await startMcpServer();
  t = await startApp({ OPENAI_BASE_URL: vendor.baseUrl, OPENAI_API_KEY: 'sk-test-openai' });
  ({ key } = await t.tenant());
  await t.listen();
});
afterAll(async () => {
  await t?.close();
  await mcp?.close();
  await vendor?.close();
});
afterEach(() => {
  vi.restoreAllMocks();
  expect(vendor.unused()).toBe(0);
});

const FINAL = 'Both shouts are done.';

/** The callee's model: shout "one", shout "two" (answered once `second` settles), then the final answer. */
function scriptTwoShouts(second: Promise<unknown>) {
  const shout = (n: number, text: string) =>
    responsesStream({
      id: `resp_${n}`,
      items: [{ type: 'function_call', id: `fc_${n}`, call_id: `call_shout_${n}`, name: 'shout', arguments: [`{"text":"${text}"}`] }],
      usage: { input_tokens: 50, output_tokens: 10 },
    });
  vendor.script(
    { sse: shout(1, 'one') },
    { sse: shout(2, 'two'), hold: second },
    {
      sse: responsesStream({
        id: 'resp_3',
        items: [{ type: 'message', id: 'msg_3', text: [FINAL] }],
        usage: { input_tokens: 80, output_tokens: 6 },
      }),
    },
  );
}

const helperAgent = () =>
  t.agent(key, { name: 'Helper', model: 'openai/gpt-5-mini', tools: [{ type: 'mcp', url: mcp.url }], configuration: shoutWaits() });

async function approveNext(runId: string, text: string) {
  const pending = await pendingOf(t, key, runId);
  expect(pending).toHaveLength(1);
  expect(pending[0].toolCall).toMatchObject({ name: 'shout', arguments: { text } });
  expect((await t.request('POST', `/api/v1/approvals/${pending[0].id}/approve`, { key })).status).toBe(200);
}

/**
 * Holds the caller where the race is: once the callee's first outcome (its pause) is read, the first
 * shout is approved and the resumed callee reaches its second model call (held) before the caller
 * goes on; that call is answered a moment after the caller has gone on to wait. Resolves with the callee's run id.
 */
function raceTheCaller(agentId: string, release: () => void): Promise<string> {
  const outcome = t.services.runs.outcome.bind(t.services.runs);
  return new Promise((resolve) => {
    vi.spyOn(t.services.runs, 'outcome').mockImplementation(async (tenantId, handle) => {
      const out: RunOutcome = await outcome(tenantId, handle);
      const run = await t.services.runs.get(tenantId, out.runId);
      if (run.agentId !== agentId || (out.status as string) !== 'awaiting_approval') return out;
      await approveNext(out.runId, 'one');
      for (let i = 0; i < 500 && vendor.requests.length < 2; i++) await new Promise((r) => setTimeout(r, 10));
      expect(vendor.requests).toHaveLength(2);
      setTimeout(release, 100);
      resolve(out.runId);
      return out;
    });
  });
}

describe('a caller whose callee is approved and resumed before the caller waits for it', () => {
  it('a delegated call: the tool result is the callee’s final answer, after its second pause', async () => {
    let release!: () => void;
    scriptTwoShouts(new Promise<void>((r) => (release = r)));
    const helper = await helperAgent();
    const lead = await t.agent(key, { name: 'Lead', tools: [{ type: 'agent', agentId: helper.id, name: 'ask_helper' }] });
    const raced = raceTheCaller(helper.id, () => release());
    const leadRun = t.request('POST', `/api/v1/agents/${lead.id}/execute`, {
      key,
      body: { message: `/tool ask_helper ${JSON.stringify({ message: 'shout twice' })}` },
    });
    const calleeRunId = await raced;
    await approveNext(calleeRunId, 'two');
    const res = await leadRun;
    expect(res.status, res.text).toBe(200);
    expect(res.body.toolCalls[0]).toMatchObject({ name: 'ask_helper', result: { runId: calleeRunId, output: FINAL } });
  });

  it('a /v1 chat completion: the answer is the final one, after the second pause', async () => {
    let release!: () => void;
    scriptTwoShouts(new Promise<void>((r) => (release = r)));
    const helper = await helperAgent();
    const client = new OpenAI({ baseURL: `${await t.listen()}/v1`, apiKey: key, maxRetries: 0 });
    const raced = raceTheCaller(helper.id, () => release());
    const answer = client.chat.completions.create({ model: `agent:${helper.id}`, messages: [{ role: 'user', content: 'shout twice' }] });
    const runId = await raced;
    await approveNext(runId, 'two');
    const completion = await answer;
    expect(completion.id).toBe(`chatcmpl-${runId}`);
    expect(completion.choices[0]).toMatchObject({ finish_reason: 'stop', message: { role: 'assistant', content: FINAL } });
  });
});
