import { Agentry, type AgentInput, AgentryError, type ExecuteInput, type RunEvent } from '@agentry/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_JSON_DEPTH, MAX_RUN_JSON_BYTES } from '../../src/json-bounds.js';
import { startProcess, type TestProcess } from '../helpers/app.js';
import { startMcpServer } from '../helpers/mcp-server.js';
import { cli } from '../helpers/process.js';

/**
 * Values nested thousands of levels deep, from a model or a remote server, used to overflow the stack
 * where the run's events were serialised (issue 33, item 1): an unhandled rejection that took the
 * whole process down, or a run left `running` for good. Each enters a run through one bound
 * (src/json-bounds.ts) and ends as a failed tool call or an invalid answer. Run against the built
 * server as a real process, so that a crash is seen as one: it must stay up, keep answering /healthz
 * during and after, and log no unhandled rejection (main.ts's backstop would say so).
 */

let proc: TestProcess;
let client: Agentry;
let mcp: Awaited<ReturnType<typeof startMcpServer>>;
/** The content type of each failed answer the client got, to see that a failure came as a problem. */
const failureTypes: string[] = [];

beforeAll(async () => {
  mcp = await startMcpServer({ hostile: true });
  proc = await startProcess({ MCP_ALLOWED_HOSTS: '127.0.0.1' });
  const created = await cli(['tenants', 'create', 'deep', '--json'], proc.database.env);
  expect(created.code, created.stderr).toBe(0);
  // No retries: each answer is the one the server gave.
  client = new Agentry({
    baseUrl: proc.url,
    apiKey: JSON.parse(created.stdout).apiKey,
    maxRetries: 0,
    fetch: async (input, init) => {
      const res = await fetch(input, init);
      if (!res.ok) failureTypes.push(res.headers.get('content-type') ?? '');
      return res;
    },
  });
});
afterAll(async () => {
  await proc?.close();
  await mcp?.close();
});

// A run left running would never answer: the test fails instead of waiting for ever.
const bounded = () => ({ signal: AbortSignal.timeout(30_000) });

const agent = async (body: Partial<AgentInput>) =>
  (await client.agents.create({ name: 'deep', appId: 'deep', model: 'builtin/echo', ...body }, bounded())).id;
const execute = (id: string, body: ExecuteInput) => client.agents.execute(id, body, bounded());
/** The failure a call ended with (it must fail). */
const failure = async (call: Promise<unknown>) => {
  const err = await call.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(AgentryError);
  return err as AgentryError;
};
/** /healthz's status: 0 when it did not answer. */
const health = () =>
  client.health.live().then(
    () => 200,
    (err: AgentryError) => err.status,
  );

/** /healthz polled while `work` runs, then once after: every answer must be 200 and the process alive. */
async function whileHealthy<T>(work: () => Promise<T>): Promise<T> {
  let done = false;
  const answers: number[] = [];
  const poll = (async () => {
    while (!done) {
      answers.push(await health());
      await new Promise((r) => setTimeout(r, 20));
    }
  })();
  try {
    return await work();
  } finally {
    done = true;
    await poll;
    answers.push(await health());
    expect(answers.length).toBeGreaterThan(0);
    expect(answers.every((s) => s === 200)).toBe(true);
    expect(proc.server.child.exitCode).toBeNull();
    expect(proc.server.output()).not.toMatch(/unhandled rejection|RangeError|Maximum call stack/i);
  }
}

const nestedArrays = (depth: number) => '['.repeat(depth) + ']'.repeat(depth);

describe('a value nested thousands of levels deep', () => {
  it('as a tool call’s input (builtin/echo, 12 KB): the call fails with the reason, the run completes, the process stays up', async () => {
    const id = await agent({ tools: [{ type: 'builtin', name: 'memory' }] });
    const message = `/tool memory_read {"x":${nestedArrays(6000)}}`;
    expect(message.length).toBeGreaterThan(12_000);
    const res = await whileHealthy(() => execute(id, { message }));
    expect(res.status).toBe('completed');
    const reason = `Invalid input for tool memory_read: the input nests deeper than ${MAX_JSON_DEPTH} levels`;
    // The input is not kept: the call records an empty one, and the model is told why.
    expect(res.toolCalls).toEqual([{ name: 'memory_read', input: {}, result: { error: { code: 'invalid_tool_call', message: reason } } }]);
    expect(res.output).toBe(`memory_read returned ${JSON.stringify(reason)}`);
    // Its end was written: the run is stored as completed.
    const run = await client.runs.get(res.runId, bounded());
    expect(run.status).toBe('completed');
  });

  it('as an unknown tool’s input, streamed: the stream ends with done', async () => {
    const id = await agent({ tools: [{ type: 'builtin', name: 'memory' }] });
    const events = await whileHealthy(async () => {
      // No reconnection: the one stream must end with done.
      const stream = client.agents.stream(
        id,
        { message: `/tool anything {"x":${nestedArrays(6000)}}` },
        { ...bounded(), maxReconnects: 0 },
      );
      const received: RunEvent[] = [];
      for await (const event of stream) received.push(event);
      return received;
    });
    expect(events.map((e) => e.type).at(-1)).toBe('done');
    const start = events.find((e) => e.type === 'tool_call_start')!;
    expect(start.data).toMatchObject({ name: 'anything', input: {} });
  });

  it('as an MCP tool’s structuredContent (6,000 levels): the call fails as invalid_tool_result, the run goes on', async () => {
    const id = await agent({ tools: [{ type: 'mcp', url: mcp.url }] });
    const res = await whileHealthy(() => execute(id, { message: '/tool nested {"depth":6000}' }));
    expect(res.status).toBe('completed');
    const result = { error: { code: 'invalid_tool_result', message: `the tool's result nests deeper than ${MAX_JSON_DEPTH} levels` } };
    expect(res.toolCalls).toEqual([{ name: 'nested', input: { depth: 6000 }, result }]);
    expect(mcp.state.calls).toContainEqual({ name: 'nested', args: { depth: 6000 } });
    // Within the bound, the same tool's result is the model's as it was.
    const within = await execute(id, { message: `/tool nested {"depth":${MAX_JSON_DEPTH - 1}}` });
    expect(within.toolCalls[0].result).toEqual({ value: JSON.parse(nestedArrays(MAX_JSON_DEPTH - 2).replace('[]', '["bottom"]')) });
  });

  it('as an MCP tool’s content larger than the bound: the call fails as invalid_tool_result', async () => {
    const id = await agent({ tools: [{ type: 'mcp', url: mcp.url }] });
    const res = await whileHealthy(() => execute(id, { message: `/tool bulky {"chars":${MAX_RUN_JSON_BYTES}}` }));
    expect(res.toolCalls[0].result).toEqual({
      error: { code: 'invalid_tool_result', message: `the tool's result is larger than ${MAX_RUN_JSON_BYTES} bytes as JSON` },
    });
  });

  it('as a structured answer (20,000 levels): the run fails with invalid_output, and ends', async () => {
    const id = await agent({});
    const message = `{"a":${nestedArrays(20_000)}}`;
    const failuresBefore = failureTypes.length;
    const err = await whileHealthy(() =>
      failure(execute(id, { message, responseFormat: { type: 'json_schema', schema: { type: 'object' } } })),
    );
    expect(err.status, err.message).toBe(502);
    expect(failureTypes.slice(failuresBefore)).toEqual([expect.stringContaining('application/problem+json')]);
    expect(err.code).toBe('invalid_output');
    const runId = /run ([0-9a-f-]{36})/.exec(err.detail)![1];
    const run = await client.runs.get(runId, bounded());
    expect(run.status).toBe('failed');
    expect(run.error!.code).toBe('invalid_output');
    // The model was told why its first answer could not be used (builtin/echo repeats that, which is no JSON).
    expect(run.steps[1].text).toBe(
      `Your answer cannot be used: the answer nests deeper than ${MAX_JSON_DEPTH} levels. Answer again with only the JSON object, valid against the schema given in the instructions.`,
    );
    // Its conversation is free again: a next turn in it runs.
    const next = await execute(id, { message: 'hello', conversationId: run.conversationId! });
    expect(next.status).toBe('completed');
  });
});
