import {
  discoverAuthorizationServerMetadata,
  discoverOAuthProtectedResourceMetadata,
  extractWWWAuthenticateParams,
} from '@modelcontextprotocol/sdk/client/auth.js';
import { ClientCredentialsProvider } from '@modelcontextprotocol/sdk/client/auth-extensions.js';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApp, type TestApp } from '../helpers/app.js';
import { freePort } from '../helpers/process.js';

/**
 * How an MCP client learns to authenticate to an agent's MCP endpoint, with the official TypeScript
 * SDK's auth functions: the 401's WWW-Authenticate names the protected resource metadata (RFC 9728),
 * that names the platform as authorization server (RFC 8414 metadata), whose token endpoint gives a
 * client_credentials token the endpoint takes.
 */

let t: TestApp;
let base: string;
let key: string;
let agentId: string;

beforeAll(async () => {
  // The server's public URL is the one the client uses: the metadata names resources by it.
  const port = await freePort();
  base = `http://127.0.0.1:${port}`;
  t = await startApp({ PUBLIC_BASE_URL: base });
  await t.app.listen({ port, host: '127.0.0.1' });
  ({ key } = await t.tenant('mcp-auth'));
  agentId = (await t.agent(key, { name: 'Outside', hosting: 'external' })).id;
});
afterAll(() => t?.close());

const mcpUrl = () => new URL(`${base}/api/v1/agents/${agentId}/mcp`);

describe('MCP authorization discovery', () => {
  it('a 401 names the protected resource metadata, which names the platform’s authorization server', async () => {
    const res = await fetch(mcpUrl(), {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} }),
    });
    expect(res.status).toBe(401);
    const { resourceMetadataUrl, scope } = extractWWWAuthenticateParams(res);
    expect(resourceMetadataUrl?.href).toBe(`${base}/.well-known/oauth-protected-resource/api/v1/agents/${agentId}/mcp`);
    expect(scope).toBe('skills:read');

    // The SDK finds the same document from the endpoint's URL alone (RFC 9728's path-suffixed well-known).
    const resource = await discoverOAuthProtectedResourceMetadata(mcpUrl());
    expect(resource).toEqual({
      resource: mcpUrl().href,
      authorization_servers: [base],
      scopes_supported: ['skills:read', 'agents:write'],
      bearer_methods_supported: ['header'],
      resource_name: expect.any(String),
      resource_documentation: `${base}/docs`,
    });
  });

  it('the authorization server metadata names the token endpoint, its grants and client authentication', async () => {
    const res = await fetch(`${base}/.well-known/oauth-authorization-server`);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({
      issuer: base,
      authorization_endpoint: `${base}/api/v1/identity/oauth/authorize`,
      token_endpoint: `${base}/api/v1/identity/oauth/token`,
      jwks_uri: `${base}/api/v1/identity/.well-known/jwks.json`,
      introspection_endpoint: `${base}/api/v1/identity/oauth/introspect`,
      grant_types_supported: ['client_credentials', 'urn:ietf:params:oauth:grant-type:token-exchange'],
      token_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post', 'private_key_jwt'],
      token_endpoint_auth_signing_alg_values_supported: ['ES256'],
      scopes_supported: ['agents:read', 'agents:write', 'settings:read', 'settings:write', 'skills:read', 'skills:write'],
      response_types_supported: [],
      service_documentation: `${base}/docs`,
    });
  });

  it('the SDK’s client_credentials flow discovers everything, gets a token and connects; tools do not advertise listChanged', async () => {
    const credential = (await t.api(key).GET('/api/v1/tenant')).data!.credential.id!;
    const provider = new ClientCredentialsProvider({ clientId: credential, clientSecret: key, scope: 'skills:read', expectedIssuer: base });
    const client = new Client({ name: 'auth-test', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(mcpUrl(), { authProvider: provider }));
    expect(provider.tokens()?.access_token).toMatch(/^ey/);
    const { tools } = await client.listTools();
    expect(tools.length).toBeGreaterThan(0);
    // This stateless server never sends notifications/tools/list_changed, so it does not offer them.
    expect(client.getServerCapabilities()?.tools).toEqual({ listChanged: false });
    await client.close();
    await expect(discoverAuthorizationServerMetadata(base)).resolves.toMatchObject({
      token_endpoint: `${base}/api/v1/identity/oauth/token`,
    });
  });

  it('the authorization endpoint the metadata must name refuses every request, saying why', async () => {
    const res = await fetch(`${base}/api/v1/identity/oauth/authorize?response_type=code&client_id=x`, { redirect: 'manual' });
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({
      error: 'unsupported_response_type',
      error_description: expect.stringContaining('token endpoint'),
    });
  });
});
