import type { FastifyInstance } from 'fastify';

/**
 * JSON body parsing: Fastify's safe parser (prototype-poisoning checks), except that an empty body
 * counts as no body, so `curl -X POST -H 'content-type: application/json'` works on action routes.
 */
export function registerJsonParser(app: FastifyInstance) {
  const parse = app.getDefaultJsonParser('error', 'error');
  // JSON only: any other body (text/plain included) is a 415.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
    if (body === '' || (typeof body === 'string' && body.trim() === '')) return done(null, undefined);
    return parse(request, body as string, done);
  });
}
