import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApp, type TestApp } from '../helpers/app.js';
import { createSkill } from './helpers.js';

/**
 * Issue 21 item 6: each MCP tool needs the permission its HTTP twin needs. skill_request and
 * connector_request create approval tasks (and a connector request): what POST /api/v1/tasks needs,
 * agents:write. A skills:read key reads through MCP but creates nothing.
 */

let t: TestApp;
let base: string;
let admin: string;
let agentId: string;
let skillId: string;

beforeAll(async () => {
  t = await startApp();
  base = await t.listen();
  ({ key: admin } = await t.tenant('acme'));
  agentId = (await t.agent(admin, { name: 'Outside', hosting: 'external' })).id;
  skillId = (await createSkill(t, admin, { name: 'pricing' })).id;
});
afterAll(() => t.close());

async function connect(key: string) {
  const client = new Client({ name: 'test-client', version: '1.0.0' });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(`${base}/api/v1/agents/${agentId}/mcp`), {
      requestInit: { headers: { authorization: `Bearer ${key}` } },
    }),
  );
  return client;
}

const structured = (value: unknown) => (value as { structuredContent: Record<string, any> }).structuredContent;
const pendingTasks = async () => (await t.api(admin).GET('/api/v1/tasks/pending-approval')).data!.total;
const connectorRequests = async () => (await t.api(admin).GET('/api/v1/connectors/requests')).data!.total;

describe('MCP tools check the permission of their HTTP twin', () => {
  it('a skills:read key reads, but skill_request and connector_request answer forbidden and create nothing', async () => {
    const readOnly = await t.key(admin, ['skills:read']);
    // Its HTTP twin: POST /api/v1/tasks is a 403 for this key.
    expect((await t.api(readOnly).POST('/api/v1/tasks', { body: { name: 'x', description: 'y', agentId } })).response.status).toBe(403);
    const client = await connect(readOnly);
    expect(structured(await client.callTool({ name: 'skill_discover', arguments: {} })).skills).toBeInstanceOf(Array);
    const tasksBefore = await pendingTasks();
    const requestsBefore = await connectorRequests();

    const skill = await client.callTool({ name: 'skill_request', arguments: { skillId, reason: 'need it' } });
    expect(skill.isError).toBe(true);
    expect(structured(skill).error).toEqual({ code: 'forbidden', message: expect.stringContaining('agents:write') });
    const connector = await client.callTool({ name: 'connector_request', arguments: { integrationId: 'slack', reason: 'updates' } });
    expect(connector.isError).toBe(true);
    expect(structured(connector).error.code).toBe('forbidden');

    expect(await pendingTasks()).toBe(tasksBefore);
    expect(await connectorRequests()).toBe(requestsBefore);
    await client.close();
  });

  it('a key with skills:read and agents:write makes both requests', async () => {
    const writer = await t.key(admin, ['skills:read', 'agents:write']);
    const client = await connect(writer);
    const tasksBefore = await pendingTasks();
    const skill = await client.callTool({ name: 'skill_request', arguments: { skillId, reason: 'need it' } });
    expect(skill.isError, JSON.stringify(skill)).toBeFalsy();
    expect(structured(skill)).toMatchObject({ status: 'awaiting_approval', taskId: expect.any(String) });
    const connector = await client.callTool({ name: 'connector_request', arguments: { integrationId: 'slack', reason: 'updates' } });
    expect(structured(connector)).toMatchObject({ status: 'awaiting_approval', integrationId: 'slack' });
    expect(await pendingTasks()).toBe(tasksBefore + 2);
    await client.close();
  });
});
