import type { FastifyInstance, FastifyReply, FastifyRequest, HookHandlerDoneFunction, onRequestHookHandler } from 'fastify';
import { isPromise, type MaybePromise } from '../maybe-promise.js';
import type { Permission, Principal } from './principal.js';
import { forbidden, notFound, unauthorized } from './errors.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Permission the route requires; the auth hook checks it after authentication. */
    permission?: Permission;
    /** Public routes skip authentication (health, identity documents, OpenAPI). */
    public?: boolean;
    /**
     * What an agent's own access token (a principal bound to an agent) may do here: `{ param }`, the
     * route's agent is that path parameter and must be the token's agent (else 404); `'own'`, the
     * route's service scopes what it reads or changes to the token's agent. Absent: 403.
     */
    agentScope?: AgentScope;
  }
  interface FastifyRequest {
    principal: Principal;
  }
}

/**
 * Turns a bearer credential into a principal, or null when this verifier does not accept it.
 * Verifiers answer synchronously when they can (a credential verified a moment ago): most requests
 * then pass authentication without a promise or a trip through the microtask queue.
 */
export type CredentialVerifier = (credential: string) => MaybePromise<Principal | null>;

/** Runs after authentication and the permission check, e.g. the per-key request limit. */
export type Admission = (request: FastifyRequest, reply: FastifyReply) => MaybePromise<void>;

type AgentScope = { param: string } | 'own';

/**
 * An agent's own access token reaches only that agent: routes that declare it (agentScope), for the
 * agent's own resources. One check for every route, after authentication.
 */
function checkAgentReach(request: FastifyRequest, agentId: string, scope: AgentScope | undefined) {
  if (scope === undefined) {
    throw forbidden(
      "an agent's own access token reaches only that agent (itself, its runs and conversations, its skills, its MCP endpoint and SVIDs); use an API key for this operation",
    );
  }
  if (scope !== 'own' && (request.params as Record<string, string | undefined>)[scope.param] !== agentId) throw notFound('agent');
}

const BEARER = /^Bearer\s+(\S+)\s*$/i;

/** The credential of an `Authorization: Bearer <credential>` header, or undefined. */
export const bearerToken = (header: string | undefined): string | undefined => (header ? BEARER.exec(header)?.[1] : undefined);

/** The first verifier's principal, or null; synchronous until a verifier needs to wait. */
function verifyCredential(verifiers: CredentialVerifier[], credential: string, from = 0): MaybePromise<Principal | null> {
  for (let i = from; i < verifiers.length; i++) {
    const verified = verifiers[i](credential);
    if (isPromise(verified)) return verified.then((principal) => principal ?? verifyCredential(verifiers, credential, i + 1));
    if (verified) return verified;
  }
  return null;
}

/**
 * Authenticates every non-public route: `Authorization: Bearer <credential>` is offered to each
 * verifier in turn (API keys, then OAuth access tokens), then the route's permission is checked,
 * then `admit` runs. Missing or bad credentials: 401 with `WWW-Authenticate: Bearer`; missing
 * permission: 403.
 *
 * The check is attached to each non-public route when it is declared (a route-level onRequest
 * hook) rather than run for every request: whether a route is public and what it needs are known
 * then, so a request pays for neither a lookup of its route options nor a hook that does nothing.
 * Routes not found never reach it (they answer 404 to anyone, as before). Register this before any
 * route, and after any onRoute hook that marks routes public.
 */
export function registerAuth(app: FastifyInstance, verifiers: CredentialVerifier[], admit?: Admission) {
  app.decorateRequest('principal', null as unknown as Principal);

  app.addHook('onRoute', (route) => {
    if (route.config?.public) return;
    // OpenAPI: every non-public route is documented as needing the bearer credential.
    route.schema ??= {};
    (route.schema as Record<string, unknown>).security ??= [{ bearerAuth: [] }];
    const authenticate = authenticator(verifiers, route.config?.permission, admit, route.config?.agentScope);
    const own = route.onRequest ? [route.onRequest].flat() : [];
    route.onRequest = [authenticate, ...own];
  });
}

function authenticator(
  verifiers: CredentialVerifier[],
  permission: Permission | undefined,
  admit: Admission | undefined,
  agentScope: AgentScope | undefined,
): onRequestHookHandler {
  /** After verification: the principal, its permission, then admission; `done` exactly once. */
  const accept = (request: FastifyRequest, reply: FastifyReply, principal: Principal | null, done: HookHandlerDoneFunction) => {
    let admitted: MaybePromise<void>;
    try {
      if (!principal) throw unauthorized('the credential is unknown, revoked or expired', 'invalid_credentials');
      request.principal = principal;
      if (permission && !principal.permissions.has(permission)) throw forbidden(`this operation needs the ${permission} permission`);
      if (principal.agentId !== undefined) checkAgentReach(request, principal.agentId, agentScope);
      admitted = admit?.(request, reply);
    } catch (err) {
      return done(err as Error);
    }
    if (isPromise(admitted)) admitted.then(() => done(), done);
    else done();
  };

  return function authenticate(request, reply, done) {
    let verified: MaybePromise<Principal | null>;
    try {
      const header = request.headers.authorization;
      if (!header) throw unauthorized('send Authorization: Bearer <api key or access token>', 'missing_credentials');
      const credential = bearerToken(header);
      if (!credential) throw unauthorized('the Authorization header must use the Bearer scheme', 'invalid_credentials');
      verified = verifyCredential(verifiers, credential);
    } catch (err) {
      return done(err as Error);
    }
    if (isPromise(verified)) verified.then((principal) => accept(request, reply, principal, done), done);
    else accept(request, reply, verified, done);
  };
}
