import type { FastifyInstance, FastifyRequest } from 'fastify';
import { deeperThan, MAX_JSON_DEPTH } from '../json-bounds.js';
import { badRequest } from './errors.js';

export type JsonParser = (request: FastifyRequest, body: string, done: (err: Error | null, value?: unknown) => void) => void;

/**
 * The platform's JSON parser: Fastify's safe parser (`__proto__` and `constructor` keys refused),
 * then the nesting limit (src/json-bounds.ts): every later step that walks a value recursively
 * (validation, storage, serialization) would otherwise overflow the stack on a deeper one. Every
 * route that takes JSON parses with it, webhook deliveries included.
 */
export function jsonParser(app: FastifyInstance): JsonParser {
  const parse = app.getDefaultJsonParser('error', 'error');
  return (request, body, done) =>
    parse(request, body, (err: Error | null, value?: unknown) => {
      if (err) return done(err, undefined);
      if (deeperThan(value, MAX_JSON_DEPTH)) {
        return done(badRequest(`the JSON body nests deeper than ${MAX_JSON_DEPTH} levels`, undefined, 'json_too_deep'), undefined);
      }
      done(null, value);
    });
}

/**
 * JSON body parsing with `jsonParser`, except that an empty body counts as no body, so
 * `curl -X POST -H 'content-type: application/json'` works on action routes.
 */
export function registerJsonParser(app: FastifyInstance) {
  const parse = jsonParser(app);
  // JSON only: any other body (text/plain included) is a 415.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
    if (body === '' || (typeof body === 'string' && body.trim() === '')) return done(null, undefined);
    return parse(request, body as string, done);
  });
}
