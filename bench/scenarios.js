// The benchmark scenarios that are not request/response throughput (bench/run.js runs them through
// their `run(ctx, m)`): time to the first streamed token, many idle streams, the task dispatcher.
// Each does its measured work inside `m.measure(fn)` (server RSS and CPU around it) and returns
// { ...measured, metrics, errors, summary } as bench/run.js describes; whether a target is met is
// judged from those figures by bench/targets.js.
import http from 'node:http';
import { createParser } from 'eventsource-parser';
import { CLK_TCK, descendantPids, readChildCpuTicks, readCpuTicks, readRssKb } from './processes.js';
import { percentiles } from './stats.js';
import { serverUsPerRequest } from './targets.js';

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const round = (n, digits = 1) => Math.round(n * 10 ** digits) / 10 ** digits;

/** Calls `fn(i)` for every i below `total`, `width` calls at a time. */
async function inPool(width, total, fn) {
  let next = 0;
  await Promise.all(
    Array.from({ length: width }, async () => {
      while (next < total) await fn(next++);
    }),
  );
}

/**
 * One request whose answer is an SSE stream; resolves when the stream ends. `onEvent(name, data,
 * msSinceStart)` sees every event. `onHeaders(res, req)` runs when the response starts (status checked).
 *
 * @param {string | URL} url
 * @param {{ method?: string, headers?: import('node:http').OutgoingHttpHeaders, body?: string, agent?: import('node:http').Agent | boolean,
 *   onEvent?: (name: string | undefined, data: string, ms: number) => void,
 *   onHeaders?: (res: import('node:http').IncomingMessage, req: import('node:http').ClientRequest) => void }} options
 */
function sseRequest(url, { method = 'GET', headers = {}, body, agent, onEvent = () => {}, onHeaders = () => {} }) {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const req = http.request(url, { method, headers, agent }, (res) => {
      if (res.statusCode !== 200) {
        let text = '';
        res.on('data', (d) => (text += d));
        res.on('end', () => reject(new Error(`${method} ${url} answered ${res.statusCode}: ${text.slice(0, 300)}`)));
        return;
      }
      onHeaders(res, req);
      const parser = createParser({ onEvent: (e) => onEvent(e.event, e.data, performance.now() - started) });
      res.setEncoding('utf8');
      res.on('data', (chunk) => parser.feed(chunk));
      res.on('end', resolve);
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

const STREAM_MESSAGE = 'Hello, where is my order 4711? It was due yesterday.';

/**
 * `sse-stream`: `connections` clients, each opening POST /agents/:id/stream again as soon as the
 * previous stream ended, for `duration` seconds after a 2 s warm-up. Per stream: ms from sending the
 * request to the first `token` event, and to `done`; the server's CPU per stream (its target,
 * bench/targets.js). Then (`compareBare`) the same clients against the bare server's fixed SSE answer:
 * the machine's own limit for this scenario, whose first-token p99 is reported beside Agentry's.
 * `agentId(ctx)` picks the agent (echo's by default; sse-stream-openai-compatible's is on the mock provider).
 */
export function sseStreamScenario({
  name = 'sse-stream',
  description = 'POST /api/v1/agents/:id/stream, builtin/echo, every connection opening a new stream when the last one ends: ms to the first token event and to done (table p50/p99: first token)',
  agentId = (ctx) => ctx.agentIds[0],
  compareBare = true,
} = {}) {
  return { name, description, run: (ctx, m) => sseStreamRun(ctx, m, { agentId: agentId(ctx), compareBare }) };
}

async function sseStreamRun(ctx, m, { agentId, compareBare }) {
  const { connections, duration, warmup } = m.opts;
  const body = JSON.stringify({ message: STREAM_MESSAGE });
  const json = { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) };
  const agentry = {
    url: `${ctx.server.url}/api/v1/agents/${agentId}/stream`,
    headers: { authorization: `Bearer ${ctx.apiKey}`, ...json },
  };
  const agent = new http.Agent({ keepAlive: true, maxSockets: connections });

  /**
   * `count` clients opening streams back to back for `seconds`; `record(first, done, startedAt)` is
   * called for each completed stream with the time it was opened.
   */
  async function clients(seconds, record, count = connections, { url, headers } = agentry) {
    const end = Date.now() + seconds * 1000;
    let errors = 0;
    let lastError = null;
    await Promise.all(
      Array.from({ length: count }, async () => {
        while (Date.now() < end) {
          let first = null;
          let done = null;
          const startedAt = Date.now();
          try {
            await sseRequest(url, {
              method: 'POST',
              headers,
              body,
              agent,
              onEvent: (name, _data, ms) => {
                if (name === 'token' && first === null) first = ms;
                else if (name === 'done') done = ms;
                else if (name === 'error') throw new Error(`stream error event: ${_data}`);
              },
            });
            if (first === null || done === null) throw new Error('stream ended without a token and done');
            record?.(first, done, startedAt);
          } catch (err) {
            errors++;
            lastError = err.message;
          }
        }
      }),
    );
    return { errors, lastError };
  }

  /**
   * The clients against `target`, without a break from the warm-up into the measured window, whose
   * streams are the ones counted: restarting them all at once would add a burst of 50 simultaneous
   * requests that the steady state never has. `around` wraps the window (m.measure samples the
   * server's CPU and RSS over it). Errors count over the whole run, warm-up included.
   */
  async function windowed(target, around = async (fn) => ({ value: await fn(), seconds: duration })) {
    const firstToken = [];
    const toDone = [];
    let windowStart = Infinity;
    let windowEnd = Infinity;
    const running = clients(
      warmup + duration + 1,
      (f, d, startedAt) => {
        if (startedAt >= windowStart && startedAt < windowEnd) {
          firstToken.push(f);
          toDone.push(d);
        }
      },
      connections,
      target,
    );
    await sleep(warmup * 1000);
    const measured = await around(async () => {
      windowStart = Date.now();
      windowEnd = windowStart + duration * 1000;
      await sleep(duration * 1000);
    });
    measured.value = await running;
    return { firstToken, toDone, measured };
  }

  const { firstToken, toDone, measured } = await windowed(agentry, m.measure);
  // The same with one client: what the platform itself adds before the first token, without the
  // queueing that 50 clients opening streams back to back cause (reported, not the target's figure).
  const aloneFirst = [];
  await clients(Math.min(3, duration), (f) => aloneFirst.push(f), 1);
  // The machine's own limit, as the bare server is for the other scenarios: the same clients, the
  // same way, against the bare Fastify server's fixed SSE answer (bench/baseline.js POST /stream).
  const bareRun = compareBare ? await windowed({ url: `${ctx.baseline.url}/stream`, headers: json }) : null;
  agent.destroy();
  const alone = percentiles(aloneFirst);
  const bare = bareRun
    ? {
        ...percentiles(bareRun.firstToken),
        streamsPerSec: round(bareRun.firstToken.length / bareRun.measured.seconds, 0),
        errors: bareRun.measured.value.errors,
      }
    : { p50: null, p99: null, streamsPerSec: null, errors: null };
  const streams = firstToken.length;
  const first = percentiles(firstToken);
  const doneP = percentiles(toDone);
  const perSecond = round(streams / measured.seconds, 0);
  return {
    ...measured,
    reqPerSec: perSecond,
    requests: streams,
    serverUsPerRequest: serverUsPerRequest(measured.serverCpuSeconds, streams),
    latencyMs: { p50: first.p50, p99: first.p99, max: first.max },
    errors: measured.value.errors,
    metrics: {
      streams,
      streamsPerSec: perSecond,
      firstTokenMs: first,
      doneMs: doneP,
      oneClientFirstTokenMs: alone,
      bareServer: bare,
      lastError: measured.value.lastError,
    },
    // Against the bare server's streams (not its GET requests, as the other scenarios): bench/run.js.
    ratioTo: bare.streamsPerSec || null,
    summary: `${streams} streams (${perSecond}/s); first token p50 ${first.p50} ms, p99 ${first.p99} ms (${first.p99 !== null && bare.p99 ? `${round(first.p99 / bare.p99, 2)}x the bare server's` : 'no ratio'}), max ${first.max} ms; done p50 ${doneP.p50} ms, p99 ${doneP.p99} ms; errors ${measured.value.errors}${measured.value.lastError ? ` (last: ${measured.value.lastError})` : ''}; one client alone: first token p50 ${alone.p50} ms, p99 ${alone.p99} ms${bareRun ? `; the bare Fastify server, same clients: ${bare.streamsPerSec} streams/s, first token p50 ${bare.p50} ms, p99 ${bare.p99} ms, errors ${bare.errors}` : ''}`,
  };
}

/**
 * `latency-openai-compatible`: what one client waits, with one connection and nothing else running:
 * execute through the mock provider's model, alternated second by second with the same chat
 * completion asked of the mock directly (the body the server sends it). Issue 36's target: Agentry's
 * p50 at most 2 ms above the mock's own (bench/targets.js).
 */
export const providerLatency = {
  name: 'latency-openai-compatible',
  description:
    'one connection: POST /api/v1/agents/:id/execute on openai-compatible/bench-mock, alternated each second with the same streamed chat completion asked of the mock directly; ms per answer, p50 of each',
  async run(ctx, m) {
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    const executeBody = JSON.stringify({ message: STREAM_MESSAGE });
    const mockBody = JSON.stringify({
      model: 'bench-mock',
      messages: [
        { role: 'system', content: ctx.systemPrompt },
        { role: 'user', content: STREAM_MESSAGE },
      ],
      stream: true,
      stream_options: { include_usage: true },
    });
    const targets = {
      agentry: {
        url: `${ctx.server.url}/api/v1/agents/${ctx.mockAgents['openai-compatible']}/execute`,
        headers: { authorization: `Bearer ${ctx.apiKey}`, 'content-type': 'application/json' },
        body: executeBody,
      },
      mock: {
        url: `${ctx.mockProvider.url}/v1/chat/completions`,
        headers: { authorization: 'Bearer bench', 'content-type': 'application/json' },
        body: mockBody,
      },
    };
    const times = { agentry: [], mock: [] };
    let errors = 0;
    let lastError = null;
    const once = ({ url, headers, body }) =>
      new Promise((resolve, reject) => {
        const started = performance.now();
        const req = http.request(
          url,
          { method: 'POST', headers: { ...headers, 'content-length': Buffer.byteLength(body) }, agent },
          (res) => {
            res.resume();
            res.on('end', () =>
              res.statusCode === 200 ? resolve(performance.now() - started) : reject(new Error(`${url} answered ${res.statusCode}`)),
            );
            res.on('error', reject);
          },
        );
        req.on('error', reject);
        req.end(body);
      });
    const during = async (which, ms, record) => {
      const end = performance.now() + ms;
      while (performance.now() < end) {
        try {
          const t = await once(targets[which]);
          if (record) times[which].push(t);
        } catch (err) {
          errors++;
          lastError = err.message;
        }
      }
    };
    const { warmup, duration } = m.opts;
    await during('agentry', warmup * 500);
    await during('mock', warmup * 500);
    const measured = await m.measure(async () => {
      for (let s = 0; s < duration; s++) {
        await during(s % 2 ? 'mock' : 'agentry', 1000, true);
      }
    });
    agent.destroy();
    const own = percentiles(times.agentry);
    const mock = percentiles(times.mock);
    const above = own.p50 !== null && mock.p50 !== null ? round(own.p50 - mock.p50, 2) : null;
    return {
      ...measured,
      reqPerSec: round(times.agentry.length / (measured.seconds / 2), 0),
      requests: times.agentry.length,
      serverUsPerRequest: null,
      latencyMs: { p50: own.p50, p99: own.p99, max: own.max },
      errors,
      metrics: { agentryMs: own, mockMs: mock, p50AboveMockMs: above, mockRequests: times.mock.length, lastError },
      summary: `one connection: execute p50 ${own.p50} ms, p99 ${own.p99} ms (${times.agentry.length} answers); the mock alone p50 ${mock.p50} ms, p99 ${mock.p99} ms (${times.mock.length}); p50 ${above} ms above the mock's; errors ${errors}${lastError ? ` (last: ${lastError})` : ''}`,
    };
  },
};

const CODE_EXECUTIONS = 20;

/** Waits (at most 60 s) until the server has a sandbox process and none of them used CPU for 300 ms: the pool is loaded. */
async function untilSandboxIdle(pid) {
  const ticks = () => descendantPids(pid).reduce((sum, p) => sum + (readCpuTicks(p) ?? 0), 0);
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    const before = ticks();
    await sleep(300);
    if (descendantPids(pid).length > 0 && ticks() === before) return;
  }
}

/** The two 1,000-row CSVs of the invoice scenario: every payment matches, every tenth a cent short. */
function invoiceCsvs() {
  const header = 'id,reference,counterparty,date,amount,currency';
  const invoices = [header];
  const payments = [header];
  for (let i = 1; i <= 1000; i++) {
    const cents = 1000 + i * 7;
    invoices.push(`INV-${i},INV-${String(i).padStart(5, '0')},Customer ${i} Ltd,2026-10-01,${(cents / 100).toFixed(2)},EUR`);
    payments.push(`PAY-${i},INV${i},Customer ${i},2026-10-05,${((i % 10 === 0 ? cents - 1 : cents) / 100).toFixed(2)},EUR`);
  }
  return { 'invoices.csv': invoices.join('\n'), 'payments.csv': payments.join('\n') };
}

/** An agent on builtin/echo with the code tools and the store's invoice-reconciliation skill, and the two CSVs uploaded. */
async function codeSetup(ctx) {
  if (ctx.code) return;
  const agent = await ctx.api('POST', '/api/v1/agents', {
    name: 'Bench agent, code',
    appId: 'support',
    model: 'builtin/echo',
    tools: [{ type: 'builtin', name: 'code' }],
  });
  const skill = await ctx.api('POST', '/api/skills/store/invoice-reconciliation/acquire');
  await ctx.api('POST', `/api/skills/${skill.id}/assign`, { agentId: agent.id });
  const fileIds = [];
  for (const [name, text] of Object.entries(invoiceCsvs())) {
    const form = new FormData();
    form.append('file', new Blob([text], { type: 'text/csv' }), name);
    const res = await fetch(`${ctx.server.url}/api/v1/files`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ctx.apiKey}` },
      body: form,
    });
    if (res.status !== 201) throw new Error(`upload of ${name} answered ${res.status}: ${await res.text()}`);
    fileIds.push(/** @type {{ id: string }} */ (await res.json()).id);
  }
  ctx.code = { agentId: agent.id, skillId: skill.id, fileIds };
}

/**
 * `code-print` and `code-invoice` (issue 37): one connection, one execution at a time, each an execute
 * on builtin/echo whose message calls a code tool; the warm pool's round trip as a client sees it
 * (p50/p99) when the pool's process is loaded before each job, the server's own CPU per execution, and
 * the sandbox's (the processes the server has waited for: each one's whole life, its load included).
 * RSS after: the server's and its warm processes', idle.
 */
function codeScenario({ name, description, toolCall, expect }) {
  return {
    name,
    description,
    setup: codeSetup,
    async run(ctx, m) {
      const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
      const call = toolCall(ctx);
      const body = JSON.stringify({ message: `/tool ${call.name} ${JSON.stringify(call.input)}` });
      const url = `${ctx.server.url}/api/v1/agents/${ctx.code.agentId}/execute`;
      const headers = {
        authorization: `Bearer ${ctx.apiKey}`,
        'content-type': 'application/json',
        'content-length': Buffer.byteLength(body),
      };
      let errors = 0;
      let lastError = null;
      const once = () =>
        new Promise((resolve, reject) => {
          const started = performance.now();
          const req = http.request(url, { method: 'POST', headers, agent }, (res) => {
            let text = '';
            res.setEncoding('utf8');
            res.on('data', (d) => {
              text += d;
            });
            res.on('end', () => {
              const ms = performance.now() - started;
              if (res.statusCode !== 200) return reject(new Error(`execute answered ${res.statusCode}: ${text.slice(0, 300)}`));
              const result = JSON.parse(text).toolCalls?.[0]?.result;
              const problem = expect(result);
              return problem ? reject(new Error(problem)) : resolve(ms);
            });
            res.on('error', reject);
          });
          req.on('error', reject);
          req.end(body);
        });
      const attempt = async (times) => {
        try {
          const ms = await once();
          times?.push(ms);
        } catch (err) {
          errors++;
          lastError = err.message;
        }
      };
      // Warm-up: the pool's processes started, the server's paths compiled.
      for (let i = 0; i < 3; i++) await attempt();
      const times = [];
      const children0 = readChildCpuTicks(ctx.server.pid);
      const measured = await m.measure(async () => {
        for (let i = 0; i < CODE_EXECUTIONS; i++) {
          // Each job finds the pool's process loaded, as on a server between executions.
          await untilSandboxIdle(ctx.server.pid);
          await attempt(times);
        }
      });
      // Every process that served a job has ended and been waited for; the refill after the last one is loaded.
      await untilSandboxIdle(ctx.server.pid);
      const sandboxCpuSeconds = (readChildCpuTicks(ctx.server.pid) - children0) / CLK_TCK;
      agent.destroy();
      const idleRssMb = round((readRssKb(ctx.server.pid) ?? 0) / 1024, 1);
      const sandboxRssMb = round(descendantPids(ctx.server.pid).reduce((sum, p) => sum + (readRssKb(p) ?? 0), 0) / 1024, 1);
      const latency = percentiles(times);
      const serverUs = serverUsPerRequest(measured.serverCpuSeconds, times.length);
      const sandboxMs = times.length ? round((sandboxCpuSeconds * 1000) / times.length, 1) : null;
      return {
        ...measured,
        reqPerSec: null,
        requests: times.length,
        serverUsPerRequest: serverUs,
        latencyMs: { p50: latency.p50, p99: latency.p99, max: latency.max },
        errors,
        metrics: { sandboxCpuMsPerExecution: sandboxMs, serverRssAfterMb: idleRssMb, warmProcessesRssMb: sandboxRssMb, lastError },
        summary: `one execution at a time, each on a loaded warm process: p50 ${latency.p50} ms, p99 ${latency.p99} ms (${times.length} executions); server CPU ${serverUs} µs per execution, the sandbox's ${sandboxMs} ms (its process's whole life, load included); idle after: server RSS ${idleRssMb} MB, its warm processes ${sandboxRssMb} MB; errors ${errors}${lastError ? ` (last: ${lastError})` : ''}`,
      };
    },
  };
}

export const codePrint = codeScenario({
  name: 'code-print',
  description:
    'one connection: execute on builtin/echo calling code_run with print(1), one execution at a time (the warm pool’s round trip)',
  toolCall: () => ({ name: 'code_run', input: { language: 'python', code: 'print(1)' } }),
  expect: (result) => (result?.stdout === '1\n' ? null : `unexpected result: ${JSON.stringify(result).slice(0, 300)}`),
});

export const codeInvoice = codeScenario({
  name: 'code-invoice',
  description:
    'one connection: execute on builtin/echo calling skill_script_run with the store’s invoice-reconciliation script on two 1,000-row CSVs at /input',
  toolCall: (ctx) => ({
    name: 'skill_script_run',
    input: {
      skillId: ctx.code.skillId,
      script: 'scripts/match_invoices.py',
      args: ['/input/invoices.csv', '/input/payments.csv'],
      files: ctx.code.fileIds,
    },
  }),
  expect: (result) =>
    result?.exitCode === 0 && (result.stdout.match(/^1,/gm) ?? []).length === 900
      ? null
      : `unexpected result: ${JSON.stringify(result).slice(0, 300)}`,
});

const IDLE_STREAMS = 10_000;
/** Connections being opened at once: under the server's listen backlog (511), so no SYN is dropped. */
const OPENING_AT_ONCE = 200;
/** How long all streams stay open, idle, while RSS is sampled. */
const HOLD_SECONDS = 5;

/**
 * `idle-sse-10k`: 10,000 clients follow one long-running run (GET /runs/:runId/events). The run is
 * the echo model told to wait 10 s before each word (`/delay 10000`), so the streams carry nothing but
 * a word every 10 s and the heartbeat: as idle as a live stream gets. Server RSS is sampled while they
 * are opened and held; then the run is cancelled (every stream ends) and the sockets closed.
 */
export const idleStreams = {
  name: 'idle-sse-10k',
  description: `${IDLE_STREAMS.toLocaleString('en')} concurrent SSE streams following one slow run (GET /api/v1/runs/:runId/events; the run waits 10 s before each word): server RSS`,
  async run(ctx, m) {
    const agentId = ctx.agentIds[1];
    const auth = { authorization: `Bearer ${ctx.apiKey}` };
    const rssMb = () => {
      const kb = readRssKb(ctx.server.pid);
      return kb === null ? null : round(kb / 1024);
    };
    // The slow run, started through its own stream (kept open until the end).
    const owner = new AbortController();
    const body = JSON.stringify({ message: `/delay 10000\n${'word '.repeat(100)}` });
    const ownerStream = sseRequest(`${ctx.server.url}/api/v1/agents/${agentId}/stream`, {
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
      body,
      agent: false,
      onHeaders: (_res, req) => owner.signal.addEventListener('abort', () => req.destroy()),
    }).catch(() => {});
    let runId = null;
    for (let i = 0; i < 100 && !runId; i++) {
      const runs = await ctx.api('GET', `/api/v1/agents/${agentId}/runs?limit=1`);
      if (runs.runs[0]?.status === 'running') runId = runs.runs[0].id;
      else await sleep(50);
    }
    if (!runId) throw new Error('idle-sse-10k: the slow run did not start');

    const rssBefore = rssMb();
    const agent = new http.Agent({ keepAlive: false, maxSockets: Infinity });
    const requests = [];
    let opened = 0;
    let failed = 0;
    let lastError = null;
    const measured = await m.measure(async () => {
      const openedAt = performance.now();
      await inPool(
        OPENING_AT_ONCE,
        IDLE_STREAMS,
        () =>
          new Promise((resolve) => {
            const req = http.get(`${ctx.server.url}/api/v1/runs/${runId}/events`, { headers: auth, agent }, (res) => {
              if (res.statusCode === 200) opened++;
              else failed++;
              res.on('data', () => {});
              res.on('error', () => {});
              resolve();
            });
            req.on('error', (err) => {
              failed++;
              lastError = err.message;
              resolve();
            });
            requests.push(req);
          }),
      );
      const openSeconds = (performance.now() - openedAt) / 1000;
      await sleep(HOLD_SECONDS * 1000);
      return { openSeconds, rssHeld: rssMb() };
    });
    await ctx.api('POST', `/api/v1/runs/${runId}/cancel`, {}).catch(() => {});
    for (const req of requests) req.destroy();
    owner.abort();
    await ownerStream;
    agent.destroy();
    await sleep(1000);
    const rssAfter = rssMb();
    const { openSeconds, rssHeld } = measured.value;
    // RSS before includes the earlier scenarios' garbage: a collection during the hold can free more
    // than the streams take, and then there is no per-stream figure to give.
    const perStreamKb =
      rssBefore !== null && rssHeld !== null && opened && rssHeld >= rssBefore ? round(((rssHeld - rssBefore) * 1024) / opened, 1) : null;
    return {
      ...measured,
      errors: failed,
      metrics: {
        streams: IDLE_STREAMS,
        opened,
        failed,
        openSeconds: round(openSeconds, 2),
        rssBeforeMb: rssBefore,
        rssHeldMb: rssHeld,
        rssPeakMb: measured.rssPeakMb,
        rssAfterMb: rssAfter,
        perStreamKb,
        lastError,
      },
      summary: `${opened} of ${IDLE_STREAMS} streams open in ${round(openSeconds, 1)} s (${failed} failed${lastError ? `, last: ${lastError}` : ''}); RSS ${rssBefore} MB before, ${rssHeld} MB held, peak ${measured.rssPeakMb} MB, ${rssAfter} MB after closing; ${perStreamKb === null ? 'no per-stream figure (RSS fell during the hold)' : `~${perStreamKb} KB per stream`}`,
    };
  },
};

const TASKS = 10_000;
const CREATING_AT_ONCE = 50;

/**
 * `dispatcher-10k`: 10,000 one-time tasks created through the API (50 requests in flight), run by
 * the server's dispatcher with TASK_WORKERS=50 (bench/run.js starts the server so); time from the
 * first create until every task has completed or failed.
 */
export const dispatcher = {
  name: 'dispatcher-10k',
  description: `${TASKS.toLocaleString('en')} one-time tasks created at once through POST /api/v1/tasks (50 in flight), run by the dispatcher with TASK_WORKERS=50: seconds until all completed`,
  async run(ctx, m) {
    const agentId = ctx.agentIds[2];
    const count = async (status) => (await ctx.api('GET', `/api/v1/tasks?status=${status}&agentId=${agentId}&limit=1`)).total;
    let created = 0;
    let createErrors = 0;
    let lastError = null;
    const measured = await m.measure(async () => {
      const t0 = performance.now();
      /** @type {number | null} */
      let createdAt = null;
      const creating = inPool(CREATING_AT_ONCE, TASKS, async (i) => {
        try {
          await ctx.api('POST', '/api/v1/tasks', {
            name: `bench task ${i}`,
            description: `Summarise order ${i} for the customer.`,
            agentId,
            type: 'one_time',
          });
          created++;
        } catch (err) {
          createErrors++;
          lastError = err.message;
        }
      }).then(() => (createdAt = performance.now()));
      let completed = 0;
      let failed = 0;
      const deadline = Date.now() + 600_000;
      for (;;) {
        await sleep(250);
        if (createdAt === null) continue;
        [completed, failed] = await Promise.all([count('completed'), count('failed')]);
        if (completed + failed >= created || Date.now() > deadline) break;
      }
      await creating;
      return { seconds: (performance.now() - t0) / 1000, createSeconds: ((createdAt ?? t0) - t0) / 1000, completed, failed };
    });
    const { seconds, createSeconds, completed, failed } = measured.value;
    return {
      ...measured,
      reqPerSec: round(completed / seconds, 0),
      requests: completed,
      errors: createErrors + failed,
      metrics: {
        tasks: TASKS,
        created,
        createErrors,
        completed,
        failed,
        allDoneSeconds: round(seconds, 2),
        createSeconds: round(createSeconds, 2),
        tasksPerSec: round(completed / seconds, 0),
        lastError,
      },
      summary: `${completed} of ${TASKS} completed, ${failed} failed, ${createErrors} not created${lastError ? ` (last: ${lastError})` : ''}; created in ${round(createSeconds, 1)} s, all done after ${round(seconds, 1)} s (${round(completed / seconds, 0)} tasks/s)`,
    };
  },
};
