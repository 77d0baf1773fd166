import { SignJWT, decodeJwt, importJWK } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signature } from '../../src/tasks/webhook-signatures.js';
import { secretOf, startProcess, type TestDatabase, type TestProcess } from '../helpers/app.js';
import { cli, type ServerProcess } from '../helpers/process.js';
import { zip } from '../skills/helpers.js';

let database: TestDatabase;
let server: ServerProcess;
let proc: TestProcess;

beforeAll(async () => {
  proc = await startProcess({ LOG_LEVEL: 'trace' });
  ({ database, server } = proc);
});
afterAll(() => proc?.close());

describe('logs of a full session at LOG_LEVEL=trace', () => {
  it('never contain an API key, a key secret or a tool credential', async () => {
    const created = JSON.parse((await cli(['tenants', 'create', 'secrets', '--json'], database.env)).stdout);
    const admin: string = created.apiKey;
    const call = async (path: string, key: string, body?: unknown, method?: string) => {
      const res = await fetch(`${server.url}${path}`, {
        method: method ?? (body === undefined ? 'GET' : 'POST'),
        headers: { authorization: `Bearer ${key}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      const text = await res.text();
      return { status: res.status, body: text ? JSON.parse(text.startsWith('event:') ? '{}' : text) : undefined, text };
    };
    const made = await call('/api/v1/api-keys', admin, { name: 'worker', permissions: ['agents:read', 'agents:write'] });
    expect(made.status).toBe(201);
    const worker: string = made.body.key;
    const toolSecret = 'mcp-token-Zq8vN3xY7wK2pL5';
    const agent = await call('/api/v1/agents', worker, {
      name: 's',
      appId: 'x',
      tools: [{ type: 'mcp', url: 'http://127.0.0.1:9/mcp', headers: { authorization: `Bearer ${toolSecret}` } }],
    });
    expect(agent.status).toBe(201);
    await call(`/api/v1/agents/${agent.body.id}/execute`, worker, { message: 'hello' });
    await call(`/api/v1/agents/${agent.body.id}/execute`, worker, { message: '/fail on purpose' });
    // Wrong secrets presented: a forged key for a real id, and garbage.
    const forged = worker.slice(0, 37) + 'A'.repeat(43);
    expect((await call('/api/v1/agents', forged)).status).toBe(401);
    expect((await call('/api/v1/agents', 'not-a-key-Xy9Wv8Ut7')).status).toBe(401);
    // Identity: an external agent's new private key is handed out once; SVIDs and access tokens are credentials.
    const external = await call('/api/v1/agents', admin, { name: 'ext', appId: 'x', hosting: 'external' });
    const rotated = await call(`/api/v1/identity/agents/${external.body.id}/keys/rotate`, admin, {});
    expect(rotated.status).toBe(201);
    const privateD: string = rotated.body.privateJwk.d;
    expect(privateD.length).toBeGreaterThan(20);
    const svid = await call(`/api/v1/identity/agents/${agent.body.id}/svid`, admin, { audience: 'http://127.0.0.1' });
    expect(svid.status).toBe(200);
    const masterKey = (await import('node:fs')).readFileSync(`${database.env.DATA_DIR}/master.key`, 'utf8').trim();
    await call(`/api/v1/api-keys/${made.body.apiKey.id}`, admin, undefined, 'DELETE');
    expect((await call('/api/v1/agents', worker)).status).toBe(401);
    await new Promise((r) => setTimeout(r, 300));

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
      svid.body.svid,
      masterKey,
    ]) {
      expect(logs.includes(secret), `log contains ${secret.slice(0, 6)}...`).toBe(false);
    }
  });

  it('never contain a credential sent with uploads, skill imports, the token endpoint or webhook deliveries', async () => {
    const before = server.output().length;
    const created = JSON.parse((await cli(['tenants', 'create', 'secrets-2', '--json'], database.env)).stdout);
    const admin: string = created.apiKey;
    const send = async (
      path: string,
      init: { key?: string; json?: unknown; form?: FormData; body?: string; headers?: Record<string, string> },
    ) => {
      const headers: Record<string, string> = { ...(init.key ? { authorization: `Bearer ${init.key}` } : {}), ...(init.headers ?? {}) };
      let body: FormData | string | undefined = init.form ?? init.body;
      if (init.json !== undefined) {
        headers['content-type'] = 'application/json';
        body = JSON.stringify(init.json);
      }
      const res = await fetch(`${server.url}${path}`, { method: body === undefined ? 'GET' : 'POST', headers, body });
      const text = await res.text();
      return { status: res.status, body: text.startsWith('{') ? JSON.parse(text) : undefined, text };
    };
    const fileForm = (name: string, data: string | Uint8Array, type = 'application/octet-stream') => {
      const form = new FormData();
      form.append('file', new Blob([data], { type }), name);
      return form;
    };

    // Uploads: an attachment, then sent with a message of a conversation.
    const agent = await send('/api/v1/agents', { key: admin, json: { name: 'logs', appId: 'x' } });
    expect(agent.status, agent.text).toBe(201);
    const file = await send('/api/v1/files', { key: admin, form: fileForm('notes.txt', 'hello', 'text/plain') });
    expect(file.status, file.text).toBe(201);
    const conversation = await send('/api/v1/conversations', { key: admin, json: { agentId: agent.body.id } });
    expect(conversation.status, conversation.text).toBe(201);
    const message = await send(`/api/v1/conversations/${conversation.body.id}/messages`, {
      key: admin,
      json: { content: 'read it', attachments: [file.body.id] },
    });
    expect(message.status, message.text).toBeLessThan(300);

    // Skill imports: a multipart SKILL.md and a multipart zip archive.
    const skillMd = (name: string) => `---\nname: ${name}\ndescription: Answers questions about ${name}.\n---\n\n# ${name}\n\nBe brief.\n`;
    const imported = await send('/api/skills/import', { key: admin, form: fileForm('SKILL.md', skillMd('log-md'), 'text/markdown') });
    expect(imported.status, imported.text).toBe(201);
    const archived = await send('/api/skills/import', {
      key: admin,
      form: fileForm('skill.zip', zip({ 'log-zip/SKILL.md': skillMd('log-zip') })),
    });
    expect(archived.status, archived.text).toBe(201);

    // The token endpoint: client_credentials with a key (form fields and HTTP Basic), with an agent's
    // signed assertion, and a token exchange of an SVID.
    const made = await send('/api/v1/api-keys', { key: admin, json: { name: 'client', permissions: ['agents:read'] } });
    expect(made.status, made.text).toBe(201);
    const client: string = made.body.key;
    const clientId: string = made.body.apiKey.id;
    const FORM = { 'content-type': 'application/x-www-form-urlencoded' };
    const token = (params: Record<string, string>, headers: Record<string, string> = {}) =>
      send('/api/v1/identity/oauth/token', { body: new URLSearchParams(params).toString(), headers: { ...FORM, ...headers } });
    const byForm = await token({ grant_type: 'client_credentials', client_id: clientId, client_secret: client });
    expect(byForm.status, byForm.text).toBe(200);
    const byBasic = await token(
      { grant_type: 'client_credentials' },
      { authorization: `Basic ${Buffer.from(`${clientId}:${client}`).toString('base64')}` },
    );
    expect(byBasic.status, byBasic.text).toBe(200);
    expect(
      (await token({ grant_type: 'client_credentials', client_id: clientId, client_secret: `${client.slice(0, -4)}AAAA` })).status,
    ).toBe(401);
    await send('/api/v1/agents', { key: byForm.body.access_token }); // the access token as a bearer

    const external = await send('/api/v1/agents', { key: admin, json: { name: 'ext-2', appId: 'x', hosting: 'external' } });
    const rotated = await send(`/api/v1/identity/agents/${external.body.id}/keys/rotate`, { key: admin, json: {} });
    expect(rotated.status, rotated.text).toBe(201);
    const privateJwk = rotated.body.privateJwk;
    const svid = await send(`/api/v1/identity/agents/${agent.body.id}/svid`, { key: admin, json: { audience: 'http://127.0.0.1' } });
    const issuer = decodeJwt(svid.body.svid).iss!;
    const assertion = await new SignJWT({})
      .setProtectedHeader({ alg: 'ES256', kid: privateJwk.kid })
      .setIssuer(external.body.id)
      .setSubject(external.body.id)
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
    expect(byAssertion.status, byAssertion.text).toBe(200);
    const subject = await send(`/api/v1/identity/agents/${agent.body.id}/svid`, { key: admin, json: { audience: issuer } });
    expect(subject.status, subject.text).toBe(200);
    const exchanged = await token({
      grant_type: 'urn:ietf:params:oauth:grant-type:token-exchange',
      subject_token: subject.body.svid,
      subject_token_type: 'urn:ietf:params:oauth:token-type:jwt',
      audience: external.body.id,
      scope: 'tools:*',
    });
    expect(exchanged.status, exchanged.text).toBe(200);
    const introspected = await send('/api/v1/identity/oauth/introspect', {
      key: admin,
      body: new URLSearchParams({ token: exchanged.body.access_token }).toString(),
      headers: FORM,
    });
    expect(introspected.status, introspected.text).toBe(200);

    // A webhook delivery, signed with the task's secret (a wrong signature too).
    const task = await send('/api/v1/tasks', {
      key: admin,
      json: { name: 'hook', description: 'hook', agentId: agent.body.id, type: 'triggered', trigger: { type: 'webhook' } },
    });
    expect(task.status, task.text).toBe(201);
    const webhookSecret: string = task.body.trigger.secret;
    const delivery = JSON.stringify({ orderId: 7 });
    const ts = String(Math.floor(Date.now() / 1000));
    const hook = (sig: string) =>
      send(`/api/v1/hooks/${task.body.id}`, {
        body: delivery,
        headers: { 'content-type': 'application/json', 'x-agentry-timestamp': ts, 'x-agentry-signature': sig },
      });
    expect((await hook(`sha256=${signature(webhookSecret, ts, delivery)}`)).status).toBe(202);
    expect((await hook(`sha256=${'0'.repeat(64)}`)).status).toBe(401);
    await new Promise((r) => setTimeout(r, 300));

    const logs = server.output().slice(before);
    expect(logs).toContain('Providing options to busboy'); // the multipart plugin's trace line, with the request headers
    const secrets = {
      admin: secretOf(admin),
      client: secretOf(client),
      'private key d': privateJwk.d,
      'webhook secret': webhookSecret.slice('whsec_'.length),
      'client assertion': assertion,
      SVID: subject.body.svid,
      'access token (form)': byForm.body.access_token,
      'access token (basic)': byBasic.body.access_token,
      'access token (assertion)': byAssertion.body.access_token,
      'access token (exchange)': exchanged.body.access_token,
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
