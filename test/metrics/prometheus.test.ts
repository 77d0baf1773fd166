import { type ChildProcess, spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApp, type TestApp } from '../helpers/app.js';
import { startMcpServer } from '../helpers/mcp-server.js';
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

async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

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

  /** Polls the query until it answers `expected` (deadline 30 s); answers what it last saw. */
  async function eventually(promql: string, expected: (v: number) => boolean): Promise<number | undefined> {
    const deadline = Date.now() + 30_000;
    let value: number | undefined;
    while (Date.now() < deadline) {
      value = await query(promql);
      if (value !== undefined && expected(value)) return value;
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
    return value;
  }

  it('sees requests, runs, model tokens, tool calls and a task move', async () => {
    // Scraped with the token: the target is up before any traffic.
    expect(await eventually('up{job="agentry"}', (v) => v === 1), prometheusLog).toBe(1);

    const agent = await t.agent(key, { name: 'scraped', tools: [{ type: 'mcp', url: mcp.url }] });
    const ok = await t.fetch(`/api/v1/agents/${agent.id}/execute`, key, { body: { message: '/tool add {"a":2,"b":3}' } });
    expect(ok.status).toBe(200);
    const failed = await t.fetch(`/api/v1/agents/${agent.id}/execute`, key, { body: { message: '/fail on purpose' } });
    expect(failed.status).toBeGreaterThanOrEqual(400);
    const task = await createTask(t, key, { agentId: agent.id, name: 'scraped task' });
    await taskIn(t, key, task.id, ['completed']);

    const ended = (kind: string, status: string) => `sum(agentry_runs_ended_total{kind="${kind}",status="${status}"})`;
    expect(await eventually(ended('execute', 'completed'), (v) => v === 1)).toBe(1);
    expect(await eventually(ended('execute', 'failed'), (v) => v === 1)).toBe(1);
    expect(await eventually(ended('task', 'completed'), (v) => v === 1)).toBe(1);
    expect(await eventually('sum(agentry_runs_started_total)', (v) => v === 3)).toBe(3);
    // Histograms: every ended run observed once; its buckets cumulative up to +Inf.
    expect(await eventually('sum(agentry_run_duration_seconds_count)', (v) => v === 3)).toBe(3);
    expect(await eventually('sum(agentry_run_duration_seconds_bucket{le="+Inf"})', (v) => v === 3)).toBe(3);
    expect(await eventually('sum(agentry_tool_calls_total{source="mcp",outcome="ok"})', (v) => v === 1)).toBe(1);
    expect(await eventually('sum(agentry_tool_call_duration_seconds_count{source="mcp"})', (v) => v === 1)).toBe(1);
    expect(
      await eventually('sum(agentry_model_tokens_total{provider="builtin",model="echo",direction="output"})', (v) => v > 0),
    ).toBeGreaterThan(0);
    expect(await eventually('sum(agentry_model_steps_total{provider="builtin",model="echo"})', (v) => v === 4)).toBe(4);
    const executes = 'sum(agentry_http_requests_total{route="/api/v1/agents/:id/execute",method="POST"})';
    expect(await eventually(executes, (v) => v === 2)).toBe(2);
    expect(
      await eventually(
        'sum(agentry_http_request_duration_seconds_count{route="/api/v1/agents/:id/execute",status_class="2xx"})',
        (v) => v === 1,
      ),
    ).toBe(1);
    // The task's queue is empty again, and nothing is executing.
    expect(await eventually('agentry_task_jobs{state="queued"}', (v) => v === 0)).toBe(0);
    expect(await eventually('agentry_runs_active', (v) => v === 0)).toBe(0);
  });
});
