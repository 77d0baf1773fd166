// EXPERIMENT, not a fix, and not loaded by the server: it measures what caching API-key
// authentication would gain, without changing server code. Every authenticated request runs
// TenancyService.authenticateApiKey (src/tenancy/service.ts): one SELECT on api_keys, SHA-256 and
// JSON.parse of the permissions. This keeps the resulting principal for 10 s per presented key.
//
//   npm run bench -- --server-node-arg=--import=./bench/experiments/api-key-cache.mjs
//
// A real cache would key by the key id and still compare the secret's hash, and would need a
// revocation story across replicas (short TTL, or LISTEN/NOTIFY on PostgreSQL).
import { TenancyService } from '../../dist/tenancy/service.js';

const TTL_MS = 10_000;
const authenticate = TenancyService.prototype.authenticateApiKey;
const cache = new Map();
TenancyService.prototype.authenticateApiKey = async function cachedAuthenticate(presented) {
  const hit = cache.get(presented);
  if (hit && hit.until > Date.now()) return hit.principal;
  const principal = await authenticate.call(this, presented);
  if (principal) cache.set(presented, { principal, until: Date.now() + TTL_MS });
  return principal;
};
