import { type Agentry, AgentryError } from '@agentry/client';

/** A JWT's payload, decoded for reading (not verified: the server verified it when it issued it). */
export function decodeJwtPayload(jwt: string): Record<string, unknown> | null {
  const part = jwt.split('.')[1];
  if (!part) return null;
  try {
    const base64 = part
      .replace(/-/g, '+')
      .replace(/_/g, '/')
      .padEnd(Math.ceil(part.length / 4) * 4, '=');
    const bytes = Uint8Array.from(atob(base64), (c) => c.charCodeAt(0));
    return JSON.parse(new TextDecoder().decode(bytes));
  } catch {
    return null;
  }
}

type Authorization = Awaited<ReturnType<Agentry['identity']['authorize']>>;

/** authorize's answer, or the exchange's refusal in its place. */
export type Decision = Omit<Authorization, 'reason'> & {
  reason: Authorization['reason'] | `exchange refused: ${string}`;
  /** When the page had the answer: the moment the policies' conditions are read at. */
  at: number;
};

/**
 * "Would this be allowed?": the real chain a delegating agent goes through: an SVID for the caller
 * (addressed to the issuer, read from its badge), exchanged for a delegation token to the callee with
 * scope tools:<tool>, then ExtAuthZ (authorize) asked about that token, tool and callee.
 */
export async function testDecision(client: Agentry, callerId: string, calleeId: string, tool: string): Promise<Decision> {
  const metadata = await client.identity.clientMetadata(callerId);
  const issuer = String(decodeJwtPayload(metadata.badge)?.iss ?? '');
  const { svid } = await client.identity.svid(callerId, { audience: issuer, ttlSeconds: 60 });
  let token: string;
  try {
    const exchanged = await client.identity.token({
      grant_type: 'urn:ietf:params:oauth:grant-type:token-exchange',
      subject_token: svid,
      subject_token_type: 'urn:ietf:params:oauth:token-type:jwt',
      audience: calleeId,
      scope: `tools:${tool}`,
    });
    token = exchanged.access_token;
  } catch (err) {
    // A deny policy already stops the exchange: no token carries a tool the policies refuse.
    if (err instanceof AgentryError && err.status === 400)
      return { allowed: false, reason: `exchange refused: ${err.code}`, detail: err.detail, at: Date.now() };
    throw err;
  }
  return { ...(await client.identity.authorize({ token, tool, callee: calleeId })), at: Date.now() };
}
