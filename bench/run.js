#!/usr/bin/env node
// Agentry benchmark harness (issue 8). Plain ESM JavaScript: it runs without a build step.
//
//   npm run bench                                  # SQLite, every scenario, 10 s each, 50 connections
//   npm run bench -- --db postgres                 # PostgreSQL (DATABASE_URL or postgres://postgres@127.0.0.1:5432/postgres)
//   npm run bench -- --only get-agent --duration 5 --connections 20
//   npm run bench -- --only get-agent --cpu-prof   # the server runs under `node --cpu-prof`
//   npm run bench -- --repeat 3                    # three full runs, each target judged on their median
//
// What runs where:
//   - the real server: `node dist/main.js` as a child process (LOG_LEVEL=warn, temporary DATA_DIR,
//     or a fresh PostgreSQL database created and dropped by this run);
//   - the baseline: `node bench/baseline.js`, a bare Fastify server answering one fixed JSON body,
//     also a child process, measured at the start and at the end of the same run, the same way as
//     the scenarios: its CPU time per request is the yardstick of the targets (bench/targets.js);
//   - the load: autocannon, in this process, separate from both servers;
//   - for the scenarios through a provider (execute-openai-compatible, execute-openai,
//     execute-anthropic, sse-stream-openai-compatible, latency-openai-compatible):
//     `node bench/mock-provider.js`, aimock answering as OpenAI (chat completions and Responses) and
//     Anthropic with one canned streamed answer over HTTP, also a child process.
// Timings are reported, never asserted: nothing here fails because a number is low.

import { execFile, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { parseArgs, promisify } from 'node:util';
import zlib from 'node:zlib';
import autocannon from 'autocannon';
import { createPgDatabase } from './postgres.js';
import { CLK_TCK, cleanupStack, cpuTicksOfStat, readCpuTicks, readRssKb, startChild } from './processes.js';
import { codeInvoice, codePrint, dispatcher, idleStreams, providerLatency, sseStreamScenario } from './scenarios.js';
import { bareUsOf, cpuMultiples, firstTokenP99, judgement, meets, serverUsPerRequest } from './targets.js';

const exec = promisify(execFile);
const ROOT = path.resolve(import.meta.dirname, '..');
const AGENTS_TO_SEED = 100;
/** Messages in each conversation of long-conversation before it is measured (issue 8). */
const LONG_CONVERSATION_MESSAGES = 1000;
/**
 * builtin/echo's window in long-conversation-window (tokens): the system prompt (~100) and about 20 of
 * the memory window's 50 messages (~22 each) fit in its 750 of room; the rest are summarised.
 */
const LONG_CONVERSATION_WINDOW = { contextWindow: 1000, outputReserve: 250 };
/** execute-metrics' server's METRICS_TOKEN (a fresh one each run; the server wants at least 16 characters). */
const BENCH_METRICS_TOKEN = randomBytes(16).toString('hex');
const WARMUP_SECONDS = 2;
/** Seconds of each short baseline sample taken before every scenario (after the usual warm-up). */
const NEAR_BASELINE_SECONDS = 3;
/**
 * Access tokens for the fresh-token scenarios, each a real exchange. They are presented in turn, each
 * request the next: with more of them than the server's verification caches hold (10,000 entries,
 * oldest evicted first; identity/cache.ts), a token is always gone from the caches before it comes
 * round again, so every request pays what a never-seen token costs (signature, claims, revocation
 * state read from the database).
 */
const FRESH_TOKENS = 12_000;

/** The models of the scenarios through a provider, each answered by bench/mock-provider.js in its vendor's wire format. */
const MOCK_MODELS = {
  'openai-compatible': 'openai-compatible/bench-mock',
  openai: 'openai/bench-mock',
  anthropic: 'anthropic/bench-mock',
};
/** What every execute variant asks (the mock's fixture, bench/fixtures/openai-compatible.json, answers a message about this order). */
const ORDER_MESSAGE = 'Hello, where is my order 4711? It was due yesterday.';

/** The server's task worker pool, for dispatcher-10k. */
const TASK_WORKERS = 50;
/** Above this much CPU (% of one core) used by the rest of the machine, a scenario is marked as disturbed. */
const DISTURBED_PCT = 25;

// ---------------------------------------------------------------------------------------------
// Scenarios
//
// A scenario is { name, description, setup?(ctx, opts), request(ctx) | requests(ctx) | run(ctx, m) }
// (its target, if it has one, and how it is judged from the row's figures: bench/targets.js):
//   setup(ctx, opts) optional: create what the scenario needs through the HTTP API (ctx.api);
//   request(ctx) one autocannon request { method, path, headers?, body? }, repeated;
//   requests(ctx) an autocannon `requests` array, each connection cycling through it;
//   serverEnv(ctx) optional: env added to the server's for this scenario alone (METRICS_TOKEN,
//                OTEL_*, MODEL_PRICES): the scenario gets a server of its own, started after its
//                setup (which runs against the shared server) on the same data, stopped after it;
//   alongside(ctx) optional, request scenarios: made before the scenario's first request, `start()`ed
//                just before the measured load and `stop()`ped after it; its `result(row)`, taken once the scenario's own server has stopped, adds
//                { metrics, errors, summary } to the row (a /metrics scraper, an OTLP span count);
//   costAgainst  optional: the scenario this one is a variant of; when both ran, the summary says what
//                the variant costs (req/s and server CPU per request against the other's);
//   run(ctx, m)  for what is not request/response throughput (time to first SSE token, idle
//                connections, dispatcher drain time): do the work inside `m.measure(fn)`, which
//                samples the server's RSS and CPU around it (m.opts holds the options), and return
//                { ...m.measure result, metrics: {...}, errors, summary }:
//                `summary` is one line for the report, `metrics` goes to the results JSON.
// `baseline` is measured first and last on every run; the others run in this order.
// ---------------------------------------------------------------------------------------------

const json = { 'content-type': 'application/json' };

/**
 * @typedef {{ method?: string, path: string, headers?: Record<string, string>, body?: string }} Request
 * @typedef {{ measure: (fn: () => Promise<any>) => Promise<object>, opts: object }} Measurer
 * @typedef {{ metrics: object, errors: number, summary: string }} RunOutcome
 * @typedef {{ start: () => void, stop: () => Promise<void>, result: (row: object) => { metrics: object, errors: number, summary: string } }} Alongside
 * @typedef {{ name: string, description: string, server?: 'baseline', mock?: boolean,
 *   setup?: (ctx: object, opts: object) => Promise<void>, serverEnv?: (ctx: object) => Record<string, string>,
 *   alongside?: (ctx: object) => Alongside, costAgainst?: string, request?: (ctx: object) => Request,
 *   requests?: (ctx: object) => Request[], run?: (ctx: object, m: Measurer) => Promise<RunOutcome & object> }} Scenario
 * @type {Scenario[]}
 */
const SCENARIOS = [
  {
    name: 'get-agent',
    description: `GET /api/v1/agents/:id, API key, cycling over ${AGENTS_TO_SEED} agents`,
    requests: (ctx) => ctx.agentIds.map((id) => ({ method: 'GET', path: `/api/v1/agents/${id}` })),
  },
  {
    name: 'list-agents',
    description: `GET /api/v1/agents?limit=20, API key, tenant with ${AGENTS_TO_SEED} agents`,
    request: () => ({ method: 'GET', path: '/api/v1/agents?limit=20' }),
  },

  {
    name: 'execute',
    description: 'POST /api/v1/agents/:id/execute, builtin/echo, a new conversation each time (run, messages, events persisted)',
    request: executeRequest,
  },
  providerExecute('openai-compatible', 'a local OpenAI-compatible server (aimock) streams a canned chat completion'),
  providerExecute('openai', 'aimock answers as OpenAI’s Responses API, streamed'),
  providerExecute('anthropic', 'aimock answers as Anthropic’s Messages API, streamed'),
  {
    ...sseStreamScenario({
      name: 'sse-stream-openai-compatible',
      description: `sse-stream's clients on an agent on ${MOCK_MODELS['openai-compatible']}, each token relayed from the mock's stream`,
      agentId: (ctx) => ctx.mockAgents['openai-compatible'],
      compareBare: false,
    }),
    setup: mockAgentSetup('openai-compatible'),
    mock: true,
    costAgainst: 'execute-openai-compatible',
  },
  {
    ...providerLatency,
    setup: mockAgentSetup('openai-compatible'),
    mock: true,
  },
  {
    name: 'execute-metrics',
    description:
      'execute as `execute`, on a server of its own started with METRICS_TOKEN set (Prometheus metrics recorded); ' +
      'the harness scrapes GET /metrics once a second during the measurement',
    serverEnv: () => ({ METRICS_TOKEN: BENCH_METRICS_TOKEN }),
    alongside: metricsScraper,
    costAgainst: 'execute',
    request: executeRequest,
  },
  {
    name: 'execute-tracing',
    description:
      'execute as `execute`, on a server of its own with OTEL_EXPORTER_OTLP_ENDPOINT at an OTLP/HTTP receiver in the ' +
      'harness (answers 200 at once, counts the spans): spans received per request',
    setup: otlpReceiverSetup,
    serverEnv: (ctx) => ({ OTEL_EXPORTER_OTLP_ENDPOINT: ctx.otlpReceiver.url }),
    alongside: spanCounter,
    costAgainst: 'execute',
    request: executeRequest,
  },
  {
    name: 'authorize',
    description: 'POST /api/v1/identity/authorize, the same access token repeatedly (ExtAuthZ decision)',
    setup: identitySetup,
    request: (ctx) => ({
      method: 'POST',
      path: '/api/v1/identity/authorize',
      headers: { ...json, authorization: `Bearer ${ctx.accessToken}` },
      body: JSON.stringify({ tool: 'search', callee: ctx.agentIds[1] }),
    }),
  },
  {
    name: 'introspect',
    description: 'POST /api/v1/identity/oauth/introspect, an exchanged access token (RFC 7662)',
    setup: identitySetup,
    request: (ctx) => ({
      method: 'POST',
      path: '/api/v1/identity/oauth/introspect',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ token: ctx.accessToken }).toString(),
    }),
  },
  {
    name: 'authorize-fresh',
    description: `POST /api/v1/identity/authorize, a different access token each request (${FRESH_TOKENS} in turn: none is in the verification caches)`,
    setup: freshTokensSetup,
    requests: (ctx) => [
      {
        method: 'POST',
        path: '/api/v1/identity/authorize',
        headers: { ...json, authorization: `Bearer ${ctx.freshTokens[0]}` },
        body: JSON.stringify({ tool: 'search', callee: ctx.agentIds[1] }),
        setupRequest: (req) => ({ ...req, headers: { ...req.headers, authorization: `Bearer ${nextFreshToken(ctx)}` } }),
      },
    ],
  },
  {
    name: 'introspect-fresh',
    description: `POST /api/v1/identity/oauth/introspect, a different access token each request (${FRESH_TOKENS} in turn)`,
    setup: freshTokensSetup,
    requests: (ctx) => [
      {
        method: 'POST',
        path: '/api/v1/identity/oauth/introspect',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ token: ctx.freshTokens[0] }).toString(),
        setupRequest: (req) => ({ ...req, body: new URLSearchParams({ token: nextFreshToken(ctx) }).toString() }),
      },
    ],
  },
  {
    name: 'token-exchange',
    description: 'POST /api/v1/identity/oauth/token, RFC 8693 exchange of one SVID, a fresh at+jwt each time',
    setup: identitySetup,
    request: (ctx) => ({
      method: 'POST',
      path: '/api/v1/identity/oauth/token',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        grant_type: 'urn:ietf:params:oauth:grant-type:token-exchange',
        subject_token: ctx.svid,
        subject_token_type: 'urn:ietf:params:oauth:token-type:jwt',
        audience: ctx.agentIds[1],
        scope: 'tools:search',
      }).toString(),
    }),
  },

  {
    name: 'long-conversation',
    description:
      `POST /api/v1/conversations/:id/messages, builtin/echo, each connection on its own conversation seeded ` +
      `through the API with ${LONG_CONVERSATION_MESSAGES.toLocaleString('en')} messages (agent default memoryWindow 50); ` +
      'each request adds 2 more (user + assistant)',
    setup: longConversationSetup,
    requests: (ctx) => [longConversationRequest(ctx)],
  },
  {
    name: 'long-conversation-window',
    description:
      `long-conversation on the same conversations, on a server of its own where MODEL_PRICES gives builtin/echo a ` +
      `${LONG_CONVERSATION_WINDOW.contextWindow}-token context window (${LONG_CONVERSATION_WINDOW.outputReserve} kept for the answer): ` +
      'the 50 messages of the memory window do not fit, so older turns are summarised (by echo), down to half the room: about one request in five or six',
    setup: longConversationSetup,
    serverEnv: () => ({ MODEL_PRICES: JSON.stringify({ 'builtin/echo': LONG_CONVERSATION_WINDOW }) }),
    costAgainst: 'long-conversation',
    alongside: summaryCheck,
    requests: (ctx) => [longConversationRequest(ctx)],
  },

  sseStreamScenario(),
  idleStreams,
  dispatcher,
  codePrint,
  codeInvoice,
];

/** The request of execute and its variants: a new conversation each time. */
function executeRequest(ctx, agentId = ctx.agentIds[0]) {
  return { method: 'POST', path: `/api/v1/agents/${agentId}/execute`, headers: json, body: JSON.stringify({ message: ORDER_MESSAGE }) };
}

/** execute through `provider`'s model, answered over HTTP by the mock (issue 36 judges it against echo execute). */
function providerExecute(provider, how) {
  return {
    name: `execute-${provider}`,
    description: `POST /api/v1/agents/:id/execute, ${MOCK_MODELS[provider]} over HTTP: ${how} (bench/mock-provider.js); a new conversation each time`,
    setup: mockAgentSetup(provider),
    mock: true,
    request: (ctx) => executeRequest(ctx, ctx.mockAgents[provider]),
  };
}

/**
 * execute-metrics: GET /metrics once a second while the load runs, as a Prometheus server would
 * (each scrape renders every series, which is what the scenario should pay for).
 */
function metricsScraper(ctx) {
  const scrapes = [];
  let lastError = null;
  const scrape = async () => {
    const started = performance.now();
    try {
      const res = await fetch(`${ctx.server.url}/metrics`, { headers: { authorization: `Bearer ${BENCH_METRICS_TOKEN}` } });
      const text = await res.text();
      scrapes.push({ status: res.status, ms: performance.now() - started, bytes: Buffer.byteLength(text) });
      if (res.status !== 200) lastError = `${res.status}: ${text.slice(0, 200)}`;
    } catch (err) {
      scrapes.push({ status: null, ms: performance.now() - started, bytes: 0 });
      lastError = err.message;
    }
  };
  const inFlight = new Set();
  let timer;
  return {
    start() {
      timer = setInterval(() => {
        const p = scrape().finally(() => inFlight.delete(p));
        inFlight.add(p);
      }, 1000);
    },
    async stop() {
      clearInterval(timer);
      await Promise.all(inFlight);
    },
    result() {
      const failed = scrapes.filter((s) => s.status !== 200).length;
      const ms = scrapes.map((s) => s.ms).sort((a, b) => a - b);
      const maxMs = ms.length ? round(ms[ms.length - 1], 1) : null;
      const bytes = scrapes.length ? scrapes[scrapes.length - 1].bytes : null;
      return {
        errors: failed,
        metrics: { scrapes: scrapes.length, failed, scrapeMaxMs: maxMs, lastScrapeBytes: bytes, lastError },
        summary: `${scrapes.length} scrapes of /metrics during the measurement, ${failed} not 200${lastError ? ` (last: ${lastError})` : ''}; slowest ${maxMs} ms, last ${bytes} bytes`,
      };
    },
  };
}

/**
 * execute-tracing's collector: an OTLP/HTTP receiver in this process that answers every POST
 * /v1/traces with 200 at once and keeps the body; spanCounter decodes them after the measurement, so
 * decoding does not compete with the measured server for the machine's cores during it.
 */
async function otlpReceiverSetup(ctx) {
  if (ctx.otlpReceiver) return;
  const receiver = { spans: 0, exports: 0, badExports: 0, traces: new Map(), bodies: [] };
  const server = http.createServer((req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      if (req.method !== 'POST' || req.url !== '/v1/traces') {
        res.writeHead(404).end();
        return;
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      receiver.exports++;
      receiver.bodies.push({ body: Buffer.concat(chunks), gzip: req.headers['content-encoding'] === 'gzip' });
    });
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(undefined)));
  receiver.url = `http://127.0.0.1:${/** @type {import('node:net').AddressInfo} */ (server.address()).port}`;
  receiver.close = () => new Promise((resolve) => server.close(() => resolve(undefined)));
  ctx.cleanups.push(receiver.close);
  ctx.otlpReceiver = receiver;
  log(`OTLP/HTTP receiver ${receiver.url}`);
}

/** The exports the receiver kept, decoded: their spans counted by trace (one execute request = one trace). */
function decodeExports(r) {
  for (const { body, gzip } of r.bodies.splice(0)) {
    try {
      for (const rs of JSON.parse((gzip ? zlib.gunzipSync(body) : body).toString('utf8')).resourceSpans ?? [])
        for (const ss of rs.scopeSpans ?? [])
          for (const span of ss.spans ?? []) {
            r.spans++;
            const t = r.traces.get(span.traceId) ?? { spans: 0, execute: false };
            t.spans++;
            if (span.name === 'POST /api/v1/agents/:id/execute') t.execute = true;
            r.traces.set(span.traceId, t);
          }
    } catch {
      r.badExports++;
    }
  }
}

/**
 * execute-tracing's figures, read after its server has stopped (which flushes the last batch of spans).
 * One execute request is one trace, so spans per execute trace is exact whatever the timing; fewer
 * execute traces than responses means spans were dropped (the batch processor's queue full). Other
 * traces are the server's own (readiness checks, background work).
 */
function spanCounter(ctx) {
  const r = ctx.otlpReceiver;
  r.spans = 0;
  r.exports = 0;
  r.badExports = 0;
  r.traces.clear();
  r.bodies.length = 0;
  return {
    start() {},
    async stop() {},
    result(row) {
      decodeExports(r);
      let executeTraces = 0;
      let executeSpans = 0;
      for (const t of r.traces.values())
        if (t.execute) {
          executeTraces++;
          executeSpans += t.spans;
        }
      const perTrace = executeTraces ? round(executeSpans / executeTraces, 2) : null;
      return {
        errors: r.badExports + (executeTraces ? 0 : 1),
        metrics: {
          spans: r.spans,
          exports: r.exports,
          badExports: r.badExports,
          traces: r.traces.size,
          executeTraces,
          spansPerExecuteTrace: perTrace,
          otherSpans: r.spans - executeSpans,
          responses: row.responsesSent,
        },
        summary: `${r.spans} spans received in ${r.exports} exports (${r.badExports} unreadable): ${executeTraces} execute traces (${row.responsesSent} responses, warm-up included) of ${perTrace} spans each, ${r.spans - executeSpans} spans in ${r.traces.size - executeTraces} other traces`,
      };
    },
  };
}

/**
 * long-conversation-window's proof that the history was fitted: after the measurement, one more
 * message to a conversation, `/system`, which builtin/echo answers with the system prompt it was given;
 * with turns left out of the window, that holds the summary of them (runtime/context/fit.ts).
 */
function summaryCheck(ctx) {
  let summarised = null;
  let lastError = null;
  return {
    start() {},
    async stop() {
      try {
        const answer = await ctx.api('POST', `/api/v1/conversations/${ctx.longConversations.ids[0]}/messages`, {
          content: '/system',
          onActiveRun: 'enqueue',
        });
        summarised = String(answer.message?.content ?? '').includes('Summary of the earlier conversation');
      } catch (err) {
        lastError = err.message;
      }
    },
    result() {
      return {
        errors: summarised ? 0 : 1,
        metrics: { summarised, lastError },
        summary: summarised
          ? "the model's prompt held a summary of the earlier conversation (checked with echo's /system after the measurement)"
          : `NO summary in the model's prompt after the measurement${lastError ? ` (${lastError})` : ''}: the window did not make fitting happen`,
      };
    },
  };
}

/** The setup of a scenario through `provider`: an agent like the others but on its mock model, which the server reaches over HTTP. */
function mockAgentSetup(provider) {
  return async (ctx) => {
    ctx.mockAgents ??= {};
    if (ctx.mockAgents[provider]) return;
    const agent = await ctx.api('POST', '/api/v1/agents', {
      name: `Bench agent, ${provider} provider`,
      appId: 'support',
      role: 'support agent',
      description: `Seeded by bench/run.js for the scenarios through ${provider}`,
      systemPrompt: ctx.systemPrompt,
      model: MOCK_MODELS[provider],
    });
    ctx.mockAgents[provider] = agent.id;
  };
}

/** One SVID for agent 0 addressed to the issuer, exchanged once for a token on agent 1's `search` tool. */
async function identitySetup(ctx) {
  if (ctx.accessToken) return;
  const { svid } = await ctx.api('POST', `/api/v1/identity/agents/${ctx.agentIds[0]}/svid`, { audience: ctx.server.url, ttlSeconds: 3600 });
  ctx.svid = svid;
  ctx.accessToken = await exchangeToken(ctx);
}

/** Exchanges the agent's SVID for an access token (RFC 8693), as the identity scenarios present them. */
async function exchangeToken(ctx) {
  const res = await fetch(`${ctx.server.url}/api/v1/identity/oauth/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({
      grant_type: 'urn:ietf:params:oauth:grant-type:token-exchange',
      subject_token: ctx.svid,
      subject_token_type: 'urn:ietf:params:oauth:token-type:jwt',
      audience: ctx.agentIds[1],
      scope: 'tools:search',
    }),
  });
  if (!res.ok) throw new Error(`token exchange answered ${res.status}: ${await res.text()}`);
  return /** @type {{ access_token: string }} */ (await res.json()).access_token;
}

async function freshTokensSetup(ctx) {
  await identitySetup(ctx);
  if (ctx.freshTokens) return;
  const started = Date.now();
  const tokens = new Array(FRESH_TOKENS);
  let next = 0;
  await Promise.all(
    Array.from({ length: 16 }, async () => {
      while (next < FRESH_TOKENS) {
        const i = next++;
        tokens[i] = await exchangeToken(ctx);
      }
    }),
  );
  ctx.freshTokens = tokens;
  ctx.freshNext = 0;
  log(`fresh tokens: ${FRESH_TOKENS} exchanged in ${((Date.now() - started) / 1000).toFixed(1)} s`);
}

/** The next fresh token, shared by all connections so that no two requests in a row present the same one. */
function nextFreshToken(ctx) {
  const token = ctx.freshTokens[ctx.freshNext];
  ctx.freshNext = (ctx.freshNext + 1) % ctx.freshTokens.length;
  return token;
}

/**
 * One conversation per connection, each holding LONG_CONVERSATION_MESSAGES messages, seeded through
 * the API: every POST /conversations/:id/messages stores the user's message and the agent's answer.
 * A conversation takes one message at a time (onActiveRun `reject` answers 409 while it is busy), so
 * the connections must not share one: requests lease a free conversation (see longConversationRequest).
 */
async function longConversationSetup(ctx, opts) {
  if (ctx.longConversations?.ids.length >= opts.connections) return;
  const started = Date.now();
  const ids = [];
  for (let i = 0; i < opts.connections; i++) {
    const c = await ctx.api('POST', '/api/v1/conversations', { agentId: ctx.agentIds[0], name: `Bench long conversation ${i}` });
    ids.push(c.id);
  }
  const perConversation = LONG_CONVERSATION_MESSAGES / 2;
  let posted = 0;
  const progress = setInterval(() => log(`long-conversation: seeded ${posted} of ${ids.length * perConversation} exchanges`), 10_000);
  try {
    // All conversations at once, each one message after the other.
    await Promise.all(
      ids.map(async (id, c) => {
        for (let i = 0; i < perConversation; i++) {
          await ctx.api('POST', `/api/v1/conversations/${id}/messages`, {
            content: `Customer ${c}, message ${i}: where is my order ${4700 + i}? It was due yesterday.`,
          });
          posted++;
        }
      }),
    );
  } finally {
    clearInterval(progress);
  }
  const check = await ctx.api('GET', `/api/v1/conversations/${ids[0]}`);
  if (check.messageCount !== LONG_CONVERSATION_MESSAGES) {
    throw new Error(`long-conversation: seeded conversation holds ${check.messageCount} messages, not ${LONG_CONVERSATION_MESSAGES}`);
  }
  log(
    `long-conversation: ${ids.length} conversations of ${LONG_CONVERSATION_MESSAGES} messages seeded in ${((Date.now() - started) / 1000).toFixed(1)} s`,
  );
  ctx.longConversations = { ids, free: [...ids], leased: new Map() };
}

/**
 * The autocannon request of long-conversation. autocannon has no per-connection state that lasts
 * from one request to the next, so each request leases a free conversation in `setupRequest` and
 * gives it back in `onResponse`. A request that never gets a response (timeout, socket error, or
 * still in flight when the previous autocannon run stopped) keeps its lease; every autocannon run
 * starts with all conversations free (this is called once per run), and when none is free the
 * conversation leased longest ago is taken. For those rare overlaps the message says
 * `onActiveRun: 'enqueue'` (wait for the current answer) instead of the agent's default `reject`
 * (409); without an overlap it changes nothing.
 */
function longConversationRequest(ctx) {
  const pool = ctx.longConversations;
  pool.free = [...pool.ids];
  pool.leased.clear();
  const take = () => {
    let id = pool.free.pop();
    if (id === undefined) [id] = [...pool.leased.entries()].sort((a, b) => a[1] - b[1])[0];
    pool.leased.set(id, Date.now());
    return id;
  };
  return {
    method: 'POST',
    path: `/api/v1/conversations/${pool.free[0]}/messages`,
    headers: json,
    body: JSON.stringify({ content: 'And where is my parcel now? Please check again, it is urgent.', onActiveRun: 'enqueue' }),
    setupRequest: (req, context) => {
      context.conversationId = take();
      req.path = `/api/v1/conversations/${context.conversationId}/messages`;
      return req;
    },
    onResponse: (_status, _body, context) => {
      const id = context.conversationId;
      if (id === undefined || !pool.leased.delete(id)) return;
      pool.free.push(id);
    },
  };
}

const BASELINE = {
  name: 'baseline',
  description: 'bare Fastify, one fixed JSON body, no auth/DB/logging',
  server: 'baseline',
  request: () => ({ method: 'GET', path: '/' }),
};

// ---------------------------------------------------------------------------------------------

const USAGE = `usage: node bench/run.js [--db sqlite|postgres] [--duration <s>] [--connections <n>]
                         [--only <scenario,...>] [--wait-idle <s>] [--cpu-prof] [--server-node-arg <flag>]... [--no-write]
                         [--repeat <n>]
  --repeat <n>       n full runs one after the other (each its own servers and database), then every
                     target judged on the median of the n (bench/median.js); issue 22 judges on 3.
                     Each run's results go to bench/results/<date>T<hhmm>-<db>-run<i>.json, the median
                     to <date>T<hhmm>-<db>-median.json (or --out)
  --cpu-prof         run the server under node --cpu-prof (profiles in .bench-data/profiles/)
  --server-node-arg  extra flag for the server's node process, e.g. --server-node-arg=--import=./x.mjs
                     (experiments; results then go to .bench-data/ instead of bench/results/)
  --wait-idle <s>    before each scenario, wait up to <s> seconds for the machine to be idle
                     (other load under ${DISTURBED_PCT}% of a core over 2 s); for shared machines
  --out <file>       write the results JSON there instead
  --no-write         print only
scenarios: ${SCENARIOS.map((s) => s.name).join(', ')} (baseline always runs first and last)
  --only soak        ten minutes of mixed traffic on PostgreSQL, two replicas, PostgreSQL restarted half-way
                     (bench/soak.js; its options: node bench/soak.js --help)`;

function parseOptions(argv) {
  const { values } = parseArgs({
    args: argv,
    options: {
      db: { type: 'string', default: 'sqlite' },
      duration: { type: 'string', default: '10' },
      connections: { type: 'string', default: '50' },
      only: { type: 'string' },
      'cpu-prof': { type: 'boolean', default: false },
      'server-node-arg': { type: 'string', multiple: true, default: [] },
      'no-write': { type: 'boolean', default: false },
      'wait-idle': { type: 'string', default: '0' },
      out: { type: 'string' },
      repeat: { type: 'string', default: '1' },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
  if (values.help) {
    process.stdout.write(`${USAGE}\n`);
    process.exit(0);
  }
  const fail = (msg) => {
    process.stderr.write(`bench: ${msg}\n${USAGE}\n`);
    process.exit(2);
  };
  if (!['sqlite', 'postgres'].includes(values.db)) fail(`--db must be sqlite or postgres, got ${values.db}`);
  const duration = Number(values.duration);
  if (!Number.isFinite(duration) || duration < 1) fail(`--duration must be a number of seconds >= 1`);
  const connections = Number(values.connections);
  if (!Number.isInteger(connections) || connections < 1) fail(`--connections must be a whole number >= 1`);
  let scenarios = SCENARIOS;
  if (values.only) {
    const wanted = values.only
      .split(',')
      .map((s) => s.trim())
      .filter((s) => s && s !== 'baseline');
    const unknown = wanted.filter((w) => !SCENARIOS.some((s) => s.name === w));
    if (unknown.length) fail(`unknown scenario ${unknown.join(', ')}`);
    scenarios = SCENARIOS.filter((s) => wanted.includes(s.name));
  }
  const serverNodeArgs = values['server-node-arg'];
  const waitIdle = Number(values['wait-idle']);
  if (!Number.isFinite(waitIdle) || waitIdle < 0) fail('--wait-idle must be a number of seconds >= 0');
  const repeat = Number(values.repeat);
  if (!Number.isInteger(repeat) || repeat < 1) fail('--repeat must be a whole number >= 1');
  if (repeat > 1 && (values['cpu-prof'] || serverNodeArgs.length))
    fail('--repeat is for results runs: not with --cpu-prof or --server-node-arg');
  return {
    db: values.db,
    only: values.only,
    repeat,
    duration,
    warmup: WARMUP_SECONDS,
    connections,
    scenarios,
    cpuProf: values['cpu-prof'],
    serverNodeArgs,
    waitIdle,
    out: values.out,
    write: !values['no-write'],
  };
}

/** `--only soak` (alone): the soak scenario, bench/soak.js, which takes its own options. */
function onlySoak(argv) {
  const i = argv.findIndex((a) => a === '--only' || a.startsWith('--only='));
  if (i === -1) return false;
  const value = argv[i].startsWith('--only=') ? argv[i].slice('--only='.length) : argv[i + 1];
  return value === 'soak';
}

// ---- processes -------------------------------------------------------------------------------

// (Starting them: bench/processes.js.)

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function newestMtime(dir) {
  let newest = 0;
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, entry.name);
    newest = Math.max(newest, entry.isDirectory() ? newestMtime(p) : fs.statSync(p).mtimeMs);
  }
  return newest;
}

async function ensureBuilt() {
  const main = path.join(ROOT, 'dist/main.js');
  const reason = !fs.existsSync(main)
    ? 'dist/ is missing'
    : newestMtime(path.join(ROOT, 'src')) > fs.statSync(main).mtimeMs
      ? 'src/ is newer than dist/'
      : null;
  if (!reason) return;
  log(`building (${reason}): npm run build`);
  await exec('npm', ['run', 'build'], { cwd: ROOT });
}

async function sqliteVersion() {
  const { default: SQLite } = await import('better-sqlite3');
  const mem = new SQLite(':memory:');
  try {
    return /** @type {{ v: string }} */ (mem.prepare('select sqlite_version() as v').get()).v;
  } finally {
    mem.close();
  }
}

// ---- measurement -----------------------------------------------------------------------------

// (A process's CPU time and RSS: bench/processes.js.)

/** Busy and total jiffies of the whole machine, from the first line of /proc/stat. */
function readMachineTicks() {
  const [, ...f] = fs.readFileSync('/proc/stat', 'utf8').split('\n', 1)[0].trim().split(/\s+/);
  const n = f.map(Number);
  const idle = n[3] + n[4]; // idle + iowait
  const total = n.slice(0, 8).reduce((a, b) => a + b, 0); // user..steal; guest is already in user
  return { busy: total - idle, total };
}

/**
 * CPU ticks per PostgreSQL backend serving `database` (its process title names the database,
 * e.g. "postgres: postgres agentry_bench_1a2b3c4d 127.0.0.1(5678) idle"); other databases'
 * backends and the shared background processes count as the rest of the machine.
 */
function readPostgresTicks(database) {
  const ticks = new Map();
  for (const pid of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(pid)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
      if (!stat.includes('(postgres)')) continue;
      if (!fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(` ${database} `)) continue;
      ticks.set(pid, cpuTicksOfStat(stat));
    } catch {
      // exited meanwhile
    }
  }
  return ticks;
}

/** Ticks used between two readings; a backend started in between counts whole, one that exited is lost. */
function ticksBetween(before, after) {
  let sum = 0;
  for (const [pid, t] of after) sum += t - (before.get(pid) ?? 0);
  return sum;
}

/**
 * Runs `fn` while sampling the server process: peak RSS (VmRSS every 100 ms) and CPU use, with
 * the CPU use of this process (the load generator), of PostgreSQL's processes, of the mock provider
 * (when it runs) and of everything else on the machine (other people's work shows up there), all in
 * % of one core.
 */
/**
 * @param {number} pid
 * @param {() => Promise<any>} fn
 * @param {{ postgres?: string, mockPid?: number }} [options] the bench database's name (its backends' CPU), the mock provider's pid
 */
async function measure(pid, fn, { postgres, mockPid } = {}) {
  let peakKb = readRssKb(pid) ?? 0;
  const timer = setInterval(() => {
    peakKb = Math.max(peakKb, readRssKb(pid) ?? 0);
  }, 100);
  const startedAt = Date.now();
  const t0 = process.hrtime.bigint();
  const ticks0 = readCpuTicks(pid);
  const mock0 = mockPid ? readCpuTicks(mockPid) : null;
  const pg0 = postgres ? readPostgresTicks(postgres) : null;
  const machine0 = readMachineTicks();
  const self0 = process.cpuUsage();
  let value;
  try {
    value = await fn();
  } finally {
    clearInterval(timer);
  }
  const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
  const self = process.cpuUsage(self0);
  const machine1 = readMachineTicks();
  const pg1 = postgres ? readPostgresTicks(postgres) : null;
  const ticks1 = readCpuTicks(pid);
  const mock1 = mockPid ? readCpuTicks(mockPid) : null;
  peakKb = Math.max(peakKb, readRssKb(pid) ?? 0);
  const pctOfCore = (ticks) => round((ticks / CLK_TCK / seconds) * 100, 0);
  // Unrounded: the server's CPU per request is computed from it (serverUsPerRequest).
  const serverCpuSeconds = ticks0 === null || ticks1 === null ? null : (ticks1 - ticks0) / CLK_TCK;
  const serverCpuPct = serverCpuSeconds === null ? null : round((serverCpuSeconds / seconds) * 100, 0);
  const loadgenCpuPct = round(((self.user + self.system) / 1e6 / seconds) * 100, 0);
  const dbCpuPct = postgres ? pctOfCore(ticksBetween(pg0, pg1)) : null;
  const mockCpuPct = mock0 === null || mock1 === null ? null : pctOfCore(mock1 - mock0);
  // /proc/stat sums all cores: busy share x cores = % of one core.
  const machineCpuPct = round(((machine1.busy - machine0.busy) / (machine1.total - machine0.total)) * os.cpus().length * 100, 0);
  return {
    value,
    startedAt,
    seconds,
    rssPeakMb: round(peakKb / 1024, 1),
    serverCpuSeconds,
    serverCpuPct,
    loadgenCpuPct,
    dbCpuPct,
    mockCpuPct,
    otherCpuPct: Math.max(0, machineCpuPct - (serverCpuPct ?? 0) - loadgenCpuPct - (dbCpuPct ?? 0) - (mockCpuPct ?? 0)),
    machineCpuPct,
    loadavg1: round(os.loadavg()[0], 2),
  };
}

function cannon(url, scenario, ctx, opts, duration) {
  const requests = scenario.requests ? scenario.requests(ctx) : [scenario.request(ctx)];
  return autocannon({
    url,
    connections: opts.connections,
    duration,
    headers: scenario.server === 'baseline' ? {} : { authorization: `Bearer ${ctx.apiKey}` },
    requests,
  });
}

/**
 * fetch, retried once when the connection fails: after a long pause (another scenario, --wait-idle)
 * a kept-alive connection can be closed by the server just as it is reused.
 */
async function fetchRetry(url, init) {
  try {
    return await fetch(url, init);
  } catch (err) {
    log(`fetch ${url} failed (${err.cause?.code ?? err.cause?.message ?? err.message}); retrying once`);
    await sleep(200);
    return fetch(url, init);
  }
}

/** One request through fetch before the load: a scenario answering 4xx/5xx is a setup error, not a result. */
async function checkFirstRequest(url, scenario, ctx) {
  const r = scenario.requests ? scenario.requests(ctx)[0] : scenario.request(ctx);
  const res = await fetchRetry(url + r.path, {
    method: r.method ?? 'GET',
    headers: { ...(scenario.server === 'baseline' ? {} : { authorization: `Bearer ${ctx.apiKey}` }), ...(r.headers ?? {}) },
    body: r.body,
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`${scenario.name}: ${r.method ?? 'GET'} ${r.path} answered ${res.status}: ${text.slice(0, 500)}`);
  return Buffer.byteLength(text);
}

/** Waits (up to `seconds`) until the machine, apart from our idle servers, is quiet. */
async function waitIdle(seconds) {
  const deadline = Date.now() + seconds * 1000;
  for (;;) {
    const m0 = readMachineTicks();
    await sleep(2000);
    const m1 = readMachineTicks();
    const busyPct = ((m1.busy - m0.busy) / (m1.total - m0.total)) * os.cpus().length * 100;
    if (busyPct <= DISTURBED_PCT) return true;
    if (Date.now() > deadline) {
      log(`machine still busy (${busyPct.toFixed(0)}% of a core) after ${seconds} s; measuring anyway`);
      return false;
    }
  }
}

/**
 * A scenario with `serverEnv`: its setup against the shared server (long-conversation-window reuses
 * long-conversation's conversations), then the scenario against a server of its own, started with the
 * shared server's env plus the scenario's on the same data (SQLite file or PostgreSQL database; the
 * shared server stays up, idle), then stopped, which also flushes what it exports (spans).
 */
async function runOnOwnServer(scenario, ctx, opts) {
  if (scenario.setup) await scenario.setup(ctx, opts);
  const shared = ctx.server;
  const own = await startChild(scenario.name, [...ctx.serverArgs, 'dist/main.js'], { ...ctx.env, ...scenario.serverEnv(ctx) }, '/readyz');
  log(`${scenario.name}: server of its own ${own.url} (pid ${own.pid})`);
  let stopped = false;
  const stop = async () => {
    if (stopped) return;
    stopped = true;
    await own.stop();
  };
  ctx.cleanups.push(stop);
  ctx.server = own;
  try {
    const row = await runScenario({ ...scenario, setup: undefined, serverEnv: undefined, alongside: undefined }, ctx, opts, {
      alongside: scenario.alongside,
    });
    // The requests still in flight when the load stopped finish first: stopped under them, the server
    // would fail them (shutting_down) and cut their traces short.
    await untilNoRunRunning(ctx, ctx.agentIds[0]);
    await stop();
    const out = own.output().trim();
    if (out) log(`${scenario.name} server output (last 2,000 chars):\n${out.slice(-2000)}`);
    if (!row.alongside) return row;
    const { alongside, ...rest } = row;
    const extra = alongside.result(rest);
    return { ...rest, errors: rest.errors + extra.errors, metrics: extra.metrics, summary: extra.summary };
  } finally {
    ctx.server = shared;
    await stop();
  }
}

/** Waits (at most 30 s) until none of the agent's 100 newest runs is running. */
async function untilNoRunRunning(ctx, agentId) {
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline) {
    const { runs } = await ctx.api('GET', `/api/v1/agents/${agentId}/runs?limit=100`);
    if (!runs.some((r) => r.status === 'running')) return;
    await sleep(100);
  }
  log(`runs of agent ${agentId} still running after 30 s; stopping the server anyway`);
}

/**
 * @param {any} scenario
 * @param {any} ctx
 * @param {any} opts
 * @param {{ alongside?: any }} [options]
 */
async function runScenario(scenario, ctx, opts, { alongside } = {}) {
  if (scenario.serverEnv) return runOnOwnServer(scenario, ctx, opts);
  const target = scenario.server === 'baseline' ? ctx.baseline : ctx.server;
  if (scenario.setup) await scenario.setup(ctx, opts);
  if (opts.waitIdle) await waitIdle(opts.waitIdle);
  if (scenario.run) {
    const result = await scenario.run(ctx, {
      measure: (fn) => measure(target.pid, fn, { postgres: ctx.pgDatabase, mockPid: ctx.mockProvider?.pid }),
      opts,
    });
    const { value: _value, startedAt, machineCpuPct: _machine, ...rest } = result;
    return {
      name: scenario.name,
      description: scenario.description,
      ...rest,
      seconds: round(rest.seconds, 2),
      serverCpuSeconds: round(rest.serverCpuSeconds, 2),
      window: [round((startedAt - target.spawnedAt) / 1000, 1), round((startedAt - target.spawnedAt) / 1000 + rest.seconds, 1)],
      disturbed: rest.otherCpuPct > DISTURBED_PCT,
    };
  }
  const side = alongside?.(ctx);
  const bodyBytes = await checkFirstRequest(target.url, scenario, ctx);
  const warm = await cannon(target.url, scenario, ctx, opts, WARMUP_SECONDS);
  const m = await measure(
    target.pid,
    async () => {
      side?.start();
      try {
        return await cannon(target.url, scenario, ctx, opts, opts.duration);
      } finally {
        await side?.stop();
      }
    },
    { postgres: ctx.pgDatabase, mockPid: ctx.mockProvider?.pid },
  );
  const r = m.value;
  return {
    ...(side ? { alongside: side, responsesSent: 1 + warm.requests.total + r.requests.total } : {}),
    name: scenario.name,
    description: scenario.description,
    reqPerSec: round(r.requests.average, 0),
    requests: r.requests.total,
    latencyMs: { p50: r.latency.p50, p99: r.latency.p99, mean: round(r.latency.average, 2), max: r.latency.max },
    errors: r.non2xx + r.errors,
    non2xx: r.non2xx,
    socketErrors: r.errors,
    timeouts: r.timeouts,
    statusCodes: Object.fromEntries(Object.entries(r.statusCodeStats).map(([k, v]) => [k, v.count])),
    responseBytes: bodyBytes,
    seconds: round(m.seconds, 2),
    // seconds since the measured server was spawned: the window to pass to bench/profile-summary.js
    window: [round((m.startedAt - target.spawnedAt) / 1000, 1), round((m.startedAt - target.spawnedAt) / 1000 + m.seconds, 1)],
    rssPeakMb: m.rssPeakMb,
    serverCpuSeconds: round(m.serverCpuSeconds, 2),
    serverCpuPct: m.serverCpuPct,
    loadgenCpuPct: m.loadgenCpuPct,
    dbCpuPct: m.dbCpuPct,
    mockCpuPct: m.mockCpuPct,
    otherCpuPct: m.otherCpuPct,
    // CPU time the server spent per request: steadier than req/s when others share the machine, and
    // what the targets are judged by (bench/targets.js); to 0.1 µs, as the bare server's is ~15 µs.
    serverUsPerRequest: serverUsPerRequest(m.serverCpuSeconds, m.seconds * r.requests.average),
    disturbed: m.otherCpuPct > DISTURBED_PCT,
    loadavg1: m.loadavg1,
  };
}

// ---- seeding through the real CLI and HTTP API ----------------------------------------------

async function seed(ctx, env) {
  const { stdout } = await exec(process.execPath, [path.join(ROOT, 'dist/cli.js'), 'tenants', 'create', 'bench', '--json'], {
    cwd: ROOT,
    env,
  });
  const created = JSON.parse(stdout);
  ctx.apiKey = created.apiKey;
  ctx.tenantId = created.tenant.id;
  ctx.systemPrompt =
    'You are a support agent for a mid-sized online shop. Answer customer questions about orders, ' +
    'shipping, returns and invoices kindly and precisely. When you do not know, say so and offer to ' +
    'hand over to a human colleague. Never promise refunds; explain the return policy instead.';
  ctx.agentIds = [];
  for (let i = 0; i < AGENTS_TO_SEED; i++) {
    const agent = await ctx.api('POST', '/api/v1/agents', {
      name: `Bench agent ${i}`,
      appId: i % 2 ? 'support' : 'sales',
      role: 'support agent',
      description: `Seeded by bench/run.js (#${i})`,
      systemPrompt: ctx.systemPrompt,
    });
    ctx.agentIds.push(agent.id);
  }
}

function makeApi(ctx) {
  return async (method, urlPath, body) => {
    const res = await fetchRetry(ctx.server.url + urlPath, {
      method,
      headers: { authorization: `Bearer ${ctx.apiKey}`, ...(body === undefined ? {} : json) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    if (!res.ok) throw new Error(`${method} ${urlPath} answered ${res.status}: ${text.slice(0, 500)}`);
    return text ? JSON.parse(text) : null;
  };
}

// ---- report ----------------------------------------------------------------------------------

const round = (n, digits) => (n === null || n === undefined ? n : Math.round(n * 10 ** digits) / 10 ** digits);

function machine() {
  const cpus = os.cpus();
  return {
    cpu: cpus[0]?.model ?? 'unknown',
    cores: cpus.length,
    memoryGb: round(os.totalmem() / 1024 ** 3, 1),
    os: `${os.type()} ${os.release()} ${os.arch()}`,
    node: process.version,
  };
}

/** The results table; the multiples, `ratio`, `target` and `met` are set by main. */
function table(rows) {
  const header = [
    'scenario',
    'req/s',
    'p50 ms',
    'p99 ms',
    'errors',
    'RSS MB',
    'CPU% srv',
    'gen',
    'db',
    'mock',
    'other',
    'µs/req',
    'x bare',
    'x exec',
    'ratio',
    'target',
    'met',
  ];
  const lines = rows.map((r) =>
    [
      `${r.label ?? r.name}${r.disturbed ? ' *' : ''}`,
      r.reqPerSec ?? '-',
      r.latencyMs?.p50 ?? '-',
      r.latencyMs?.p99 ?? '-',
      r.errors ?? '-',
      r.rssPeakMb ?? '-',
      r.serverCpuPct ?? '-',
      r.loadgenCpuPct ?? '-',
      r.dbCpuPct ?? '-',
      r.mockCpuPct ?? '-',
      r.otherCpuPct ?? '-',
      r.serverUsPerRequest ?? '-',
      r.bareCpuMultiple == null ? '-' : r.bareCpuMultiple.toFixed(2),
      r.executeCpuMultiple == null ? '-' : r.executeCpuMultiple.toFixed(2),
      r.ratio == null ? '-' : r.ratio.toFixed(2),
      r.target ?? '-',
      r.met === true ? 'yes' : r.met === false ? 'NO' : '-',
    ].map(String),
  );
  const widths = header.map((h, i) => Math.max(h.length, ...lines.map((l) => l[i].length)));
  const fmt = (cells) => cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]) : c.padStart(widths[i]))).join('  ');
  return [fmt(header), widths.map((w) => '-'.repeat(w)).join('  '), ...lines.map(fmt)].join('\n');
}

function log(msg) {
  process.stderr.write(`bench: ${msg}\n`);
}

// ---- main ------------------------------------------------------------------------------------

async function main() {
  // The soak is a run of its own (two replicas, its own PostgreSQL, a restart): bench/soak.js.
  if (onlySoak(process.argv.slice(2))) {
    await (await import('./soak.js')).main(process.argv.slice(2));
    return;
  }
  const opts = parseOptions(process.argv.slice(2));
  if (opts.repeat > 1) {
    await repeatedRuns(opts);
    return;
  }
  const started = new Date();
  const { steps: cleanups, run: cleanup } = cleanupStack(log, 'stopping the servers, removing the bench data');

  try {
    await ensureBuilt();
    // No request limit: the load generator is one client doing thousands of requests per second.
    // TASK_WORKERS=50: the dispatcher scenario's pool (issue 8); nothing else queues tasks.
    /** @type {NodeJS.ProcessEnv} */
    const env = { ...process.env, LOG_LEVEL: 'warn', RATE_LIMIT_PER_MINUTE: '0', TASK_WORKERS: String(TASK_WORKERS) };
    delete env.DATABASE_URL;
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'agentry-bench-'));
    cleanups.push(async () => fs.rmSync(dataDir, { recursive: true, force: true }));
    env.DATA_DIR = dataDir;

    let database = { dialect: 'sqlite', version: await sqliteVersion() };
    let mockProvider = null;
    if (opts.db === 'postgres') {
      const pgdb = await createPgDatabase('agentry_bench');
      cleanups.push(pgdb.drop);
      env.DATABASE_URL = pgdb.url;
      database = { dialect: 'postgres', version: pgdb.version, name: pgdb.name };
      log(`PostgreSQL ${pgdb.version}: database ${pgdb.name}`);
    }

    // The mock provider first: the server reads the providers' base URLs when it starts.
    if (opts.scenarios.some((s) => s.mock)) {
      mockProvider = await startChild('mock-provider', ['bench/mock-provider.js'], { ...process.env }, '/health');
      cleanups.push(mockProvider.stop);
      Object.assign(env, {
        OPENAI_COMPATIBLE_BASE_URL: `${mockProvider.url}/v1`,
        OPENAI_COMPATIBLE_API_KEY: 'bench',
        OPENAI_BASE_URL: `${mockProvider.url}/v1`,
        OPENAI_API_KEY: 'bench',
        ANTHROPIC_BASE_URL: `${mockProvider.url}/v1`,
        ANTHROPIC_API_KEY: 'bench',
      });
      log(`mock provider (OpenAI-compatible, OpenAI, Anthropic) ${mockProvider.url} (pid ${mockProvider.pid})`);
    }

    let profileDir = null;
    const serverArgs = [...opts.serverNodeArgs];
    if (opts.cpuProf) {
      profileDir = path.join(ROOT, '.bench-data', 'profiles');
      fs.mkdirSync(profileDir, { recursive: true });
      serverArgs.push('--cpu-prof', `--cpu-prof-dir=${profileDir}`);
    }
    const server = await startChild('agentry', [...serverArgs, 'dist/main.js'], env, '/readyz');
    cleanups.push(async () => {
      await server.stop();
      const out = server.output().trim();
      if (out) log(`server output (last 2,000 chars):\n${out.slice(-2000)}`);
    });
    const baseline = await startChild('baseline', ['bench/baseline.js'], { ...process.env }, '/');
    cleanups.push(baseline.stop);
    log(`server ${server.url} (pid ${server.pid}), baseline ${baseline.url} (pid ${baseline.pid})`);

    // env and serverArgs: a scenario with serverEnv starts its own server from them (runScenario).
    const ctx = { server, baseline, dialect: database.dialect, pgDatabase: database.name, mockProvider, env, serverArgs, cleanups };
    ctx.api = makeApi(ctx);
    await seed(ctx, env);
    log(`seeded tenant ${ctx.tenantId} with ${ctx.agentIds.length} agents`);

    /** @type {ReturnType<typeof machine> & { loadavgAtStart: number[], loadavgAtEnd?: number[] }} */
    const mach = { ...machine(), loadavgAtStart: os.loadavg().map((n) => round(n, 2)) };
    log(`${mach.cpu}, ${mach.cores} cores, ${mach.memoryGb} GB, node ${mach.node}, load ${mach.loadavgAtStart.join(' ')}`);
    log(`${opts.duration} s per scenario after ${WARMUP_SECONDS} s warm-up, ${opts.connections} connections`);

    const rows = [];
    const runOne = async (scenario, label) => {
      log(`${label ?? scenario.name} ...`);
      const r = await runScenario(scenario, ctx, opts);
      rows.push({ ...r, label, server: scenario.server, ...(scenario.costAgainst ? { costAgainst: scenario.costAgainst } : {}) });
      log(`${label ?? scenario.name}: ${r.summary ?? `${r.reqPerSec} req/s, p99 ${r.latencyMs.p99} ms, errors ${r.errors}`}`);
    };
    await runOne(BASELINE, 'baseline (start)');
    // The bare server again, briefly, just before each scenario: the machine's speed moves within a
    // run, so the results keep what the bare server did near each scenario (req/s: `nearBaseline`,
    // `nearRatio`; CPU per request: baseline.serverUsPerRequest.samplesBeforeEachScenario).
    const samples = [];
    const sampleUs = [];
    for (const s of opts.scenarios) {
      const b = await runScenario(BASELINE, ctx, { ...opts, duration: NEAR_BASELINE_SECONDS });
      log(`baseline sample before ${s.name}: ${b.reqPerSec} req/s, ${b.serverUsPerRequest} µs of CPU per request`);
      samples.push(b.reqPerSec);
      sampleUs.push(b.serverUsPerRequest);
      await runOne(s);
    }
    await runOne(BASELINE, 'baseline (end)');

    const [b0, b1] = [rows[0], rows[rows.length - 1]];
    samples.push(b1.reqPerSec);
    const baselineMean = round((b0.reqPerSec + b1.reqPerSec) / 2, 0);
    // The bare server's CPU per request, measured as every scenario's; the median of these is the
    // yardstick of the targets (bench/targets.js).
    const bareUs = { start: b0.serverUsPerRequest, end: b1.serverUsPerRequest, samplesBeforeEachScenario: sampleUs };
    // A scenario measuring its own bare counterpart (sse-stream) is compared with that (`ratioTo`).
    for (const r of rows)
      r.ratio = r.server === 'baseline' || r.reqPerSec === undefined ? null : round(r.reqPerSec / (r.ratioTo ?? baselineMean), 3);
    rows.slice(1, -1).forEach((r, i) => {
      r.nearBaseline = { before: samples[i], after: samples[i + 1], mean: round((samples[i] + samples[i + 1]) / 2, 0) };
      r.nearRatio = r.reqPerSec === undefined || r.ratioTo ? null : round(r.reqPerSec / r.nearBaseline.mean, 3);
    });
    // What a variant costs against the scenario it varies (execute-tracing against execute...), same run.
    for (const r of rows) {
      const other = r.costAgainst && rows.find((o) => o.name === r.costAgainst && !o.label);
      if (!other?.reqPerSec || !r.reqPerSec) continue;
      r.cost = {
        against: other.name,
        reqPerSecPct: round((r.reqPerSec / other.reqPerSec - 1) * 100, 1),
        serverUsPerRequestMore:
          r.serverUsPerRequest == null || other.serverUsPerRequest == null
            ? null
            : round(r.serverUsPerRequest - other.serverUsPerRequest, 1),
      };
      const line = `against ${other.name}: req/s ${r.cost.reqPerSecPct >= 0 ? '+' : ''}${r.cost.reqPerSecPct}%, server CPU per request ${r.cost.serverUsPerRequestMore == null ? '?' : `${r.cost.serverUsPerRequestMore >= 0 ? '+' : ''}${r.cost.serverUsPerRequestMore}`} µs`;
      r.summary = r.summary ? `${r.summary}; ${line}` : line;
    }
    // Every row's CPU per request against the bare server's and echo execute's of this run, and every
    // target judged the way bench/median.js judges several runs (bench/targets.js).
    const usOf = (name) => rows.find((r) => r.name === name && !r.label)?.serverUsPerRequest ?? null;
    const ref = { bareUs: bareUsOf(bareUs), executeUs: usOf('execute'), providerExecuteUs: usOf('execute-openai-compatible') };
    for (const r of rows) {
      const multiples = cpuMultiples(r, ref);
      r.bareCpuMultiple = multiples.bare;
      r.executeCpuMultiple = multiples.execute;
      const judged = r.server === 'baseline' ? null : judgement(r, database.dialect, ref);
      r.target = judged?.text ?? null;
      r.met = judged ? meets(judged.figure, judged) : null;
    }
    const firstToken = rows.map(firstTokenP99).find(Boolean);
    mach.loadavgAtEnd = os.loadavg().map((n) => round(n, 2));

    const result = {
      date: started.toISOString(),
      machine: mach,
      database,
      options: {
        duration: opts.duration,
        warmup: WARMUP_SECONDS,
        connections: opts.connections,
        cpuProf: opts.cpuProf,
        serverNodeArgs: opts.serverNodeArgs,
        waitIdle: opts.waitIdle,
        agents: AGENTS_TO_SEED,
        taskWorkers: TASK_WORKERS,
      },
      baseline: {
        start: b0.reqPerSec,
        end: b1.reqPerSec,
        mean: baselineMean,
        driftPct: round(((b1.reqPerSec - b0.reqPerSec) / b0.reqPerSec) * 100, 1),
        samplesBeforeEachScenario: samples.slice(0, -1),
        serverUsPerRequest: { ...bareUs, median: ref.bareUs },
      },
      scenarios: rows.map(({ server: _s, label, ...r }) => ({ ...r, name: label ?? r.name })),
    };

    const out = [
      `Agentry benchmark, ${database.dialect}${database.version ? ` ${database.version}` : ''}, ${result.date}`,
      `machine: ${mach.cpu}, ${mach.cores} cores, ${mach.memoryGb} GB, ${mach.os}, node ${mach.node}`,
      `load average (1/5/15 min): ${mach.loadavgAtStart.join(' ')} at start, ${mach.loadavgAtEnd.join(' ')} at end`,
      `${opts.duration} s per scenario after ${WARMUP_SECONDS} s warm-up, ${opts.connections} connections${opts.cpuProf ? ', server under --cpu-prof (slower)' : ''}` +
        (opts.serverNodeArgs.length ? `, server node flags: ${opts.serverNodeArgs.join(' ')}` : ''),
      '',
      table(rows),
      ...rows.filter((r) => r.summary).map((r) => `  ${r.name}: ${r.summary}`),
      '',
      `bare server (baseline): CPU per request ${bareUs.start} µs at start, ${sampleUs.join(', ')} before the scenarios, ${bareUs.end} at end;` +
        ` their median, ${ref.bareUs} µs, is the x bare yardstick\n  ${b0.reqPerSec} req/s at start, ${b1.reqPerSec} at end (drift ${result.baseline.driftPct}%), mean ${baselineMean} used for ratio` +
        (b0.disturbed || b1.disturbed
          ? '\nWARNING: a baseline run was disturbed by other load; the figures against the bare server of this run are not reliable'
          : ''),
      ...(firstToken
        ? [
            `sse-stream first-token p99 at ${opts.connections} streams: ${firstToken.p99} ms; the bare server's with the same clients ${firstToken.bareP99} ms (reported, no target)`,
          ]
        : []),
      'errors = non-2xx + socket errors; RSS = peak VmRSS of the measured server; p50/p99 in whole ms (0 = under 1 ms)',
      'CPU% (100 = one core busy): srv = measured server, gen = autocannon (this process), db = PostgreSQL backends of the bench database,',
      '  mock = the mock OpenAI-compatible provider (bench/mock-provider.js, when execute-openai-compatible runs),',
      `other = the rest of the machine (${mach.cores} cores = ${mach.cores * 100}%), someone else's load; * = other above ${DISTURBED_PCT}%: disturbed, rerun`,
      "µs/req = server CPU time per request (per stream for sse-stream); x bare = µs/req / the bare server's yardstick above: what the",
      "  CPU targets are judged by (met); x exec = µs/req / execute's; ratio = req/s / the bare server's mean req/s (sse-stream: streams/s",
      "  / the bare server's streams/s with the same clients), reported only",
    ].join('\n');
    process.stdout.write(`\n${out}\n`);

    if (opts.write) {
      // Only plain runs are results; profiled or modified servers are experiments.
      const experiment = opts.cpuProf || opts.serverNodeArgs.length > 0;
      const dir = opts.cpuProf
        ? profileDir
        : experiment
          ? path.join(ROOT, '.bench-data', 'experiments')
          : path.join(ROOT, 'bench', 'results');
      fs.mkdirSync(opts.out ? path.dirname(path.resolve(opts.out)) : dir, { recursive: true });
      const stamp = experiment ? started.toISOString().replace(/[:.]/g, '-') : started.toISOString().slice(0, 10);
      const file = opts.out
        ? path.resolve(opts.out)
        : path.join(dir, `${stamp}-${database.dialect}${opts.cpuProf ? '-cpu-prof' : ''}.json`);
      fs.writeFileSync(file, `${JSON.stringify(result, null, 2)}\n`);
      log(`wrote ${path.relative(ROOT, file)}`);
    }
    await cleanup();
    if (profileDir) log(`CPU profile in ${path.relative(ROOT, profileDir)}/ (summarize: node bench/profile-summary.js <file>)`);
  } catch (err) {
    await cleanup();
    throw err;
  }
}

/**
 * `--repeat n`: n full runs, each a child `node bench/run.js` with the same options (its own servers,
 * its own database, its own results file), then the targets judged on the median of the n.
 */
async function repeatedRuns(opts) {
  const { combine, report } = await import('./median.js');
  // The date and time of the first run's start: two repeated runs on one day keep their files apart.
  const stamp = new Date().toISOString().slice(0, 16).replace(':', '');
  const dir = opts.write ? path.join(ROOT, 'bench', 'results') : fs.mkdtempSync(path.join(os.tmpdir(), 'agentry-bench-repeat-'));
  fs.mkdirSync(dir, { recursive: true });
  const args = [
    '--db',
    opts.db,
    '--duration',
    String(opts.duration),
    '--connections',
    String(opts.connections),
    '--wait-idle',
    String(opts.waitIdle),
  ];
  if (opts.only) args.push('--only', opts.only);
  const files = [];
  for (let i = 1; i <= opts.repeat; i++) {
    const file = path.join(dir, `${stamp}-${opts.db}-run${i}.json`);
    log(`run ${i} of ${opts.repeat} -> ${path.relative(ROOT, file)}`);
    const code = await new Promise((resolve) => {
      const child = spawn(process.execPath, [path.join(ROOT, 'bench', 'run.js'), ...args, '--out', file], { cwd: ROOT, stdio: 'inherit' });
      child.once('exit', (c, signal) => resolve(signal ? 1 : c));
    });
    if (code !== 0)
      throw new Error(`run ${i} of ${opts.repeat} failed (exit ${code}); the runs before it are in ${path.relative(ROOT, dir)}`);
    files.push(file);
  }
  const runs = files.map((f) => JSON.parse(fs.readFileSync(f, 'utf8')));
  const verdicts = combine(runs);
  process.stdout.write(`\n${report(runs, verdicts)}\n`);
  if (!opts.write) {
    fs.rmSync(dir, { recursive: true, force: true });
    return;
  }
  const out = opts.out ? path.resolve(opts.out) : path.join(dir, `${stamp}-${opts.db}-median.json`);
  fs.writeFileSync(
    out,
    `${JSON.stringify({ runs: files.map((f) => path.relative(path.dirname(out), f)), dialect: opts.db, ...verdicts }, null, 2)}\n`,
  );
  log(`wrote ${path.relative(ROOT, out)}`);
}

main().catch((err) => {
  process.stderr.write(`bench: ${err.stack ?? err}\n`);
  process.exit(1);
});
