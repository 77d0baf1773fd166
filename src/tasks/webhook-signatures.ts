import crypto from 'node:crypto';

/**
 * Webhook secrets and signatures (docs/scheduling.md, "Webhook triggers"). The secret is kept sealed
 * (identity/secret-box.ts, purpose `webhook-secrets`, the task id authenticated with it), since the
 * platform must read it back to check signatures.
 */

export const SIGNATURE_HEADER = 'x-agentry-signature';
export const TIMESTAMP_HEADER = 'x-agentry-timestamp';
/** A signed delivery is accepted this long around its timestamp; the same delivery only once. */
const SIGNATURE_TOLERANCE_MS = 5 * 60_000;

export const newWebhookSecret = () => `whsec_${crypto.randomBytes(32).toString('base64url')}`;

/** HMAC-SHA256 over `<timestamp>.<raw body>`, hex: what a sender puts after `sha256=`. */
export function signature(secret: string, timestamp: string, rawBody: Buffer | string): string {
  return crypto.createHmac('sha256', secret).update(`${timestamp}.`).update(rawBody).digest('hex');
}

export type SignatureCheck = 'ok' | 'missing_signature' | 'invalid_signature' | 'signature_expired';

/** What a delivery brings to be checked: its timestamp and signature headers (undefined: not sent) and its raw body. */
export interface SignedDelivery {
  timestamp: string | undefined;
  signatureHeader: string | undefined;
  rawBody: Buffer;
}

/** Checks a delivery's signature headers against the secret, in constant time. */
export function checkSignature(
  secret: string,
  { timestamp, signatureHeader: header, rawBody }: SignedDelivery,
  nowMs: number,
): SignatureCheck {
  if (!timestamp || !header) return 'missing_signature';
  if (!/^\d{1,12}$/.test(timestamp)) return 'invalid_signature';
  if (Math.abs(nowMs - Number(timestamp) * 1000) > SIGNATURE_TOLERANCE_MS) return 'signature_expired';
  const m = /^sha256=([0-9a-f]{64})$/i.exec(header.trim());
  if (!m) return 'invalid_signature';
  const given = Buffer.from(m[1], 'hex');
  const expected = Buffer.from(signature(secret, timestamp, rawBody), 'hex');
  return crypto.timingSafeEqual(given, expected) ? 'ok' : 'invalid_signature';
}
