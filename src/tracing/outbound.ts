import { SpanKind, SpanStatusCode } from '@opentelemetry/api';
import {
  ATTR_ERROR_TYPE,
  ATTR_HTTP_REQUEST_METHOD,
  ATTR_HTTP_RESPONSE_STATUS_CODE,
  ATTR_SERVER_ADDRESS,
  ATTR_SERVER_PORT,
  ATTR_URL_FULL,
} from '@opentelemetry/semantic-conventions';
import type { OutboundFetch } from '../runtime/tools/types.js';
import type { Tracing } from './tracing.js';

/**
 * The outbound guard's fetch, traced: each request a CLIENT span (`POST`, with the server's address)
 * whose W3C `traceparent` goes with the request, so an MCP server or a remote A2A agent continues the
 * run's trace. The span's parent is the one the caller names (the tool call making the request). Only
 * the scheme, host and path are recorded: a query may hold a credential.
 */
export function propagatingFetch(tracing: Tracing, fetch: OutboundFetch): OutboundFetch {
  return (input, init, parent) => {
    const url = new URL(String(input));
    const method = (init?.method ?? 'GET').toUpperCase();
    return tracing.inSpan(
      method,
      {
        kind: SpanKind.CLIENT,
        parent,
        attributes: {
          [ATTR_HTTP_REQUEST_METHOD]: method,
          [ATTR_SERVER_ADDRESS]: url.hostname,
          ...(url.port ? { [ATTR_SERVER_PORT]: Number(url.port) } : {}),
          [ATTR_URL_FULL]: `${url.protocol}//${url.host}${url.pathname}`,
        },
      },
      async (span, ctx) => {
        const headers = new Headers(init?.headers);
        tracing.inject(headers, ctx);
        const response = await fetch(url, { ...init, headers });
        span.setAttribute(ATTR_HTTP_RESPONSE_STATUS_CODE, response.status);
        if (response.status >= 400) {
          span.setStatus({ code: SpanStatusCode.ERROR });
          span.setAttribute(ATTR_ERROR_TYPE, String(response.status));
        }
        return response;
      },
    );
  };
}
