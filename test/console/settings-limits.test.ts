import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LABEL_PATTERN, USER_ID_PATTERN } from '../../packages/console/src/features/memory/limits.js';
import type { NumberField } from '../../packages/console/src/features/settings/fields.js';
import { codeFields, KEY_RATE_LIMIT_FIELD, LIMIT_FIELDS, RETENTION_FIELDS } from '../../packages/console/src/features/settings/groups.js';
import { startApp, type TestApp } from '../helpers/app.js';

/*
 * The settings and memory pages check what is typed against the API's bounds before saving; the SDK's
 * types carry none, so they are written by hand. This holds them equal to the server's OpenAPI
 * document (built from the TypeBox schemas that validate the requests): a changed bound fails here,
 * not in a person's form.
 */

// biome-ignore lint/suspicious/noExplicitAny: a JSON document walked by hand
type Json = any;

let t: TestApp;
let doc: Json;
const deref = (node: Json): Json =>
  node?.$ref
    ? node.$ref
        .slice(2)
        .split('/')
        .reduce((n: Json, key: string) => n[key], doc)
    : node;

function operation(id: string): Json {
  for (const item of Object.values<Json>(doc.paths)) {
    for (const op of Object.values<Json>(item)) if (op?.operationId === id) return op;
  }
  throw new Error(`no operation ${id}`);
}
const bodyOf = (id: string) => deref(operation(id).requestBody.content['application/json'].schema);
const parameterOf = (id: string, name: string) => deref(operation(id).parameters.find((p: Json) => p.name === name).schema);

/** A property's numeric schema (the number member of a nullable one). */
function numberSchema(node: Json): Json {
  const schema = deref(node);
  if (schema.type === 'integer' || schema.type === 'number') return schema;
  const member = (schema.anyOf ?? schema.oneOf ?? []).map(deref).find((s: Json) => s.type === 'integer' || s.type === 'number');
  if (!member) throw new Error(`not a numeric schema: ${JSON.stringify(schema)}`);
  return member;
}

/** A form's fields as the schema would state them, and the schema's own. */
const asSchema = (fields: NumberField<string>[]) =>
  Object.fromEntries(fields.map((f) => [f.name, { type: f.decimal ? 'number' : 'integer', minimum: f.min, maximum: f.max }]));
const ofSchema = (body: Json, names: string[]) =>
  Object.fromEntries(
    names.map((name) => {
      const s = numberSchema(body.properties[name]);
      return [name, { type: s.type, minimum: s.minimum, maximum: s.maximum }];
    }),
  );

beforeAll(async () => {
  t = await startApp();
  doc = (await t.raw('GET', '/openapi.json')).body;
});
afterAll(() => t?.close());

describe('the settings forms’ bounds are the API’s', () => {
  it('limits and budget (setLimits)', () => {
    const body = bodyOf('setLimits');
    expect(asSchema(LIMIT_FIELDS)).toEqual(ofSchema(body, Object.keys(body.properties)));
  });

  it('retention (setRetention)', () => {
    const body = bodyOf('setRetention');
    expect(asSchema(RETENTION_FIELDS)).toEqual(ofSchema(body, Object.keys(body.properties)));
  });

  it('a key’s own rate limit (updateApiKey)', () => {
    const body = bodyOf('updateApiKey');
    expect(asSchema([KEY_RATE_LIMIT_FIELD])).toEqual(ofSchema(body, Object.keys(body.properties)));
  });

  it('code execution (setCodeSettings): every field, its minimum (the maximum is the server’s, read at run time)', async () => {
    const body = bodyOf('setCodeSettings');
    const { maxima } = (await t.api((await t.tenant()).key).GET('/api/v1/code/settings')).data!;
    const fields = codeFields(maxima);
    expect(fields.map((f) => f.name).sort()).toEqual(Object.keys(body.properties).sort());
    for (const f of fields) expect({ [f.name]: f.min }).toEqual({ [f.name]: numberSchema(body.properties[f.name]).minimum });
  });
});

describe('the memory page’s checks are the API’s', () => {
  it('a block’s label and an end user’s id', () => {
    const label = parameterOf('putMemoryBlock', 'label');
    expect(LABEL_PATTERN.source).toBe(label.pattern);
    const userId = parameterOf('listMemoryBlocks', 'userId');
    expect(USER_ID_PATTERN.source).toBe(userId.pattern.replace('+$', `{${userId.minLength},${userId.maxLength}}$`));
  });
});
