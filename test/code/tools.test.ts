import { randomBytes } from 'node:crypto';
import http from 'node:http';
import type { LLMock } from '@copilotkit/aimock';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { providerEnv, startAimock } from '../helpers/aimock.js';
import { apiOf, expectProblem, startApp, startReplicas, type TestApp } from '../helpers/app.js';
import { type ExecuteBody, execute as executeOn } from '../helpers/execute.js';
import { uploadFile } from '../helpers/upload.js';

/**
 * The code tools (issue 37): code_run and skill_script_run over the real sandbox (src/code/sandbox),
 * driven over HTTP by builtin/echo's `/tool` directive and by an openai-compatible model aimock plays;
 * the files they read at /input and leave in /output (files of the tenant, listed by run); the
 * tenant's limits within the server's maxima; governed as every tool (enablement, TBAC, approval).
 * Limits are generous wherever a limit is not what a test is about, so a loaded machine never decides one.
 */

let t: TestApp;
let mock: LLMock;
let key: string;
let otherKey: string;

beforeAll(async () => {
  mock = await startAimock();
  t = await startApp({ ...providerEnv(mock), CODE_MAX_WALL_SECONDS: '120', CODE_MAX_CPU_SECONDS: '60' });
  ({ key } = await t.tenant('acme'));
  ({ key: otherKey } = await t.tenant('globex'));
});
afterAll(async () => {
  await t?.close();
  await mock?.stop();
});

const CODE = [{ type: 'builtin' as const, name: 'code' as const }];
/** A tool call's result when the run was not offered the tool (the model asked for it all the same). */
const NOT_OFFERED = { error: { code: 'invalid_tool_call', message: expect.stringContaining('unavailable tool') } };
const MEMORY = [{ type: 'builtin' as const, name: 'memory' as const }];
const INVOICES = [
  'id,reference,counterparty,date,amount,currency',
  'INV-1001,INV-1001,Acme Ltd,2026-11-02,120.00,EUR',
  'INV-1002,INV-1002,Globex Inc,2026-11-03,80.50,EUR',
  'INV-1003,,Initech,2026-11-05,42.00,EUR',
].join('\n');
const PAYMENTS = [
  'id,reference,counterparty,date,amount,currency',
  'PAY-1,INV1001,ACME,2026-11-04,120.00,EUR',
  'PAY-2,INV-1002,Globex,2026-11-06,80.49,EUR',
  'PAY-3,,Umbrella,2026-11-07,9.99,EUR',
].join('\n');

/** A code tool's result as the run records it: the execution's, or a tool error. */
interface CodeToolResult {
  exitCode?: number | null;
  exception?: string | null;
  stdout: string;
  stderr?: string;
  files: { id: string; name: string; size: number; mediaType: string; url: string }[];
  inputs?: { fileId: string; path: string }[];
  error?: { code: string; message: string };
}

const execute = (agentId: string, body: ExecuteBody, k = key) => executeOn(t.api(k), agentId, body);
const tool = (name: string, input: Record<string, unknown>) => `/tool ${name} ${JSON.stringify(input)}`;
/** The run of an execute whose message calls one tool (builtin/echo), and that call. */
async function callTool(agentId: string, name: string, input: Record<string, unknown>, extra: Partial<ExecuteBody> = {}, k = key) {
  const res = await execute(agentId, { message: tool(name, input), ...extra }, k);
  expect(res.response.status, JSON.stringify(res.error)).toBe(200);
  expect(res.run!.toolCalls).toHaveLength(1);
  return { run: res.run!, call: res.run!.toolCalls[0] as unknown as { name: string; result: CodeToolResult } };
}
async function upload(name: string, content: string, k = key) {
  const { data, response, error } = await uploadFile(t.api(k), name, content, 'text/csv');
  expect(response.status, JSON.stringify(error)).toBe(201);
  return data!;
}
const download = (id: string, k = key) => t.api(k).GET('/api/v1/files/{id}/content', { params: { path: { id } }, parseAs: 'text' });
const filesOfRun = (runId: string, k = key) => t.api(k).GET('/api/v1/files', { params: { query: { runId } } });

/** The store's invoice-reconciliation skill, acquired by the tenant and assigned to the agent. */
async function invoiceSkill(agentId: string, k = key) {
  let skill = (await t.api(k).GET('/api/skills', { params: { query: {} } })).data!.skills.find((s) => s.name === 'invoice-reconciliation');
  if (!skill) {
    const acquired = await t.api(k).POST('/api/skills/store/{id}/acquire', { params: { path: { id: 'invoice-reconciliation' } } });
    expect(acquired.response.status, JSON.stringify(acquired.error)).toBe(201);
    skill = acquired.data!;
  }
  const assigned = await t.api(k).POST('/api/skills/{id}/assign', { params: { path: { id: skill.id } }, body: { agentId } });
  expect(assigned.response.status, JSON.stringify(assigned.error)).toBe(201);
  return skill;
}

const REPORT_CODE = [
  'import csv',
  'rows = list(csv.DictReader(open("/input/invoices.csv")))',
  'total = sum(float(r["amount"]) for r in rows)',
  'with open("/output/report.csv", "w", newline="") as f:',
  '    w = csv.writer(f)',
  '    w.writerow(["invoices", "total"])',
  '    w.writerow([len(rows), f"{total:.2f}"])',
  'print(f"{len(rows)} invoices, {total:.2f} EUR")',
].join('\n');

describe('an agent on builtin/echo reconciles two attached CSVs', () => {
  it('runs the store skill’s script on them, then code that writes /output/report.csv, downloadable and listed by run', async () => {
    const agent = await t.agent(key, { name: 'Reconciler', tools: CODE });
    const skill = await invoiceSkill(agent.id);
    const invoices = await upload('invoices.csv', INVOICES);
    const payments = await upload('payments.csv', PAYMENTS);

    const { run, call } = await callTool(
      agent.id,
      'skill_script_run',
      { skillId: skill.id, script: 'scripts/match_invoices.py', args: ['/input/invoices.csv', '/input/payments.csv'] },
      { attachments: [invoices.id, payments.id] },
    );
    expect(call.name).toBe('skill_script_run');
    expect(call.result.error, JSON.stringify(call.result)).toBeUndefined();
    expect(call.result).toMatchObject({ exitCode: 0, exception: null, stderr: '', stdoutTruncated: false, files: [] });
    // Pass 1: the normalised reference and the amount; pass 2: within the 0.02 tolerance; the rest unmatched.
    const report = call.result.stdout.replace(/\r/g, '');
    expect(report).toContain('pass,invoice,payment,difference\n1,INV-1001,PAY-1,0.00\n2,INV-1002,PAY-2,-0.01\n');
    expect(report).toContain('unmatched_invoice,amount,currency\nINV-1003,42.00,EUR\n');
    expect(report).toContain('unmatched_payment,amount,currency,ambiguous_candidates\nPAY-3,9.99,EUR,\n');
    expect(call.result.inputs).toEqual(
      expect.arrayContaining([
        { fileId: invoices.id, path: '/input/invoices.csv' },
        { fileId: payments.id, path: '/input/payments.csv' },
      ]),
    );
    // echo answers with the tool's result: the report reaches the answer.
    expect(run.output).toContain('skill_script_run returned');
    expect(run.output).toContain('INV-1003');

    // The same conversation: its attachments are still at /input; code leaves a report in /output.
    const second = await callTool(agent.id, 'code_run', { language: 'python', code: REPORT_CODE }, { conversationId: run.conversationId });
    expect(second.call.result).toMatchObject({ exitCode: 0, stdout: '3 invoices, 242.50 EUR\n' });
    expect(second.call.result.files).toEqual([
      {
        id: expect.any(String),
        name: 'report.csv',
        size: 26,
        mediaType: 'text/csv',
        url: expect.stringMatching(/^\/api\/v1\/files\/.+\/content$/),
      },
    ]);
    const made = second.call.result.files[0];
    const content = await download(made.id);
    expect(content.response.status).toBe(200);
    expect(content.data!.replace(/\r/g, '')).toBe('invoices,total\n3,242.50\n');
    const listed = await filesOfRun(second.run.runId);
    expect(listed.data).toMatchObject({
      total: 1,
      files: [{ id: made.id, name: 'report.csv', runId: second.run.runId, toolCallId: expect.any(String) }],
    });
    // The first run made no file; another tenant sees neither the run's files nor the file.
    expect((await filesOfRun(run.runId)).data!.total).toBe(0);
    expect((await filesOfRun(second.run.runId, otherKey)).data!.total).toBe(0);
    expectProblem(await download(made.id, otherKey), 404, 'not_found');

    // Each execution is audited with what it ran and made; each file it made has its file.created event.
    const audit = await t.api(key).GET('/api/v1/audit-events', { params: { query: { action: 'code.executed' } } });
    const events = audit.data!.events.filter((e) => e.resourceId === run.runId || e.resourceId === second.run.runId);
    expect(events.map((e) => e.detail)).toEqual(
      expect.arrayContaining([
        expect.objectContaining({
          language: 'python',
          skillId: skill.id,
          script: 'scripts/match_invoices.py',
          exitCode: 0,
          limit: null,
          files: [],
        }),
        expect.objectContaining({ language: 'python', exitCode: 0, limit: null, files: [made.id] }),
      ]),
    );
  });

  it('runs JavaScript, and tells a failing program’s exit and exception as a result, not a tool error', async () => {
    const agent = await t.agent(key, { tools: CODE });
    const js = await callTool(agent.id, 'code_run', { language: 'javascript', code: 'console.log(6 * 7)' });
    expect(js.call.result).toMatchObject({ exitCode: 0, stdout: '42\n' });
    const failing = await callTool(agent.id, 'code_run', { language: 'python', code: 'raise ValueError("bad row 7")' });
    expect(failing.call.result).toMatchObject({ exitCode: 1, exception: expect.stringContaining('ValueError: bad row 7') });
    expect(failing.call.result.stderr).toContain('Traceback');
  });
});

describe('an agent on an openai-compatible model (aimock)', () => {
  it('calls skill_script_run on the attached CSVs, keeps the report as a file with code_run, and answers', async () => {
    const agent = await t.agent(key, { name: 'Model reconciler', model: 'openai-compatible/qwen3-8b', tools: CODE });
    const skill = await invoiceSkill(agent.id);
    const invoices = await upload('invoices.csv', INVOICES);
    const payments = await upload('payments.csv', PAYMENTS);
    const message = 'Reconcile the attached invoices and payments (aimock).';
    mock.addFixture({
      match: { userMessage: message, hasToolResult: false },
      response: {
        toolCalls: [
          {
            name: 'skill_script_run',
            arguments: JSON.stringify({
              skillId: skill.id,
              script: 'match_invoices.py',
              args: ['/input/invoices.csv', '/input/payments.csv'],
            }),
          },
        ],
      },
    });
    // Given the report, the model keeps it as a file, then answers.
    mock.addFixture({
      match: { userMessage: message, toolResultContains: 'unmatched_invoice' },
      response: { toolCalls: [{ name: 'code_run', arguments: JSON.stringify({ language: 'python', code: REPORT_CODE }) }] },
    });
    mock.addFixture({
      match: { userMessage: message, toolResultContains: 'report.csv' },
      response: { content: 'Two matched; INV-1003 and PAY-3 need action.' },
    });

    const res = await execute(agent.id, { message, attachments: [invoices.id, payments.id] });
    expect(res.response.status, JSON.stringify(res.error)).toBe(200);
    expect(res.run).toMatchObject({ status: 'completed', output: 'Two matched; INV-1003 and PAY-3 need action.' });
    expect(res.run!.toolCalls.map((c) => c.name)).toEqual(['skill_script_run', 'code_run']);
    const result = res.run!.toolCalls[0].result as unknown as CodeToolResult;
    expect(result).toMatchObject({ exitCode: 0 });
    expect(result.stdout).toContain('INV-1003,42.00,EUR');
    // The file the model's code left in /output is the tenant's, listed by the run and downloadable.
    const made = (await filesOfRun(res.run!.runId)).data!;
    expect(made.files.map((f) => f.name)).toEqual(['report.csv']);
    expect((await download(made.files[0].id)).data!.replace(/\r/g, '')).toBe('invoices,total\n3,242.50\n');
    // The model was given the script's report as the tool's result.
    const second = mock
      .getRequests()
      .find((r) => JSON.stringify(r.body ?? '').includes(message) && JSON.stringify(r.body).includes('unmatched_invoice'));
    expect(second, 'the model was sent the report').toBeTruthy();
  });
});

describe('who gets the tools', () => {
  it('an agent without the code group has neither tool; skill_script_run only with a skill assigned', async () => {
    // Each has another tool, so echo makes the call and the run says whether the tool was offered.
    const plain = await t.agent(key, { tools: MEMORY });
    const refused = await callTool(plain.id, 'code_run', { language: 'python', code: 'print(1)' });
    expect(refused.call.result).toMatchObject(NOT_OFFERED);

    const coder = await t.agent(key, { tools: CODE });
    const noSkill = await callTool(coder.id, 'skill_script_run', { skillId: 'invoice-reconciliation', script: 'match_invoices.py' });
    expect(noSkill.call.result).toMatchObject(NOT_OFFERED);

    // Assigned then turned off for this agent: the tool is offered while another skill is, and refuses this one.
    const skill = await invoiceSkill(coder.id);
    const other = await t.api(key).POST('/api/skills', {
      body: { name: 'notes', description: 'Notes', category: 'support', instructions: 'Take notes.' },
    });
    await t.api(key).POST('/api/skills/{id}/assign', { params: { path: { id: other.data!.id } }, body: { agentId: coder.id } });
    const off = await t.api(key).PATCH('/api/skills/{id}/assignments/{agentId}', {
      params: { path: { id: skill.id, agentId: coder.id } },
      body: { enabled: false },
    });
    expect(off.response.status, JSON.stringify(off.error)).toBe(200);
    const disabled = await callTool(coder.id, 'skill_script_run', { skillId: skill.id, script: 'match_invoices.py' });
    expect(disabled.call.result).toMatchObject({ error: { code: 'skill_not_assigned' } });
    const missing = await callTool(coder.id, 'skill_script_run', { skillId: other.data!.id, script: 'nothing.py' });
    expect(missing.call.result).toMatchObject({ error: { code: 'script_not_found' } });
  });

  it('a group turned off on update is no longer offered', async () => {
    const agent = await t.agent(key, { tools: [...CODE, ...MEMORY] });
    expect((await callTool(agent.id, 'code_run', { language: 'javascript', code: 'console.log(1)' })).call.result).toMatchObject({
      exitCode: 0,
    });
    const off = await t.api(key).POST('/api/v1/agents/{id}', {
      params: { path: { id: agent.id } },
      body: { tools: [{ type: 'builtin', name: 'code', enabled: false }] },
    });
    expect(off.response.status, JSON.stringify(off.error)).toBe(200);
    expect(off.data!.tools).toEqual(MEMORY);
    expect((await callTool(agent.id, 'code_run', { language: 'javascript', code: 'console.log(1)' })).call.result).toMatchObject(
      NOT_OFFERED,
    );
  });

  it('where code execution is off, the tools are not offered and the settings say why', async () => {
    const off = await startApp({ CODE_EXECUTION: 'off' });
    try {
      const { key: k } = await off.tenant();
      const agent = await off.agent(k, { tools: [...CODE, ...MEMORY] });
      const res = await executeOn(off.api(k), agent.id, { message: tool('code_run', { language: 'python', code: 'print(1)' }) });
      expect(res.run!.toolCalls[0].result).toMatchObject(NOT_OFFERED);
      const settings = await off.api(k).GET('/api/v1/code/settings');
      expect(settings.data).toMatchObject({ available: false, unavailableReason: expect.stringContaining('CODE_EXECUTION=off') });
    } finally {
      await off.close();
    }
  });
});

describe('governed as every tool', () => {
  it('a TBAC deny refuses the call before anything runs', async () => {
    const agent = await t.agent(key, { tools: CODE });
    const policy = await t.api(key).POST('/api/v1/identity/tbac/policies', {
      body: { callerAgentId: agent.id, calleeAgentId: agent.id, toolName: 'code_run', effect: 'deny' },
    });
    expect(policy.response.status, JSON.stringify(policy.error)).toBe(201);
    const { run, call } = await callTool(agent.id, 'code_run', { language: 'python', code: 'open("/output/x.txt","w").write("x")' });
    expect(call.result).toMatchObject({ error: { code: 'access_denied', message: expect.stringContaining('policy_deny') } });
    expect((await filesOfRun(run.runId)).data!.total).toBe(0);
  });

  it('an approval rule makes the call wait for a person', async () => {
    const agent = await t.agent(key, {
      tools: CODE,
      configuration: { approval: { rules: [{ tool: 'code_run', when: [{ argument: 'language', operator: 'equals', value: 'python' }] }] } },
    });
    const waiting = await execute(agent.id, { message: tool('code_run', { language: 'python', code: 'print(1)' }) });
    expect(waiting.response.status, JSON.stringify(waiting.error)).toBe(200);
    expect(waiting.run?.status).toBe('awaiting_approval');
    const pending = await t.api(key).GET('/api/v1/approvals', { params: { query: { status: 'pending' } } });
    expect(pending.data!.approvals.find((a) => a.toolCall?.runId === waiting.run!.runId)).toMatchObject({
      kind: 'tool_call',
      toolCall: { name: 'code_run', arguments: { language: 'python', code: 'print(1)' } },
    });
    // JavaScript matches no rule: it runs at once.
    const js = await callTool(agent.id, 'code_run', { language: 'javascript', code: 'console.log(2)' });
    expect(js.call.result).toMatchObject({ exitCode: 0, stdout: '2\n' });
  });

  it('another tenant’s file id is refused, as an unknown one', async () => {
    const agent = await t.agent(key, { tools: CODE });
    const theirs = await upload('theirs.csv', 'a,b\n1,2\n', otherKey);
    const { call } = await callTool(agent.id, 'code_run', {
      language: 'python',
      code: 'print(open("/input/theirs.csv").read())',
      files: [theirs.id],
    });
    expect(call.result).toMatchObject({ error: { code: 'file_not_found', message: expect.stringContaining('files.0') } });
    expect(JSON.stringify(call.result)).not.toContain('a,b');
  });
});

describe('escape attempts through a run are contained (each database)', () => {
  it('process through js: spawn, files and the environment refused; loopback unreachable; the server serves on', async () => {
    const listener = http.createServer((_req, res) => res.end('reached'));
    let connections = 0;
    listener.on('connection', () => connections++);
    await new Promise<void>((resolve) => listener.listen(0, '127.0.0.1', resolve));
    const port = (listener.address() as { port: number }).port;
    const secret = `fake-secret-${randomBytes(8).toString('hex')}`;
    process.env.AGENTRY_RUN_ESCAPE_SECRET = secret;
    try {
      const agent = await t.agent(key, { tools: CODE });
      const code = [
        'from pyodide.ffi import to_js',
        'import os, socket',
        'proc = to_js([]).constructor.constructor("return process")()',
        'node = proc.getBuiltinModule',
        'def attempt(name, action):',
        '    try:',
        '        print(name, "REACHED", action())',
        '    except BaseException as error:',
        '        print(name, "refused:", type(error).__name__)',
        'attempt("spawn", lambda: node("child_process").execSync("id"))',
        'attempt("file", lambda: node("fs").readFileSync("/etc/hostname", "utf8"))',
        'attempt("procenv", lambda: open("/proc/self/environ").read())',
        'attempt("system", lambda: os.system("id"))',
        `attempt("socket", lambda: socket.create_connection(("127.0.0.1", ${port}), timeout=5))`,
        'print("env", dict(os.environ), node("node:util").inspect(proc.env))',
      ].join('\n');
      const { call } = await callTool(agent.id, 'code_run', { language: 'python', code });
      expect(call.result.exitCode, JSON.stringify(call.result)).toBe(0);
      const lines = Object.fromEntries(
        call.result.stdout
          .trim()
          .split('\n')
          .map((l) => [l.slice(0, l.indexOf(' ')), l.slice(l.indexOf(' ') + 1)]),
      );
      for (const name of ['spawn', 'file', 'procenv', 'system', 'socket']) expect(lines[name], name).toMatch(/^refused: /);
      expect(call.result.stdout).not.toContain(secret);
      expect(connections).toBe(0);
      // The server is unharmed: it answers, and the next execution runs.
      expect((await t.api(key).GET('/api/v1/agents/{id}', { params: { path: { id: agent.id } } })).response.status).toBe(200);
      expect((await callTool(agent.id, 'code_run', { language: 'python', code: 'print(6*7)' })).call.result).toMatchObject({
        stdout: '42\n',
      });
    } finally {
      delete process.env.AGENTRY_RUN_ESCAPE_SECRET;
      await new Promise((resolve) => listener.close(resolve));
    }
  });
});

describe('limits', () => {
  it('a tenant’s wall time ends a loop: a tool error with its code, and no file kept', async () => {
    const { key: k } = await t.tenant();
    const set = await t.api(k).PUT('/api/v1/code/settings', { body: { wallMs: 2000 } });
    expect(set.response.status, JSON.stringify(set.error)).toBe(200);
    expect(set.data!.limits.wallMs).toBe(2000);
    const agent = await t.agent(k, { tools: CODE });
    const { run, call } = await callTool(
      agent.id,
      'code_run',
      { language: 'python', code: 'open("/output/partial.txt","w").write("x")\nwhile True:\n    pass' },
      {},
      k,
    );
    expect(call.result).toMatchObject({ error: { code: 'code_timeout' } });
    expect(run.status).toBe('completed');
    expect((await filesOfRun(run.runId, k)).data!.total).toBe(0);
  });

  it('settings: the maxima by default, within them when set, 400 naming the field above one, null back to the maximum', async () => {
    const { key: k } = await t.tenant();
    const initial = await t.api(k).GET('/api/v1/code/settings');
    expect(initial.response.status).toBe(200);
    expect(initial.data).toMatchObject({ available: true, unavailableReason: null });
    // The server's maxima (CODE_MAX_*, CODE_MAX_CONCURRENT); a file no larger than the files API keeps (5 MiB, not the default 10).
    expect(initial.data!.maxima).toEqual({
      wallMs: 120_000,
      cpuMs: 60_000,
      memoryMb: 512,
      outputBytes: 1024 * 1024,
      maxOutputFiles: 20,
      maxOutputFileBytes: 5 * 1024 * 1024,
      concurrentExecutions: 2,
    });
    expect(initial.data!.limits).toEqual(initial.data!.maxima);

    const set = await t.api(k).PUT('/api/v1/code/settings', { body: { memoryMb: 128, maxOutputFiles: 0, concurrentExecutions: 1 } });
    expect(set.data!.limits).toMatchObject({ memoryMb: 128, maxOutputFiles: 0, concurrentExecutions: 1, wallMs: 120_000 });

    const above = await t.api(k).PUT('/api/v1/code/settings', { body: { wallMs: 120_001, cpuMs: 1000 } });
    expectProblem(above, 400, 'validation_failed');
    expect(above.error!.errors).toEqual([{ path: 'body.wallMs', message: "must be at most 120000 (the server's maximum)" }]);
    // Nothing of a refused change is kept.
    expect((await t.api(k).GET('/api/v1/code/settings')).data!.limits.cpuMs).toBe(60_000);
    expectProblem(await t.raw('PUT', '/api/v1/code/settings', { key: k, body: { wallMs: 0 } }), 400, 'validation_failed');
    expectProblem(await t.raw('PUT', '/api/v1/code/settings', { key: k, body: { wallMs: '5' } }), 400, 'validation_failed');
    expectProblem(await t.raw('PUT', '/api/v1/code/settings', { key: k, body: { timeout: 5 } }), 400, 'validation_failed');

    const reset = await t.api(k).PUT('/api/v1/code/settings', { body: { memoryMb: null } });
    expect(reset.data!.limits).toMatchObject({ memoryMb: 512, maxOutputFiles: 0 });
    // Another tenant's limits are its own.
    expect((await t.api(key).GET('/api/v1/code/settings')).data!.limits.maxOutputFiles).toBe(20);

    const reader = await t.key(k, ['settings:read']);
    expect((await t.api(reader).GET('/api/v1/code/settings')).response.status).toBe(200);
    expectProblem(await t.api(reader).PUT('/api/v1/code/settings', { body: { memoryMb: 64 } }), 403, 'forbidden');
    const audit = await t.api(k).GET('/api/v1/audit-events', { params: { query: { action: 'tenant.settings_updated' } } });
    expect(audit.data!.events.map((e) => e.detail)).toContainEqual({ code: { memoryMb: 128, maxOutputFiles: 0, concurrentExecutions: 1 } });
  });

  it('past the tenant’s concurrent executions, a call is a code_busy tool error; its slot is free again once it ends', async () => {
    const { key: k } = await t.tenant();
    await t.api(k).PUT('/api/v1/code/settings', { body: { concurrentExecutions: 1, wallMs: 8000 } });
    const agent = await t.agent(k, { tools: CODE });
    // Two loops at once, each holding the tenant's one slot until its wall time ends it: whichever comes
    // second finds it taken, whatever the order.
    const loop = () => execute(agent.id, { message: tool('code_run', { language: 'python', code: 'while True:\n    pass' }) }, k);
    const results = (await Promise.all([loop(), loop()])).map((r) => r.run!.toolCalls[0].result as unknown as CodeToolResult);
    expect(results.map((r) => r.error?.code).sort()).toEqual(['code_busy', 'code_timeout']);
    expect(results.find((r) => r.error?.code === 'code_busy')!.error!.message).toContain('concurrentExecutions');
    expect((await callTool(agent.id, 'code_run', { language: 'javascript', code: 'console.log(1)' }, {}, k)).call.result).toMatchObject({
      exitCode: 0,
    });
  });

  it('the tenant’s concurrent executions are counted across replicas: one running on A makes B’s a code_busy', async () => {
    const cluster = await startReplicas(2, { CODE_MAX_WALL_SECONDS: '120', CODE_MAX_CPU_SECONDS: '60' });
    try {
      const [a, b] = cluster.replicas;
      const { tenant, apiKey: k } = await a.services.tenancy.createTenant('replicated');
      expect(
        (await apiOf(a.app, k).PUT('/api/v1/code/settings', { body: { concurrentExecutions: 1, wallMs: 8000 } })).response.status,
      ).toBe(200);
      const agent = (await apiOf(a.app, k).POST('/api/v1/agents', { body: { name: 'agent', appId: 'app', tools: CODE } })).data!;
      const call = async (replica: typeof a, code: string) =>
        (await executeOn(apiOf(replica.app, k), agent.id, { message: tool('code_run', { language: 'python', code }) })).run!.toolCalls[0]
          .result as unknown as CodeToolResult;
      const onA = call(a, 'while True:\n    pass');
      // B is asked once A's execution holds the tenant's one slot (the table every replica shares), so
      // neither can take it first, whatever the order the two start in.
      const heldSlots = () => a.db.kysely.selectFrom('code_slots').select('slot').where('tenant_id', '=', tenant.id).execute();
      await expect.poll(async () => (await heldSlots()).length, { timeout: 60_000, interval: 50 }).toBe(1);
      const onB = await call(b, 'print(1)');
      expect(onB.error?.code).toBe('code_busy');
      expect(onB.error!.message).toContain('concurrentExecutions');
      expect((await onA).error?.code).toBe('code_timeout');
      // A's slot is released when it ends: B runs.
      expect(await heldSlots()).toEqual([]);
      expect(await call(b, 'print(2)')).toMatchObject({ exitCode: 0, stdout: '2\n' });
    } finally {
      await cluster.close();
    }
  });

  it('a run cancelled while its code runs: the execution is killed (code_cancelled in the audit) and its slot freed', async () => {
    const { tenant, apiKey: k } = await t.services.tenancy.createTenant('cancelling');
    await t.api(k).PUT('/api/v1/code/settings', { body: { concurrentExecutions: 1 } });
    const agent = await t.agent(k, { tools: CODE });
    const looping = execute(agent.id, { message: tool('code_run', { language: 'python', code: 'while True:\n    pass' }) }, k);
    const held = () => t.db.kysely.selectFrom('code_slots').select('slot').where('tenant_id', '=', tenant.id).execute();
    await expect.poll(async () => (await held()).length, { timeout: 60_000, interval: 50 }).toBe(1);
    const runs = await t.api(k).GET('/api/v1/runs', { params: { query: { agentId: agent.id } } });
    const cancel = await t.api(k).POST('/api/v1/runs/{runId}/cancel', { params: { path: { runId: runs.data!.runs[0].id } } });
    expect(cancel.response.status, JSON.stringify(cancel.error)).toBe(200);
    expect(cancel.data).toMatchObject({ status: 'cancelled' });
    // The blocking call that started it answers as a cancelled run does (docs/api-conventions.md).
    expect((await looping).error).toMatchObject({ status: 409, code: 'run_cancelled' });
    const executed = async () =>
      (await t.api(k).GET('/api/v1/audit-events', { params: { query: { action: 'code.executed' } } })).data!.events.map((e) => e.detail);
    await expect.poll(executed, { timeout: 30_000, interval: 100 }).toEqual([expect.objectContaining({ limit: 'code_cancelled' })]);
    expect(await held()).toEqual([]);
    // Killed, not left looping: the tenant's one slot runs the next call.
    expect((await callTool(agent.id, 'code_run', { language: 'python', code: 'print(3)' }, {}, k)).call.result).toMatchObject({
      exitCode: 0,
      stdout: '3\n',
    });
  });

  it('files for /input past 32, or past 20 MiB together, are a code_input_limit tool error before anything runs', async () => {
    const { key: k } = await t.tenant();
    const agent = await t.agent(k, { tools: CODE });
    const small = await Promise.all(Array.from({ length: 33 }, (_, i) => upload(`f${i}.txt`, String(i), k)));
    const many = await callTool(
      agent.id,
      'code_run',
      { language: 'python', code: 'print(1)', files: small.slice(0, 20).map((f) => f.id) },
      {},
      k,
    );
    expect(many.call.result).toMatchObject({ exitCode: 0 });
    // The conversation's attachments count with the files named: 13 attached and 20 named are 33.
    const attached = await callTool(
      agent.id,
      'code_run',
      { language: 'python', code: 'print(1)', files: small.slice(0, 20).map((f) => f.id) },
      { attachments: small.slice(20).map((f) => f.id) },
      k,
    );
    expect(attached.call.result).toMatchObject({ error: { code: 'code_input_limit', message: expect.stringContaining('33') } });

    const big = 'x'.repeat(4.5 * 1024 * 1024);
    const heavy = await Promise.all(Array.from({ length: 5 }, (_, i) => upload(`big${i}.txt`, big, k)));
    const { run, call } = await callTool(
      agent.id,
      'code_run',
      { language: 'python', code: 'open("/output/x.txt","w").write("x")', files: heavy.map((f) => f.id) },
      {},
      k,
    );
    expect(call.result).toMatchObject({ error: { code: 'code_input_limit', message: expect.stringContaining('20971520 bytes') } });
    expect((await filesOfRun(run.runId, k)).data!.total).toBe(0);
  });

  it('no output file kept past the tenant’s file count: code_files_limit', async () => {
    const { key: k } = await t.tenant();
    await t.api(k).PUT('/api/v1/code/settings', { body: { maxOutputFiles: 1 } });
    const agent = await t.agent(k, { tools: CODE });
    const { run, call } = await callTool(
      agent.id,
      'code_run',
      { language: 'python', code: 'for i in range(3):\n    open(f"/output/{i}.txt","w").write(str(i))' },
      {},
      k,
    );
    expect(call.result).toMatchObject({ error: { code: 'code_files_limit' } });
    expect((await filesOfRun(run.runId, k)).data!.total).toBe(0);
  });
});
