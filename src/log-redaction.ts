/**
 * Credentials never reach the logs, by rule rather than by call site: every line the process logger
 * writes (the app's, every request's child, every plugin's: the multipart plugin logs the request's
 * headers at trace) passes through `redactLogLine` before it is written (pino's `streamWrite` hook),
 * so a new log call, serializer or plugin cannot bring a credential back. Two rules:
 *
 * - a member whose name says it holds a credential (`authorization`, `cookie`, `client_secret`,
 *   `client_assertion`, `subject_token`, `password`, `privateJwk`, `x-api-key`...: see SENSITIVE_NAME)
 *   has its value replaced, whatever it is nested in; so do the private members of a JWK (`d`...);
 * - text that looks like a credential is replaced wherever it appears, in any string, `msg` included:
 *   API keys (`agk_...`), webhook secrets (`whsec_...`), `Bearer`/`Basic` credentials, JWTs (access
 *   tokens, SVIDs, assertions), PEM private keys, and query parameters with a credential's name.
 *
 * A line is parsed only when a cheap test finds something that could match; lines with nothing to
 * redact are written unchanged.
 */

const REDACTED = '[redacted]';

/** Member names (lower case, letters and digits only) that hold credentials: by suffix, so `x-api-key`, `webhookSecret`, `refresh_token` match. */
const SENSITIVE_NAME =
  /(authorization|cookie|passw(or)?d|passphrase|secret|token|apikey|privatekey|privatejwk|assertion|masterkey|credentials?|svid)$/;
/** The private members of a JWK (RFC 7518 6.2.2, 6.3.2, 6.4.1): redacted in any object with a `kty`. */
const JWK_PRIVATE_MEMBERS = new Set(['d', 'p', 'q', 'dp', 'dq', 'qi', 'oth', 'k']);

const TEXT_RULES: [RegExp, string | ((match: string, ...groups: string[]) => string)][] = [
  [/\b(agk|whsec)_[A-Za-z0-9_-]+/g, `$1_${REDACTED}`],
  [/\b(Bearer|Basic|Digest)(\s+)[A-Za-z0-9._~+/=-]{8,}/gi, `$1$2${REDACTED}`],
  [/\beyJ[A-Za-z0-9_-]*\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*/g, REDACTED],
  [/-----BEGIN ([A-Z0-9 ]*)PRIVATE KEY-----[\s\S]*?(-----END [A-Z0-9 ]*PRIVATE KEY-----|$)/g, REDACTED],
  [/([?&;]([^=&#;\s"]+)=)([^&#;\s"]*)/g, (match, prefix: string, name: string) => (isSensitiveName(name) ? `${prefix}${REDACTED}` : match)],
];

/** What could match a rule, tested on the raw line first (most lines have none of it). */
const MAY_HOLD_CREDENTIAL =
  /authori[sz]ation|cookie|passw|passphrase|secret|token|api.?key|private|assertion|master.?key|credential|svid|agk_|whsec_|bearer|basic|digest|eyJ|"(?:d|p|q|dp|dq|qi|oth|k)":/i;

function isSensitiveName(name: string): boolean {
  return SENSITIVE_NAME.test(name.toLowerCase().replace(/[^a-z0-9]/g, ''));
}

/** The text with every credential-looking part replaced. */
function redactText(text: string): string {
  let out = text;
  for (const [pattern, replacement] of TEXT_RULES) out = out.replace(pattern, replacement as string);
  return out;
}

/** Redacts in place; answers whether anything changed. */
function redactValue(holder: Record<string, unknown> | unknown[], key: string | number, jwk: boolean): boolean {
  const value = (holder as Record<string | number, unknown>)[key];
  if (value === null || value === undefined || typeof value === 'number' || typeof value === 'boolean') return false;
  if (typeof key === 'string' && (isSensitiveName(key) || (jwk && JWK_PRIVATE_MEMBERS.has(key)))) {
    if (value === REDACTED) return false;
    (holder as Record<string | number, unknown>)[key] = REDACTED;
    return true;
  }
  if (typeof value === 'string') {
    const redacted = redactText(value);
    if (redacted === value) return false;
    (holder as Record<string | number, unknown>)[key] = redacted;
    return true;
  }
  return redactObject(value as Record<string, unknown> | unknown[]);
}

function redactObject(obj: Record<string, unknown> | unknown[]): boolean {
  let changed = false;
  if (Array.isArray(obj)) {
    for (let i = 0; i < obj.length; i++) changed = redactValue(obj, i, false) || changed;
    return changed;
  }
  const jwk = typeof obj.kty === 'string';
  for (const key of Object.keys(obj)) changed = redactValue(obj, key, jwk) || changed;
  return changed;
}

/** One log line (pino's JSON and its newline) with its credentials replaced. */
export function redactLogLine(line: string): string {
  if (!MAY_HOLD_CREDENTIAL.test(line)) return line;
  let parsed: unknown;
  try {
    parsed = JSON.parse(line);
  } catch {
    return redactText(line);
  }
  if (parsed === null || typeof parsed !== 'object') return redactText(line);
  if (!redactObject(parsed as Record<string, unknown>)) return line;
  return `${JSON.stringify(parsed)}\n`;
}
