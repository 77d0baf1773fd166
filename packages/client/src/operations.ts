import type { paths } from './generated/openapi.js';

type Verb = 'get' | 'put' | 'post' | 'delete' | 'patch';
/** An operation of the API as `'VERB /path'` (the path as the OpenAPI document spells it). */
export type Operation = {
  [P in keyof paths]: { [M in Verb]: paths[P][M] extends NonNullable<unknown> ? `${Uppercase<M>} ${P}` : never }[Verb];
}[keyof paths];

/** Operations that start work: sent with an Idempotency-Key, so a retry answers what the first attempt started. */
export const startOperations: ReadonlySet<string> = new Set<Operation>([
  'POST /api/v1/agents/{id}/execute',
  'POST /api/v1/agents/{id}/chat',
  'POST /api/v1/agents/{id}/stream',
  'POST /api/v1/conversations/{id}/messages',
  'POST /api/v1/tasks',
]);

/** Public operations (no credential): the client sends none, as a relying party or a webhook sender would not have one. */
export const anonymousOperations: ReadonlySet<string> = new Set<Operation>([
  'GET /healthz',
  'GET /readyz',
  'POST /api/v1/hooks/{taskId}',
  'GET /api/v1/identity/agents/{agentId}/client-metadata.json',
  'GET /api/v1/identity/agents/{agentId}/jwks.json',
  'GET /api/v1/identity/.well-known/jwks.json',
  'GET /.well-known/spiffe/trust-bundle',
  'POST /api/v1/identity/authorize',
  'POST /api/v1/identity/oauth/token',
]);
