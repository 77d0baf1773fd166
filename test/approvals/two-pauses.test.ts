import OpenAI from 'openai';
import { describe, expect, it, vi } from 'vitest';
import { execute } from '../helpers/execute.js';
import { approveNext as approveNextOf, scriptTwoShouts, shoutingAgent, TWO_SHOUTS_ANSWER as FINAL, useTwoShouts } from './helpers.js';

/**
 * A caller waiting for another run's end (a delegated call, a /v1 chat completion) waits through
 * every pause of that run: here the callee's model calls `shout` (which waits for a person) in two
 * successive steps, so the run pauses, resumes once approved, and pauses again before its answer.
 * The callers wait through the database (the paused callee is no longer executing here), so a second
 * pause does not end their wait; these pin that, on each way a caller waits.
 */

const shouts = useTwoShouts();

const helperAgent = () => shoutingAgent(shouts);

const approveNext = (runId: string, text: string) => approveNextOf(shouts, runId, text);

/** The id of the agent's run once it waits for a person (polled for 15 s). */
function waitingRunOf(agentId: string) {
  return vi.waitFor(
    async () => {
      const runs = await shouts.t.api(shouts.key).GET('/api/v1/agents/{id}/runs', { params: { path: { id: agentId } } });
      const waiting = runs.data?.runs.find((r) => r.status === 'awaiting_approval');
      if (!waiting) throw new Error('the run never waited for a person');
      return waiting.id;
    },
    { timeout: 15_000, interval: 50 },
  );
}

/** Approves the first shout, then, once the resumed run waits again, the second. */
async function approveBoth(agentId: string) {
  const runId = await waitingRunOf(agentId);
  await approveNext(runId, 'one');
  // The second appears once the resumed run has made its next step (the inbox lists pending ones only).
  await approveNext(runId, 'two');
  return runId;
}

describe('a caller waiting through two pauses of its callee', () => {
  it('a delegated call: the caller’s tool result is the callee’s final answer', async () => {
    scriptTwoShouts(shouts.vendor);
    const helper = await helperAgent();
    const lead = await shouts.t.agent(shouts.key, { name: 'Lead', tools: [{ type: 'agent', agentId: helper.id, name: 'ask_helper' }] });
    const leadRun = execute(shouts.t.api(shouts.key), lead.id, {
      message: `/tool ask_helper ${JSON.stringify({ message: 'shout twice' })}`,
    });
    const calleeRunId = await approveBoth(helper.id);
    const res = await leadRun;
    expect(res.response.status).toBe(200);
    expect(res.run?.status).toBe('completed');
    expect(res.run!.toolCalls[0]).toMatchObject({ name: 'ask_helper', result: { agentId: helper.id, runId: calleeRunId, output: FINAL } });
    expect(shouts.mcp.state.calls.filter((c) => c.name === 'shout').map((c) => c.args)).toEqual(
      expect.arrayContaining([{ text: 'one' }, { text: 'two' }]),
    );
  });

  it('a /v1 chat completion (openai client): the answer is the final one', async () => {
    scriptTwoShouts(shouts.vendor);
    const helper = await helperAgent();
    const client = new OpenAI({ baseURL: `${await shouts.t.listen()}/v1`, apiKey: shouts.key, maxRetries: 0 });
    const answer = client.chat.completions.create({ model: `agent:${helper.id}`, messages: [{ role: 'user', content: 'shout twice' }] });
    const runId = await approveBoth(helper.id);
    const completion = await answer;
    expect(completion.id).toBe(`chatcmpl-${runId}`);
    expect(completion.choices[0]).toMatchObject({ finish_reason: 'stop', message: { role: 'assistant', content: FINAL } });
  });

  it('a streamed /v1 chat completion: the stream stays open through both pauses and ends with the final answer', async () => {
    scriptTwoShouts(shouts.vendor);
    const helper = await helperAgent();
    const client = new OpenAI({ baseURL: `${await shouts.t.listen()}/v1`, apiKey: shouts.key, maxRetries: 0 });
    const stream = await client.chat.completions.create({
      model: `agent:${helper.id}`,
      messages: [{ role: 'user', content: 'shout twice' }],
      stream: true,
    });
    const reading = (async () => {
      let text = '';
      let finish: string | null = null;
      for await (const chunk of stream) {
        text += chunk.choices[0]?.delta.content ?? '';
        finish = chunk.choices[0]?.finish_reason ?? finish;
      }
      return { text, finish };
    })();
    await approveBoth(helper.id);
    expect(await reading).toEqual({ text: FINAL, finish: 'stop' });
  });
});
