import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LABEL_PATTERN, USER_ID_PATTERN } from '../../packages/console/src/features/memory/limits.js';
import type { NumberField } from '../../packages/console/src/features/settings/fields.js';
import { codeFields, KEY_RATE_LIMIT_FIELD, LIMIT_FIELDS, RETENTION_FIELDS } from '../../packages/console/src/features/settings/groups.js';
import { startApp, type TestApp } from '../helpers/app.js';
import { type Json, openApiSchemas } from '../helpers/openapi-schemas.js';

/*
 * The settings and memory pages check what is typed against the API's bounds before saving; the SDK's
 * types carry none, so they are written by hand. This holds them equal to the server's OpenAPI
 * document (built from the TypeBox schemas that validate the requests): a changed bound fails here,
 * not in a person's form.
 */

let t: TestApp;
let schemas: ReturnType<typeof openApiSchemas>;
const bodyOf = (id: string) => schemas.bodyOf(id);
const parameterOf = (id: string, name: string) => schemas.parameterOf(id, name);
const numberSchema = (node: Json) => schemas.numberSchema(node);

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
  schemas = openApiSchemas((await t.raw('GET', '/openapi.json')).body);
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
