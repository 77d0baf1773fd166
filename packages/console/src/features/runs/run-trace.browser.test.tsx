import type { RunDetails } from '@agentry/client';
import { describe, expect, test } from 'vitest';
import { renderComponent } from '../../test/render-component';
import { RunTrace } from './run-trace';
import { type Approval, buildTrace } from './trace';

/*
 * A run as GET /api/v1/runs/:id answers it: the agent's model failed, so a fallback answered both
 * steps; the first step's search timed out, the second asked to send an email, which waits for a person.
 */
const START = Date.parse('2026-12-06T10:00:00.000Z');
const at = (ms: number) => new Date(START + ms).toISOString();

const run: RunDetails = {
  id: 'run_1',
  runId: 'run_1',
  agentId: 'agt_1',
  conversationId: 'cnv_1',
  taskId: null,
  kind: 'chat',
  status: 'awaiting_approval',
  model: 'openai/gpt-main',
  output: '',
  structuredOutput: null,
  finishReason: null,
  contextTruncated: false,
  error: null,
  cost: 0.0042,
  duration: 5000,
  tokenUsage: { inputTokens: 1234, outputTokens: 56 },
  citations: [],
  warnings: [],
  createdAt: at(0),
  startedAt: at(0),
  completedAt: null,
  input: 'Tell the customer about refunds',
  options: {},
  toolCalls: [
    {
      id: 'call_search',
      name: 'knowledge_search',
      input: { query: 'refunds' },
      result: { error: { code: 'tool_timeout', message: 'the tool did not answer within 30 s' } },
      startedAt: at(2400),
      completedAt: at(3400),
      source: 'builtin',
      durationMs: 1000,
      outcome: 'error',
      errorCode: 'tool_timeout',
    },
    {
      id: 'call_email',
      name: 'send_email',
      input: { to: 'customer@example.com' },
      result: null,
      startedAt: at(4000),
      completedAt: null,
      source: 'mcp',
      durationMs: null,
      outcome: 'unfinished',
      errorCode: null,
    },
  ],
  steps: [
    {
      index: 0,
      text: 'Let me look that up.',
      toolCallIds: ['call_search'],
      injected: [],
      finishReason: 'tool-calls',
      usage: { inputTokens: 1234, outputTokens: 56 },
      model: 'anthropic/claude-fallback',
      cost: 0.0042,
      startedAt: at(50),
      completedAt: at(2400),
      durationMs: 2350,
    },
    {
      index: 1,
      text: '',
      toolCallIds: ['call_email'],
      injected: ['Also cc the manager'],
      finishReason: 'tool-calls',
      usage: { inputTokens: 1300, outputTokens: 20 },
      model: 'anthropic/claude-fallback',
      cost: 1.25,
      startedAt: at(3500),
      completedAt: at(4000),
      durationMs: 500,
    },
  ],
  traceId: '4bf92f3577b34da6a3ce929d0e0e4736',
  budget: {},
};

const inFiveMinutes = () => new Date(Date.now() + 5 * 60_000 + 10_000).toISOString();

const waiting = (): Approval => ({
  id: 'apr_1',
  kind: 'tool_call',
  status: 'pending',
  agentId: 'agt_1',
  reason: 'send_email needs a person',
  createdAt: at(4000),
  expiresAt: inFiveMinutes(),
  toolCall: { runId: 'run_1', conversationId: 'cnv_1', id: 'call_email', name: 'send_email', arguments: { to: 'customer@example.com' } },
  task: null,
  decision: null,
});

const renderTrace = (approvals: Approval[] = [waiting()], traceRun: RunDetails = run) =>
  renderComponent(<RunTrace trace={buildTrace(traceRun, approvals, [])} traceId={traceRun.traceId} />);

describe('the run trace', () => {
  test('lists the steps, calls and the wait in time order, one collapsed line each', async () => {
    const screen = await renderTrace();
    const rows = screen.getByTestId('trace-row');
    await expect.element(rows.nth(4)).toBeInTheDocument();
    expect(rows.elements().map((row) => row.dataset.kind)).toEqual(['model', 'tool', 'model', 'approval', 'tool']);
    await expect.element(rows.nth(0)).toHaveTextContent('Step 1 · anthropic/claude-fallback · 1234→56 tok · $0.0042 · tool-calls');
    await expect.element(rows.nth(1)).toHaveTextContent('knowledge_search · error tool_timeout');
    await expect.element(rows.nth(3)).toHaveTextContent('Approval: send_email · pending');
    expect(screen.getByTestId('trace-details').elements()).toHaveLength(0);
    await expect.element(screen.getByTestId('trace-id')).toHaveTextContent(run.traceId!);
  });

  test('marks a step a fallback model answered and says whose model did not', async () => {
    const screen = await renderTrace();
    const first = screen.getByTestId('trace-row').first();
    await expect.element(first.getByText('fallback', { exact: true })).toBeVisible();
    await first.getByRole('button').click();
    await expect.element(first.getByText('fallback: the agent’s openai/gpt-main did not answer')).toBeVisible();
  });

  test('a click opens a failed tool call: its outcome, error code, arguments and result; a second click closes it', async () => {
    const screen = await renderTrace();
    const search = screen.getByTestId('trace-row').nth(1);
    const toggle = search.getByRole('button', { name: /knowledge_search/ });
    await expect.element(toggle).toHaveAttribute('aria-expanded', 'false');
    await toggle.click();
    await expect.element(toggle).toHaveAttribute('aria-expanded', 'true');
    const details = search.getByTestId('trace-details');
    await expect.element(details.getByText('error', { exact: true })).toBeVisible();
    await expect.element(details.getByTestId('tool-error-code')).toHaveTextContent('tool_timeout');
    await expect.element(details.getByText('"query": "refunds"')).toBeVisible();
    await expect.element(details.getByText(/the tool did not answer within 30 s/)).toBeVisible();
    await toggle.click();
    await expect.element(details).not.toBeInTheDocument();
  });

  test('an approval wait says what it waits for, under which rule, and when it expires', async () => {
    const screen = await renderTrace();
    await screen.getByRole('button', { name: /Approval: send_email/ }).click();
    const details = screen.getByTestId('trace-details');
    await expect.element(details.getByText('send_email needs a person')).toBeVisible();
    await expect.element(details.getByText(/^in 5 minutes \(/)).toBeVisible();
    await screen.getByRole('button', { name: /^tool send_email/ }).click();
    await expect
      .element(screen.getByTestId('approval-line'))
      .toHaveTextContent('Waiting for a person (pending) · rule: send_email needs a person');
  });

  test('a call approved with edited arguments is marked edited and shows what the approver changed', async () => {
    const approved: Approval = {
      ...waiting(),
      status: 'approved',
      decision: { by: { type: 'api_key', id: 'key_ops' }, at: at(4500), reason: null, arguments: { to: 'manager@example.com' } },
    };
    const screen = await renderTrace([approved]);
    const email = screen.getByTestId('trace-row').last();
    await expect.element(email).toHaveTextContent('send_email · unfinished · edited');
    await email.getByRole('button').click();
    await expect.element(email.getByTestId('approval-line')).toHaveTextContent(/^Approved by api_key key_ops/);
    await expect.element(email.getByTestId('arguments-diff')).toHaveTextContent('Arguments edited by the approver (1 change)');
  });

  test('Expand all opens every row, Collapse all closes them', async () => {
    const screen = await renderTrace();
    await screen.getByRole('button', { name: 'Expand all' }).click();
    await expect.element(screen.getByTestId('trace-details').nth(4)).toBeInTheDocument();
    expect(screen.getByTestId('trace-details').elements()).toHaveLength(5);
    await screen.getByRole('button', { name: 'Collapse all' }).click();
    await expect.element(screen.getByTestId('trace-details').first()).not.toBeInTheDocument();
  });

  test('a run without steps says why there is nothing to show', async () => {
    const screen = await renderTrace([], { ...run, steps: [], toolCalls: [] });
    await expect.element(screen.getByText(/No steps recorded yet/)).toBeVisible();
    await expect.element(screen.getByRole('button', { name: 'Expand all' })).not.toBeInTheDocument();
  });
});
