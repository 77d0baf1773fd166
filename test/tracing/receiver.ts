import http from 'node:http';
import type { AddressInfo } from 'node:net';
import zlib from 'node:zlib';

/** An OTLP attribute value as the JSON encoding writes it. */
type AnyValue = {
  stringValue?: string;
  intValue?: string | number;
  doubleValue?: number;
  boolValue?: boolean;
  arrayValue?: { values?: AnyValue[] };
};

/** A span as this receiver decoded it from the OTLP/HTTP JSON payload. */
export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  parentSpanId: string | undefined;
  name: string;
  /** 1 internal, 2 server, 3 client (OTLP's SpanKind numbers). */
  kind: number;
  attributes: Record<string, unknown>;
  links: { traceId: string; spanId: string }[];
  /** 0 unset, 1 ok, 2 error. */
  status: number;
  resource: Record<string, unknown>;
}

function value(v: AnyValue | undefined): unknown {
  if (!v) return undefined;
  if (v.stringValue !== undefined) return v.stringValue;
  if (v.intValue !== undefined) return Number(v.intValue);
  if (v.doubleValue !== undefined) return v.doubleValue;
  if (v.boolValue !== undefined) return v.boolValue;
  if (v.arrayValue) return (v.arrayValue.values ?? []).map(value);
  return undefined;
}

const attributes = (list: { key: string; value: AnyValue }[] | undefined) =>
  Object.fromEntries((list ?? []).map((a) => [a.key, value(a.value)]));

/**
 * A local OTLP/HTTP trace receiver: a plain node http server decoding the standard JSON payload
 * (ExportTraceServiceRequest) of `POST /v1/traces`, so the tests assert what an OTel collector would get.
 */
export async function startReceiver() {
  const spans: ReceivedSpan[] = [];
  const requests: { path: string; headers: http.IncomingHttpHeaders }[] = [];
  const server = http.createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    let body = Buffer.concat(chunks);
    if (req.headers['content-encoding'] === 'gzip') body = zlib.gunzipSync(body);
    requests.push({ path: req.url ?? '', headers: req.headers });
    if (req.method !== 'POST' || req.url !== '/v1/traces' || !String(req.headers['content-type']).startsWith('application/json')) {
      res.writeHead(415).end();
      return;
    }
    const payload = JSON.parse(body.toString('utf8'));
    for (const rs of payload.resourceSpans ?? []) {
      const resource = attributes(rs.resource?.attributes);
      for (const ss of rs.scopeSpans ?? []) {
        for (const s of ss.spans ?? []) {
          spans.push({
            traceId: s.traceId,
            spanId: s.spanId,
            parentSpanId: s.parentSpanId || undefined,
            name: s.name,
            kind: s.kind,
            attributes: attributes(s.attributes),
            links: (s.links ?? []).map((l: { traceId: string; spanId: string }) => ({ traceId: l.traceId, spanId: l.spanId })),
            status: s.status?.code ?? 0,
            resource,
          });
        }
      }
    }
    res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return {
    /** The collector's base URL, as OTEL_EXPORTER_OTLP_ENDPOINT takes it. */
    url: `http://127.0.0.1:${port}`,
    spans,
    requests,
    /** The spans of one trace. */
    trace: (traceId: string) => spans.filter((s) => s.traceId === traceId),
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

export type Receiver = Awaited<ReturnType<typeof startReceiver>>;

/** The one span named `name` among `spans` (fails loudly when there are none or several). */
export function one(spans: ReceivedSpan[], name: string, where: (s: ReceivedSpan) => boolean = () => true): ReceivedSpan {
  const found = spans.filter((s) => s.name === name && where(s));
  if (found.length !== 1) throw new Error(`expected one span ${name}, found ${found.length}: ${spans.map((s) => s.name).join(', ')}`);
  return found[0];
}

/** The children of `parent` among `spans`. */
export const childrenOf = (spans: ReceivedSpan[], parent: ReceivedSpan) => spans.filter((s) => s.parentSpanId === parent.spanId);
