import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';

// The one judge of where an outgoing request may go (HOOK-5, FORGE-7): webhooks and integrations
// ask it when a URL is saved (its host written as an address) and again at each call (every
// address the host resolves to). The special-purpose ranges come from `ipaddr.js`, which follows
// IANA's IPv4 and IPv6 special-purpose registries; what is decided here is only which of them an
// outgoing request avoids (all of them) and which IPv6 forms carry an IPv4 address to judge instead.

/** How an outgoing request sees one address. */
export interface AddressClass {
  /** Whether outgoing requests avoid it unless an admin allows private targets. */
  special: boolean;
  /**
   * The range it was found in: `unicast` for a public address, else an IANA special-purpose range
   * as `ipaddr.js` names it (`loopback`, `private`, `carrierGradeNat`, `linkLocal`, `unspecified`,
   * `uniqueLocal`, `reserved`, …), or `ipv4Compatible`, `nat64Local`, `unallocated`, `invalid`.
   */
  range: string;
  /** The IPv4 address an IPv6 form carries and was judged by: mapped, translated, NAT64, 6to4, Teredo. */
  embedded?: string;
}

const v4 = (value: number) => ipaddr.IPv4.parse([value >>> 24, (value >>> 16) & 0xff, (value >>> 8) & 0xff, value & 0xff].join('.'));
const fromGroups = (hi: number, lo: number) => v4(((hi << 16) | lo) >>> 0);

const IPV4_COMPATIBLE = ipaddr.parseCIDR('::/96');
const NAT64_LOCAL = ipaddr.parseCIDR('64:ff9b:1::/48');
const GLOBAL_UNICAST = ipaddr.parseCIDR('2000::/3');

function classifyIpv4(address: ipaddr.IPv4): AddressClass {
  const range = address.range();
  return { special: range !== 'unicast', range };
}

function classifyIpv6(address: ipaddr.IPv6): AddressClass {
  const g = address.parts as [number, number, number, number, number, number, number, number];
  const range = address.range();
  const judgedBy = (embedded: ipaddr.IPv4, as = range): AddressClass => {
    const inner = classifyIpv4(embedded);
    return { special: inner.special, range: inner.special ? inner.range : as, embedded: embedded.toString() };
  };
  switch (range) {
    // ::ffff:a.b.c.d and ::ffff:0:a.b.c.d reach the IPv4 address itself.
    case 'ipv4Mapped':
    case 'rfc6145':
      return judgedBy(fromGroups(g[6], g[7]));
    case 'rfc6052':
      // 64:ff9b:1::/48 is for a network's own translators (RFC 8215): never a public target.
      if (address.match(NAT64_LOCAL)) return { special: true, range: 'nat64Local' };
      return judgedBy(fromGroups(g[6], g[7]));
    case '6to4':
      return judgedBy(fromGroups(g[1], g[2]));
    case 'teredo': {
      // The server's address in clear, the client's inverted; either one special makes it special.
      const server = judgedBy(fromGroups(g[2], g[3]));
      return server.special ? server : judgedBy(fromGroups(~g[6] & 0xffff, ~g[7] & 0xffff));
    }
    case 'unicast':
      break;
    default:
      return { special: true, range };
  }
  // ::a.b.c.d (deprecated by RFC 4291), refused whatever it carries: nothing public answers there.
  if (address.match(IPV4_COMPATIBLE)) return { special: true, range: 'ipv4Compatible', embedded: fromGroups(g[6], g[7]).toString() };
  // Outside 2000::/3 nothing is allocated for global unicast: IETF-reserved space.
  if (!address.match(GLOBAL_UNICAST)) return { special: true, range: 'unallocated' };
  return { special: false, range };
}

/**
 * How an outgoing request sees `address`: an IP literal as DNS answers it or a URL's host holds it
 * (IPv6 with or without brackets, a zone index ignored). Anything that is not an IP literal is
 * special (`invalid`): a caller that cannot say what it connects to connects nowhere.
 */
export function classifyAddress(address: string): AddressClass {
  const bare = (address.replace(/^\[|\]$/g, '').split('%')[0] as string).toLowerCase();
  // node:net's isIP takes only the canonical forms; ipaddr.js alone would also read `0127.1` (octal).
  const family = isIP(bare);
  if (family === 4) return classifyIpv4(ipaddr.IPv4.parse(bare));
  // Written out as WHATWG URLs serialise it first (`::127.0.0.1` is `::7f00:1`): ipaddr.js would
  // read the deprecated IPv4-compatible form as IPv4-mapped, a different address.
  if (family === 6) return classifyIpv6(ipaddr.IPv6.parse(new URL(`http://[${bare}]/`).hostname.slice(1, -1)));
  return { special: true, range: 'invalid' };
}

/** Whether `address` (an IP literal, IPv6 with or without brackets) is one outgoing requests avoid. */
export const isPrivateAddress = (address: string): boolean => classifyAddress(address).special;

/** The address and why it is avoided, for a message: `127.0.0.1 (loopback)`, `[::ffff:7f00:1] (loopback, via 127.0.0.1)`. */
export function describeAddress(address: string): string {
  const verdict = classifyAddress(address);
  return `${address} (${verdict.range}${verdict.embedded ? `, via ${verdict.embedded}` : ''})`;
}

/**
 * Whether a URL's host is refused as written, before any lookup: an IP literal in a special range,
 * or a name of this machine (`localhost`, `*.localhost`, RFC 6761). Other names are judged at
 * each call, once resolved. `hostname` is as `URL` gives it (IPv4 normalised, IPv6 in brackets).
 */
export function isSpecialHost(hostname: string): boolean {
  const host = hostname.toLowerCase().replace(/\.+$/, '');
  if (host === 'localhost' || host.endsWith('.localhost')) return true;
  const bare = host.replace(/^\[|\]$/g, '');
  return isIP(bare.split('%')[0] as string) !== 0 && isPrivateAddress(bare);
}
