import { lookup } from 'node:dns/promises';
import net from 'node:net';

/**
 * Guard for URLs that agents' configuration makes the server call (MCP servers). Loopback, private,
 * link-local, CGNAT, multicast and unspecified addresses are refused unless the host (or host:port) is
 * in the allow list; the name is resolved and every address checked. A DNS answer that changes between
 * this check and the connection (rebinding) is not caught; an allow list is the stricter setting.
 */
export class UrlGuard {
  private readonly allowed: Set<string>;

  constructor(allowList: string[], private readonly allowPrivate: boolean) {
    this.allowed = new Set(allowList.map((h) => h.toLowerCase()));
  }

  /** Throws with a reason when the URL may not be called. */
  async check(raw: string): Promise<void> {
    const url = new URL(raw);
    if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new Error(`${url.protocol} URLs are not allowed`);
    const host = url.hostname.replace(/^\[|\]$/g, '').toLowerCase();
    const port = url.port || (url.protocol === 'https:' ? '443' : '80');
    if (this.allowed.has(host) || this.allowed.has(`${host}:${port}`)) return;
    if (this.allowPrivate) return;
    const addresses = net.isIP(host) ? [host] : (await lookup(host, { all: true })).map((a) => a.address);
    const blocked = addresses.find(isNonPublic);
    if (blocked) {
      throw new Error(`${host} resolves to a non-public address (${blocked}); add it to MCP_ALLOWED_HOSTS to allow it`);
    }
  }
}

const V4_BLOCKS: [string, number][] = [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
];

const v4ToInt = (ip: string) => ip.split('.').reduce((n, part) => (n << 8) + Number(part), 0) >>> 0;

export function isNonPublic(address: string): boolean {
  if (net.isIPv4(address)) {
    const n = v4ToInt(address);
    return V4_BLOCKS.some(([base, bits]) => (n >>> (32 - bits)) === (v4ToInt(base) >>> (32 - bits)));
  }
  const a = address.toLowerCase();
  if (a === '::' || a === '::1') return true;
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/.exec(a);
  if (mapped) return isNonPublic(mapped[1]);
  // fc00::/7 unique local, fe80::/10 link-local, ff00::/8 multicast
  return /^f[cd]/.test(a) || /^fe[89ab]/.test(a) || a.startsWith('ff');
}
