import { randomUUID } from 'node:crypto';
import { Role, TaskState } from '@a2a-js/sdk';
import { type Client, ClientFactory, ClientFactoryOptions, DefaultAgentCardResolver, JsonRpcTransportFactory } from '@a2a-js/sdk/client';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { pendingOf, shoutWaits } from '../approvals/helpers.js';
import { type TestApp, startApp } from '../helpers/app.js';
import { startMcpServer } from '../helpers/mcp-server.js';
import { freePort } from '../helpers/process.js';

/**
 * An A2A task whose run waits for a person's approval (through the official SDK client): the task is
 * `input-required` with a status message saying so; tasks/get shows the outcome once decided; a
 * stream sends the input-required status, stays open, then working and the rest of the answer.
 */

let t: TestApp;
let base: string;
let key: string;
let tenantId: string;
let mcp: Awaited<ReturnType<typeof startMcpServer>>;

beforeAll(async () => {
  mcp = await startMcpServer();
  const port = await freePort();
  base = `http://127.0.0.1:${port}`;
  t = await startApp({ PUBLIC_BASE_URL: base });
  await t.app.listen({ port, host: '127.0.0.1' });
  ({ key, id: tenantId } = await t.tenant());
});
afterAll(async () => {
  await t?.close();
  await mcp?.close();
});

async function clientFor(agentId: string): Promise<Client> {
  const fetchImpl: typeof fetch = (input, init) => {
    const headers = new Headers(init?.headers);
    headers.set('authorization', `Bearer ${key}`);
    return fetch(input, { ...init, headers });
  };
  const factory = new ClientFactory(
    ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
      transports: [new JsonRpcTransportFactory({ fetchImpl, legacyCompat: { enabled: true } })],
      cardResolver: new DefaultAgentCardResolver({ fetchImpl, legacyCompat: { enabled: true } }),
    }),
  );
  return factory.createFromUrl(`${base}/a2a/${tenantId}/agents/${agentId}/.well-known/agent-card.json`, '');
}

const userMessage = (text: string) =>
  ({
    message: {
      messageId: randomUUID(),
      role: Role.ROLE_USER,
      parts: [{ content: { $case: 'text', value: text }, metadata: undefined, filename: '', mediaType: 'text/plain' }],
      contextId: '',
      taskId: '',
      metadata: undefined,
      extensions: [],
      referenceTaskIds: [],
    },
  }) as unknown as Parameters<Client['sendMessage']>[0];

type Task = Awaited<ReturnType<Client['getTask']>>;
type Message = NonNullable<NonNullable<Task['status']>['message']>;
const textOf = (task: Task) =>
  task.artifacts.flatMap((a) => a.parts.map((p) => (p.content?.$case === 'text' ? p.content.value : ''))).join('');
const messageText = (m: Message | undefined) => (m?.parts ?? []).map((p) => (p.content?.$case === 'text' ? p.content.value : '')).join('');

// The approve route takes no body at all, but its generated type asks for one: {} says the same.
const approve = (id: string) => t.api(key).POST('/api/v1/approvals/{id}/approve', { params: { path: { id } }, body: {} });

const waitingAgent = () => t.agent(key, { tools: [{ type: 'mcp', url: mcp.url }], configuration: shoutWaits() });

describe('an A2A task whose tool call waits for a person', () => {
  it('message/send answers input-required saying a person must approve; tasks/get shows the outcome once decided', async () => {
    const agent = await waitingAgent();
    const client = await clientFor(agent.id);
    const task = (await client.sendMessage(userMessage('/tool shout {"text":"over a2a"}'))) as Task;
    expect(task.status?.state).toBe(TaskState.TASK_STATE_INPUT_REQUIRED);
    expect(messageText(task.status?.message)).toContain('A person must approve');
    const again = await client.getTask({ id: task.id } as never);
    expect(again.status?.state).toBe(TaskState.TASK_STATE_INPUT_REQUIRED);

    const [approval] = await pendingOf(t, key, task.id);
    expect((await approve(approval.id)).response.status).toBe(200);
    const done = await vi.waitFor(
      async () => {
        const seen = await client.getTask({ id: task.id } as never);
        expect(seen.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
        return seen;
      },
      { timeout: 15_000, interval: 50 },
    );
    expect(textOf(done)).toContain('OVER A2A');
  });

  it('message/stream sends input-required, stays open, then working and the answer to a final completed', async () => {
    const agent = await waitingAgent();
    const client = await clientFor(agent.id);
    const states: { state: TaskState | undefined; text: string }[] = [];
    let text = '';
    for await (const event of client.sendMessageStream(userMessage('/tool shout {"text":"streamed a2a"}'))) {
      const payload = event.payload!;
      if (payload.$case === 'statusUpdate') {
        const { status } = payload.value;
        states.push({ state: status?.state, text: messageText(status?.message) });
        if (status?.state === TaskState.TASK_STATE_INPUT_REQUIRED) {
          const [approval] = await pendingOf(t, key, payload.value.taskId);
          await approve(approval.id);
        }
      }
      if (payload.$case === 'artifactUpdate') {
        const chunk = payload.value.artifact!.parts.map((p) => (p.content?.$case === 'text' ? p.content.value : '')).join('');
        text = payload.value.append ? text + chunk : chunk;
      }
    }
    // (The SDK's 1.x view of a status update has no `final`: the stream's end is the last one.)
    expect(states.map((s) => s.state)).toEqual([
      TaskState.TASK_STATE_INPUT_REQUIRED,
      TaskState.TASK_STATE_WORKING,
      TaskState.TASK_STATE_COMPLETED,
    ]);
    expect(states[0].text).toContain('the tool shout');
    expect(text).toContain('STREAMED A2A');
  });
});
