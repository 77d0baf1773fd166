import { calculateJwkThumbprint, exportJWK, generateKeyPair, type JWK } from 'jose';

/** What both keyrings share: key lifetimes, and the generation of ES256 key pairs. */

export const iso = (ms: number) => new Date(ms).toISOString();

/** Longest lifetime of anything the platform signs (SVIDs and badges: 24 h). */
export const MAX_TOKEN_LIFETIME_S = 86_400;
/** Allowance for clock skew between the platform and verifiers. */
export const SKEW_S = 300;
/** A new platform key is published this long before it signs: the platform JWKS may be cached for 1 h. */
export const DEFAULT_PLATFORM_ACTIVATION_DELAY_S = 3600;
/** A rotated agent key stays published (and accepted for client authentication) this long. */
export const AGENT_KEY_GRACE_S = 86_400;
/** How long a process trusts its in-memory copy of the platform keys before reading them again. */
export const PLATFORM_KEY_CACHE_MS = 5_000;

export interface PublicJwk {
  kty: string;
  crv: string;
  x: string;
  y: string;
}

export interface GeneratedKey {
  kid: string;
  publicJwk: PublicJwk;
  privateJwk: JWK;
}

/** A fresh ES256 (EC P-256) key pair; the kid is the RFC 7638 thumbprint of the public key. */
export async function generateEs256Key(): Promise<GeneratedKey> {
  const { publicKey, privateKey } = await generateKeyPair('ES256', { extractable: true });
  const pub = await exportJWK(publicKey);
  const publicJwk = { kty: pub.kty!, crv: pub.crv!, x: pub.x!, y: pub.y! };
  const kid = await calculateJwkThumbprint(publicJwk, 'sha256');
  return { kid, publicJwk, privateJwk: await exportJWK(privateKey) };
}

/** The highest generation among key rows (0: none), for numbering the next. */
export const maxGeneration = (rows: { generation: number }[]) => rows.reduce((m, r) => Math.max(m, r.generation), 0);
