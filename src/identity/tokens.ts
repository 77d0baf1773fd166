import { SignJWT, decodeProtectedHeader, errors, jwtVerify, type JWTPayload, type ProtectedHeaderParameters } from 'jose';
import { newId } from '../ids.js';
import type { Clock } from '../clock.js';
import type { PlatformKeyring } from './platform-keys.js';

/** Token types, told apart by the `typ` header (spec 2.9). */
export const TYP = { svid: 'JWT', badge: 'vc+jwt', accessToken: 'at+jwt' } as const;

/** Why a token did not verify; the text is safe to show (printable ASCII, no quotes or backslashes). */
export class TokenError extends Error {
  constructor(
    readonly reason: string,
    /** The claims, when the signature was verified but a claim check failed (expired, aud, ...). */
    readonly verifiedPayload?: JWTPayload & Record<string, unknown>,
  ) {
    super(reason);
  }
}

const JWT_SHAPE = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/;
export const looksLikeJwt = (value: string) => value.length < 16_384 && JWT_SHAPE.test(value);

/** The `typ` header normalised as RFC 7515 says: lowercase, with an `application/` prefix removed. */
export function normalisedTyp(header: ProtectedHeaderParameters): string | undefined {
  if (typeof header.typ !== 'string') return undefined;
  const typ = header.typ.toLowerCase();
  return typ.startsWith('application/') ? typ.slice('application/'.length) : typ;
}

export function peekHeader(token: string): ProtectedHeaderParameters | null {
  if (!looksLikeJwt(token)) return null;
  try {
    return decodeProtectedHeader(token);
  } catch {
    return null;
  }
}

export interface SignInput {
  /** The typ header; left out when undefined. */
  typ?: string;
  cty?: string;
  payload: JWTPayload & Record<string, unknown>;
  sub: string;
  aud?: string | string[];
  lifetimeS: number;
  jti?: string;
  /** Issued-at (seconds); now when not given. */
  iat?: number;
}

export interface Signed {
  token: string;
  jti: string;
  kid: string;
  iat: number;
  exp: number;
}

/**
 * Signs and verifies everything the platform issues: ES256, `kid` of a platform key, `iss` = the
 * configured issuer. Verification keys come from the keyring's in-memory cache.
 */
export class PlatformTokens {
  constructor(
    private readonly keyring: PlatformKeyring,
    readonly issuer: string,
    private readonly clock: Clock,
  ) {}

  async sign(input: SignInput): Promise<Signed> {
    const { kid, key } = await this.keyring.signingKey();
    const iat = input.iat ?? Math.floor(this.clock.now() / 1000);
    const exp = iat + input.lifetimeS;
    const jti = input.jti ?? newId();
    const jwt = new SignJWT(input.payload)
      .setProtectedHeader({ alg: 'ES256', kid, ...(input.typ ? { typ: input.typ } : {}), ...(input.cty ? { cty: input.cty } : {}) })
      .setIssuer(this.issuer)
      .setSubject(input.sub)
      .setIssuedAt(iat)
      .setExpirationTime(exp)
      .setJti(jti);
    if (input.aud !== undefined) jwt.setAudience(input.aud);
    return { token: await jwt.sign(key), jti, kid, iat, exp };
  }

  /**
   * Verifies signature (ES256 only, a published platform key), `typ` (one of `typs`; `null` in the
   * list allows an absent typ), `iss`, `exp` (required) and, when given, that `aud` contains one of
   * `audience`. Throws TokenError with the reason.
   */
  async verify(
    token: string,
    typs: (string | null)[],
    audience?: string[],
  ): Promise<{ payload: JWTPayload & Record<string, unknown>; header: ProtectedHeaderParameters }> {
    const header = peekHeader(token);
    if (!header) throw new TokenError('the token is not a compact JWS');
    if (header.alg !== 'ES256') throw new TokenError(`alg ${String(header.alg).slice(0, 20)} is not accepted; tokens are ES256`);
    const typ = normalisedTyp(header);
    if (!typs.includes(typ ?? null)) throw new TokenError(`typ ${typ ?? '(absent)'} is not accepted here`);
    if (typeof header.kid !== 'string') throw new TokenError('the token has no kid');
    const key = await this.keyring.verificationKey(header.kid);
    if (!key) throw new TokenError('the token is not signed by a published platform key');
    try {
      const { payload } = await jwtVerify(token, key, {
        algorithms: ['ES256'],
        issuer: this.issuer,
        audience,
        currentDate: new Date(this.clock.now()),
        requiredClaims: ['exp', 'sub'],
      });
      return { payload: payload as JWTPayload & Record<string, unknown>, header };
    } catch (err) {
      // jose checks claims only after the signature: their payload is authentic.
      const verified = err instanceof errors.JWTClaimValidationFailed || err instanceof errors.JWTExpired ? err.payload : undefined;
      throw new TokenError(describeJoseError(err), verified as (JWTPayload & Record<string, unknown>) | undefined);
    }
  }
}

function describeJoseError(err: unknown): string {
  if (err instanceof errors.JWTExpired) return 'the token has expired';
  if (err instanceof errors.JWSSignatureVerificationFailed) return 'the token signature is invalid';
  if (err instanceof errors.JWTClaimValidationFailed) {
    switch (err.claim) {
      case 'iss':
        return 'the token was issued by someone else (iss)';
      case 'aud':
        return 'the token is not meant for this audience (aud)';
      case 'nbf':
      case 'iat':
        return 'the token is not valid yet';
      default:
        return `the token claim ${err.claim} is invalid`;
    }
  }
  if (err instanceof errors.JWTInvalid || err instanceof errors.JWSInvalid) return 'the token is malformed';
  return 'the token could not be verified';
}
