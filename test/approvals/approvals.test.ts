import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectProblem, startApp, type TestApp } from '../helpers/app.js';
import { startMcpServer } from '../helpers/mcp-server.js';
import { readSse } from '../helpers/sse.js';
import { type Approval, endedRun, pendingOf, shoutWaits } from './helpers.js';

let t: TestApp;
let key: string;
let mcp: Awaited<ReturnType<typeof startMcpServer>>;

beforeAll(async () => {
  t = await startApp();
  ({ key } = await t.tenant('acme'));
  await t.listen();
  mcp = await startMcpServer();
});
afterAll(async () => {
  await t.close();
  await mcp.close();
});

const shoutCalls = () => mcp.state.calls.filter((c) => c.name === 'shout');

async function waitingAgent(configuration: Record<string, unknown> = shoutWaits()) {
  return t.agent(key, { tools: [{ type: 'mcp', url: mcp.url }], configuration });
}

/** Executes `/tool shout {"text":...}`: the answer says the run awaits approval. */
async function executeShout(agentId: string, text: string) {
  const res = await t.request('POST', `/api/v1/agents/${agentId}/execute`, { key, body: { message: `/tool shout {"text":"${text}"}` } });
  expect(res.status).toBe(200);
  expect(res.body.status).toBe('awaiting_approval');
  return res.body.runId as string;
}

describe('a tool call that waits for a person', () => {
  it('stops the run before the call, lists it in the inbox, and runs it once approved', async () => {
    const a = await waitingAgent();
    const before = shoutCalls().length;
    const runId = await executeShout(a.id, 'hello');
    const run = await t.request('GET', `/api/v1/runs/${runId}`, { key });
    expect(run.body.status).toBe('awaiting_approval');
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
    const approved = await t.request('POST', `/api/v1/approvals/${approval.id}/approve`, { key });
    expect(approved.status).toBe(200);
    expect(approved.body).toMatchObject({ id: approval.id, status: 'approved', decision: { by: { type: 'api_key' } } });

    const ended = await endedRun(t, key, runId);
    expect(ended.status).toBe('completed');
    expect(ended.output).toContain('HELLO');
    expect(shoutCalls().slice(before)).toEqual([{ name: 'shout', args: { text: 'hello' } }]);
    expectProblem(await t.request('POST', `/api/v1/approvals/${approval.id}/approve`, { key }), 409, 'approval_not_pending');
    // The conversation is free again: the next message is answered.
    const next = await t.request('POST', `/api/v1/agents/${a.id}/execute`, {
      key,
      body: { message: 'thanks', conversationId: ended.conversationId },
    });
    expect(next.body).toMatchObject({ status: 'completed', output: 'thanks' });
  });

  it('runs the call with the arguments the approver edited, and the run records them', async () => {
    const a = await waitingAgent();
    const before = shoutCalls().length;
    const runId = await executeShout(a.id, 'delete everything');
    const [approval] = await pendingOf(t, key, runId);
    const res = await t.request('POST', `/api/v1/approvals/${approval.id}/approve`, { key, body: { arguments: { text: 'be nice' } } });
    expect(res.body.decision).toMatchObject({ arguments: { text: 'be nice' } });
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
    const res = await t.request('POST', `/api/v1/approvals/${approval.id}/reject`, { key, body: { reason: 'not during the meeting' } });
    expect(res.body).toMatchObject({ status: 'rejected', decision: { reason: 'not during the meeting' } });
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
    const small = await t.request('POST', `/api/v1/agents/${a.id}/execute`, { key, body: { message: '/tool add {"a":2,"b":3}' } });
    expect(small.body).toMatchObject({ status: 'completed', output: 'add returned {"sum":5}' });
    const large = await t.request('POST', `/api/v1/agents/${a.id}/execute`, { key, body: { message: '/tool add {"a":500,"b":3}' } });
    expect(large.body.status).toBe('awaiting_approval');
    const [approval] = await pendingOf(t, key, large.body.runId);
    expect(approval.reason).toBe('add with these arguments needs approval');
  });

  it('decides an approval nobody decided in time as the agent says: rejected by default', async () => {
    const a = await waitingAgent(shoutWaits({ timeoutSeconds: 1 }));
    const runId = await executeShout(a.id, 'late');
    const ended = await endedRun(t, key, runId);
    expect(ended.status).toBe('completed');
    expect(ended.output).toContain('"code":"rejected"');
    expect(ended.output).toContain('expired');
    const list = await t.request('GET', `/api/v1/approvals?status=expired&agentId=${a.id}`, { key });
    expect(list.body.approvals).toMatchObject([{ status: 'expired', toolCall: { runId }, decision: { by: { type: 'system' } } }]);
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
      while (Date.now() <= Date.parse(approval.expiresAt!)) await new Promise((r) => setTimeout(r, 50));
      const approved = await t.request('POST', `/api/v1/approvals/${approval.id}/approve`, { key });
      expectProblem(approved, 409, 'approval_expired');
      expect(approved.body.detail).toContain(approval.expiresAt);
      expectProblem(
        await t.request('POST', `/api/v1/approvals/${approval.id}/reject`, { key, body: { reason: 'no' } }),
        409,
        'approval_expired',
      );
      expect((await t.request('GET', `/api/v1/approvals/${approval.id}`, { key })).body.status).toBe('pending');
      expect(shoutCalls().length).toBe(before);
    } finally {
      t.services.approvals.startBackground();
    }
    // The sweep decides it as the agent says (reject), and the run goes on.
    const ended = await endedRun(t, key, runId);
    expect(ended.output).toContain('expired');
    expect((await t.request('GET', `/api/v1/approvals/${approval.id}`, { key })).body.status).toBe('expired');
  });

  it('answers 409 run_awaiting_approval to a message injected while the run waits', async () => {
    const a = await waitingAgent();
    const runId = await executeShout(a.id, 'inject');
    const run = await t.request('GET', `/api/v1/runs/${runId}`, { key });
    const res = await t.request('POST', `/api/v1/conversations/${run.body.conversationId}/inject`, { key, body: { content: 'hurry up' } });
    expectProblem(res, 409, 'run_awaiting_approval');
    expect(res.body.detail).toContain(runId);
    // As does a message sent with onActiveRun inject.
    const posted = await t.request('POST', `/api/v1/agents/${a.id}/execute`, {
      key,
      body: { message: 'hurry up', conversationId: run.body.conversationId, onActiveRun: 'inject' },
    });
    expectProblem(posted, 409, 'run_awaiting_approval');
    await t.request('POST', `/api/v1/runs/${runId}/cancel`, { key });
  });

  it('cancels a waiting run: its approvals are cancelled and cannot be decided', async () => {
    const a = await waitingAgent();
    const runId = await executeShout(a.id, 'wait');
    const [approval] = await pendingOf(t, key, runId);
    const res = await t.request('POST', `/api/v1/runs/${runId}/cancel`, { key });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ status: 'cancelled', error: { code: 'cancelled' } });
    const after = await t.request('GET', `/api/v1/approvals/${approval.id}`, { key });
    expect(after.body.status).toBe('cancelled');
    expectProblem(await t.request('POST', `/api/v1/approvals/${approval.id}/approve`, { key }), 409, 'approval_not_pending');
    expectProblem(await t.request('POST', `/api/v1/runs/${runId}/cancel`, { key }), 409, 'run_not_active');
    // The conversation was released with the run.
    const next = await t.request('POST', `/api/v1/agents/${a.id}/execute`, {
      key,
      body: { message: 'hi', conversationId: res.body.conversationId },
    });
    expect(next.body.status).toBe('completed');
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
    await t.request('POST', `/api/v1/approvals/${approval.id}/approve`, { key });
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
    const task = await t.request('POST', '/api/v1/tasks', {
      key: own,
      body: { name: 'send the report', description: 'send it to the board', agentId: a.id, requiresApproval: true },
    });
    expect(task.status).toBe(201);
    const run = await t.request('POST', `/api/v1/agents/${a.id}/execute`, { key: own, body: { message: '/tool shout {"text":"x"}' } });
    const runId = run.body.runId;
    await pendingOf(t, own, runId);

    const all = await t.request('GET', '/api/v1/approvals', { key: own });
    expect(all.body.total).toBe(2);
    expect(all.body.approvals.map((i: Approval) => i.kind).sort()).toEqual(['task', 'tool_call']);
    const taskItem = all.body.approvals.find((i: Approval) => i.kind === 'task');
    expect(taskItem).toMatchObject({
      id: task.body.id,
      status: 'pending',
      agentId: a.id,
      task: { id: task.body.id, name: 'send the report' },
      toolCall: null,
    });
    const tasksOnly = await t.request('GET', '/api/v1/approvals?kind=task', { key: own });
    expect(tasksOnly.body.approvals.map((i: Approval) => i.id)).toEqual([task.body.id]);
    const toolsOnly = await t.request('GET', '/api/v1/approvals?kind=tool_call', { key: own });
    expect(toolsOnly.body.approvals.map((i: Approval) => i.toolCall?.runId)).toEqual([runId]);
    const page1 = await t.request('GET', '/api/v1/approvals?limit=1&page=1', { key: own });
    const page2 = await t.request('GET', '/api/v1/approvals?limit=1&page=2', { key: own });
    expect([page1.body.approvals.length, page2.body.approvals.length, page1.body.total]).toEqual([1, 1, 2]);
    expect(page1.body.approvals[0].id).not.toBe(page2.body.approvals[0].id);
    const otherAgent = await t.request('GET', `/api/v1/approvals?agentId=${(await t.agent(own)).id}`, { key: own });
    expect(otherAgent.body).toMatchObject({ approvals: [], total: 0 });
    // Another tenant's inbox holds none of it, and cannot decide it.
    expect((await t.request('GET', '/api/v1/approvals', { key })).body.approvals.some((i: Approval) => i.agentId === a.id)).toBe(false);
    expectProblem(await t.request('POST', `/api/v1/approvals/${taskItem.id}/approve`, { key }), 404, 'not_found');

    // The task is approved through the inbox as through its own route.
    const approved = await t.request('POST', `/api/v1/approvals/${task.body.id}/approve`, { key: own });
    expect(approved.body).toMatchObject({ kind: 'task', status: 'approved' });
    const after = await t.request('GET', `/api/v1/tasks/${task.body.id}`, { key: own });
    expect(after.body.status).not.toBe('awaiting_approval');
    expect((await t.request('GET', '/api/v1/approvals?kind=task', { key: own })).body.total).toBe(0);
  });
});

describe('who may decide', () => {
  it('needs agents:write to decide and agents:read to look', async () => {
    const a = await waitingAgent();
    const runId = await executeShout(a.id, 'perm');
    const [approval] = await pendingOf(t, key, runId);
    const reader = await t.key(key, ['agents:read']);
    const outsider = await t.key(key, ['skills:read']);
    expect((await t.request('GET', '/api/v1/approvals', { key: reader })).status).toBe(200);
    expectProblem(await t.request('POST', `/api/v1/approvals/${approval.id}/approve`, { key: reader }), 403, 'forbidden');
    expectProblem(
      await t.request('POST', `/api/v1/approvals/${approval.id}/reject`, { key: reader, body: { reason: 'no' } }),
      403,
      'forbidden',
    );
    expectProblem(await t.request('GET', '/api/v1/approvals', { key: outsider }), 403, 'forbidden');
    expect((await t.request('GET', `/api/v1/approvals/${approval.id}`, { key })).body.status).toBe('pending');
    await t.request('POST', `/api/v1/runs/${runId}/cancel`, { key });
  });
});

describe('refusals', () => {
  it('answers 400 naming the field, and 404 for an unknown approval', async () => {
    const a = await waitingAgent();
    const runId = await executeShout(a.id, 'bad');
    const [approval] = await pendingOf(t, key, runId);
    const noReason = await t.request('POST', `/api/v1/approvals/${approval.id}/reject`, { key, body: {} });
    expectProblem(noReason, 400, 'validation_failed');
    expect(JSON.stringify(noReason.body)).toContain('reason');
    const notObject = await t.request('POST', `/api/v1/approvals/${approval.id}/approve`, { key, body: { arguments: 'text' } });
    expectProblem(notObject, 400, 'validation_failed');
    expect(JSON.stringify(notObject.body)).toContain('arguments');
    const huge = await t.request('POST', `/api/v1/approvals/${approval.id}/approve`, {
      key,
      body: { arguments: { text: 'x'.repeat(100_001) } },
    });
    expectProblem(huge, 400, 'validation_failed');
    expect(JSON.stringify(huge.body)).toContain('arguments');
    const kind = await t.request('GET', '/api/v1/approvals?kind=email', { key });
    expectProblem(kind, 400, 'validation_failed');
    expect(JSON.stringify(kind.body)).toContain('kind');
    expectProblem(await t.request('POST', '/api/v1/approvals/0190a6c8-0000-7000-8000-000000000000/approve', { key }), 404, 'not_found');
    // Nothing was decided by the refused requests.
    expect((await t.request('GET', `/api/v1/approvals/${approval.id}`, { key })).body.status).toBe('pending');

    const badRule = await t.request('POST', '/api/v1/agents', {
      key,
      body: {
        name: 'x',
        appId: 'app',
        configuration: { approval: { rules: [{ tool: 'shout', when: [{ argument: 'text', operator: 'matches', value: '(' }] }] } },
      },
    });
    expectProblem(badRule, 400, 'validation_failed');
    expect(JSON.stringify(badRule.body)).toContain('configuration.approval.rules.0.when.0.value');
    const badTool = await t.request('POST', '/api/v1/agents', {
      key,
      body: { name: 'x', appId: 'app', configuration: { approval: { rules: [{ tool: 'shout now' }] } } },
    });
    expectProblem(badTool, 400, 'validation_failed');
    expect(JSON.stringify(badTool.body)).toContain('tool');
    await t.request('POST', `/api/v1/runs/${runId}/cancel`, { key });
  });
});

describe('a delegated call that waits', () => {
  it('waits in the callee’s inbox, and the caller’s tool call gets the callee’s answer once approved', async () => {
    const helper = await t.agent(key, { name: 'Helper', tools: [{ type: 'mcp', url: mcp.url }], configuration: shoutWaits() });
    const lead = await t.agent(key, { name: 'Lead', tools: [{ type: 'agent', agentId: helper.id, name: 'ask_helper' }] });
    const message = `/tool ask_helper ${JSON.stringify({ message: '/tool shout {"text":"deep"}' })}`;
    const leadRun = t.request('POST', `/api/v1/agents/${lead.id}/execute`, { key, body: { message } });
    let waiting: Approval | undefined;
    for (let i = 0; i < 200 && !waiting; i++) {
      const inbox = await t.request<{ approvals: Approval[] }>('GET', `/api/v1/approvals?agentId=${helper.id}`, { key });
      waiting = inbox.body.approvals[0];
      if (!waiting) await new Promise((r) => setTimeout(r, 50));
    }
    expect(waiting).toMatchObject({ kind: 'tool_call', agentId: helper.id, toolCall: { name: 'shout', arguments: { text: 'deep' } } });
    await t.request('POST', `/api/v1/approvals/${waiting!.id}/approve`, { key });
    const res = await leadRun;
    expect(res.body.status).toBe('completed');
    expect(res.body.toolCalls[0]).toMatchObject({ name: 'ask_helper', result: { agentId: helper.id, runId: waiting!.toolCall!.runId } });
    expect(res.body.toolCalls[0].result.output).toContain('DEEP');
  });
});

describe('a task whose run waits', () => {
  it('stays running while its run awaits approval, and completes with the run once approved', async () => {
    const a = await waitingAgent();
    const task = await t.request('POST', '/api/v1/tasks', {
      key,
      body: { name: 'shout it', description: '/tool shout {"text":"from a task"}', agentId: a.id },
    });
    expect(task.status).toBe(201);
    let runId: string | undefined;
    for (let i = 0; i < 200 && !runId; i++) {
      const runs = await t.request<{ runs: { id: string; status: string }[] }>('GET', `/api/v1/tasks/${task.body.id}/runs`, { key });
      runId = runs.body.runs.find((r) => r.status === 'awaiting_approval')?.id;
      if (!runId) await new Promise((r) => setTimeout(r, 50));
    }
    expect(runId).toBeDefined();
    expect((await t.request('GET', `/api/v1/tasks/${task.body.id}`, { key })).body.status).toBe('running');
    const [approval] = await pendingOf(t, key, runId!);
    await t.request('POST', `/api/v1/approvals/${approval.id}/approve`, { key });
    expect((await endedRun(t, key, runId!)).output).toContain('FROM A TASK');
    let status = '';
    for (let i = 0; i < 200 && status !== 'completed'; i++) {
      status = (await t.request('GET', `/api/v1/tasks/${task.body.id}`, { key })).body.status;
      if (status !== 'completed') await new Promise((r) => setTimeout(r, 50));
    }
    expect(status).toBe('completed');
  });
});
