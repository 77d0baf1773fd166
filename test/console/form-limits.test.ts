import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkText, LIMITS, type TextLimit } from '../../packages/console/src/lib/form-limits.js';
import { startApp, type TestApp } from '../helpers/app.js';
import { type Json, openApiSchemas } from '../helpers/openapi-schemas.js';

/*
 * The console checks a form against the API's limits before posting it (lib/form-limits.ts). The SDK's
 * types carry no limits, so the table is written by hand: this holds each of its entries equal to what
 * the server's OpenAPI document (GET /openapi.json, built from the same TypeBox schemas that validate
 * the requests) states, so a changed limit fails here rather than in a person's form.
 */

let t: TestApp;
let schemas: ReturnType<typeof openApiSchemas>;
const bodyOf = (id: string) => schemas.bodyOf(id);
const stringSchema = (node: Json) => schemas.stringSchema(node);
const deref = (node: Json) => schemas.deref(node);

/** The table's entry as the schema would state it. */
const asSchema = (limit: TextLimit) => ({
  minLength: limit.minLength,
  maxLength: limit.maxLength,
  pattern: limit.pattern,
  format: limit.url ? 'uri' : undefined,
});
const ofSchema = (schema: Json) => ({
  minLength: schema.minLength,
  maxLength: schema.maxLength,
  pattern: schema.pattern,
  format: schema.format,
});

beforeAll(async () => {
  t = await startApp();
  schemas = openApiSchemas((await t.raw('GET', '/openapi.json')).body);
});
afterAll(() => t?.close());

describe('the console’s form limits', () => {
  const bodies = {
    createAgent: 'createAgent',
    createTask: 'createTask',
    createApiKey: 'createApiKey',
    createPolicy: 'createTbacPolicy',
  } as const;
  for (const [table, operation] of Object.entries(bodies)) {
    it(`${table}: each limit is the one ${operation}'s schema states`, () => {
      const body = bodyOf(operation);
      for (const [field, limit] of Object.entries(LIMITS[table as keyof typeof bodies] as Record<string, TextLimit>)) {
        expect(ofSchema(stringSchema(body.properties[field])), `${operation} ${field}`).toEqual(asSchema(limit));
      }
    });
  }

  const tools = { mcpTool: 'mcp', agentTool: 'agent', a2aTool: 'a2a' } as const;
  for (const [table, type] of Object.entries(tools)) {
    it(`${table}: each limit is the one createAgent's ${type} tool states`, () => {
      const items = deref(bodyOf('createAgent').properties.tools.items);
      const tool = (items.anyOf ?? items.oneOf).map(deref).find((s: Json) => {
        const literal = deref(s.properties.type);
        return (literal.const ?? literal.enum?.[0]) === type;
      });
      for (const [field, limit] of Object.entries(LIMITS[table as keyof typeof tools] as Record<string, TextLimit>)) {
        expect(ofSchema(stringSchema(tool.properties[field])), `${type} tool ${field}`).toEqual(asSchema(limit));
      }
    });
  }

  it('assignSkill: the priority’s range is the one its schema states', () => {
    const priority = deref(bodyOf('assignSkill').properties.priority);
    expect({ minimum: priority.minimum, maximum: priority.maximum }).toEqual(LIMITS.assignSkill.priority);
  });

  it('says what is wrong in a person’s words', () => {
    expect(checkText('', { minLength: 1 })).toBe('is required');
    expect(checkText('ab', { minLength: 3 })).toBe('must have at least 3 characters');
    // Characters as JSON Schema counts them: an emoji is one.
    expect(checkText('😀😀', { maxLength: 2 })).toBeNull();
    expect(checkText('abc', { maxLength: 2 })).toBe('must have at most 2 characters (has 3)');
    expect(checkText('example.com', LIMITS.mcpTool.url)).toBe('must be a URL starting with https:// or http://');
    expect(checkText('https://exa mple.com', LIMITS.mcpTool.url)).toBe('is not a valid URL');
    expect(checkText('https://example.com/mcp', LIMITS.mcpTool.url)).toBeNull();
    expect(checkText('bad name', LIMITS.a2aTool.name)).toBe('must match ^[a-zA-Z0-9_-]{1,60}$');
  });
});
