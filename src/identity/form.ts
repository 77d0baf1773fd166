import type { FastifyInstance } from 'fastify';
import { InvalidInput } from '../errors.js';

const FORBIDDEN_KEYS = new Set(['__proto__', 'constructor', 'prototype']);

/**
 * `application/x-www-form-urlencoded` bodies (OAuth endpoints), for the plugin it is registered in
 * only: the rest of the app parses JSON alone. A repeated parameter becomes an array (RFC 8693
 * `audience`, `resource`); prototype keys are refused like in JSON bodies.
 */
export function registerFormParser(app: FastifyInstance) {
  app.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string' }, (_request, body, done) => {
    const out: Record<string, string | string[]> = {};
    for (const [key, value] of new URLSearchParams(body as string)) {
      if (FORBIDDEN_KEYS.has(key))
        return done(new InvalidInput(`the form field ${key} is not allowed`, undefined, 'invalid_body'), undefined);
      const prev = out[key];
      out[key] = prev === undefined ? value : [prev, value].flat();
    }
    done(null, out);
  });
}
