import type { AgentIdentity } from '../agents/service.js';
import { publishedJwk } from './agent-keys.js';
import { agentJwksUrl, clientIdUrl } from './audience.js';
import type { IdentityContext } from './context.js';
import { GRANT_TOKEN_EXCHANGE } from './exchange.js';

/** The public identity documents: an agent's client metadata and JWKS, the platform's JWKS and trust bundle. */

const TRUST_BUNDLE_REFRESH_HINT_S = 300;
/** The client metadata document stays below this size (IETF Client ID Metadata Document draft). */
const METADATA_MAX_BYTES = 5 * 1024;

const GRANT_TYPES = [GRANT_TOKEN_EXCHANGE, 'client_credentials'];

/** The agent's client metadata; `badge` signs its badge, compact when the full one would not fit. */
export async function clientMetadata(ctx: IdentityContext, agent: AgentIdentity, badge: (compact: boolean) => Promise<string>) {
  await ctx.agentKeys.ensureActive(agent.tenant_id, agent.id);
  const build = async (compact: boolean) => ({
    client_id: clientIdUrl(ctx.publicBaseUrl, agent.id),
    client_name: agent.name,
    jwks_uri: agentJwksUrl(ctx.publicBaseUrl, agent.id),
    grant_types: GRANT_TYPES,
    token_endpoint_auth_method: 'private_key_jwt' as const,
    token_endpoint_auth_signing_alg: 'ES256',
    spiffe_id: ctx.spiffeIdOf(agent.tenant_id, agent.id),
    badge: await badge(compact),
  });
  const doc = await build(false);
  return Buffer.byteLength(JSON.stringify(doc)) < METADATA_MAX_BYTES - 256 ? doc : build(true);
}

export async function agentJwks(ctx: IdentityContext, agent: AgentIdentity) {
  const keys = await ctx.agentKeys.published(agent.tenant_id, agent.id);
  return { keys: keys.map(publishedJwk) };
}

export async function platformJwks(ctx: IdentityContext) {
  const { published } = await ctx.platformKeys.snapshot();
  return { keys: published.map((row) => publishedJwk(row)) };
}

/** SPIFFE bundle: a JWKS of `jwt-svid` keys (no `alg`), with sequence and refresh hint. */
export async function trustBundle(ctx: IdentityContext) {
  const { published, sequence } = await ctx.platformKeys.snapshot();
  return {
    keys: published.map((row) => {
      const { kty, crv, x, y, kid } = publishedJwk(row);
      return { kty, crv, x, y, kid, use: 'jwt-svid' as const };
    }),
    spiffe_sequence: sequence,
    spiffe_refresh_hint: TRUST_BUNDLE_REFRESH_HINT_S,
  };
}
