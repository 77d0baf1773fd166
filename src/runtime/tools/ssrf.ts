import dns from 'node:dns';
import net from 'node:net';
import ipaddr from 'ipaddr.js';
import { Agent, buildConnector, fetch as undiciFetch } from 'undici';

/**
 * The one guard of the requests the platform makes to URLs a tenant chose (today: agents' MCP tool
 * servers; docs/operations.md, "Outbound requests"). It decides on the address actually connected to:
 * an IP literal as the URL parser normalized it, a name through the guarded DNS lookup the connection
 * itself uses, so a name that resolves to a public address when checked and to loopback when
 * connected (DNS rebinding) cannot pass, and neither can a redirect.
 */

/** What an address is for, from ipaddr.js's special-purpose ranges; `unicast` is a public address. */
export function addressRange(address: string): string {
  const parsed = ipaddr.parse(address);
  if (parsed.kind() === 'ipv4') return parsed.range();
  const v6 = parsed as ipaddr.IPv6;
  const carried = embeddedIPv4(v6);
  if (carried.length) {
    // An address that carries an IPv4 address reaches that address: it is what it carries.
    return carried.map((v4) => v4.range()).find((range) => range !== 'unicast') ?? 'unicast';
  }
  const range = v6.range();
  // Global unicast is 2000::/3; anything else ipaddr.js calls unicast (IPv4-compatible ::a.b.c.d,
  // unassigned space) is not a public address.
  return range === 'unicast' && !v6.match(GLOBAL_UNICAST) ? 'reserved' : range;
}

/** Whether an address is public: not loopback, private, link-local, reserved... nor carrying one. */
export function isPublicAddress(address: string): boolean {
  return addressRange(address) === 'unicast';
}

/** The cloud instance metadata endpoint (169.254.169.254, AWS's fd00:ec2::254), however spelled. */
export function isMetadataAddress(address: string): boolean {
  const parsed = ipaddr.parse(address);
  if (parsed.kind() === 'ipv4') return parsed.toString() === '169.254.169.254';
  const v6 = parsed as ipaddr.IPv6;
  return v6.toNormalizedString() === AWS_METADATA_V6 || embeddedIPv4(v6).some((v4) => v4.toString() === '169.254.169.254');
}

const GLOBAL_UNICAST = ipaddr.parseCIDR('2000::/3');
const NAT64_WELL_KNOWN = ipaddr.parseCIDR('64:ff9b::/96');
const AWS_METADATA_V6 = ipaddr.parse('fd00:ec2::254').toNormalizedString();

/** The IPv4 addresses an IPv6 address carries (RFC 4291 mapped, RFC 6145/6052 NAT64, 6to4, Teredo). */
function embeddedIPv4(address: ipaddr.IPv6): ipaddr.IPv4[] {
  const b = address.toByteArray();
  const v4 = (octets: number[]) => new ipaddr.IPv4(octets);
  switch (address.range()) {
    case 'ipv4Mapped':
    case 'rfc6145':
      return [v4(b.slice(12, 16))];
    case 'rfc6052':
      // 64:ff9b::/96 carries it in the last 32 bits; 64:ff9b:1::/48 (RFC 8215) around the reserved octet 8.
      return [address.match(NAT64_WELL_KNOWN) ? v4(b.slice(12, 16)) : v4([b[6], b[7], b[9], b[10]])];
    case '6to4':
      return [v4(b.slice(2, 6))];
    case 'teredo':
      // The Teredo server, and the client's address stored inverted.
      return [v4(b.slice(4, 8)), v4(b.slice(12, 16).map((x) => x ^ 0xff))];
    default:
      return [];
  }
}

const RANGE_WORDS: Record<string, string> = {
  loopback: 'a loopback',
  private: 'a private',
  linkLocal: 'a link-local',
  carrierGradeNat: 'a carrier-grade NAT',
  uniqueLocal: 'a unique-local',
  multicast: 'a multicast',
  unspecified: 'an unspecified',
  broadcast: 'a broadcast',
  reserved: 'a reserved',
};

/** A connection the guard refused; `fetch` fails with it as its cause. */
export class OutboundRefused extends Error {
  readonly code = 'outbound_address_refused';
}

export type LookupFunction = (
  hostname: string,
  options: dns.LookupAllOptions,
  callback: (err: NodeJS.ErrnoException | null, addresses: dns.LookupAddress[]) => void,
) => void;

export interface OutboundGuardOptions {
  /** Hosts or host:port reachable although not public (MCP_ALLOWED_HOSTS), as written in URLs. */
  allowedHosts: string[];
  /** Every address but the cloud metadata endpoint is reachable (MCP_ALLOW_PRIVATE_NETWORKS). */
  allowPrivateNetworks: boolean;
  /** Name resolution (tests); dns.lookup by default. */
  lookup?: LookupFunction;
}

/**
 * Refuses connections to non-public addresses unless allowed: an allow-listed host (or host:port) is
 * connected to as is; an IP literal is checked before connecting; a name is resolved by a lookup that
 * checks every address it answers, and the socket connects only to those checked addresses.
 */
export class OutboundGuard {
  /** An undici dispatcher whose every connection passes the guard. */
  readonly dispatcher: Agent;
  private readonly allowed: Set<string>;
  private readonly allowPrivate: boolean;
  private readonly resolve: LookupFunction;

  constructor(options: OutboundGuardOptions) {
    this.allowed = new Set(options.allowedHosts.map(normalizeAllowEntry));
    this.allowPrivate = options.allowPrivateNetworks;
    const resolve: LookupFunction = options.lookup ?? ((hostname, opts, callback) => dns.lookup(hostname, opts, callback));
    this.resolve = resolve;
    const lookup = (
      hostname: string,
      opts: dns.LookupOptions,
      callback: (err: NodeJS.ErrnoException | null, address?: string | dns.LookupAddress[], family?: number) => void,
    ) => {
      resolve(hostname, { ...opts, all: true }, (err, addresses) => {
        if (err) return callback(err);
        for (const { address } of addresses) {
          const why = this.refusal(address);
          // The address stays out of the message: a tenant is not told what internal names resolve to.
          if (why) return callback(new OutboundRefused(`${hostname} resolves to ${why}`));
        }
        if (!addresses.length) return callback(Object.assign(new Error(`${hostname} has no address`), { code: 'ENOTFOUND' }));
        if (opts.all) callback(null, addresses);
        else callback(null, addresses[0].address, addresses[0].family);
      });
    };
    const open = buildConnector({});
    const guarded = buildConnector({ lookup } as buildConnector.BuildOptions);
    this.dispatcher = new Agent({
      connect: (opts, callback) => {
        const host = normalizeHost(opts.hostname);
        if (this.names(host, opts.port, opts.protocol)) return open(opts, callback);
        if (net.isIP(host)) {
          // Literals never reach a lookup: they are checked here.
          const why = this.refusal(host);
          if (why) return callback(new OutboundRefused(`${opts.hostname.replace(/^\[|\]$/g, '')} is ${why}`), null);
          return open(opts, callback);
        }
        return guarded(opts, callback);
      },
    });
  }

  /** fetch() through the guarded dispatcher (the MCP client transports take it as their `fetch`). */
  readonly fetch = (input: string | URL, init?: RequestInit): Promise<Response> =>
    undiciFetch(input, { ...(init as object), dispatcher: this.dispatcher }) as unknown as Promise<Response>;

  /**
   * Whether the operator named this URL's host (or host:port) in the allow-list, or allowed private
   * networks: what lets a credential go over plain http (A2A remote agents, docs/clients.md).
   */
  listsExplicitly(url: URL): boolean {
    return this.allowPrivate || this.names(normalizeHost(url.hostname), url.port, url.protocol);
  }

  /** Whether the allow-list names this (normalised) host, or it with its port (the protocol's when none is given). */
  private names(host: string, port: string | number | undefined, protocol: string): boolean {
    return this.allowed.has(host) || this.allowed.has(`${host}:${port || (protocol === 'https:' ? '443' : '80')}`);
  }

  /**
   * Why a connection to this URL would be refused now, or null: an IP literal is checked as is, a name by
   * the addresses it resolves to (within `timeoutMs`). A name that does not resolve is not refused here:
   * the call will fail and say so. What saving an agent checks (a refused URL is a 400 then, not a run
   * without the tools).
   */
  async refusalOfUrl(url: URL, timeoutMs = 2000): Promise<string | null> {
    const host = normalizeHost(url.hostname);
    if (this.names(host, url.port, url.protocol)) return null;
    if (net.isIP(host)) {
      const why = this.refusal(host);
      return why && `${host} is ${why}`;
    }
    const addresses = await new Promise<dns.LookupAddress[]>((resolve) => {
      const timer = setTimeout(() => resolve([]), timeoutMs);
      this.resolve(host, { all: true }, (err, found) => {
        clearTimeout(timer);
        resolve(err ? [] : found);
      });
    });
    for (const { address } of addresses) {
      const why = this.refusal(address);
      // As for a connection: the address stays out of the message.
      if (why) return `${host} resolves to ${why}`;
    }
    return null;
  }

  /** Why the address may not be connected to (`a loopback address...`), or null when it may. */
  refusal(address: string): string | null {
    if (!ipaddr.isValid(address)) return 'not an IP address';
    if (isMetadataAddress(address)) return 'the cloud metadata address; only MCP_ALLOWED_HOSTS can allow it';
    const range = addressRange(address);
    if (range === 'unicast' || this.allowPrivate) return null;
    return `${RANGE_WORDS[range] ?? `a special-purpose (${range})`} address, not a public one; add the host:port to MCP_ALLOWED_HOSTS to allow it`;
  }

  close(): Promise<void> {
    return this.dispatcher.close();
  }
}

/** A host as compared with the allow list: IP addresses in one spelling (mapped IPv4 as IPv4), names lower case. */
function normalizeHost(host: string): string {
  const bare = host.replace(/^\[|\]$/g, '');
  return ipaddr.isValid(bare) && net.isIP(bare) ? ipaddr.process(bare).toString() : bare.toLowerCase().replace(/\.$/, '');
}

/** An allow-list entry: `host`, `host:port`, `[v6]`, `[v6]:port` or a bare IPv6 address. */
function normalizeAllowEntry(entry: string): string {
  const bracketed = /^\[([^\]]+)\](?::(\d+))?$/.exec(entry);
  if (bracketed) return bracketed[2] ? `${normalizeHost(bracketed[1])}:${bracketed[2]}` : normalizeHost(bracketed[1]);
  if (net.isIPv6(entry)) return normalizeHost(entry);
  const [host, port] = entry.split(':');
  return port ? `${normalizeHost(host)}:${port}` : normalizeHost(host);
}
