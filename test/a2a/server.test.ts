import { randomUUID } from 'node:crypto';
import { Role, TaskState } from '@a2a-js/sdk';
import { type Client, ClientFactory, ClientFactoryOptions, DefaultAgentCardResolver, JsonRpcTransportFactory } from '@a2a-js/sdk/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type TestApp, startApp } from '../helpers/app.js';
import { freePort } from '../helpers/process.js';

/** The official SDK (1.x, through its A2A 0.3 layer, which our card announces) against a listening server. */

let t: TestApp;
let base: string;
let key: string;
let tenantId: string;

beforeAll(async () => {
  const port = await freePort();
  base = `http://127.0.0.1:${port}`;
  // The card names its endpoint under PUBLIC_BASE_URL: the address this test server listens on.
  t = await startApp({ PUBLIC_BASE_URL: base });
  await t.app.listen({ port, host: '127.0.0.1' });
  ({ key, id: tenantId } = await t.tenant());
});
afterAll(() => t?.close());

const cardPath = (agentId: string, tenant = tenantId) => `/a2a/${tenant}/agents/${agentId}/.well-known/agent-card.json`;

function factory(credential: string) {
  const fetchImpl: typeof fetch = (input, init) => {
    const headers = new Headers(init?.headers);
    headers.set('authorization', `Bearer ${credential}`);
    return fetch(input, { ...init, headers });
  };
  return new ClientFactory(
    ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
      transports: [new JsonRpcTransportFactory({ fetchImpl, legacyCompat: { enabled: true } })],
      cardResolver: new DefaultAgentCardResolver({ fetchImpl, legacyCompat: { enabled: true } }),
    }),
  );
}

const clientFor = (agentId: string, credential = key): Promise<Client> =>
  factory(credential).createFromUrl(`${base}${cardPath(agentId)}`, '');

const userMessage = (text: string, contextId = '') =>
  ({
    message: {
      messageId: randomUUID(),
      role: Role.ROLE_USER,
      parts: [{ content: { $case: 'text', value: text }, metadata: undefined, filename: '', mediaType: 'text/plain' }],
      contextId,
      taskId: '',
      metadata: undefined,
      extensions: [],
      referenceTaskIds: [],
    },
  }) as unknown as Parameters<Client['sendMessage']>[0];

type Task = Awaited<ReturnType<Client['getTask']>>;
const textOf = (task: Task) =>
  task.artifacts.flatMap((a) => a.parts.map((p) => (p.content?.$case === 'text' ? p.content.value : ''))).join('');

describe('Agent Card', () => {
  it('is public under its tenant path and names the agent, its skills, streaming and both security schemes', async () => {
    const agent = await t.agent(key, { name: 'Helper', description: 'answers questions', model: 'builtin/echo' });
    const res = await fetch(`${base}${cardPath(agent.id)}`);
    expect(res.status).toBe(200);
    const card = await res.json();
    expect(card).toMatchObject({
      protocolVersion: '0.3.0',
      name: 'Helper',
      description: 'answers questions',
      url: `${base}/a2a/${tenantId}/agents/${agent.id}`,
      preferredTransport: 'JSONRPC',
      capabilities: { streaming: true, pushNotifications: false },
      skills: [{ id: 'conversation', name: 'Helper' }],
      securitySchemes: {
        bearer: { type: 'http', scheme: 'bearer' },
        oauth2: { type: 'oauth2', flows: { clientCredentials: { tokenUrl: `${base}/api/v1/identity/oauth/token` } } },
      },
      security: [{ bearer: [] }, { oauth2: [] }],
    });

    const client = await clientFor(agent.id);
    const seen = await client.getAgentCard();
    expect(seen.name).toBe('Helper');
    expect(seen.capabilities?.streaming).toBe(true);
  });

  it('is not served under another tenant path, nor for a paused agent', async () => {
    const agent = await t.agent(key, { model: 'builtin/echo' });
    const other = await t.tenant();
    expect((await fetch(`${base}${cardPath(agent.id, other.id)}`)).status).toBe(404);
    const paused = await t.api(key).POST('/api/v1/agents/{id}/pause', { params: { path: { id: agent.id } } });
    expect(paused.response.status, JSON.stringify(paused.error)).toBe(200);
    expect((await fetch(`${base}${cardPath(agent.id)}`)).status).toBe(404);
  });
});

describe('Agent Card switch', () => {
  it('publicAgentCard: on by default; off, the card answers as for an unknown agent while the endpoint still serves', async () => {
    const agent = await t.agent(key, { name: 'Private', model: 'builtin/echo' });
    expect(agent.configuration.publicAgentCard).toBe(true);

    const hidden = await t.api(key).POST('/api/v1/agents/{id}', {
      params: { path: { id: agent.id } },
      body: { configuration: { publicAgentCard: false } },
    });
    expect(hidden.response.status, JSON.stringify(hidden.error)).toBe(200);
    expect(hidden.data!.configuration.publicAgentCard).toBe(false);
    const seen = async (path: string) => {
      const res = await fetch(`${base}${path}`);
      const { instance: _instance, requestId: _requestId, ...body } = (await res.json()) as Record<string, unknown>;
      return { status: res.status, body };
    };
    const off = await seen(cardPath(agent.id));
    expect(off).toMatchObject({ status: 404, body: { code: 'not_found' } });
    expect(off).toEqual(await seen(cardPath(randomUUID())));

    // The card is only discovery: a caller with credentials still reaches the agent.
    const call = await fetch(`${base}/a2a/${tenantId}/agents/${agent.id}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'message/send',
        params: { message: { kind: 'message', messageId: randomUUID(), role: 'user', parts: [{ kind: 'text', text: 'hi' }] } },
      }),
    });
    expect(call.status).toBe(200);
    expect(((await call.json()) as { result: unknown }).result).toMatchObject({ kind: 'task', status: { state: 'completed' } });

    const shown = await t.api(key).POST('/api/v1/agents/{id}', {
      params: { path: { id: agent.id } },
      body: { configuration: { publicAgentCard: true } },
    });
    expect(shown.response.status).toBe(200);
    expect((await fetch(`${base}${cardPath(agent.id)}`)).status).toBe(200);
  });
});

describe('JSON-RPC with the SDK client', () => {
  it('message/send runs the agent and answers the completed task; tasks/get reads it back', async () => {
    const agent = await t.agent(key, { model: 'builtin/echo' });
    const client = await clientFor(agent.id);
    const task = (await client.sendMessage(userMessage('hello over a2a'))) as Task;
    expect(task.id).toBeTruthy();
    expect(task.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(textOf(task)).toBe('hello over a2a');

    const run = await t.api(key).GET('/api/v1/runs/{runId}', { params: { path: { runId: task.id } } });
    expect(run.data).toMatchObject({
      id: task.id,
      kind: 'a2a',
      status: 'completed',
      conversationId: task.contextId,
      output: 'hello over a2a',
    });

    const again = await client.getTask({ id: task.id, historyLength: 10 } as never);
    expect(again.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(again.history.map((m) => m.role)).toEqual([Role.ROLE_USER, Role.ROLE_AGENT]);

    // The context continues the conversation.
    const next = (await client.sendMessage(userMessage('second turn', task.contextId))) as Task;
    expect(next.contextId).toBe(task.contextId);
    expect(next.id).not.toBe(task.id);
  });

  it('message/stream gives the task, its text in chunks and a final completed status, in that order', async () => {
    const agent = await t.agent(key, { model: 'builtin/echo' });
    const client = await clientFor(agent.id);
    const kinds: string[] = [];
    let text = '';
    let final: TaskState | undefined;
    const lastChunks: boolean[] = [];
    for await (const event of client.sendMessageStream(userMessage('one two three'))) {
      const payload = event.payload!;
      kinds.push(payload.$case);
      if (payload.$case === 'artifactUpdate') {
        const chunk = payload.value.artifact!.parts.map((p) => (p.content?.$case === 'text' ? p.content.value : '')).join('');
        text = payload.value.append ? text + chunk : chunk;
        lastChunks.push(payload.value.lastChunk);
      }
      if (payload.$case === 'statusUpdate') final = payload.value.status?.state;
    }
    expect(kinds[0]).toBe('task');
    expect(kinds.at(-1)).toBe('statusUpdate');
    expect(kinds.slice(1, -1).every((k) => k === 'artifactUpdate')).toBe(true);
    expect(text).toBe('one two three');
    expect(final).toBe(TaskState.TASK_STATE_COMPLETED);
    // The artifact's end is said before the final status: only its last update has lastChunk.
    expect(lastChunks.at(-1)).toBe(true);
    expect(lastChunks.slice(0, -1).every((last) => last === false)).toBe(true);
  });

  it('tasks/cancel ends a slow run as canceled; a second cancel is TaskNotCancelable; an unknown task is TaskNotFound', async () => {
    const agent = await t.agent(key, { model: 'builtin/echo' });
    const client = await clientFor(agent.id);
    const started = await client.sendMessage({
      ...userMessage('/delay 500\na b c d e f g h'),
      configuration: { returnImmediately: true, acceptedOutputModes: [] },
    } as never);
    const task = started as Task;
    expect(task.status?.state).toBe(TaskState.TASK_STATE_WORKING);

    const canceled = await client.cancelTask({ id: task.id } as never);
    expect(canceled.status?.state).toBe(TaskState.TASK_STATE_CANCELED);
    const run = await t.api(key).GET('/api/v1/runs/{runId}', { params: { path: { runId: task.id } } });
    expect(run.data?.status).toBe('cancelled');

    await expect(client.cancelTask({ id: task.id } as never)).rejects.toMatchObject({ name: 'TaskNotCancelableError' });
    await expect(client.getTask({ id: randomUUID() } as never)).rejects.toMatchObject({ name: 'TaskNotFoundError' });
  });

  it('tasks/resubscribe after a dropped stream rebuilds the whole text and ends completed', async () => {
    const agent = await t.agent(key, { model: 'builtin/echo' });
    const client = await clientFor(agent.id);
    const abort = new AbortController();
    let taskId = '';
    await expect(
      (async () => {
        for await (const event of client.sendMessageStream(userMessage('/delay 100\nalpha beta gamma delta'), { signal: abort.signal })) {
          if (event.payload?.$case === 'task') taskId = event.payload.value.id;
          if (event.payload?.$case === 'artifactUpdate') abort.abort();
        }
      })(),
    ).rejects.toThrow();
    expect(taskId).not.toBe('');

    let text = '';
    let final: TaskState | undefined;
    for await (const event of client.resubscribeTask({ id: taskId } as never)) {
      const payload = event.payload!;
      if (payload.$case === 'artifactUpdate') {
        const chunk = payload.value.artifact!.parts.map((p) => (p.content?.$case === 'text' ? p.content.value : '')).join('');
        text = payload.value.append ? text + chunk : chunk;
      }
      if (payload.$case === 'statusUpdate') final = payload.value.status?.state;
    }
    expect(text).toBe('alpha beta gamma delta');
    expect(final).toBe(TaskState.TASK_STATE_COMPLETED);
  });
});

describe('JSON-RPC over plain HTTP', () => {
  const rpc = (agentId: string, body: unknown, credential: string | null = key) =>
    fetch(`${base}/a2a/${tenantId}/agents/${agentId}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(credential ? { authorization: `Bearer ${credential}` } : {}) },
      body: JSON.stringify(body),
    });

  it('needs the API credentials and agents:write; another tenant sees no agent', async () => {
    const agent = await t.agent(key, { model: 'builtin/echo' });
    const call = { jsonrpc: '2.0', id: 1, method: 'tasks/get', params: { id: randomUUID() } };
    expect((await rpc(agent.id, call, null)).status).toBe(401);
    expect((await rpc(agent.id, call, await t.key(key, ['agents:read']))).status).toBe(403);
    const other = await t.tenant();
    expect((await rpc(agent.id, call, other.key)).status).toBe(404);
  });

  it('a stream failing after it began ends with a JSON-RPC internal error, and a failing call answers one', async () => {
    const agent = await t.agent(key, { model: 'builtin/echo' });
    const call = {
      jsonrpc: '2.0',
      id: 'stream-1',
      method: 'message/stream',
      params: { message: { role: 'user', messageId: randomUUID(), parts: [{ kind: 'text', text: '/delay 100\nalpha beta gamma' }] } },
    };
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(), 8000);
    const res = await fetch(`${base}/a2a/${tenantId}/agents/${agent.id}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
      body: JSON.stringify(call),
      signal: controller.signal,
    });
    expect(res.status).toBe(200);
    const reader = res.body!.getReader();
    const decoder = new TextDecoder();
    let body = '';
    let damaged = false;
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        body += decoder.decode(value, { stream: true });
        const taskId = /"kind":"task".*?"id":"([^"]+)"/.exec(body)?.[1] ?? /"taskId":"([^"]+)"/.exec(body)?.[1];
        if (!damaged && body.includes('artifact-update') && taskId) {
          // The run's row becomes unreadable while it answers: the stream's last read of it fails.
          await t.db.kysely.updateTable('runs').set({ options: 'not json' }).where('id', '=', taskId).execute();
          damaged = true;
        }
      }
    } finally {
      clearTimeout(timer);
    }
    expect(damaged).toBe(true);
    const events = body
      .split('\n\n')
      .filter((e) => e.startsWith('data: '))
      .map((e) => JSON.parse(e.slice(6)) as { id: unknown; result?: unknown; error?: { code: number; message: string } });
    expect(events.at(-1)).toEqual({ jsonrpc: '2.0', id: 'stream-1', error: { code: -32603, message: 'internal error' } });
    const taskId = (events[0].result as { id: string }).id;

    // A call failing for no domain reason answers a JSON-RPC error too, not a 500 problem.
    const get = await rpc(agent.id, { jsonrpc: '2.0', id: 2, method: 'tasks/get', params: { id: taskId } });
    expect(get.status).toBe(200);
    expect(await get.json()).toEqual({ jsonrpc: '2.0', id: 2, error: { code: -32603, message: 'internal error' } });
  });

  it('answers malformed calls with JSON-RPC errors', async () => {
    const agent = await t.agent(key, { model: 'builtin/echo' });
    const answer = async (body: unknown) => {
      const res = await rpc(agent.id, body);
      expect(res.status).toBe(200);
      return (await res.json()) as { id: unknown; error: { code: number; message: string } };
    };
    expect((await answer({ id: 7, method: 'tasks/get' })).error.code).toBe(-32600);
    expect(await answer({ jsonrpc: '2.0', id: 8, method: 'tasks/list', params: {} })).toMatchObject({ id: 8, error: { code: -32601 } });
    expect((await answer({ jsonrpc: '2.0', id: 9, method: 'message/send', params: { message: { role: 'user' } } })).error.code).toBe(
      -32602,
    );
    const file = { kind: 'file', file: { uri: 'https://example.com/a.pdf' } };
    const send = { jsonrpc: '2.0', id: 10, method: 'message/send', params: { message: { role: 'user', messageId: 'm1', parts: [file] } } };
    expect((await answer(send)).error.code).toBe(-32005);
  });
});
