import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { paths } from '../../packages/client/src/generated/openapi.js';
import { ManualClock } from '../../src/clock.js';
import { expectProblem, startApp, type TestApp } from '../helpers/app.js';
import { type ExecuteBody, execute as executeOn } from '../helpers/execute.js';
import { startMcpServer } from '../helpers/mcp-server.js';
import { readSse } from '../helpers/sse.js';
import { type Approval, endedRun, pendingOf, shoutWaits } from './helpers.js';

let t: TestApp;
let key: string;
let mcp: Awaited<ReturnType<typeof startMcpServer>>;
/** The app's clock: an approval's time runs out by moving it. */
const clock = new ManualClock();

beforeAll(async () => {
  t = await startApp({}, { clock });
  ({ key } = await t.tenant('acme'));
  await t.listen();
  mcp = await startMcpServer();
});
afterAll(async () => {
  await t.close();
  await mcp.close();
});

type Configuration = NonNullable<paths['/api/v1/agents']['post']['requestBody']>['content']['application/json']['configuration'];

const shoutCalls = () => mcp.state.calls.filter((c) => c.name === 'shout');
const execute = (agentId: string, body: ExecuteBody, as = key) => executeOn(t.api(as), agentId, body);
const approve = (id: string, as = key, body: { arguments?: Record<string, unknown> } = {}) =>
  t.api(as).POST('/api/v1/approvals/{id}/approve', { params: { path: { id } }, body });
const reject = (id: string, reason: string, as = key) =>
  t.api(as).POST('/api/v1/approvals/{id}/reject', { params: { path: { id } }, body: { reason } });
const approvalOf = (id: string) => t.api(key).GET('/api/v1/approvals/{id}', { params: { path: { id } } });
const approvals = (query: paths['/api/v1/approvals']['get']['parameters']['query'], as = key) =>
  t.api(as).GET('/api/v1/approvals', { params: { query } });
const runOf = (runId: string) => t.api(key).GET('/api/v1/runs/{runId}', { params: { path: { runId } } });
const cancel = (runId: string) => t.api(key).POST('/api/v1/runs/{runId}/cancel', { params: { path: { runId } } });

async function waitingAgent(configuration: Configuration = shoutWaits()) {
  return t.agent(key, { tools: [{ type: 'mcp', url: mcp.url }], configuration });
}

/** Executes `/tool shout {"text":...}`: the answer says the run awaits approval. */
async function executeShout(agentId: string, text: string) {
  const res = await execute(agentId, { message: `/tool shout {"text":"${text}"}` });
  expect(res.response.status).toBe(200);
  expect(res.run?.status).toBe('awaiting_approval');
  return res.run!.runId;
}

describe('a tool call that waits for a person', () => {
  it('stops the run before the call, lists it in the inbox, and runs it once approved', async () => {
    const a = await waitingAgent();
    const before = shoutCalls().length;
    const runId = await executeShout(a.id, 'hello');
    const run = await runOf(runId);
    expect(run.data!.status).toBe('awaiting_approval');
    expect(shoutCalls().length).toBe(before);

    const [approval] = await pendingOf(t, key, runId);
    expect(approval).toMatchObject({
      kind: 'tool_call',
      status: 'pending',
      agentId: a.id,
      reason: 'shouting is loud',
      toolCall: { runId, name: 'shout', arguments: { text: 'hello' } },
      decision: null,
    });
    const approved = await approve(approval.id);
    expect(approved.response.status).toBe(200);
    expect(approved.data).toMatchObject({ id: approval.id, status: 'approved', decision: { by: { type: 'api_key' } } });

    const ended = await endedRun(t, key, runId);
    expect(ended.status).toBe('completed');
    expect(ended.output).toContain('HELLO');
    expect(shoutCalls().slice(before)).toEqual([{ name: 'shout', args: { text: 'hello' } }]);
    expectProblem(await approve(approval.id), 409, 'approval_not_pending');
    // The conversation is free again: the next message is answered.
    const next = await execute(a.id, { message: 'thanks', conversationId: ended.conversationId! });
    expect(next.data).toMatchObject({ status: 'completed', output: 'thanks' });
  });

  it('runs the call with the arguments the approver edited, and the run records them', async () => {
    const a = await waitingAgent();
    const before = shoutCalls().length;
    const runId = await executeShout(a.id, 'delete everything');
    const [approval] = await pendingOf(t, key, runId);
    const res = await approve(approval.id, key, { arguments: { text: 'be nice' } });
    expect(res.data!.decision).toMatchObject({ arguments: { text: 'be nice' } });
    const ended = await endedRun(t, key, runId);
    expect(ended.status).toBe('completed');
    expect(ended.output).toContain('BE NICE');
    expect(ended.output).not.toContain('DELETE');
    expect(shoutCalls().slice(before)).toEqual([{ name: 'shout', args: { text: 'be nice' } }]);
    expect(ended.toolCalls).toMatchObject([{ name: 'shout', input: { text: 'be nice' } }]);
  });

  it('tells the model the rejection as the tool’s result, and the run goes on', async () => {
    const a = await waitingAgent();
    const before = shoutCalls().length;
    const runId = await executeShout(a.id, 'now');
    const [approval] = await pendingOf(t, key, runId);
    const res = await reject(approval.id, 'not during the meeting');
    expect(res.data).toMatchObject({ status: 'rejected', decision: { reason: 'not during the meeting' } });
    const ended = await endedRun(t, key, runId);
    expect(ended.status).toBe('completed');
    // builtin/echo answers with what the tool returned: the model saw the reason.
    expect(ended.output).toBe('shout returned {"error":{"code":"rejected","message":"not during the meeting"}}');
    expect(shoutCalls().length).toBe(before);
  });

  it('waits only for calls whose arguments match the rule’s conditions', async () => {
    const a = await waitingAgent({
      approval: { rules: [{ tool: 'a*d', when: [{ argument: 'a', operator: 'gt', value: 100 }] }] },
    });
    const small = await execute(a.id, { message: '/tool add {"a":2,"b":3}' });
    expect(small.data).toMatchObject({ status: 'completed', output: 'add returned {"sum":5}' });
    const large = await execute(a.id, { message: '/tool add {"a":500,"b":3}' });
    expect(large.run?.status).toBe('awaiting_approval');
    const [approval] = await pendingOf(t, key, large.run!.runId);
    expect(approval.reason).toBe('add with these arguments needs approval');
  });

  it('decides an approval nobody decided in time as the agent says: rejected by default', async () => {
    const a = await waitingAgent(shoutWaits({ timeoutSeconds: 1 }));
    const runId = await executeShout(a.id, 'late');
    const [approval] = await pendingOf(t, key, runId);
    // Its second passes on the app's clock; the sweep (every second) decides it.
    clock.set(Date.parse(approval.expiresAt!));
    const ended = await endedRun(t, key, runId);
    expect(ended.status).toBe('completed');
    expect(ended.output).toContain('"code":"rejected"');
    expect(ended.output).toContain('expired');
    const list = await approvals({ status: 'expired', agentId: a.id });
    expect(list.data!.approvals).toMatchObject([{ status: 'expired', toolCall: { runId }, decision: { by: { type: 'system' } } }]);
  });

  it('refuses a decision once the approval expired, before the sweep decided it (409 approval_expired)', async () => {
    // The sweep stopped: the approval stays pending past its time, as between two passes.
    await t.services.approvals.stop();
    let runId: string;
    let approval: Approval;
    try {
      const a = await waitingAgent(shoutWaits({ timeoutSeconds: 1 }));
      const before = shoutCalls().length;
      runId = await executeShout(a.id, 'too late');
      [approval] = await pendingOf(t, key, runId);
      // Its second passes on the app's clock.
      clock.set(Date.parse(approval.expiresAt!));
      const approved = await approve(approval.id);
      expectProblem(approved, 409, 'approval_expired');
      expect(approved.error!.detail).toContain(approval.expiresAt);
      expectProblem(await reject(approval.id, 'no'), 409, 'approval_expired');
      expect((await approvalOf(approval.id)).data!.status).toBe('pending');
      expect(shoutCalls().length).toBe(before);
    } finally {
      t.services.approvals.startBackground();
    }
    // The sweep decides it as the agent says (reject), and the run goes on.
    const ended = await endedRun(t, key, runId);
    expect(ended.output).toContain('expired');
    expect((await approvalOf(approval.id)).data!.status).toBe('expired');
  });

  it('answers 409 run_awaiting_approval to a message injected while the run waits', async () => {
    const a = await waitingAgent();
    const runId = await executeShout(a.id, 'inject');
    const run = await runOf(runId);
    const res = await t.api(key).POST('/api/v1/conversations/{id}/inject', {
      params: { path: { id: run.data!.conversationId! } },
      body: { content: 'hurry up' },
    });
    expectProblem(res, 409, 'run_awaiting_approval');
    expect(res.error!.detail).toContain(runId);
    // As does a message sent with onActiveRun inject.
    const posted = await execute(a.id, { message: 'hurry up', conversationId: run.data!.conversationId!, onActiveRun: 'inject' });
    expectProblem(posted, 409, 'run_awaiting_approval');
    await cancel(runId);
  });

  it('cancels a waiting run: its approvals are cancelled and cannot be decided', async () => {
    const a = await waitingAgent();
    const runId = await executeShout(a.id, 'wait');
    const [approval] = await pendingOf(t, key, runId);
    const res = await cancel(runId);
    expect(res.response.status).toBe(200);
    expect(res.data).toMatchObject({ status: 'cancelled', error: { code: 'cancelled' } });
    const after = await approvalOf(approval.id);
    expect(after.data!.status).toBe('cancelled');
    expectProblem(await approve(approval.id), 409, 'approval_not_pending');
    expectProblem(await cancel(runId), 409, 'run_not_active');
    // The conversation was released with the run.
    const next = await execute(a.id, { message: 'hi', conversationId: res.data!.conversationId! });
    expect(next.run?.status).toBe('completed');
  });
});

describe('the stream of a waiting run', () => {
  it('sends approval_required, stays open, and carries the continuation on the same sequence', async () => {
    const a = await waitingAgent();
    const res = await t.fetch(`/api/v1/agents/${a.id}/stream`, key, { body: { message: '/tool shout {"text":"streamed"}' } });
    const runId = res.headers.get('x-run-id')!;
    const streamed = readSse(res);
    const [approval] = await pendingOf(t, key, runId);
    // A second follower joins while the run waits, from the start of its events.
    const follower = readSse(await t.fetch(`/api/v1/runs/${runId}/events`, key));
    await approve(approval.id);
    for (const events of [await streamed, await follower]) {
      const names = events.map((e) => e.event).filter((e) => e !== 'token');
      expect(names).toEqual(['approval_required', 'tool_call_start', 'tool_call_end', 'done']);
      expect(events[0].data).toMatchObject({
        approvalId: approval.id,
        toolCall: { name: 'shout', arguments: { text: 'streamed' } },
        reason: 'shouting is loud',
      });
      expect(events.map((e) => Number(e.id))).toEqual(events.map((_, i) => i + 1));
      expect(
        events
          .filter((e) => e.event === 'token')
          .map((e) => e.data.text)
          .join(''),
      ).toContain('STREAMED');
    }
  });
});

describe('the inbox', () => {
  it('lists tool calls and tasks awaiting approval, each with its kind, filtered and paged', async () => {
    const { key: own } = await t.tenant('inbox');
    const a = await t.agent(own, { tools: [{ type: 'mcp', url: mcp.url }], configuration: shoutWaits() });
    const task = await t.api(own).POST('/api/v1/tasks', {
      body: { name: 'send the report', description: 'send it to the board', agentId: a.id, requiresApproval: true },
    });
    expect(task.response.status).toBe(201);
    const taskId = task.data!.id;
    const run = await execute(a.id, { message: '/tool shout {"text":"x"}' }, own);
    const runId = run.run!.runId;
    await pendingOf(t, own, runId);

    const all = await approvals({}, own);
    expect(all.data!.total).toBe(2);
    expect(all.data!.approvals.map((i) => i.kind).sort()).toEqual(['task', 'tool_call']);
    const taskItem = all.data!.approvals.find((i) => i.kind === 'task');
    expect(taskItem).toMatchObject({
      id: taskId,
      status: 'pending',
      agentId: a.id,
      task: { id: taskId, name: 'send the report' },
      toolCall: null,
    });
    const tasksOnly = await approvals({ kind: 'task' }, own);
    expect(tasksOnly.data!.approvals.map((i) => i.id)).toEqual([taskId]);
    const toolsOnly = await approvals({ kind: 'tool_call' }, own);
    expect(toolsOnly.data!.approvals.map((i) => i.toolCall?.runId)).toEqual([runId]);
    const page1 = await approvals({ limit: 1, page: 1 }, own);
    const page2 = await approvals({ limit: 1, page: 2 }, own);
    expect([page1.data!.approvals.length, page2.data!.approvals.length, page1.data!.total]).toEqual([1, 1, 2]);
    expect(page1.data!.approvals[0].id).not.toBe(page2.data!.approvals[0].id);
    const otherAgent = await approvals({ agentId: (await t.agent(own)).id }, own);
    expect(otherAgent.data).toMatchObject({ approvals: [], total: 0 });
    // Another tenant's inbox holds none of it, and cannot decide it.
    expect((await approvals({})).data!.approvals.some((i) => i.agentId === a.id)).toBe(false);
    expectProblem(await approve(taskItem!.id), 404, 'not_found');

    // The task is approved through the inbox as through its own route.
    const approved = await approve(taskId, own);
    expect(approved.data).toMatchObject({ kind: 'task', status: 'approved' });
    const after = await t.api(own).GET('/api/v1/tasks/{id}', { params: { path: { id: taskId } } });
    expect(after.data!.status).not.toBe('awaiting_approval');
    expect((await approvals({ kind: 'task' }, own)).data!.total).toBe(0);
  });

  it('lists one run’s approvals, decided or not, with ?runId (and none of another tenant’s)', async () => {
    const { key: own } = await t.tenant('run-approvals');
    const a = await t.agent(own, { tools: [{ type: 'mcp', url: mcp.url }], configuration: shoutWaits() });
    const first = (await execute(a.id, { message: '/tool shout {"text":"one"}' }, own)).run!.runId;
    const second = (await execute(a.id, { message: '/tool shout {"text":"two"}' }, own)).run!.runId;
    const [waiting] = await pendingOf(t, own, first);
    await pendingOf(t, own, second);
    expect((await approve(waiting.id, own, { arguments: { text: 'ONE' } })).response.status).toBe(200);
    await endedRun(t, own, first);

    // Every status by default: the approved one is still listed for its run, with its decision.
    const ofFirst = await approvals({ runId: first }, own);
    expect(ofFirst.data).toMatchObject({ total: 1 });
    expect(ofFirst.data!.approvals[0]).toMatchObject({
      id: waiting.id,
      status: 'approved',
      toolCall: { runId: first, arguments: { text: 'one' } },
      decision: { arguments: { text: 'ONE' } },
    });
    expect((await approvals({ runId: second }, own)).data!.approvals.map((i) => i.status)).toEqual(['pending']);
    expect((await approvals({ runId: first, status: 'pending' }, own)).data!.total).toBe(0);
    expect((await approvals({ runId: first }, key)).data).toMatchObject({ approvals: [], total: 0 });
    const bad = await t.raw('GET', '/api/v1/approvals?runId=', { key: own });
    expectProblem(bad, 400, 'validation_failed');
    expect(JSON.stringify(bad.body)).toContain('runId');
    await t.api(own).POST('/api/v1/runs/{runId}/cancel', { params: { path: { runId: second } } });
  });
});

describe('who may decide', () => {
  it('needs agents:write to decide and agents:read to look', async () => {
    const a = await waitingAgent();
    const runId = await executeShout(a.id, 'perm');
    const [approval] = await pendingOf(t, key, runId);
    const reader = await t.key(key, ['agents:read']);
    const outsider = await t.key(key, ['skills:read']);
    expect((await approvals({}, reader)).response.status).toBe(200);
    expectProblem(await approve(approval.id, reader), 403, 'forbidden');
    expectProblem(await reject(approval.id, 'no', reader), 403, 'forbidden');
    expectProblem(await approvals({}, outsider), 403, 'forbidden');
    expect((await approvalOf(approval.id)).data!.status).toBe('pending');
    await cancel(runId);
  });
});

describe('refusals', () => {
  it('answers 400 naming the field, and 404 for an unknown approval', async () => {
    const a = await waitingAgent();
    const runId = await executeShout(a.id, 'bad');
    const [approval] = await pendingOf(t, key, runId);
    // Bodies and queries the types forbid go raw.
    const noReason = await t.raw('POST', `/api/v1/approvals/${approval.id}/reject`, { key, body: {} });
    expectProblem(noReason, 400, 'validation_failed');
    expect(JSON.stringify(noReason.body)).toContain('reason');
    const notObject = await t.raw('POST', `/api/v1/approvals/${approval.id}/approve`, { key, body: { arguments: 'text' } });
    expectProblem(notObject, 400, 'validation_failed');
    expect(JSON.stringify(notObject.body)).toContain('arguments');
    const huge = await approve(approval.id, key, { arguments: { text: 'x'.repeat(100_001) } });
    expectProblem(huge, 400, 'validation_failed');
    expect(JSON.stringify(huge.error)).toContain('arguments');
    const kind = await t.raw('GET', '/api/v1/approvals?kind=email', { key });
    expectProblem(kind, 400, 'validation_failed');
    expect(JSON.stringify(kind.body)).toContain('kind');
    expectProblem(await approve('0190a6c8-0000-7000-8000-000000000000'), 404, 'not_found');
    // Nothing was decided by the refused requests.
    expect((await approvalOf(approval.id)).data!.status).toBe('pending');

    const badRule = await t.api(key).POST('/api/v1/agents', {
      body: {
        name: 'x',
        appId: 'app',
        configuration: { approval: { rules: [{ tool: 'shout', when: [{ argument: 'text', operator: 'matches', value: '(' }] }] } },
      },
    });
    expectProblem(badRule, 400, 'validation_failed');
    expect(JSON.stringify(badRule.error)).toContain('configuration.approval.rules.0.when.0.value');
    const badTool = await t.api(key).POST('/api/v1/agents', {
      body: { name: 'x', appId: 'app', configuration: { approval: { rules: [{ tool: 'shout now' }] } } },
    });
    expectProblem(badTool, 400, 'validation_failed');
    expect(JSON.stringify(badTool.error)).toContain('tool');
    await cancel(runId);
  });
});

describe('a delegated call that waits', () => {
  it('waits in the callee’s inbox, and the caller’s tool call gets the callee’s answer once approved', async () => {
    const helper = await t.agent(key, { name: 'Helper', tools: [{ type: 'mcp', url: mcp.url }], configuration: shoutWaits() });
    const lead = await t.agent(key, { name: 'Lead', tools: [{ type: 'agent', agentId: helper.id, name: 'ask_helper' }] });
    const message = `/tool ask_helper ${JSON.stringify({ message: '/tool shout {"text":"deep"}' })}`;
    const leadRun = execute(lead.id, { message });
    const waiting = await vi.waitFor(
      async () => {
        const [first] = (await approvals({ agentId: helper.id })).data!.approvals;
        if (!first) throw new Error('nothing waits in the helper’s inbox yet');
        return first;
      },
      { timeout: 10_000, interval: 50 },
    );
    expect(waiting).toMatchObject({ kind: 'tool_call', agentId: helper.id, toolCall: { name: 'shout', arguments: { text: 'deep' } } });
    await approve(waiting.id);
    const res = await leadRun;
    expect(res.run?.status).toBe('completed');
    expect(res.run!.toolCalls[0]).toMatchObject({ name: 'ask_helper', result: { agentId: helper.id, runId: waiting.toolCall!.runId } });
    expect(res.run!.toolCalls[0].result).toMatchObject({ output: expect.stringContaining('DEEP') });
  });
});

describe('a task whose run waits', () => {
  it('stays running while its run awaits approval, and completes with the run once approved', async () => {
    const a = await waitingAgent();
    const task = await t.api(key).POST('/api/v1/tasks', {
      body: { name: 'shout it', description: '/tool shout {"text":"from a task"}', agentId: a.id },
    });
    expect(task.response.status).toBe(201);
    const id = task.data!.id;
    const taskStatus = async () => (await t.api(key).GET('/api/v1/tasks/{id}', { params: { path: { id } } })).data!.status;
    const runId = await vi.waitFor(
      async () => {
        const runs = await t.api(key).GET('/api/v1/tasks/{id}/runs', { params: { path: { id } } });
        const waiting = runs.data!.runs.find((r) => r.status === 'awaiting_approval');
        if (!waiting) throw new Error('the task’s run does not await approval yet');
        return waiting.id;
      },
      { timeout: 10_000, interval: 50 },
    );
    expect(runId).toBeDefined();
    expect(await taskStatus()).toBe('running');
    const [approval] = await pendingOf(t, key, runId);
    await approve(approval.id);
    expect((await endedRun(t, key, runId)).output).toContain('FROM A TASK');
    await expect.poll(taskStatus, { timeout: 10_000, interval: 50 }).toBe('completed');
  });
});
