import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Approval, endedRun, shoutWaits } from '../approvals/helpers.js';
import { startApp, type TestApp } from '../helpers/app.js';
import { startMcpServer } from '../helpers/mcp-server.js';

/**
 * A chat completion whose run pauses for a person's approval: the answer waits for the decision (a
 * stream meanwhile kept open), then answers; past OPENAI_APPROVAL_WAIT_SECONDS it is a 400
 * `run_awaiting_approval` in OpenAI's error shape, and the run goes on waiting.
 */

let t: TestApp;
let impatient: TestApp;
let mcp: Awaited<ReturnType<typeof startMcpServer>>;

beforeAll(async () => {
  mcp = await startMcpServer();
  t = await startApp();
  // Nobody decides in that app's tests: its completions give up after a second.
  impatient = await startApp({ OPENAI_APPROVAL_WAIT_SECONDS: '1' });
});
afterAll(async () => {
  await t?.close();
  await impatient?.close();
  await mcp?.close();
});

async function setup(app: TestApp) {
  const { key } = await app.tenant();
  const agent = await app.agent(key, { tools: [{ type: 'mcp', url: mcp.url }], configuration: shoutWaits() });
  const client = new OpenAI({ baseURL: `${await app.listen()}/v1`, apiKey: key, maxRetries: 0 });
  return { key, agent, client, model: `agent:${agent.id}` };
}

/** The agent's first pending approval, once its run waits (polled). */
async function waitingApproval(app: TestApp, key: string, agentId: string): Promise<Approval> {
  for (let i = 0; i < 300; i++) {
    const res = await app.request<{ approvals: Approval[] }>('GET', `/api/v1/approvals?kind=tool_call&agentId=${agentId}`, { key });
    if (res.body.approvals[0]) return res.body.approvals[0];
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error('no approval appeared');
}

const shout = (text: string) => [{ role: 'user' as const, content: `/tool shout {"text":"${text}"}` }];

describe('a chat completion whose tool call waits for a person', () => {
  it('waits for the decision, then answers with the run’s end', async () => {
    const { key, agent, client, model } = await setup(t);
    const answer = client.chat.completions.create({ model, messages: shout('approved') });
    const approval = await waitingApproval(t, key, agent.id);
    expect((await t.request('POST', `/api/v1/approvals/${approval.id}/approve`, { key })).status).toBe(200);
    const completion = await answer;
    expect(completion.choices[0]).toMatchObject({ finish_reason: 'stop', message: { role: 'assistant' } });
    expect(completion.choices[0].message.content).toContain('APPROVED');
    expect(completion.id).toBe(`chatcmpl-${approval.toolCall!.runId}`);
  });

  it('streamed: the stream stays open while the call waits, then carries the rest of the answer', async () => {
    const { key, agent, client, model } = await setup(t);
    const stream = await client.chat.completions.create({ model, messages: shout('streamed'), stream: true });
    const reading = (async () => {
      let text = '';
      let finish: string | null = null;
      for await (const chunk of stream) {
        text += chunk.choices[0]?.delta.content ?? '';
        finish = chunk.choices[0]?.finish_reason ?? finish;
      }
      return { text, finish };
    })();
    const approval = await waitingApproval(t, key, agent.id);
    await t.request('POST', `/api/v1/approvals/${approval.id}/reject`, { key, body: { reason: 'too loud' } });
    const { text, finish } = await reading;
    expect(finish).toBe('stop');
    expect(text).toContain('too loud');
  });

  it('past the limit: 400 run_awaiting_approval, not retried, and the run still waits', async () => {
    const { key, agent, client, model } = await setup(impatient);
    let error: InstanceType<typeof OpenAI.APIError> | undefined;
    try {
      await client.chat.completions.create({ model, messages: shout('later') });
    } catch (err) {
      if (!(err instanceof OpenAI.APIError)) throw err;
      error = err;
    }
    expect(error).toMatchObject({ status: 400, code: 'run_awaiting_approval', type: 'invalid_request_error' });
    expect(error!.headers?.get('x-should-retry')).toBe('false');
    const approval = await waitingApproval(impatient, key, agent.id);
    expect(error!.message).toContain(approval.toolCall!.runId);
    const run = await impatient.request('GET', `/api/v1/runs/${approval.toolCall!.runId}`, { key });
    expect(run.body.status).toBe('awaiting_approval');
    // Decided later, the run still ends, read through the API.
    await impatient.request('POST', `/api/v1/approvals/${approval.id}/approve`, { key });
    expect((await endedRun(impatient, key, approval.toolCall!.runId)).output).toContain('LATER');
  });

  it('streamed past the limit: an error event with the code, then the stream ends', async () => {
    const { key, agent, client, model } = await setup(impatient);
    const stream = await client.chat.completions.create({ model, messages: shout('stream later'), stream: true });
    let error: InstanceType<typeof OpenAI.APIError> | undefined;
    try {
      for await (const _ of stream);
    } catch (err) {
      if (!(err instanceof OpenAI.APIError)) throw err;
      error = err;
    }
    expect(error).toBeDefined();
    expect(error!.message).toContain('still waits for a person');
    expect(JSON.stringify(error!.error)).toContain('run_awaiting_approval');
    const approval = await waitingApproval(impatient, key, agent.id);
    await impatient.request('POST', `/api/v1/runs/${approval.toolCall!.runId}/cancel`, { key });
  });
});
