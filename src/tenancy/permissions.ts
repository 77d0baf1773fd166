/**
 * Permissions, actors and the principal are defined where requests are authenticated (http/principal.ts),
 * so http/ needs nothing of tenancy/; the domains keep importing them from here.
 */
export { PERMISSIONS, isPermission, type Actor, type Permission, type Principal } from '../http/principal.js';
