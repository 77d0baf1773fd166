import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { bindRequestLogger, requestChildLogger } from '../../src/http/request-logger.js';

/**
 * A request's logger (Fastify's childLoggerFactory) is a stand-in that makes its pino child on the
 * first line written; bindings added later (a traced request's span ids, tracing/http.ts) reach every
 * line after them, whether or not that child was made yet.
 */
function logger(level: string) {
  const lines: Record<string, unknown>[] = [];
  const root = pino({ level }, { write: (line: string) => void lines.push(JSON.parse(line)) });
  return { root, lines };
}

describe('the request logger', () => {
  it('takes bindings before its first line as its own, one child made for both', () => {
    const { root, lines } = logger('warn');
    const log = requestChildLogger(root, { reqId: 'req-1' }, {});
    log.info('not written at warn');
    const bound = bindRequestLogger(log, { trace_id: 't1', span_id: 's1' });
    expect(bound).toBe(log);
    bound.warn({ runId: 'r' }, 'written');
    expect(lines).toEqual([expect.objectContaining({ reqId: 'req-1', trace_id: 't1', span_id: 's1', runId: 'r', msg: 'written' })]);
  });

  it('after a line was written, binds a child: earlier lines as they were, later ones with the bindings', () => {
    const { root, lines } = logger('info');
    const log = requestChildLogger(root, { reqId: 'req-2' }, {});
    log.info('before');
    const bound = bindRequestLogger(log, { trace_id: 't2', span_id: 's2' });
    bound.info('after');
    expect(lines.map((l) => [l.msg, l.reqId, l.trace_id])).toEqual([
      ['before', 'req-2', undefined],
      ['after', 'req-2', 't2'],
    ]);
  });
});
