import { Agentry, type AgentryError } from '@agentry/client';
import { SignJWT, decodeJwt, importJWK } from 'jose';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { SVID_DEFAULT_TTL_S } from '../../src/identity/svid.js';
import { signature } from '../../src/tasks/webhook-signatures.js';
import { secretOf, startProcess, type TestDatabase, type TestProcess } from '../helpers/app.js';
import { cli, type ServerProcess } from '../helpers/process.js';
import { zip } from '../skills/helpers.js';

let database: TestDatabase;
let server: ServerProcess;
let proc: TestProcess;

beforeAll(async () => {
  // The agent's MCP server (a closed port on loopback) is allowed: saving it is not refused, and runs
  // try it with its credential header, whose value must not reach the logs either.
  proc = await startProcess({ LOG_LEVEL: 'trace', MCP_ALLOWED_HOSTS: '127.0.0.1:9' });
  ({ database, server } = proc);
});
afterAll(() => proc?.close());

/** The SDK on the server with `key` as its credential; no retries, so each call below is one request. */
const sdk = (key: string) => new Agentry({ baseUrl: server.url, apiKey: key, maxRetries: 0 });
/** A call's status, also when it failed (the SDK rejects with an AgentryError). */
const statusOf = (call: Promise<{ response: Response }>) =>
  call.then(
    ({ response }) => response.status,
    (err: AgentryError) => err.status,
  );
/** Waits until the server has logged the end of the request `requestId`, its last line. */
const loggedEnd = (requestId: string | null | undefined) =>
  vi.waitFor(() => expect(server.output()).toMatch(new RegExp(`"reqId":"${requestId}".*"msg":"request completed"`)), {
    timeout: 5_000,
    interval: 20,
  });
// The generated types require an SVID's ttlSeconds (a field with a default): it is sent with the default.
const ttlSeconds = SVID_DEFAULT_TTL_S;

describe('logs of a full session at LOG_LEVEL=trace', () => {
  it('never contain an API key, a key secret or a tool credential', async () => {
    const created = JSON.parse((await cli(['tenants', 'create', 'secrets', '--json'], database.env)).stdout);
    const admin: string = created.apiKey;
    const asAdmin = sdk(admin).api;
    const made = await asAdmin.POST('/api/v1/api-keys', { body: { name: 'worker', permissions: ['agents:read', 'agents:write'] } });
    expect(made.response.status).toBe(201);
    const worker = made.data!.key;
    const toolSecret = 'mcp-token-Zq8vN3xY7wK2pL5';
    const agent = await sdk(worker).api.POST('/api/v1/agents', {
      body: {
        name: 's',
        appId: 'x',
        tools: [{ type: 'mcp', url: 'http://127.0.0.1:9/mcp', headers: { authorization: `Bearer ${toolSecret}` } }],
      },
    });
    expect(agent.response.status).toBe(201);
    const agentId = agent.data!.id;
    // Their answers do not matter here, only what they log.
    await sdk(worker)
      .agents.execute(agentId, { message: 'hello' })
      .catch(() => undefined);
    await sdk(worker)
      .agents.execute(agentId, { message: '/fail on purpose' })
      .catch(() => undefined);
    // Wrong secrets presented: a forged key for a real id, and garbage.
    const forged = worker.slice(0, 37) + 'A'.repeat(43);
    expect(await statusOf(sdk(forged).api.GET('/api/v1/agents'))).toBe(401);
    expect(await statusOf(sdk('not-a-key-Xy9Wv8Ut7').api.GET('/api/v1/agents'))).toBe(401);
    // Identity: an external agent's new private key is handed out once; SVIDs and access tokens are credentials.
    const external = await asAdmin.POST('/api/v1/agents', { body: { name: 'ext', appId: 'x', hosting: 'external' } });
    const rotated = await asAdmin.POST('/api/v1/identity/agents/{agentId}/keys/rotate', {
      params: { path: { agentId: external.data!.id } },
    });
    expect(rotated.response.status).toBe(201);
    const privateD = String(rotated.data!.privateJwk!.d);
    expect(privateD.length).toBeGreaterThan(20);
    const svid = await asAdmin.POST('/api/v1/identity/agents/{agentId}/svid', {
      params: { path: { agentId } },
      body: { audience: 'http://127.0.0.1', ttlSeconds },
    });
    expect(svid.response.status).toBe(200);
    const masterKey = (await import('node:fs')).readFileSync(`${database.env.DATA_DIR}/master.key`, 'utf8').trim();
    await asAdmin.DELETE('/api/v1/api-keys/{id}', { params: { path: { id: made.data!.apiKey.id } } });
    const revoked = await sdk(worker)
      .api.GET('/api/v1/agents')
      .catch((err: AgentryError) => err);
    expect(revoked).toMatchObject({ status: 401 });
    await loggedEnd((revoked as AgentryError).requestId);

    const logs = server.output();
    expect(logs.length).toBeGreaterThan(1000);
    expect(logs).toContain('"msg":"incoming request"');
    for (const secret of [
      secretOf(admin),
      secretOf(worker),
      secretOf(forged),
      'not-a-key-Xy9Wv8Ut7',
      toolSecret,
      privateD,
      svid.data!.svid,
      masterKey,
    ]) {
      expect(logs.includes(secret), `log contains ${secret.slice(0, 6)}...`).toBe(false);
    }
  });

  it('never contain a credential sent with uploads, skill imports, the token endpoint or webhook deliveries', async () => {
    const before = server.output().length;
    const created = JSON.parse((await cli(['tenants', 'create', 'secrets-2', '--json'], database.env)).stdout);
    const admin: string = created.apiKey;
    const asAdmin = sdk(admin).api;
    const fileForm = (name: string, data: string | Uint8Array, type = 'application/octet-stream') => {
      const form = new FormData();
      form.append('file', new Blob([data], { type }), name);
      return form;
    };

    // Uploads: an attachment, then sent with a message of a conversation.
    // The generated types have a form's file part as a string; the form sent carries the file itself.
    const agent = await asAdmin.POST('/api/v1/agents', { body: { name: 'logs', appId: 'x' } });
    expect(agent.response.status).toBe(201);
    const agentId = agent.data!.id;
    const file = await asAdmin.POST('/api/v1/files', {
      body: { file: 'notes.txt' },
      bodySerializer: () => fileForm('notes.txt', 'hello', 'text/plain'),
    });
    expect(file.response.status).toBe(201);
    const conversation = await asAdmin.POST('/api/v1/conversations', { body: { agentId } });
    expect(conversation.response.status).toBe(201);
    const message = await asAdmin.POST('/api/v1/conversations/{id}/messages', {
      params: { path: { id: conversation.data!.id } },
      body: { content: 'read it', attachments: [file.data!.id] },
    });
    expect(message.response.status).toBeLessThan(300);

    // Skill imports: a multipart SKILL.md and a multipart zip archive.
    const skillMd = (name: string) => `---\nname: ${name}\ndescription: Answers questions about ${name}.\n---\n\n# ${name}\n\nBe brief.\n`;
    const imported = await asAdmin.POST('/api/skills/import', {
      body: { file: 'SKILL.md' },
      bodySerializer: () => fileForm('SKILL.md', skillMd('log-md'), 'text/markdown'),
    });
    expect(imported.response.status).toBe(201);
    const archived = await asAdmin.POST('/api/skills/import', {
      body: { file: 'skill.zip' },
      bodySerializer: () => fileForm('skill.zip', zip({ 'log-zip/SKILL.md': skillMd('log-zip') })),
    });
    expect(archived.response.status).toBe(201);

    // The token endpoint: client_credentials with a key (form fields and HTTP Basic), with an agent's
    // signed assertion, and a token exchange of an SVID.
    const made = await asAdmin.POST('/api/v1/api-keys', { body: { name: 'client', permissions: ['agents:read'] } });
    expect(made.response.status).toBe(201);
    const client = made.data!.key;
    const clientId = made.data!.apiKey.id;
    // The token endpoint and introspection, sent as forms.
    const FORM = { 'content-type': 'application/x-www-form-urlencoded' };
    const token = (body: { grant_type: string } & Record<string, string>, headers: Record<string, string> = {}) =>
      asAdmin.POST('/api/v1/identity/oauth/token', { body, headers: { ...FORM, ...headers } });
    const byForm = await token({ grant_type: 'client_credentials', client_id: clientId, client_secret: client });
    expect(byForm.response.status).toBe(200);
    const byBasic = await token(
      { grant_type: 'client_credentials' },
      { authorization: `Basic ${Buffer.from(`${clientId}:${client}`).toString('base64')}` },
    );
    expect(byBasic.response.status).toBe(200);
    expect(
      await statusOf(token({ grant_type: 'client_credentials', client_id: clientId, client_secret: `${client.slice(0, -4)}AAAA` })),
    ).toBe(401);
    // The access token as a bearer.
    await sdk(byForm.data!.access_token)
      .api.GET('/api/v1/agents')
      .catch(() => undefined);

    const external = await asAdmin.POST('/api/v1/agents', { body: { name: 'ext-2', appId: 'x', hosting: 'external' } });
    const externalId = external.data!.id;
    const rotated = await asAdmin.POST('/api/v1/identity/agents/{agentId}/keys/rotate', { params: { path: { agentId: externalId } } });
    expect(rotated.response.status).toBe(201);
    const privateJwk = rotated.data!.privateJwk!;
    const svid = await asAdmin.POST('/api/v1/identity/agents/{agentId}/svid', {
      params: { path: { agentId } },
      body: { audience: 'http://127.0.0.1', ttlSeconds },
    });
    const issuer = decodeJwt(svid.data!.svid).iss!;
    const assertion = await new SignJWT({})
      .setProtectedHeader({ alg: 'ES256', kid: String(privateJwk.kid) })
      .setIssuer(externalId)
      .setSubject(externalId)
      .setAudience(issuer)
      .setIssuedAt()
      .setExpirationTime('1m')
      .setJti(crypto.randomUUID())
      .sign(await importJWK(privateJwk, 'ES256'));
    const byAssertion = await token({
      grant_type: 'client_credentials',
      client_assertion_type: 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer',
      client_assertion: assertion,
    });
    expect(byAssertion.response.status).toBe(200);
    const subject = await asAdmin.POST('/api/v1/identity/agents/{agentId}/svid', {
      params: { path: { agentId } },
      body: { audience: issuer, ttlSeconds },
    });
    expect(subject.response.status).toBe(200);
    const exchanged = await token({
      grant_type: 'urn:ietf:params:oauth:grant-type:token-exchange',
      subject_token: subject.data!.svid,
      subject_token_type: 'urn:ietf:params:oauth:token-type:jwt',
      audience: externalId,
      scope: 'tools:*',
    });
    expect(exchanged.response.status).toBe(200);
    const introspected = await asAdmin.POST('/api/v1/identity/oauth/introspect', {
      body: { token: exchanged.data!.access_token },
      headers: FORM,
    });
    expect(introspected.response.status).toBe(200);

    // A webhook delivery, signed with the task's secret (a wrong signature too).
    const task = await asAdmin.POST('/api/v1/tasks', {
      body: { name: 'hook', description: 'hook', agentId, type: 'triggered', trigger: { type: 'webhook' } },
    });
    expect(task.response.status).toBe(201);
    const { trigger } = task.data!;
    if (trigger?.type !== 'webhook') throw new Error(`expected a webhook trigger, got ${JSON.stringify(trigger)}`);
    const webhookSecret = trigger.secret!;
    const delivery = JSON.stringify({ orderId: 7 });
    const ts = String(Math.floor(Date.now() / 1000));
    // The body sent as the text that was signed.
    const hook = (sig: string) =>
      asAdmin.POST('/api/v1/hooks/{taskId}', {
        params: { path: { taskId: task.data!.id } },
        body: delivery,
        bodySerializer: (text) => text,
        headers: { 'content-type': 'application/json', 'x-agentry-timestamp': ts, 'x-agentry-signature': sig },
      });
    expect(await statusOf(hook(`sha256=${signature(webhookSecret, ts, delivery)}`))).toBe(202);
    const refused = await hook(`sha256=${'0'.repeat(64)}`).catch((err: AgentryError) => err);
    expect(refused).toMatchObject({ status: 401 });
    await loggedEnd((refused as AgentryError).requestId);

    const logs = server.output().slice(before);
    expect(logs).toContain('Providing options to busboy'); // the multipart plugin's trace line, with the request headers
    const secrets = {
      admin: secretOf(admin),
      client: secretOf(client),
      'private key d': String(privateJwk.d),
      'webhook secret': webhookSecret.slice('whsec_'.length),
      'client assertion': assertion,
      SVID: subject.data!.svid,
      'access token (form)': byForm.data!.access_token,
      'access token (basic)': byBasic.data!.access_token,
      'access token (assertion)': byAssertion.data!.access_token,
      'access token (exchange)': exchanged.data!.access_token,
      'basic credentials': Buffer.from(`${clientId}:${client}`).toString('base64'),
    };
    for (const [what, secret] of Object.entries(secrets)) expect(typeof secret === 'string' && secret.length > 20, what).toBe(true);
    expect(
      Object.entries(secrets)
        .filter(([, secret]) => logs.includes(secret))
        .map(([what]) => what),
      'secrets found in the log',
    ).toEqual([]);
  });
});
