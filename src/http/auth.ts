import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Permission, Principal } from '../tenancy/permissions.js';
import { ProblemError, forbidden, unauthorized } from './errors.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Permission the route requires; the auth hook checks it after authentication. */
    permission?: Permission;
    /** Public routes skip authentication (health, identity documents, OpenAPI). */
    public?: boolean;
  }
  interface FastifyRequest {
    principal: Principal;
  }
}

/** Turns a bearer credential into a principal, or null when this verifier does not accept it. */
export type CredentialVerifier = (credential: string) => Promise<Principal | null>;

/**
 * Authenticates every non-public route: `Authorization: Bearer <credential>` is offered to each
 * verifier in turn (API keys now; OAuth access tokens join later), then the route's permission is
 * checked. Missing or bad credentials: 401 with `WWW-Authenticate: Bearer`; missing permission: 403.
 */
export function registerAuth(app: FastifyInstance, verifiers: CredentialVerifier[]) {
  app.decorateRequest('principal', null as unknown as Principal);

  // OpenAPI: every non-public route is documented as needing the bearer credential.
  app.addHook('onRoute', (route) => {
    if (route.config?.public) return;
    route.schema ??= {};
    (route.schema as Record<string, unknown>).security ??= [{ bearerAuth: [] }];
  });

  app.addHook('onRequest', async (request: FastifyRequest) => {
    const config = request.routeOptions.config;
    if (config.public || request.is404) return;
    const header = request.headers.authorization;
    if (!header) throw unauthorized('send Authorization: Bearer <api key or access token>', 'missing_credentials');
    const m = /^Bearer\s+(\S+)\s*$/i.exec(header);
    if (!m) throw unauthorized('the Authorization header must use the Bearer scheme', 'invalid_credentials');
    let principal: Principal | null = null;
    for (const verify of verifiers) {
      principal = await verify(m[1]);
      if (principal) break;
    }
    if (!principal) throw unauthorized('the credential is unknown, revoked or expired', 'invalid_credentials');
    request.principal = principal;
    if (config.permission && !principal.permissions.has(config.permission)) {
      throw forbidden(`this operation needs the ${config.permission} permission`);
    }
  });
}

/** Throws 403 unless the principal holds the permission; for routes whose need depends on input. */
export function requirePermission(principal: Principal, permission: Permission) {
  if (!principal.permissions.has(permission)) {
    throw new ProblemError(403, 'forbidden', `this operation needs the ${permission} permission`);
  }
}
