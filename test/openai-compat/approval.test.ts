import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
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
function waitingApproval(app: TestApp, key: string, agentId: string): Promise<Approval> {
  return vi.waitFor(
    async () => {
      const { data } = await app.api(key).GET('/api/v1/approvals', { params: { query: { kind: 'tool_call', agentId } } });
      const approval = data?.approvals[0];
      if (!approval) throw new Error('no approval appeared');
      return approval;
    },
    { timeout: 15_000, interval: 50 },
  );
}

// The approve route takes no body at all, but its generated type asks for one: {} says the same.
const approve = (app: TestApp, key: string, id: string) =>
  app.api(key).POST('/api/v1/approvals/{id}/approve', { params: { path: { id } }, body: {} });

const shout = (text: string) => [{ role: 'user' as const, content: `/tool shout {"text":"${text}"}` }];

describe('a chat completion whose tool call waits for a person', () => {
  it('waits for the decision, then answers with the run’s end', async () => {
    const { key, agent, client, model } = await setup(t);
    const answer = client.chat.completions.create({ model, messages: shout('approved') });
    const approval = await waitingApproval(t, key, agent.id);
    expect((await approve(t, key, approval.id)).response.status).toBe(200);
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
    await t.api(key).POST('/api/v1/approvals/{id}/reject', { params: { path: { id: approval.id } }, body: { reason: 'too loud' } });
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
    const run = await impatient.api(key).GET('/api/v1/runs/{runId}', { params: { path: { runId: approval.toolCall!.runId } } });
    expect(run.data!.status).toBe('awaiting_approval');
    // Decided later, the run still ends, read through the API.
    await approve(impatient, key, approval.id);
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
    await impatient.api(key).POST('/api/v1/runs/{runId}/cancel', { params: { path: { runId: approval.toolCall!.runId } } });
  });
});
