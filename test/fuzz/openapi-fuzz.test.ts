import fc from 'fast-check';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApp, type TestApp } from '../helpers/app.js';
import { execute } from '../helpers/execute.js';

/**
 * Generated hostile requests for every operation in the OpenAPI document: wrong types, missing and
 * extra fields, huge strings, unicode, bad and truncated JSON, JSON nested past the limit, values as
 * large as the body limit, every media type the route takes malformed (multipart without or with the
 * wrong boundary, cut short; form bodies with broken encoding), wrong content types, path traversal,
 * injection strings, other tenants' ids. Expectations: never a 5xx, never a stack trace, a problem body on every
 * 4xx, no change of state on a rejected request, never another tenant's data.
 * Fixed seed and bounded count in CI; FUZZ_RUNS=5000 (and FUZZ_SEED) for a longer run on demand.
 */
const RUNS = Number(process.env.FUZZ_RUNS ?? 250);
const SEED = Number(process.env.FUZZ_SEED ?? 20261122);
const MARKER = 'TENANT-B-PRIVATE-7f3a';

interface Operation {
  method: string;
  path: string;
  params: string[];
  /** Public documents (identity metadata, JWKS) are meant to be readable by anyone. */
  public: boolean;
  query: Record<string, any>;
  body?: any;
  /** The media types of its request body (JSON, multipart, form-urlencoded, text). */
  contentTypes: string[];
}

let t: TestApp;
let keyA: string;
let keyB: string;
let readerA: string;
const idsA: string[] = [];
const idsB: string[] = [];
const operations: Operation[] = [];
let tables: string[] = [];

beforeAll(async () => {
  t = await startApp({ RATE_LIMIT_PER_MINUTE: '0' });
  ({ key: keyA } = await t.tenant('tenant-a'));
  ({ key: keyB } = await t.tenant('tenant-b'));
  readerA = (await t.api(keyA).POST('/api/v1/api-keys', { body: { name: 'reader', permissions: ['agents:read'] } })).data!.key;
  for (const [key, ids, name] of [
    [keyA, idsA, 'alpha'],
    [keyB, idsB, MARKER],
  ] as const) {
    const agent = await t.agent(key, { name, appId: name, systemPrompt: name });
    const run = (await execute(t, key, agent.id, { message: name })).data!;
    ids.push(agent.id, run.runId, run.conversationId);
  }
  // The document itself is not one of its operations: read untyped.
  const doc = (await t.raw('GET', '/openapi.json')).body;
  for (const [path, ops] of Object.entries<Record<string, any>>(doc.paths)) {
    for (const [method, op] of Object.entries<any>(ops)) {
      operations.push({
        method: method.toUpperCase(),
        path,
        params: (op.parameters ?? []).filter((p: any) => p.in === 'path').map((p: any) => p.name),
        public: !op.security?.length,
        query: Object.fromEntries((op.parameters ?? []).filter((p: any) => p.in === 'query').map((p: any) => [p.name, p.schema])),
        body: op.requestBody?.content?.['application/json']?.schema,
        contentTypes: Object.keys(op.requestBody?.content ?? {}),
      });
    }
  }
  const dialectTables =
    t.db.dialect === 'sqlite'
      ? await sql<{
          name: string;
        }>`select name from sqlite_master where type = 'table' and name not like 'sqlite_%' and name not like 'kysely_%'`.execute(
          t.db.kysely,
        )
      : await sql<{
          name: string;
        }>`select table_name as name from information_schema.tables where table_schema = 'public' and table_name not like 'kysely_%'`.execute(
          t.db.kysely,
        );
  tables = dialectTables.rows.map((r) => r.name).sort();
});
afterAll(() => t.close());

/** Row counts of every table plus the newest change time of the mutable ones. */
async function fingerprint(): Promise<string> {
  const parts: string[] = [];
  for (const table of tables) {
    const r = await sql<{ n: number | string }>`select count(*) as n from ${sql.table(table)}`.execute(t.db.kysely);
    parts.push(`${table}:${Number(r.rows[0].n)}`);
  }
  for (const table of ['agents', 'conversations']) {
    const r = await sql<{ m: string | null }>`select max(updated_at) as m from ${sql.table(table)}`.execute(t.db.kysely);
    parts.push(`${table}.updated:${r.rows[0].m}`);
  }
  return parts.join(' ');
}

const nasty = fc.constantFrom(
  '../../etc/passwd',
  '..%2F..%2Fetc%2Fpasswd',
  "' OR 1=1 --",
  '"; DROP TABLE agents; --',
  '<script>alert(1)</script>',
  // biome-ignore lint/suspicious/noTemplateCurlyInString: a log-injection payload, meant literally
  '${jndi:ldap://x}',
  '\u0000',
  '💥🔥',
  'Ω≈ç√∫',
  '\u202e',
  '%00',
  '{{7*7}}',
  'a'.repeat(5000),
);
const text = fc.oneof(fc.string({ maxLength: 40 }), fc.string({ unit: 'binary', maxLength: 40 }), nasty);
const idLike = () => fc.oneof(fc.constantFrom(...idsA, ...idsB), fc.uuid(), text);

function valueFor(schema: any, depth = 0): fc.Arbitrary<unknown> {
  const wrong = fc.oneof(fc.jsonValue({ maxDepth: 2 }), text, fc.integer(), fc.constant(null));
  if (!schema || depth > 3) return wrong;
  const type = Array.isArray(schema.type) ? schema.type[0] : schema.type;
  let right: fc.Arbitrary<unknown> = wrong;
  if (schema.enum) right = fc.constantFrom(...schema.enum);
  else if (schema.const !== undefined) right = fc.constant(schema.const);
  else if (type === 'string')
    right = schema.format === 'date-time' ? fc.date({ noInvalidDate: true }).map((d) => d.toISOString()) : fc.oneof(text, idLike());
  else if (type === 'integer') right = fc.oneof(fc.integer({ min: -5, max: 300 }), fc.integer());
  else if (type === 'number') right = fc.oneof(fc.double({ noNaN: true }), fc.integer({ min: -1, max: 100 }));
  else if (type === 'boolean') right = fc.boolean();
  else if (type === 'array') right = fc.array(valueFor(schema.items, depth + 1), { maxLength: 3 });
  else if (type === 'object' || schema.properties) right = objectFor(schema, depth + 1);
  else if (schema.anyOf || schema.oneOf) right = fc.oneof(...(schema.anyOf ?? schema.oneOf).map((s: any) => valueFor(s, depth + 1)));
  return fc.oneof({ weight: 4, arbitrary: right }, { weight: 1, arbitrary: wrong });
}

function objectFor(schema: any, depth = 0): fc.Arbitrary<Record<string, unknown>> {
  const props = Object.entries<any>(schema?.properties ?? {});
  const record = fc.record(Object.fromEntries(props.map(([k, s]) => [k, valueFor(s, depth)])), { requiredKeys: [] });
  const extra = fc.dictionary(fc.string({ minLength: 1, maxLength: 8 }), fc.jsonValue({ maxDepth: 1 }), { maxKeys: 2 });
  return fc.tuple(record, fc.oneof(fc.constant({}), extra)).map(([a, b]) => ({ ...b, ...a }));
}

const BOUNDARY = '----fuzzBoundary';
const filePart = (data: string) =>
  `--${BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="f.md"\r\nContent-Type: text/plain\r\n\r\n${data}`;
/** Malformed and truncated multipart/form-data: no boundary, a wrong one, cut short, huge part headers. */
const multipart = fc.oneof(
  fc.constant({ raw: `${filePart('x')}\r\n--${BOUNDARY}--\r\n`, type: 'multipart/form-data' }),
  fc.constant({ raw: `${filePart('x')}\r\n--${BOUNDARY}--\r\n`, type: 'multipart/form-data; boundary=other' }),
  fc.constant({ raw: `${filePart('x')}\r\n--${BOUNDARY}--\r\n`, type: `multipart/form-data; boundary=${'b'.repeat(300)}` }),
  fc.tuple(text, fc.integer({ min: 0, max: 200 })).map(([data, cut]) => ({
    raw: `${filePart(data)}\r\n--${BOUNDARY}--\r\n`.slice(0, cut),
    type: `multipart/form-data; boundary=${BOUNDARY}`,
  })),
  fc.constant({
    raw: `--${BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="${'n'.repeat(100_000)}"\r\n\r\nx\r\n--${BOUNDARY}--\r\n`,
    type: `multipart/form-data; boundary=${BOUNDARY}`,
  }),
  text.map((data) => ({ raw: `${filePart(data)}\r\n--${BOUNDARY}--\r\n`, type: `multipart/form-data; boundary=${BOUNDARY}` })),
);
/** Form bodies (the OAuth endpoints): broken percent-encoding, repeated and huge fields, cut short. */
const form = fc
  .oneof(
    fc.constantFrom(
      'grant_type=client_credentials&client_id=%ZZ',
      'grant_type=',
      'grant_type=client_credentials&grant_type=urn:ietf:params:oauth:grant-type:token-exchange',
      `grant_type=client_credentials&client_assertion=${'a'.repeat(900_000)}`,
      'token=%E0%A4%A',
      '&&&=&=',
    ),
    fc
      .dictionary(fc.constantFrom('grant_type', 'client_id', 'client_secret', 'token', 'scope', 'subject_token', 'audience'), text)
      .map((d) => new URLSearchParams(d).toString()),
  )
  .map((raw) => ({ raw, type: 'application/x-www-form-urlencoded' }));
/** JSON nested past the limit (64) and far past it (a stack overflow for a recursive walker). */
const deep = fc
  .constantFrom(65, 6_000, 100_000)
  .chain((n) =>
    fc.constantFrom(
      `${'['.repeat(n)}${']'.repeat(n)}`,
      `${'{"a":'.repeat(n)}1${'}'.repeat(n)}`,
      `{"message":${'['.repeat(n)}${']'.repeat(n)}}`,
    ),
  );
/** Values as large as the body limit allows, in the fields the route knows. */
function huge(op: Operation): fc.Arbitrary<string> {
  const fields = Object.keys(op.body?.properties ?? { x: {} });
  return fc.tuple(fc.constantFrom(...fields), fc.integer({ min: 0, max: 3 })).map(([field, kind]) => {
    const value =
      kind === 0
        ? `"${'x'.repeat(1_000_000)}"`
        : kind === 1
          ? '1e400'
          : kind === 2
            ? `[${Array.from({ length: 70_000 }, () => '{"type":"x"}').join(',')}]`
            : `{${Array.from({ length: 60_000 }, (_, i) => `"k${i}":0`).join(',')}}`;
    return `{"${field}":${value}}`;
  });
}

const request = fc.integer({ min: 0, max: 10_000 }).chain((i) => {
  const op = operations[i % operations.length];
  const params = fc.record(Object.fromEntries(op.params.map((p) => [p, idLike()])));
  const query = fc.record(
    Object.fromEntries(
      Object.entries(op.query).map(([k, s]) => [k, valueFor(s).map((v) => (typeof v === 'string' ? v : JSON.stringify(v)))]),
    ),
    { requiredKeys: [] },
  );
  const payload = fc.oneof(
    {
      weight: 5,
      arbitrary: (op.body ? objectFor(op.body) : fc.jsonValue({ maxDepth: 2 })).map((b) => ({
        raw: JSON.stringify(b),
        type: 'application/json',
      })),
    },
    {
      weight: 1,
      arbitrary: fc.constantFrom('{"a":', '[1,2', '{"__proto__":{"x":1}}', 'null', '').map((raw) => ({ raw, type: 'application/json' })),
    },
    { weight: 1, arbitrary: text.map((raw) => ({ raw, type: 'text/plain' })) },
    { weight: 1, arbitrary: fc.constant({ raw: 'x'.repeat(1024 * 1024 + 10), type: 'application/json' }) },
    // Truncated JSON of a body the route would take.
    {
      weight: 1,
      arbitrary: fc
        .tuple(op.body ? objectFor(op.body) : fc.jsonValue({ maxDepth: 2 }), fc.integer({ min: 0, max: 400 }))
        .map(([b, cut]) => ({ raw: JSON.stringify(b).slice(0, cut), type: 'application/json' })),
    },
    { weight: 1, arbitrary: deep.map((raw) => ({ raw, type: 'application/json' })) },
    { weight: 1, arbitrary: huge(op).map((raw) => ({ raw, type: 'application/json' })) },
    // Every other media type the route takes, malformed.
    ...(op.contentTypes.some((c) => c.startsWith('multipart/')) ? [{ weight: 3, arbitrary: multipart }] : []),
    ...(op.contentTypes.includes('application/x-www-form-urlencoded') ? [{ weight: 3, arbitrary: form }] : []),
    ...(op.contentTypes.includes('text/markdown')
      ? [
          {
            weight: 1,
            arbitrary: fc.oneof(text, fc.constant(`---\n${'a: ['.repeat(5000)}\n---\n`)).map((raw) => ({ raw, type: 'text/markdown' })),
          },
        ]
      : []),
  );
  const key = fc.constantFrom(keyA, keyA, keyA, readerA, `agk_${'0'.repeat(32)}_${'A'.repeat(43)}`, '');
  return fc.record({ op: fc.constant(op), params, query, payload, key });
});

describe('generated hostile requests against every documented operation', () => {
  it('never a 5xx, never a stack, problems on 4xx, no state change on rejection, no other tenant’s data', async () => {
    expect(operations.length).toBeGreaterThan(20);
    const seen = new Set<string>();
    await fc.assert(
      fc.asyncProperty(request, async ({ op, params, query, payload, key }) => {
        const path = op.path.replace(/\{(\w+)\}/g, (_, p) => encodeURIComponent(String(params[p] ?? 'x')));
        const qs = new URLSearchParams(query as Record<string, string>).toString();
        const url = qs ? `${path}?${qs}` : path;
        const before = await fingerprint();
        const withBody = !['GET', 'DELETE'].includes(op.method);
        const res = await t.app.inject({
          method: op.method as any,
          url,
          headers: { ...(key ? { authorization: `Bearer ${key}` } : {}), ...(withBody ? { 'content-type': payload.type } : {}) },
          payload: withBody ? payload.raw : undefined,
        });
        seen.add(`${op.method} ${op.path} ${res.statusCode}`);
        const where = `${op.method} ${url.slice(0, 200)} -> ${res.statusCode} ${res.body.slice(0, 300)}`;
        // No 5xx: a synchronous run the model failed (502 with the run's error code) is the only one.
        if (res.statusCode >= 500) expect(res.statusCode === 502 && /invalid_output|model_/.test(res.body), where).toBe(true);
        expect(res.body, where).not.toMatch(/\n\s+at .+\(|node_modules|file:\/\//);
        if (key !== keyB && !op.public) expect(res.body.includes(MARKER), where).toBe(false);
        if (res.statusCode >= 400 && res.statusCode < 500) {
          expect(String(res.headers['content-type']), where).toMatch(/^application\/(problem\+json|json)/);
          const body = JSON.parse(res.body);
          // Problem details; RFC 6749 errors on the OAuth endpoints; JSON-RPC errors on the MCP endpoint;
          // OpenAI's errors on the OpenAI-compatible /v1 routes.
          const jsonRpc = op.path.endsWith('/mcp') && body.jsonrpc === '2.0' && typeof body.error?.code === 'number';
          const openAi = op.path.startsWith('/v1/') && typeof body.error?.message === 'string' && typeof body.error?.code === 'string';
          expect(jsonRpc || openAi || typeof (body.code ?? body.error) === 'string', where).toBe(true);
          expect(await fingerprint(), `state changed on rejected ${where}`).toBe(before);
        }
      }),
      { seed: SEED, numRuns: RUNS, endOnFailure: true },
    );
    if (process.env.FUZZ_REPORT) console.log([...seen].sort().join('\n'));
    // The generator reached a good part of the surface.
    expect(new Set([...seen].map((s) => s.split(' ').slice(0, 2).join(' '))).size).toBeGreaterThan(operations.length / 2);
  }, 600_000);

  it('every route taking multipart or form bodies answers their malformed forms with a 4xx problem, never a 5xx', async () => {
    const others = operations.filter((op) =>
      op.contentTypes.some((c) => c.startsWith('multipart/') || c === 'application/x-www-form-urlencoded'),
    );
    expect(others.map((op) => op.path)).toEqual(expect.arrayContaining(['/api/v1/files', '/api/skills/import']));
    for (const op of others) {
      const kind = op.contentTypes.some((c) => c.startsWith('multipart/')) ? multipart : form;
      for (const payload of fc.sample(kind, { seed: SEED, numRuns: 30 })) {
        const path = op.path.replace(/\{(\w+)\}/g, idsA[0]);
        const res = await t.app.inject({
          method: op.method as any,
          url: path,
          headers: { authorization: `Bearer ${keyA}`, 'content-type': payload.type },
          payload: payload.raw,
        });
        const where = `${op.method} ${path} ${payload.type.slice(0, 60)} ${payload.raw.slice(0, 80)} -> ${res.statusCode} ${res.body.slice(0, 300)}`;
        expect(res.statusCode, where).toBeLessThan(500);
        if (res.statusCode >= 400) expect(String(res.headers['content-type']), where).toMatch(/^application\/(problem\+json|json)/);
      }
    }
  }, 300_000);
});
