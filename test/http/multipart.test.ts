import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectProblem, startApp, type TestApp } from '../helpers/app.js';

/**
 * Malformed multipart/form-data on every route that takes it (an upload, a skill archive): no
 * boundary, a boundary the body does not use, a body cut short, a part without a name. Each is the
 * client's mistake, so a 400 problem that says what is wrong, never a 500 (issue 33, item 12).
 */
let t: TestApp;
let key: string;
let knowledgeBaseId: string;

beforeAll(async () => {
  t = await startApp();
  ({ key } = await t.tenant());
  knowledgeBaseId = (await t.api(key).POST('/api/v1/knowledge-bases', { body: { name: 'uploads' } })).data!.id;
});
afterAll(() => t.close());

const BOUNDARY = '----agentryTestBoundary';
const part = (body: string, name = 'file') =>
  `--${BOUNDARY}\r\nContent-Disposition: form-data; name="${name}"; filename="a.txt"\r\nContent-Type: text/plain\r\n\r\n${body}`;
const whole = `${part('hello')}\r\n--${BOUNDARY}--\r\n`;

const KNOWLEDGE_UPLOAD = '/api/v1/knowledge-bases/:id/documents/upload';
const ROUTES = ['/api/v1/files', '/api/skills/import', KNOWLEDGE_UPLOAD];
/** The route's URL: a knowledge base's is below the base made in beforeAll. */
const urlOf = (route: string) => route.replace(':id', knowledgeBaseId);

const NO_BOUNDARY = { code: 'invalid_multipart', path: 'headers.content-type', detail: /needs a boundary of 1 to 70 characters/ };
const CUT_SHORT = { code: 'invalid_multipart', path: 'body', detail: /cut short, or does not use the boundary/ };
const cases: { name: string; contentType: string; payload: string; expected: { code: string; path: string; detail: RegExp } }[] = [
  { name: 'no boundary', contentType: 'multipart/form-data', payload: whole, expected: NO_BOUNDARY },
  { name: 'an empty boundary', contentType: 'multipart/form-data; boundary=', payload: whole, expected: NO_BOUNDARY },
  {
    name: 'a boundary over 70 characters',
    contentType: `multipart/form-data; boundary=${'b'.repeat(300)}`,
    payload: whole,
    expected: NO_BOUNDARY,
  },
  { name: 'a boundary the body does not use', contentType: 'multipart/form-data; boundary=other', payload: whole, expected: CUT_SHORT },
  {
    name: 'a body cut short in the file',
    contentType: `multipart/form-data; boundary=${BOUNDARY}`,
    payload: part('hel'),
    expected: CUT_SHORT,
  },
  {
    name: 'a body cut short in the part headers',
    contentType: `multipart/form-data; boundary=${BOUNDARY}`,
    payload: `--${BOUNDARY}\r\nContent-Disposition: form-da`,
    expected: CUT_SHORT,
  },
  {
    name: 'an empty body',
    contentType: `multipart/form-data; boundary=${BOUNDARY}`,
    payload: '',
    expected: { code: 'validation_failed', path: 'body.file', detail: /the form holds no file/ },
  },
];

// Multipart payloads written by hand (malformed ones, and a quoted boundary): raw.
describe('malformed multipart bodies are 400 problems', () => {
  for (const route of ROUTES) {
    for (const c of cases) {
      it(`${route}: ${c.name}`, async () => {
        const res = await t.raw('POST', urlOf(route), { key, payload: c.payload, headers: { 'content-type': c.contentType } });
        expectProblem(res, 400, c.expected.code);
        expect(res.body.detail).toMatch(c.expected.detail);
        expect(res.body.errors.map((e: { path: string }) => e.path)).toEqual([c.expected.path]);
      });
    }
  }

  it('a well-formed upload still works after malformed ones', async () => {
    const res = await t.raw('POST', '/api/v1/files', {
      key,
      payload: whole,
      headers: { 'content-type': `multipart/form-data; boundary="${BOUNDARY}"` },
    });
    expect(res.status, res.text).toBe(201);
    expect(res.body).toMatchObject({ name: 'a.txt', size: 5 });
  });
});
