import type { AddressInfo } from 'node:net';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { startApp, type TestApp } from '../helpers/app.js';
import { skillApprovalActions } from '../../src/skills/approvals.js';
import { assign, createSkill, fakeGateway } from './helpers.js';

let t: TestApp;
let base: string;
let key: string;
let otherKey: string;
let external: { id: string };
let skillId: string;

beforeAll(async () => {
  t = await startApp();
  await t.app.listen({ port: 0, host: '127.0.0.1' });
  base = `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`;
  ({ key } = await t.tenant('acme'));
  ({ key: otherKey } = await t.tenant('globex'));
  // An agent hosted elsewhere: it holds an identity here and uses the platform's skills over MCP.
  external = await t.agent(key, { name: 'Outside', hosting: 'external' });
  const skill = await createSkill(t, key, {
    name: 'pricing',
    references: [{ name: 'prices.md', content: '# Prices\nThe Team plan costs 20 EUR per seat.\n\n# Support\nEmail only.' }],
  });
  skillId = skill.id;
  await assign(t, key, skill.id, external.id, { config: { currency: 'EUR' } });
});
afterAll(() => t.close());

const mcpUrl = (agentId: string) => new URL(`${base}/api/v1/agents/${agentId}/mcp`);

async function connect(agentId: string, k = key) {
  const client = new Client({ name: 'test-client', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(mcpUrl(agentId), { requestInit: { headers: { authorization: `Bearer ${k}` } } }));
  return client;
}

const parsed = (value: unknown) => {
  const result = value as { content: { type: string; text: string }[]; structuredContent: Record<string, any> };
  expect(JSON.parse(result.content[0].text)).toEqual(result.structuredContent);
  return result.structuredContent;
};
const json = async (res: Response): Promise<any> => res.json();

describe('MCP endpoint', () => {
  it('lists the five tools with their input schemas to the official SDK client', async () => {
    const client = await connect(external.id);
    expect(client.getServerVersion()).toMatchObject({ name: 'agentry-skills' });
    const { tools } = await client.listTools();
    expect(tools.map((x) => x.name)).toEqual(['skill_discover', 'skill_query', 'skill_request', 'connector_discover', 'connector_request']);
    const query = tools.find((x) => x.name === 'skill_query')!;
    expect(query.inputSchema).toMatchObject({ type: 'object', required: ['skillId', 'query'] });
    expect(Object.keys(query.inputSchema.properties!)).toEqual(['skillId', 'query', 'context', 'referenceFile']);
    await client.close();
  });

  it('calls the tools as that agent: same results as during runs', async () => {
    const client = await connect(external.id);
    const discovered = parsed(await client.callTool({ name: 'skill_discover', arguments: { category: 'sales' } }));
    expect(discovered.skills.find((s: { name: string }) => s.name === 'pricing')).toMatchObject({ id: skillId, assignedToMe: true });

    const answer = parsed(await client.callTool({ name: 'skill_query', arguments: { skillId, query: 'team plan price' } }));
    expect(answer).toMatchObject({
      skill: { id: skillId, name: 'pricing' },
      config: { currency: 'EUR' },
      instructions: 'Quote list prices.',
    });
    expect(answer.matches[0]).toMatchObject({ reference: 'prices.md', section: 'Prices' });

    const connectors = parsed(await client.callTool({ name: 'connector_discover', arguments: {} }));
    expect(connectors.available).toHaveLength(8);
    await client.close();
  });

  it('answers tool errors as MCP error results', async () => {
    const client = await connect(external.id);
    const other = await createSkill(t, key, { name: 'not-mine' });
    const refused = await client.callTool({ name: 'skill_query', arguments: { skillId: other.id, query: 'x' } });
    expect(refused.isError).toBe(true);
    expect(parsed(refused)).toEqual({ error: { code: 'skill_not_assigned', message: expect.any(String) } });
    const already = await client.callTool({ name: 'skill_request', arguments: { skillId, reason: 'need it' } });
    expect(already.isError).toBe(true);
    expect(parsed(already).error.code).toBe('already_assigned');
    // Input the schema refuses is an error result too (checked by the SDK server).
    const invalid = await client.callTool({ name: 'skill_query', arguments: { query: 1 } });
    expect(invalid.isError).toBe(true);
    await client.close();
  });

  it('serves only the tool groups in the agent’s tools list', async () => {
    const skillsOnly = await t.agent(key, { hosting: 'external', tools: [{ type: 'builtin', name: 'skills' }] });
    const client = await connect(skillsOnly.id);
    expect((await client.listTools()).tools.map((x) => x.name)).toEqual(['skill_discover', 'skill_query', 'skill_request']);
    await client.close();
    const none = await t.agent(key, { tools: [] });
    const bare = await connect(none.id);
    expect((await bare.listTools()).tools).toEqual([]);
    await bare.close();
  });

  it('authenticates: bearer API key, skills:read, agent in the caller’s tenant', async () => {
    const post = (agentId: string, headers: Record<string, string>) =>
      fetch(mcpUrl(agentId), {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} }),
      });
    const anonymous = await post(external.id, {});
    expect(anonymous.status).toBe(401);
    // RFC 9728: the challenge names the endpoint's protected resource metadata (test/skills/mcp-auth.test.ts follows it).
    expect(anonymous.headers.get('www-authenticate')).toMatch(
      new RegExp(
        `^Bearer resource_metadata="[^"]+/\\.well-known/oauth-protected-resource/api/v1/agents/${external.id}/mcp", scope="skills:read"$`,
      ),
    );
    expect((await post(external.id, { authorization: 'Bearer agk_nope' })).status).toBe(401);
    // An id of any characters is a path segment of the metadata's URL, percent-encoded: a valid header
    // (non-ASCII in it made Node refuse the header, a 500), and a quote cannot end the quoted URL.
    for (const id of ['𱴇籅', 'a"b']) {
      const odd = await post(id, {});
      expect(odd.status).toBe(401);
      expect(odd.headers.get('www-authenticate')).toContain(
        `/.well-known/oauth-protected-resource/api/v1/agents/${encodeURIComponent(id)}/mcp", scope=`,
      );
    }

    const forbidden = await post(external.id, { authorization: `Bearer ${await t.key(key, ['agents:read'])}` });
    expect(forbidden.status).toBe(403);
    expect((await json(forbidden)).code).toBe('forbidden');

    const foreign = await post(external.id, { authorization: `Bearer ${otherKey}` });
    expect(foreign.status).toBe(404);
    expect((await json(foreign)).code).toBe('not_found');
    await expect(connect(external.id, otherKey)).rejects.toThrow();

    // A plain JSON-RPC POST works without the SDK (stateless: no initialize needed).
    const ok = await post(external.id, { authorization: `Bearer ${key}` });
    expect(ok.status).toBe(200);
    expect(ok.headers.get('x-request-id')).toBeTruthy();
    const body = await json(ok);
    expect(body.result.tools).toHaveLength(5);
  });

  it('answers GET and DELETE with 405 (stateless server) and bad bodies with JSON-RPC errors', async () => {
    const auth = { authorization: `Bearer ${key}` };
    const get = await fetch(mcpUrl(external.id), { headers: { ...auth, accept: 'text/event-stream' } });
    expect(get.status).toBe(405);
    expect(get.headers.get('allow')).toBe('POST');
    expect((await json(get)).error.code).toBe(-32000);
    const del = await fetch(mcpUrl(external.id), { method: 'DELETE', headers: auth });
    expect(del.status).toBe(405);

    const empty = await fetch(mcpUrl(external.id), {
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
    });
    expect(empty.status).toBe(400);
    expect((await json(empty)).error.code).toBe(-32700);
    const notJsonRpc = await fetch(mcpUrl(external.id), {
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ hello: 'world' }),
    });
    expect(notJsonRpc.status).toBe(400);
  });

  it('creates requests as the calling API key (with an approval gateway)', async () => {
    const fake = fakeGateway(skillApprovalActions(t.services.skillTools));
    vi.spyOn(t.services.tasks, 'createApprovalTask').mockImplementation(fake.gateway.createApprovalTask);
    const keyId = (await t.api(key).GET('/api/v1/api-keys')).data!.apiKeys.find((k) => k.name === 'initial admin key')!.id;
    const client = await connect(external.id);
    const result = parsed(
      await client.callTool({ name: 'connector_request', arguments: { integrationId: 'slack', reason: 'post incident updates' } }),
    );
    expect(result).toMatchObject({ status: 'awaiting_approval', integrationId: 'slack' });
    expect(fake.tasks.at(-1)).toMatchObject({
      action: 'connector.request',
      requestedBy: { type: 'api_key', id: keyId },
      payload: { agentId: external.id },
    });
    const requests = await t.api(key).GET('/api/v1/connectors/requests');
    expect(requests.data!.requests[0]).toMatchObject({ agentId: external.id, connectorId: 'slack', status: 'pending', requestedBy: keyId });
    await client.close();
  });
});
