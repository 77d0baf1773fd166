import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { expectProblem, startApp, type TestApp } from '../helpers/app.js';

/** GET /api/v1/models: what it lists follows the server's provider configuration. */

let t: TestApp | undefined;
afterEach(async () => {
  await t?.close();
  t = undefined;
});
afterAll(async () => t?.close());

async function modelsOf(env: Record<string, string>) {
  t = await startApp(env);
  const { key } = await t.tenant();
  const { data, error, response } = await t.api(key).GET('/api/v1/models');
  expect(response.status, JSON.stringify(error)).toBe(200);
  return data!;
}

describe('GET /api/v1/models', () => {
  it('offers builtin/echo alone when no provider is configured', async () => {
    const body = await modelsOf({});
    expect(body).toEqual({
      defaultModel: 'builtin/echo',
      models: [
        {
          id: 'builtin/echo',
          provider: 'builtin',
          name: 'echo',
          usable: true,
          unavailableReason: null,
          default: true,
          price: { input: 0, output: 0 },
          contextWindow: null,
        },
      ],
    });
  });

  it('adds the priced models of a configured provider, with price and context window', async () => {
    const body = await modelsOf({ OPENAI_API_KEY: 'sk-test' });
    const ids = body.models.map((m) => m.id);
    expect(ids[0]).toBe('builtin/echo');
    expect(ids).toContain('openai/gpt-4.1');
    expect(ids.some((id) => id.startsWith('anthropic/'))).toBe(false);
    expect(body.models.find((m) => m.id === 'openai/gpt-4o-mini')).toEqual({
      id: 'openai/gpt-4o-mini',
      provider: 'openai',
      name: 'gpt-4o-mini',
      usable: true,
      unavailableReason: null,
      default: false,
      price: { input: 0.15, output: 0.6 },
      contextWindow: 128_000,
    });
    // Sorted: builtin first, then provider and name.
    expect(ids.slice(1)).toEqual([...ids.slice(1)].sort());
  });

  it('lists an OpenAI-compatible server’s models MODEL_PRICES names, once its base URL is set', async () => {
    const prices = JSON.stringify({ 'openai-compatible/llama3.1:8b': { input: 0, output: 0, contextWindow: 8192 } });
    const without = await modelsOf({ MODEL_PRICES: prices });
    expect(without.models.map((m) => m.id)).toEqual(['builtin/echo']);
    await t?.close();
    const body = await modelsOf({ MODEL_PRICES: prices, OPENAI_COMPATIBLE_BASE_URL: 'http://127.0.0.1:11434/v1' });
    expect(body.models.map((m) => m.id)).toEqual(['builtin/echo', 'openai-compatible/llama3.1:8b']);
    expect(body.models[1]).toMatchObject({ usable: true, price: { input: 0, output: 0 }, contextWindow: 8192 });
  });

  it('lists DEFAULT_MODEL even when its provider is not configured, saying why it is unusable', async () => {
    const body = await modelsOf({ DEFAULT_MODEL: 'anthropic/claude-haiku-4-5' });
    expect(body.defaultModel).toBe('anthropic/claude-haiku-4-5');
    expect(body.models.map((m) => m.id)).toEqual(['builtin/echo', 'anthropic/claude-haiku-4-5']);
    expect(body.models[0].default).toBe(false);
    expect(body.models[1]).toMatchObject({ usable: false, default: true, price: { input: 1, output: 5 }, contextWindow: 200_000 });
    expect(body.models[1].unavailableReason).toMatch(/ANTHROPIC_API_KEY/);
  });

  it('answers 401 without a credential and 403 to a key without agents:read', async () => {
    t = await startApp();
    const { key } = await t.tenant();
    expectProblem(await t.api().GET('/api/v1/models'), 401, 'missing_credentials');
    const skillsOnly = await t.key(key, ['skills:read']);
    expectProblem(await t.api(skillsOnly).GET('/api/v1/models'), 403, 'forbidden');
    const readOnly = await t.key(key, ['agents:read']);
    expect((await t.api(readOnly).GET('/api/v1/models')).response.status).toBe(200);
  });
});
