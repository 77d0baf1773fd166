import type { LLMock } from '@copilotkit/aimock';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { providerEnv, requestsWith, startAimock, VENDOR_MODELS } from '../helpers/aimock.js';
import { startApp, type TestApp } from '../helpers/app.js';
import { execute } from '../helpers/execute.js';
import { readSse } from '../helpers/sse.js';

/**
 * A stream cut after its first token (docs/models.md "A stream cut after its first token"): the
 * client is told each token once, the run fails with a stable code, and what was said joins the
 * conversation marked as cut off, so the next turn's model sees it. Through aimock, per vendor API.
 */

let mock: LLMock;
let t: TestApp;
let key: string;

beforeAll(async () => {
  mock = await startAimock();
  t = await startApp({
    ...providerEnv(mock),
    MODEL_RETRY_MAX_ATTEMPTS: '3',
    MODEL_RETRY_BASE_MS: '1',
  });
  ({ key } = await t.tenant());
  await t.listen();
});
afterAll(async () => {
  await t?.close();
  await mock?.stop();
});

/** The newest run of the agent, and the messages of its conversation. */
async function lastRun(agentId: string) {
  const runs = (await t.api(key).GET('/api/v1/agents/{id}/runs', { params: { path: { id: agentId } } })).data!.runs;
  const run = (await t.api(key).GET('/api/v1/runs/{runId}', { params: { path: { runId: runs[0].id } } })).data!;
  const messages = async () =>
    (await t.api(key).GET('/api/v1/conversations/{id}/messages', { params: { path: { id: run.conversationId! } } })).data!.messages;
  return { run, messages };
}

const tokens = (events: { event: string; data: { text?: string } }[]) => events.filter((e) => e.event === 'token').map((e) => e.data.text);

describe.each(VENDOR_MODELS)('$model', ({ model, preamble }) => {
  it('keeps what was said before the cut in the conversation, marked, and the next turn’s model sees it', async () => {
    const first = `cut, then asked again ${model}`;
    const answer = 'Alpha bravo charlie delta echo foxtrot golf.';
    mock.addFixture({
      match: { userMessage: first },
      response: { content: answer },
      chunkSize: 4,
      truncateAfterChunks: preamble + 2,
      latency: 10,
    });
    const second = `go on ${model}`;
    mock.addFixture({ match: { userMessage: second }, response: { content: 'Hotel india.' } });

    const a = await t.agent(key, { name: 'cut', appId: 'a', model });
    const events = await readSse(await t.fetch(`/api/v1/agents/${a.id}/stream`, key, { body: { message: first } }));
    // Said once, never repeated: one request, and the tokens are a proper beginning of the answer.
    expect(requestsWith(mock, first)).toHaveLength(1);
    const said = tokens(events).join('');
    expect(said.length).toBeGreaterThan(0);
    expect(answer.startsWith(said) && said !== answer).toBe(true);
    const last = events.at(-1)!;
    expect(last).toMatchObject({ event: 'error', data: { code: 'provider_unavailable' } });
    const { run, messages } = await lastRun(a.id);
    expect(run).toMatchObject({ status: 'failed', output: said, error: { code: 'provider_unavailable' } });
    const convId = run.conversationId!;

    const note = `${said}\n\n[answer cut off: provider_unavailable]`;
    expect((await messages()).map((m) => [m.role, m.content])).toEqual([
      ['user', first],
      ['assistant', note],
    ]);

    const next = await execute(t.api(key), a.id, { message: second, conversationId: convId });
    expect(next.response.status).toBe(200);
    expect(next.run!.output).toBe('Hotel india.');
    const [request] = requestsWith(mock, second);
    // The partial answer and its note, in the history the model was sent.
    expect(JSON.stringify(request.body)).toContain(JSON.stringify(note).slice(1, -1));
  });
});

it('a run that fails before saying anything adds no reply', async () => {
  const message = 'down from the start';
  mock.addFixture({
    match: { userMessage: message },
    response: { error: { message: 'The engine is currently overloaded', type: 'server_error' }, status: 503 },
  });
  const a = await t.agent(key, { name: 'down', appId: 'a', model: 'openai/gpt-5-mini' });
  const res = await execute(t.api(key), a.id, { message });
  expect(res.response.status).toBe(502);
  const { messages } = await lastRun(a.id);
  expect((await messages()).map((m) => m.role)).toEqual(['user']);
});
