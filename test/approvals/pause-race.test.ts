import OpenAI from 'openai';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { RunOutcome } from '../../src/runs/service.js';
import { execute } from '../helpers/execute.js';
import { approveNext as approveNextOf, scriptTwoShouts, shoutingAgent, TWO_SHOUTS_ANSWER as FINAL, useTwoShouts } from './helpers.js';

/**
 * The narrow race of a caller waiting for its callee (a delegated call, a /v1 chat completion): the
 * callee pauses for approval, and before the caller starts waiting for its end, the first call is
 * approved and the callee resumes here. The caller must still answer the callee's final answer, not
 * its second pause. The race is made certain: the caller is held (a spy on runs.outcome) until the
 * callee executes again, and the callee's second model call is held until the caller waits.
 */

const shouts = useTwoShouts();
afterEach(() => vi.restoreAllMocks());

const helperAgent = () => shoutingAgent(shouts);

const approveNext = (runId: string, text: string) => approveNextOf(shouts, runId, text);

/**
 * Holds the caller where the race is: once the callee's first outcome (its pause) is read, the first
 * shout is approved and the resumed callee reaches its second model call (held) before the caller
 * goes on; that call is answered a moment after the caller has gone on to wait. Resolves with the callee's run id.
 */
function raceTheCaller(agentId: string, release: () => void): Promise<string> {
  const outcome = shouts.t.services.runs.outcome.bind(shouts.t.services.runs);
  return new Promise((resolve) => {
    vi.spyOn(shouts.t.services.runs, 'outcome').mockImplementation(async (tenantId, handle) => {
      const out: RunOutcome = await outcome(tenantId, handle);
      const run = await shouts.t.services.runs.get(tenantId, out.runId);
      if (run.agentId !== agentId || (out.status as string) !== 'awaiting_approval') return out;
      await approveNext(out.runId, 'one');
      await expect.poll(() => shouts.vendor.requests.length, { timeout: 5_000, interval: 10 }).toBeGreaterThanOrEqual(2);
      expect(shouts.vendor.requests).toHaveLength(2);
      setTimeout(release, 100);
      resolve(out.runId);
      return out;
    });
  });
}

describe('a caller whose callee is approved and resumed before the caller waits for it', () => {
  it('a delegated call: the tool result is the callee’s final answer, after its second pause', async () => {
    let release!: () => void;
    scriptTwoShouts(shouts.vendor, new Promise<void>((r) => (release = r)));
    const helper = await helperAgent();
    const lead = await shouts.t.agent(shouts.key, { name: 'Lead', tools: [{ type: 'agent', agentId: helper.id, name: 'ask_helper' }] });
    const raced = raceTheCaller(helper.id, () => release());
    const leadRun = execute(shouts.t.api(shouts.key), lead.id, {
      message: `/tool ask_helper ${JSON.stringify({ message: 'shout twice' })}`,
    });
    const calleeRunId = await raced;
    await approveNext(calleeRunId, 'two');
    const res = await leadRun;
    expect(res.response.status, JSON.stringify(res.error)).toBe(200);
    expect(res.run!.toolCalls[0]).toMatchObject({ name: 'ask_helper', result: { runId: calleeRunId, output: FINAL } });
  });

  it('a /v1 chat completion: the answer is the final one, after the second pause', async () => {
    let release!: () => void;
    scriptTwoShouts(shouts.vendor, new Promise<void>((r) => (release = r)));
    const helper = await helperAgent();
    const client = new OpenAI({ baseURL: `${await shouts.t.listen()}/v1`, apiKey: shouts.key, maxRetries: 0 });
    const raced = raceTheCaller(helper.id, () => release());
    const answer = client.chat.completions.create({ model: `agent:${helper.id}`, messages: [{ role: 'user', content: 'shout twice' }] });
    const runId = await raced;
    await approveNext(runId, 'two');
    const completion = await answer;
    expect(completion.id).toBe(`chatcmpl-${runId}`);
    expect(completion.choices[0]).toMatchObject({ finish_reason: 'stop', message: { role: 'assistant', content: FINAL } });
  });
});
