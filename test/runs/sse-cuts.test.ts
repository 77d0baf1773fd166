import { fetchEventSource } from '@microsoft/fetch-event-source';
import { EventSource } from 'eventsource';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { browserShims } from '../helpers/browser-shims.js';
import { startApp, type TestApp } from '../helpers/app.js';
import { startTcpProxy } from '../helpers/tcp-proxy.js';

/**
 * Connections cut at any byte. `@microsoft/fetch-event-source` takes Last-Event-ID as soon as it
 * reads an `id:` line, before the event is whole, so the server writes `id:` last (src/http/sse.ts).
 * One byte remains that no order of lines can cover, between the id line and the blank line ending
 * the event: a cut there loses that event for this client whatever the server does, so its cuts skip
 * that byte. `eventsource` follows the specification (the id counts once the event is dispatched) and
 * is cut at every byte, that one included. Where a cut lands in the events depends on how writes were
 * batched, so the seed fixes the cuts, not what they hit.
 */

let t: TestApp;
let key: string;

beforeAll(async () => {
  t = await startApp();
  ({ key } = await t.tenant('sse-cuts'));
});
afterAll(() => t?.close());

const WORDS = Array.from({ length: 24 }, (_, i) => `word${i}`).join(' ');

/** The answer so far ends with a whole `id:` line: the event's blank line has not come yet. */
const endsWithIdLine = (answer: Buffer) => /\nid: [^\n]*\n$/.test(answer.subarray(-64).toString('latin1'));

type Received = { id: string; event: string; data: { text?: string } };

/**
 * Every event once, in order (the ids count up from 1 without a gap or a repeat), the whole answer,
 * and `done` last; each reconnect's Last-Event-ID an id the client had received whole.
 */
function expectEveryEventOnce(received: Received[], lastEventIds: (string | null)[], label: string) {
  expect(
    received.map((e) => Number(e.id)),
    label,
  ).toEqual(received.map((_, i) => i + 1));
  expect(
    received
      .filter((e) => e.event === 'token')
      .map((e) => e.data.text)
      .join(''),
  ).toBe(WORDS);
  expect(received.at(-1)?.event).toBe('done');
  for (const id of lastEventIds.filter((v) => v !== null)) expect(received.some((e) => e.id === id)).toBe(true);
}

/** mulberry32: a small seeded generator, so the cuts are the same on every run. */
function seeded(seed: number) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let r = Math.imul(a ^ (a >>> 15), 1 | a);
    r = (r + Math.imul(r ^ (r >>> 7), 61 | r)) ^ r;
    return ((r ^ (r >>> 14)) >>> 0) / 4294967296;
  };
}

describe('a stream cut at random bytes, resumed by fetch-event-source with its Idempotency-Key and Last-Event-ID', () => {
  it('receives every event exactly once, in order, over many cuts', async () => {
    browserShims();
    const base = await t.listen();
    const port = Number(new URL(base).port);
    const agent = await t.agent(key);
    const random = seeded(34_12);
    let cuts = 0;
    for (let stream = 0; stream < 6; stream++) {
      // Each connection but the last few is cut somewhere in its first 1,200 bytes (head, events, end).
      const proxy = await startTcpProxy('127.0.0.1', port, {
        cutAfterBytes: (n) => (n < 8 ? 1 + Math.floor(random() * 1200) : undefined),
        cutWhere: (answer) => !endsWithIdLine(answer),
      });
      const received: Received[] = [];
      const lastEventIds: (string | null)[] = [];
      let ended = false;
      let connections = 0;
      try {
        await fetchEventSource(`http://127.0.0.1:${proxy.port}/api/v1/agents/${agent.id}/stream`, {
          method: 'POST',
          headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'idempotency-key': `cut-${stream}` },
          body: JSON.stringify({ message: `/delay 5\n${WORDS}` }),
          openWhenHidden: true,
          fetch: (input, init) => {
            connections++;
            lastEventIds.push(new Headers(init?.headers).get('last-event-id'));
            return fetch(input, init);
          },
          async onopen(res) {
            expect(res.status).toBe(200);
          },
          onmessage(e) {
            received.push({ id: e.id, event: e.event, data: JSON.parse(e.data) });
            if (e.event === 'done') ended = true;
          },
          onclose() {
            // A connection closed before `done` was cut: throwing makes the library reconnect.
            if (!ended) throw new Error('cut before the end');
          },
          onerror() {
            return 10; // reconnect after 10 ms
          },
        });
      } finally {
        await proxy.close();
      }
      cuts += connections - 1;
      expectEveryEventOnce(received, lastEventIds, `stream ${stream}`);
    }
    // The streams were cut many times, and each ran once.
    expect(cuts).toBeGreaterThanOrEqual(30);
    const runs = await t.api(key).GET('/api/v1/agents/{id}/runs', { params: { path: { id: agent.id } } });
    expect(runs.data!.total).toBe(6);
  }, 60_000);

  it('eventsource on GET /runs/:runId/events: every event exactly once over many cuts, at any byte', async () => {
    const base = await t.listen();
    const port = Number(new URL(base).port);
    const agent = await t.agent(key);
    const random = seeded(20_26);
    let cuts = 0;
    let cutAfterIdLine = 0;
    for (let stream = 0; stream < 6; stream++) {
      const started = await t.fetch(`/api/v1/agents/${agent.id}/stream`, key, { body: { message: `/delay 5\n${WORDS}` } });
      const runId = started.headers.get('x-run-id')!;
      await started.body?.cancel();
      const proxy = await startTcpProxy('127.0.0.1', port, {
        // The first connection passes its head (~300 bytes) and the retry hint: before a hint, the client waits 3 s.
        cutAfterBytes: (n) => (n < 8 ? (n === 0 ? 400 : 1) + Math.floor(random() * 1200) : undefined),
        // Every other connection is cut right after an id line, the byte fetch-event-source cannot survive.
        cutWhere: (answer, n) => {
          const hole = endsWithIdLine(answer);
          if (n % 2 === 0) return true;
          if (hole) cutAfterIdLine++;
          return hole;
        },
      });
      const received: Received[] = [];
      const lastEventIds: (string | null)[] = [];
      const statuses: number[] = [];
      const source = new EventSource(`http://127.0.0.1:${proxy.port}/api/v1/runs/${runId}/events`, {
        fetch: async (input, init) => {
          const headers = new Headers(init?.headers);
          headers.set('authorization', `Bearer ${key}`);
          lastEventIds.push(headers.get('last-event-id'));
          const res = await fetch(input, { ...init, headers });
          statuses.push(res.status);
          if (!res.body) return res;
          // The server's retry hint, as a proxy could add it: reconnect after 10 ms rather than 3 s.
          const hint = new TextEncoder().encode('retry: 10\n\n');
          const body = res.body.pipeThrough(
            new TransformStream<Uint8Array, Uint8Array>({
              start: (controller) => controller.enqueue(hint),
            }),
          );
          return new Response(body, { status: res.status, statusText: res.statusText, headers: res.headers });
        },
      });
      for (const type of ['token', 'done']) {
        source.addEventListener(type, (e) => received.push({ id: e.lastEventId, event: type, data: JSON.parse(e.data) }));
      }
      try {
        // Ends only when the client stops for good: at the 204 after `done`.
        await new Promise<void>((resolve) => {
          source.onerror = () => {
            if (source.readyState === source.CLOSED) resolve();
          };
        });
      } finally {
        source.close();
        await proxy.close();
      }
      cuts += lastEventIds.length - 2;
      expectEveryEventOnce(received, lastEventIds, `stream ${stream}`);
      expect(statuses.at(-1)).toBe(204);
    }
    expect(cuts).toBeGreaterThanOrEqual(30);
    expect(cutAfterIdLine).toBeGreaterThan(0);
  }, 60_000);
});
