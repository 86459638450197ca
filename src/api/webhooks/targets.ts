import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { BlockList, isIP, type AddressInfo, type LookupFunction } from 'node:net';
import { networkInterfaces } from 'node:os';

// Which webhook endpoints the server may POST to (docs/webhooks.md, "Where webhooks may go").
// Two rules, checked on the literal address when the URL names one, and on every address a
// host name resolves to at delivery time (the connection then goes to the address checked,
// so a name that re-resolves between check and connect, DNS rebinding, cannot slip through):
// - never this server's own listening address (its port on a loopback address, on the
//   unspecified address or on any address of this machine's interfaces): a platform must not
//   reach /admin or its own API through its webhook;
// - private-network addresses (loopback, RFC 1918, link-local, CGNAT, unique-local IPv6, …)
//   only when PAYMENTS_WEBHOOK_ALLOW_PRIVATE allows them (default: when HOST is loopback).

const PRIVATE = new BlockList();
for (const [net, prefix] of [
  ['0.0.0.0', 8], // "this network"
  ['10.0.0.0', 8], // RFC 1918
  ['100.64.0.0', 10], // carrier-grade NAT (RFC 6598)
  ['127.0.0.0', 8], // loopback
  ['169.254.0.0', 16], // link-local (cloud metadata services live here)
  ['172.16.0.0', 12], // RFC 1918
  ['192.0.0.0', 24], // IETF protocol assignments
  ['192.168.0.0', 16], // RFC 1918
  ['198.18.0.0', 15], // benchmarking
  ['224.0.0.0', 4], // multicast
  ['240.0.0.0', 4], // reserved, broadcast
] as const) {
  PRIVATE.addSubnet(net, prefix, 'ipv4');
}
for (const [net, prefix] of [
  ['::', 128], // unspecified
  ['::1', 128], // loopback
  ['fc00::', 7], // unique-local
  ['fe80::', 10], // link-local
  ['fec0::', 10], // site-local (deprecated)
  ['ff00::', 8], // multicast
  ['64:ff9b:1::', 48], // local-use NAT64
] as const) {
  PRIVATE.addSubnet(net, prefix, 'ipv6');
}
const LOOPBACK = new BlockList();
LOOPBACK.addSubnet('127.0.0.0', 8, 'ipv4');
LOOPBACK.addAddress('::1', 'ipv6');

/** An address as compared: IPv4-mapped IPv6 (`::ffff:127.0.0.1`) as its IPv4 address, no brackets, lower case. */
export function normalizeAddress(address: string): string {
  const a = address.replace(/^\[|\]$/g, '').toLowerCase();
  const mapped = /^::ffff:(\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3})$/.exec(a);
  if (mapped) return mapped[1]!;
  // ::ffff:7f00:1 written in hex.
  const hex = /^::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/.exec(a);
  if (hex) {
    const hi = parseInt(hex[1]!, 16);
    const lo = parseInt(hex[2]!, 16);
    return `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`;
  }
  return a;
}

function familyOf(address: string): 'ipv4' | 'ipv6' {
  return isIP(address) === 6 ? 'ipv6' : 'ipv4';
}

export function isPrivateAddress(address: string): boolean {
  const a = normalizeAddress(address);
  return isIP(a) !== 0 && PRIVATE.check(a, familyOf(a));
}

function isLoopback(address: string): boolean {
  const a = normalizeAddress(address);
  return isIP(a) !== 0 && LOOPBACK.check(a, familyOf(a));
}

/** Host names that always mean this machine (RFC 6761: `localhost` and `*.localhost`). */
export function isLocalhostName(hostname: string): boolean {
  const h = hostname.toLowerCase().replace(/\.$/, '');
  return h === 'localhost' || h.endsWith('.localhost');
}

/** The port a URL goes to (its default when it names none). */
export function portOf(url: URL): number {
  return url.port ? Number(url.port) : url.protocol === 'https:' ? 443 : 80;
}

/** A refused target: the delivery's error, or a 400's message. */
export class TargetRefused extends Error {
  readonly code = 'EWEBHOOKTARGET';
}

/** How host names are resolved (node:dns `lookup` with `all: true`); tests may give their own. */
export type Resolver = (hostname: string, callback: (err: NodeJS.ErrnoException | null, addresses: LookupAddress[]) => void) => void;

const systemResolver: Resolver = (hostname, callback) => dnsLookup(hostname, { all: true }, callback);

/** How long a check before delivery waits for a name to resolve; past it the name is not refused (delivery checks again). */
export const RESOLVE_CHECK_TIMEOUT_MS = 2_000;

export class WebhookTargets {
  #listening: { address: string; port: number } | undefined;
  readonly #resolve: Resolver;

  constructor(readonly allowPrivate: boolean, resolve?: Resolver) {
    this.#resolve = resolve ?? systemResolver;
  }

  /** The server's listening address, once it listens (null/undefined: not listening). */
  setListening(addr: AddressInfo | string | null | undefined): void {
    this.#listening = addr && typeof addr !== 'string' ? { address: normalizeAddress(addr.address), port: addr.port } : undefined;
  }

  /** Whether address:port is this server itself. */
  isSelf(address: string, port: number): boolean {
    const l = this.#listening;
    if (!l || port !== l.port) return false;
    const a = normalizeAddress(address);
    if (a === l.address || isLoopback(a) || a === '0.0.0.0' || a === '::') return true;
    // Any address of this machine reaches a server listening on the unspecified address (and
    // one listening on a given interface's address, which is among them).
    for (const list of Object.values(networkInterfaces())) {
      for (const i of list ?? []) if (normalizeAddress(i.address) === a) return true;
    }
    return false;
  }

  /** Why address:port is refused, or undefined when it is allowed. */
  refusal(address: string, port: number): string | undefined {
    if (this.isSelf(address, port)) return "it is this server's own listening address";
    if (!this.allowPrivate && isPrivateAddress(address)) return 'it is a private-network address (PAYMENTS_WEBHOOK_ALLOW_PRIVATE is off)';
    return undefined;
  }

  /**
   * Why a URL is refused without resolving names, or undefined: a literal address is checked,
   * `localhost` names as the loopback addresses; other names are checked when delivering.
   */
  refusalOfUrl(text: string): string | undefined {
    let url: URL;
    try {
      url = new URL(text);
    } catch {
      return undefined; // the schema's format check reports it
    }
    const host = url.hostname.replace(/^\[|\]$/g, '');
    const port = portOf(url);
    const candidates = isIP(host) !== 0 ? [host] : isLocalhostName(host) ? ['127.0.0.1', '::1'] : [];
    for (const a of candidates) {
      const why = this.refusal(a, port);
      if (why) return `${url.host} is refused: ${why}`;
    }
    return undefined;
  }

  /**
   * Why a URL is refused, resolving a host name (PATCH /config, the test endpoints): its
   * literal address, or every address the name resolves to now. A name that does not resolve
   * (yet), or not within RESOLVE_CHECK_TIMEOUT_MS, is not refused here: delivery resolves and
   * checks again on every attempt (a name may change what it resolves to: DNS rebinding).
   */
  async refusalOfUrlResolved(text: string): Promise<string | undefined> {
    const literal = this.refusalOfUrl(text);
    if (literal) return literal;
    let url: URL;
    try {
      url = new URL(text);
    } catch {
      return undefined;
    }
    const host = url.hostname.replace(/^\[|\]$/g, '');
    if (host === '' || isIP(host) !== 0 || isLocalhostName(host)) return undefined;
    const port = portOf(url);
    const addresses = await new Promise<LookupAddress[]>((ok) => {
      const timer = setTimeout(() => ok([]), RESOLVE_CHECK_TIMEOUT_MS);
      timer.unref();
      this.#resolve(host, (err, list) => {
        clearTimeout(timer);
        ok(err ? [] : list);
      });
    });
    for (const a of addresses) {
      const why = this.refusal(a.address, port);
      if (why) return `${url.host} is refused: it resolves to ${a.address}, and ${why}`;
    }
    return undefined;
  }

  /**
   * A `lookup` for node:http(s) requests to `port`: resolves as usual, refuses when any
   * resolved address is refused, and hands the checked addresses to the connection.
   */
  lookupFor(port: number): LookupFunction {
    return ((hostname: string, options: { all?: boolean; family?: number }, callback: (...args: unknown[]) => void) => {
      const localhost = isLocalhostName(hostname);
      this.#resolve(hostname, (err, addresses: LookupAddress[]) => {
        if (err) return callback(err);
        // `localhost` names are loopback whatever a resolver says.
        const list = localhost ? addresses.filter((a) => isLoopback(a.address)) : addresses;
        if (list.length === 0) return callback(new TargetRefused(`${hostname} does not resolve to a loopback address`));
        for (const a of list) {
          const why = this.refusal(a.address, port);
          if (why) return callback(new TargetRefused(`${hostname} resolves to ${a.address}: ${why}`));
        }
        if (options.all) callback(null, list);
        else callback(null, list[0]!.address, list[0]!.family);
      });
    }) as unknown as LookupFunction;
  }
}
