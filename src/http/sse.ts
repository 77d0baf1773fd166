import type { FastifyReply, FastifyRequest } from 'fastify';

declare module 'fastify' {
  interface FastifyInstance {
    /** How often an idle stream gets a comment line (SSE_HEARTBEAT_SECONDS); buildApp decorates the root with it. */
    sseHeartbeatMs?: number;
  }
}

const HEARTBEAT_MS = 15_000;

export interface SseStream {
  send(id: number | string, event: string, data: unknown): void;
  close(): void;
  /** Resolves when the client goes away or the stream is closed. */
  closed: Promise<void>;
  isClosed(): boolean;
}

/** Open streams per server, so a shutdown can end them. */
const openStreams = new WeakMap<object, Set<SseStream>>();

/** How many streams of this server are open (the metrics' gauge). */
export function openStreamCount(server: object): number {
  return openStreams.get(server)?.size ?? 0;
}

/** Ends every open stream of this server (shutdown). */
export function closeAllStreams(server: object) {
  for (const s of openStreams.get(server) ?? []) s.close();
}

/**
 * Takes over the response and writes Server-Sent Events: `event:`, one `data:` line of JSON and
 * then `id:` per event, and a comment line every SSE_HEARTBEAT_SECONDS (15 s) so proxies keep idle connections open.
 */
export function openSse(request: FastifyRequest, reply: FastifyReply): SseStream {
  reply.hijack();
  const raw = reply.raw;
  raw.writeHead(200, {
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache, no-transform',
    connection: 'keep-alive',
    'x-accel-buffering': 'no',
    'x-request-id': request.id,
  });
  // What is written in one tick (the head, a batch of events published together) leaves in one
  // write: each socket write is a system call that costs more than building the event.
  let corked = false;
  const uncork = () => {
    corked = false;
    raw.uncork();
  };
  const cork = () => {
    if (corked) return;
    corked = true;
    raw.cork();
    process.nextTick(uncork);
  };
  cork();
  raw.flushHeaders?.();
  let closed = false;
  let resolveClosed!: () => void;
  const closedPromise = new Promise<void>((r) => (resolveClosed = r));
  const heartbeat = setInterval(() => {
    if (!closed) raw.write(': keep-alive\n\n');
  }, request.server.sseHeartbeatMs ?? HEARTBEAT_MS);
  heartbeat.unref();
  const finish = () => {
    if (closed) return;
    closed = true;
    clearInterval(heartbeat);
    resolveClosed();
  };
  request.raw.on('close', finish);
  raw.on('close', finish);
  const registry = openStreams.get(request.server) ?? new Set<SseStream>();
  openStreams.set(request.server, registry);
  const stream: SseStream = {
    send(id, event, data) {
      if (closed) return;
      cork();
      // `id:` last: a client that takes Last-Event-ID as soon as it reads the id line (fetch-event-source
      // does) would otherwise skip, on its reconnect, an event whose connection broke after that line.
      raw.write(`event: ${event}\ndata: ${JSON.stringify(data)}\nid: ${id}\n\n`);
    },
    close() {
      if (closed) return;
      finish();
      // Uncorked first: on Node 24 end() on a still-corked response drops what the cork holds (the
      // final event); on Node 20 it flushed it.
      if (corked) uncork();
      raw.end();
    },
    closed: closedPromise,
    isClosed: () => closed,
  };
  registry.add(stream);
  void closedPromise.then(() => registry.delete(stream));
  return stream;
}

/** The event id a reconnecting client last saw (`Last-Event-ID` header or `lastEventId` query). */
export function lastEventId(request: FastifyRequest): number {
  const header = request.headers['last-event-id'];
  const raw = (Array.isArray(header) ? header[0] : header) ?? (request.query as { lastEventId?: string } | undefined)?.lastEventId;
  const n = raw === undefined ? 0 : Number(raw);
  return Number.isInteger(n) && n >= 0 ? n : 0;
}
