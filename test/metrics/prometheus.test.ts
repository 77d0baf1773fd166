import { type ChildProcess, spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { startApp, type TestApp } from '../helpers/app.js';
import { execute } from '../helpers/execute.js';
import { startMcpServer } from '../helpers/mcp-server.js';
import { freePort } from '../helpers/process.js';
import { createTask, taskIn } from '../tasks/helpers.js';

/**
 * A real Prometheus (Debian's `prometheus`, which .ci/run installs) scrapes a running Agentry's
 * /metrics with the bearer token every second; after real traffic (an execute calling an MCP tool,
 * a failed run, a task) the counters and histograms are read back through Prometheus's query API.
 */

const PROMETHEUS = '/usr/bin/prometheus';
const TOKEN = 'prometheus-scrape-token-0123';
const present = fs.existsSync(PROMETHEUS);
if (!present) console.warn(`test/metrics/prometheus.test.ts skipped: ${PROMETHEUS} is absent (apt-get install prometheus)`);

describe.skipIf(!present)('scraped by a real Prometheus', () => {
  let t: TestApp;
  let key: string;
  let mcp: Awaited<ReturnType<typeof startMcpServer>>;
  let prometheus: ChildProcess | undefined;
  let prometheusUrl: string;
  let dir: string;
  let prometheusLog = '';

  beforeAll(async () => {
    t = await startApp({ METRICS_TOKEN: TOKEN });
    ({ key } = await t.tenant('scraped'));
    mcp = await startMcpServer();
    const target = new URL(await t.listen()).host;
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'agentry-prometheus-'));
    fs.writeFileSync(
      path.join(dir, 'prometheus.yml'),
      [
        'global:',
        '  scrape_interval: 1s',
        '  scrape_timeout: 1s',
        'scrape_configs:',
        '  - job_name: agentry',
        '    metrics_path: /metrics',
        '    authorization:',
        '      type: Bearer',
        `      credentials: ${TOKEN}`,
        '    static_configs:',
        `      - targets: ['${target}']`,
        '',
      ].join('\n'),
    );
    const port = await freePort();
    prometheusUrl = `http://127.0.0.1:${port}`;
    prometheus = spawn(
      PROMETHEUS,
      [
        `--config.file=${path.join(dir, 'prometheus.yml')}`,
        `--storage.tsdb.path=${path.join(dir, 'data')}`,
        `--web.listen-address=127.0.0.1:${port}`,
      ],
      { stdio: ['ignore', 'ignore', 'pipe'] },
    );
    prometheus.stderr?.on('data', (chunk: Buffer) => {
      prometheusLog = (prometheusLog + chunk.toString()).slice(-4000);
    });
  });

  afterAll(async () => {
    if (prometheus && prometheus.exitCode === null) {
      const exited = new Promise((resolve) => prometheus!.once('exit', resolve));
      prometheus.kill('SIGTERM');
      await exited;
    }
    await t?.close();
    await mcp?.close();
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  });

  /** The query's single value, or undefined (no series yet, or Prometheus not answering yet). */
  async function query(promql: string): Promise<number | undefined> {
    try {
      const res = await fetch(`${prometheusUrl}/api/v1/query?query=${encodeURIComponent(promql)}`);
      if (!res.ok) return undefined;
      const body = (await res.json()) as { data: { result: { value: [number, string] }[] } };
      const [first] = body.data.result;
      return first ? Number(first.value[1]) : undefined;
    } catch {
      return undefined;
    }
  }

  /** The query's value, polled until the assertion chained on it holds (deadline 30 s). */
  const eventually = (promql: string) => expect.poll(() => query(promql), { timeout: 30_000, interval: 250 });

  it('sees requests, runs, model tokens, tool calls and a task move', async () => {
    // Scraped with the token: the target is up before any traffic.
    await vi.waitFor(async () => expect(await query('up{job="agentry"}'), prometheusLog).toBe(1), { timeout: 30_000, interval: 250 });

    const agent = await t.agent(key, { name: 'scraped', tools: [{ type: 'mcp', url: mcp.url }] });
    expect((await execute(t, key, agent.id, { message: '/tool add {"a":2,"b":3}' })).response.status).toBe(200);
    expect((await execute(t, key, agent.id, { message: '/fail on purpose' })).response.status).toBeGreaterThanOrEqual(400);
    const task = await createTask(t, key, { agentId: agent.id, name: 'scraped task' });
    await taskIn(t, key, task.id, ['completed']);

    const ended = (kind: string, status: string) => `sum(agentry_runs_ended_total{kind="${kind}",status="${status}"})`;
    await eventually(ended('execute', 'completed')).toBe(1);
    await eventually(ended('execute', 'failed')).toBe(1);
    await eventually(ended('task', 'completed')).toBe(1);
    await eventually('sum(agentry_runs_started_total)').toBe(3);
    // Histograms: every ended run observed once; its buckets cumulative up to +Inf.
    await eventually('sum(agentry_run_duration_seconds_count)').toBe(3);
    await eventually('sum(agentry_run_duration_seconds_bucket{le="+Inf"})').toBe(3);
    await eventually('sum(agentry_tool_calls_total{source="mcp",outcome="ok"})').toBe(1);
    await eventually('sum(agentry_tool_call_duration_seconds_count{source="mcp"})').toBe(1);
    await eventually('sum(agentry_model_tokens_total{provider="builtin",model="echo",direction="output"})').toBeGreaterThan(0);
    await eventually('sum(agentry_model_steps_total{provider="builtin",model="echo"})').toBe(4);
    const executes = 'sum(agentry_http_requests_total{route="/api/v1/agents/:id/execute",method="POST"})';
    await eventually(executes).toBe(2);
    await eventually('sum(agentry_http_request_duration_seconds_count{route="/api/v1/agents/:id/execute",status_class="2xx"})').toBe(1);
    // The task's queue is empty again, and nothing is executing.
    await eventually('agentry_task_jobs{state="queued"}').toBe(0);
    await eventually('agentry_runs_active').toBe(0);
  });
});
