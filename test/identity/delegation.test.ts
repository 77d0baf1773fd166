import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { paths } from '../../packages/client/src/generated/openapi.js';
import { startApp, type TestApp } from '../helpers/app.js';
import { execute as executeAs } from '../helpers/execute.js';

let t: TestApp;
let key: string;

beforeAll(async () => {
  t = await startApp();
  ({ key } = await t.tenant('delegation'));
});
afterAll(() => t.close());

type PolicyInput = NonNullable<paths['/api/v1/identity/tbac/policies']['post']['requestBody']>['content']['application/json'];

const execute = (id: string, message: string) => executeAs(t, key, id, { message });
const setMode = (mode: 'audit' | 'enforce') => t.api(key).PUT('/api/v1/identity/tbac/mode', { body: { mode } });
const policy = (body: PolicyInput) => t.api(key).POST('/api/v1/identity/tbac/policies', { body });
const runsOf = (id: string) => t.api(key).GET('/api/v1/agents/{id}/runs', { params: { path: { id } } });

describe('delegation to another agent (SVID -> token exchange -> ExtAuthZ -> callee run)', () => {
  it('runs the callee when allowed and gives its reply to the caller', async () => {
    const helper = await t.agent(key, { name: 'Research Helper', role: 'researcher' });
    const lead = await t.agent(key, { name: 'Lead', tools: [{ type: 'agent', agentId: helper.id, name: 'ask_helper' }] });
    const res = await execute(lead.id, '/tool ask_helper {"message":"find the answer"}');
    expect(res.response.status, JSON.stringify(res.error)).toBe(200);
    const call = res.data!.toolCalls[0];
    expect(call).toMatchObject({ name: 'ask_helper', input: { message: 'find the answer' } });
    expect(call.result).toMatchObject({ output: 'find the answer', agentId: helper.id, authorization: 'no_policy_audit_allow' });
    // The callee's run is a run of its own, in the helper's history.
    const helperRuns = await runsOf(helper.id);
    expect(helperRuns.data!.runs[0]).toMatchObject({
      id: call.result!.runId,
      kind: 'delegation',
      status: 'completed',
      output: 'find the answer',
    });
    // The decision and the SVID issuance are audited.
    const audit = await t.api(key).GET('/api/v1/audit-events', { params: { query: { resourceId: lead.id, limit: 100 } } });
    expect(audit.data!.events.map((e) => e.action)).toContain('identity.svid_issued');
  });

  it('names the tool after the callee by default', async () => {
    const helper = await t.agent(key, { name: 'Billing Expert' });
    const lead = await t.agent(key, { name: 'Lead2', tools: [{ type: 'agent', agentId: helper.id }] });
    const res = await execute(lead.id, '/tool ask_billing_expert {"message":"refund?"}');
    expect(res.data!.toolCalls[0].result!.output).toBe('refund?');
  });

  it('refuses when a policy denies: the denial is the tool result and no callee run happens', async () => {
    const helper = await t.agent(key, { name: 'Guarded' });
    const lead = await t.agent(key, { name: 'Lead3', tools: [{ type: 'agent', agentId: helper.id, name: 'ask_guarded' }] });
    const p = await policy({ callerAgentId: lead.id, calleeAgentId: helper.id, toolName: 'ask_guarded', effect: 'deny' });
    expect(p.response.status).toBe(201);
    const res = await execute(lead.id, '/tool ask_guarded {"message":"let me in"}');
    expect(res.response.status).toBe(200);
    expect(res.data!.toolCalls[0].result).toEqual({
      error: { code: 'access_denied', message: expect.stringMatching(/insufficient_scope|policy_deny/) },
    });
    expect((await runsOf(helper.id)).data!.total).toBe(0);
    const run = await t.api(key).GET('/api/v1/runs/{runId}', { params: { path: { runId: res.data!.runId } } });
    expect(run.data!.toolCalls[0].result).toMatchObject({ error: { code: 'access_denied' } });
  });

  it('in enforce mode needs an allowing policy', async () => {
    const helper = await t.agent(key, { name: 'Strict' });
    const lead = await t.agent(key, { name: 'Lead4', tools: [{ type: 'agent', agentId: helper.id, name: 'ask_strict' }] });
    expect((await setMode('enforce')).response.status).toBe(200);
    try {
      const denied = await execute(lead.id, '/tool ask_strict {"message":"hello"}');
      expect(denied.data!.toolCalls[0].result).toMatchObject({ error: { code: 'access_denied' } });
      await policy({ callerAgentId: lead.id, calleeAgentId: helper.id, toolName: 'ask_strict', effect: 'allow' });
      const allowed = await execute(lead.id, '/tool ask_strict {"message":"hello"}');
      expect(allowed.data!.toolCalls[0].result).toMatchObject({ output: 'hello', authorization: 'policy_allow' });
    } finally {
      await setMode('audit');
    }
  });

  it('stops delegation loops', async () => {
    const a = await t.agent(key, { name: 'Ping' });
    const b = await t.agent(key, { name: 'Pong', tools: [{ type: 'agent', agentId: a.id, name: 'ask_ping' }] });
    await t.api(key).POST('/api/v1/agents/{id}', {
      params: { path: { id: a.id } },
      body: { tools: [{ type: 'agent', agentId: b.id, name: 'ask_pong' }] },
    });
    // The callee gets the caller's message; a message that is itself a /tool line makes each agent delegate again.
    const line = (tool: string, message: string) => `/tool ${tool} ${JSON.stringify({ message })}`;
    const res = await execute(a.id, line('ask_pong', line('ask_ping', line('ask_pong', line('ask_ping', 'one level too many')))));
    expect(res.response.status).toBe(200);
    // Three levels of delegation run; the fourth is refused and the refusal travels back up as results.
    expect(JSON.stringify(res.data!.toolCalls[0].result)).toContain('delegation_too_deep');
  });
});
