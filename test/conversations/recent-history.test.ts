import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { startApp, type TestApp } from '../helpers/app.js';
import { execute } from '../helpers/execute.js';

/*
 * A run's start takes the conversation's newest messages from what this process kept of them
 * (conversations/recent-messages.ts) when the conversation's message count is the one they were kept
 * at, and reads the database otherwise. Two servers on one database take turns in the same conversations
 * here; every answer's prompt must hold exactly the newest messages the database has, whoever wrote them.
 * builtin/echo counts the prompt's words as its input tokens, so each message has its own number of
 * words and the count says which messages the model was given.
 */

let t: TestApp;
let other: TestApp;
let key: string;

beforeAll(async () => {
  t = await startApp();
  other = await startApp({}, { sameDatabaseAs: t });
  ({ key } = await t.tenant('acme'));
});
afterAll(async () => {
  await other?.close();
  await t?.close();
});

const wordCount = (text: string) => text.split(/\s+/).filter(Boolean).length;
let words = 0;
/** A message of a number of words no other message of the test has. */
const message = () => Array.from({ length: ++words }, (_, i) => `w${i}`).join(' ');

/** The words the model must be given for `content` in the conversation: the newest `window` stored messages, then it. */
async function promptWords(conversationId: string, window: number, content: string) {
  const stored = (
    await t.api(key).GET('/api/v1/conversations/{id}/messages', { params: { path: { id: conversationId }, query: { limit: 200 } } })
  ).data!.messages;
  const kept = window > 0 ? stored.slice(-window) : [];
  return kept.reduce((n, m) => n + wordCount(m.content), 0) + wordCount(content);
}

/** One turn on `server`, checked: the model was given exactly the newest messages the database holds. */
async function turn(server: TestApp, agentId: string, conversationId: string, window: number, content = message()) {
  const expected = await promptWords(conversationId, window, content);
  const { run, error } = await execute(server.api(key), agentId, { message: content, conversationId });
  expect(run, JSON.stringify(error)).toBeDefined();
  expect(run!.tokenUsage.inputTokens).toBe(expected);
  return run!;
}

describe('the history a run is given, kept between turns', () => {
  it('is the database’s newest messages when two servers take turns in a conversation', async () => {
    const agent = await t.agent(key, { configuration: { memoryWindow: 5 } });
    const first = await execute(t.api(key), agent.id, { message: message() });
    const conversationId = first.run!.conversationId;
    // Each server's next turn comes after the other's: what it kept from its own last turn is stale.
    for (const server of [other, t, other, t, t, other, other, t]) await turn(server, agent.id, conversationId, 5);
  });

  it('holds a message injected into a running answer, and a failed run’s message, in their places', async () => {
    const agent = await t.agent(key, { configuration: { memoryWindow: 6 } });
    const { run } = await execute(t.api(key), agent.id, { message: message() });
    const conversationId = run!.conversationId;
    await turn(t, agent.id, conversationId, 6);

    // An answer still being said takes a message in: stored between the question and the answer.
    const slow = execute(t.api(key), agent.id, { message: `/delay 40\n${message()}`, conversationId });
    await vi.waitFor(
      async () => {
        const injected = await t.api(key).POST('/api/v1/conversations/{id}/inject', {
          params: { path: { id: conversationId } },
          body: { content: message() },
        });
        expect(injected.response.status, JSON.stringify(injected.error)).toBe(202);
      },
      { timeout: 10_000, interval: 10 },
    );
    expect((await slow).run).toBeDefined();
    await turn(t, agent.id, conversationId, 6);

    // A run that fails keeps the user's message and adds no answer.
    const failed = await execute(t.api(key), agent.id, { message: `/fail no\n${message()}`, conversationId });
    expect(failed.response.status).toBe(502);
    await turn(t, agent.id, conversationId, 6);
    await turn(t, agent.id, conversationId, 6);
  });

  it('follows the agent’s memory window when it changes between turns', async () => {
    const agent = await t.agent(key, { configuration: { memoryWindow: 3 } });
    const { run } = await execute(t.api(key), agent.id, { message: message() });
    const conversationId = run!.conversationId;
    for (let i = 0; i < 3; i++) await turn(t, agent.id, conversationId, 3);
    for (const memoryWindow of [7, 2, 0, 4]) {
      const updated = await t.api(key).POST('/api/v1/agents/{id}', {
        params: { path: { id: agent.id } },
        body: { configuration: { memoryWindow } },
      });
      expect(updated.response.status, JSON.stringify(updated.error)).toBe(200);
      await turn(t, agent.id, conversationId, memoryWindow);
      await turn(t, agent.id, conversationId, memoryWindow);
    }
  });
});
