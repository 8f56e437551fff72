import { BlockList, isIP } from 'node:net';

/**
 * The addresses an outgoing request never reaches unless an admin allows private targets
 * (`ATTEST_WEBHOOK_ALLOW_PRIVATE=true`): loopback, link-local (cloud metadata lives at
 * 169.254.169.254), private and shared ranges, multicast, reserved and unspecified ones, in both
 * families. IPv4-mapped and NAT64 IPv6 forms are judged by the IPv4 address they carry, so
 * `[::ffff:127.0.0.1]` is loopback too.
 */
const PRIVATE = new BlockList();
for (const [net, prefix] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.0.2.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['198.51.100.0', 24],
  ['203.0.113.0', 24],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
] as const) {
  PRIVATE.addSubnet(net, prefix, 'ipv4');
}
for (const [net, prefix] of [
  ['::', 128],
  ['::1', 128],
  ['100::', 64],
  ['2001:db8::', 32],
  ['fc00::', 7],
  ['fe80::', 10],
  ['fec0::', 10],
  ['ff00::', 8],
] as const) {
  PRIVATE.addSubnet(net, prefix, 'ipv6');
}

/** The eight 16-bit groups of an IPv6 address (already known to be one). */
function groups(address: string): number[] {
  let text = address.replace(/^\[|\]$/g, '').split('%')[0] as string;
  const dotted = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text);
  if (dotted) {
    const [a, b, c, d] = dotted.slice(1).map(Number) as [number, number, number, number];
    text = `${text.slice(0, dotted.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head, tail] = text.includes('::') ? (text.split('::') as [string, string]) : [text, undefined];
  const left = head ? head.split(':') : [];
  const right = tail ? tail.split(':') : [];
  const middle = tail === undefined ? [] : Array(8 - left.length - right.length).fill('0');
  return [...left, ...middle, ...right].map((group) => Number.parseInt(group, 16));
}

/** The IPv4 address an IPv6 one carries (mapped ::ffff:a.b.c.d, or NAT64 64:ff9b::a.b.c.d), if any. */
function embeddedIpv4(address: string): string | undefined {
  const g = groups(address);
  const mapped = g.slice(0, 5).every((x) => x === 0) && g[5] === 0xffff;
  const nat64 = g[0] === 0x64 && g[1] === 0xff9b && g.slice(2, 6).every((x) => x === 0);
  if (!mapped && !nat64) return undefined;
  const [hi, lo] = [g[6] as number, g[7] as number];
  return `${hi >> 8}.${hi & 0xff}.${lo >> 8}.${lo & 0xff}`;
}

/** Whether `address` (an IP literal, IPv6 with or without brackets) is one outgoing requests avoid. */
export function isPrivateAddress(address: string): boolean {
  const bare = address.replace(/^\[|\]$/g, '');
  const family = isIP(bare);
  if (family === 4) return PRIVATE.check(bare, 'ipv4');
  if (family !== 6) return true;
  const v4 = embeddedIpv4(bare);
  return v4 !== undefined ? PRIVATE.check(v4, 'ipv4') : PRIVATE.check(bare.split('%')[0] as string, 'ipv6');
}
