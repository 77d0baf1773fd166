import { context, ROOT_CONTEXT, trace } from '@opentelemetry/api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTracedApp, type TracedApp } from './main-app.js';
import { one, type Receiver, startReceiver } from './receiver.js';

/**
 * Log lines written for a traced request or run carry its span's ids, with tracing as it ships: no
 * context manager following the awaits (that comes only with OTEL_AGENTRY_DB_SPANS, content-logs-db.test.ts).
 * The app is put together as main.ts does (main-app.ts), its logger writing here.
 */

let receiver: Receiver;
let t: TracedApp;
const lines: Record<string, unknown>[] = [];

beforeAll(async () => {
  receiver = await startReceiver();
  t = await startTracedApp(
    receiver,
    {
      // A provider nobody listens for: the run fails, and says so in the log.
      OPENAI_COMPATIBLE_BASE_URL: 'http://127.0.0.1:9/v1',
      MODEL_RETRY_MAX_ATTEMPTS: '1',
    },
    (line) => lines.push(line),
  );
});
afterAll(async () => {
  await t?.close();
  await receiver?.close();
});

const call = (...args: Parameters<TracedApp['call']>) => t.call(...args);
const traceOf = (requestId: unknown) => t.traceOf(requestId);

describe('log lines of traced work', () => {
  it('runs with no context manager in the process (an app with OTEL_AGENTRY_DB_SPANS releases its own when closed)', () => {
    const span = trace.wrapSpanContext({ traceId: '0af7651916cd43dd8448eb211c80319c', spanId: 'b7ad6b7169203331', traceFlags: 1 });
    expect(context.with(trace.setSpan(ROOT_CONTEXT, span), () => context.active())).toBe(ROOT_CONTEXT);
  });

  it('writes trace_id and span_id on the lines of a traced request and of a run', async () => {
    const traceId = '0af7651916cd43dd8448eb211c80319c';
    const res = await call('GET', '/api/v1/agents', undefined, { traceparent: `00-${traceId}-b7ad6b7169203331-01` });
    const { server } = await traceOf(res.requestId);
    const completed = lines.find((l) => l.reqId === res.requestId && l.msg === 'request completed');
    expect(completed).toMatchObject({ trace_id: traceId, span_id: server.spanId });

    // A line the run writes (its provider unreachable) carries the run's span.
    const agent = await call('POST', '/api/v1/agents', { name: 'Unreachable', appId: 'app', model: 'openai-compatible/some-model' });
    expect(agent.status).toBe(201);
    const run = await call('POST', `/api/v1/agents/${agent.body.id}/execute`, { message: 'hello' });
    expect(run.status).toBe(502);
    const { spans } = await traceOf(run.requestId);
    const runSpan = one(spans, 'invoke_agent Unreachable');
    expect(runSpan.status).toBe(2);
    const warned = lines.find(
      (l) => l.runId === runSpan.attributes['agentry.run.id'] && l.msg === 'the model provider could not be reached',
    );
    expect(warned).toMatchObject({ trace_id: runSpan.traceId, span_id: runSpan.spanId });
    // Lines outside any span carry none.
    expect(lines.find((l) => l.msg === 'incoming request' && l.reqId === res.requestId)).not.toHaveProperty('trace_id');
  });
});
