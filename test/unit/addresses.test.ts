import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { classifyAddress, isPrivateAddress, isSpecialHost } from '../../src/server/outgoing/addresses.ts';
import { checkSavedUrl, OutgoingError } from '../../src/server/outgoing/request.ts';

// The one address classifier webhooks and integrations share, at save and at each call (HOOK-5,
// FORGE-7).

describe('classifyAddress', () => {
  test('IPv6 forms that carry an IPv4 address are judged by it: mapped, translated, NAT64, 6to4, Teredo', () => {
    for (const [address, range, embedded] of [
      ['::ffff:127.0.0.1', 'loopback', '127.0.0.1'],
      ['[::ffff:127.0.0.1]', 'loopback', '127.0.0.1'],
      ['::ffff:7f00:1', 'loopback', '127.0.0.1'],
      ['::ffff:a9fe:a9fe', 'linkLocal', '169.254.169.254'],
      ['::ffff:0:7f00:1', 'loopback', '127.0.0.1'],
      ['64:ff9b::7f00:1', 'loopback', '127.0.0.1'],
      ['[64:ff9b::7f00:1]', 'loopback', '127.0.0.1'],
      ['64:ff9b::10.0.0.1', 'private', '10.0.0.1'],
      ['2002:7f00:1::', 'loopback', '127.0.0.1'],
      ['[2002:7f00:1::]', 'loopback', '127.0.0.1'],
      ['2002:a9fe:a9fe::1', 'linkLocal', '169.254.169.254'],
      ['2002:c0a8:101::', 'private', '192.168.1.1'],
      // Teredo: the client's address inverted in the last 32 bits (127.0.0.1 here), the server's in clear.
      ['2001:0:4136:e378:8000:63bf:80ff:fffe', 'loopback', '127.0.0.1'],
      ['2001:0:a00:1::1', 'private', '10.0.0.1'],
    ] as const) {
      assert.deepEqual(classifyAddress(address), { special: true, range, embedded }, address);
    }
    for (const [address, range] of [
      ['::ffff:8.8.8.8', 'ipv4Mapped'],
      ['64:ff9b::8.8.8.8', 'rfc6052'],
      ['2002:808:808::1', '6to4'],
      ['2001:0:4136:e378:8000:63bf:f7f7:f7f7', 'teredo'],
    ] as const) {
      assert.equal(classifyAddress(address).special, false, address);
      assert.equal(classifyAddress(address).range, range, address);
    }
  });

  test('IPv4-compatible ::a.b.c.d (deprecated) and the local-use NAT64 prefix are special whatever they carry', () => {
    for (const address of ['::127.0.0.1', '[::127.0.0.1]', '::7f00:1', '::8.8.8.8', '::a00:1']) {
      assert.equal(classifyAddress(address).special, true, address);
      assert.equal(classifyAddress(address).range, 'ipv4Compatible', address);
    }
    for (const address of ['64:ff9b:1::808:808', '64:ff9b:1:ffff::1']) {
      assert.deepEqual(classifyAddress(address), { special: true, range: 'nat64Local' }, address);
    }
  });

  test('every IANA special-purpose range is special, unspecified and shared space included; public addresses are not', () => {
    for (const [address, range] of [
      ['0.0.0.0', 'unspecified'],
      ['0.1.2.3', 'unspecified'],
      ['::', 'unspecified'],
      ['[::]', 'unspecified'],
      ['100.64.0.1', 'carrierGradeNat'],
      ['100.127.255.254', 'carrierGradeNat'],
      ['127.0.0.1', 'loopback'],
      ['::1', 'loopback'],
      ['10.1.2.3', 'private'],
      ['172.16.0.1', 'private'],
      ['192.168.1.1', 'private'],
      ['169.254.169.254', 'linkLocal'],
      ['fe80::1', 'linkLocal'],
      ['fe80::1%eth0', 'linkLocal'],
      ['fc00::1', 'uniqueLocal'],
      ['fd12:3456::1', 'uniqueLocal'],
      ['fec0::1', 'deprecatedSiteLocal'],
      ['224.0.0.1', 'multicast'],
      ['ff02::1', 'multicast'],
      ['255.255.255.255', 'broadcast'],
      ['192.0.0.9', 'reserved'],
      ['192.0.2.1', 'reserved'],
      ['192.88.99.1', 'reserved'],
      ['198.18.0.1', 'reserved'],
      ['198.51.100.1', 'reserved'],
      ['203.0.113.1', 'reserved'],
      ['240.0.0.1', 'reserved'],
      ['192.31.196.1', 'as112'],
      ['192.52.193.1', 'amt'],
      ['100::1', 'discard'],
      ['2001:db8::1', 'reserved'],
      ['2001:2::1', 'benchmarking'],
      ['2001:20::1', 'orchid2'],
      ['3fff::1', 'reserved'],
      ['5f00::1', 'segmentRouting'],
      // Outside 2000::/3 nothing is allocated for global unicast (100:0:0:1::/64 is RFC 9780's dummy prefix).
      ['100:0:0:1::1', 'unallocated'],
      ['4000::1', 'unallocated'],
      ['not-an-address', 'invalid'],
      ['127.1', 'invalid'],
      ['0127.0.0.1', 'invalid'],
    ] as const) {
      assert.deepEqual(classifyAddress(address), { special: true, range }, address);
      assert.equal(isPrivateAddress(address), true, address);
    }
    for (const address of ['8.8.8.8', '93.184.216.34', '100.128.0.1', '172.32.0.1', '192.169.0.1', '2606:4700::1111', '2a00:1450::1']) {
      assert.deepEqual(classifyAddress(address), { special: false, range: 'unicast' }, address);
      assert.equal(isPrivateAddress(address), false, address);
    }
  });
});

describe('isSpecialHost and checkSavedUrl: what is refused when a URL is saved', () => {
  // The audit's list: each was accepted at save for integrations, and the IPv4-compatible and 6to4 forms everywhere.
  const SPECIAL_HOSTS = [
    '[::ffff:127.0.0.1]',
    '[::ffff:7f00:1]',
    '[::]',
    '100.64.0.1',
    '[64:ff9b::7f00:1]',
    '[::127.0.0.1]',
    '[2002:7f00:1::]',
    '0.0.0.0',
    '127.0.0.1',
    '2130706433',
    '0x7f.1',
    'localhost',
    'LOCALHOST.',
    'api.localhost',
    '169.254.169.254',
  ];

  test('the audit’s addresses, written in a URL, are refused before any lookup unless private targets are allowed', () => {
    for (const host of SPECIAL_HOSTS) {
      const text = `http://${host}:8080/rest`;
      assert.equal(isSpecialHost(new URL(text).hostname), true, host);
      assert.throws(
        () => checkSavedUrl(text, false),
        (e: unknown) => e instanceof OutgoingError && e.code === 'private_address' && /ATTEST_WEBHOOK_ALLOW_PRIVATE/.test(e.message),
        host,
      );
      assert.equal(checkSavedUrl(text, true).hostname, new URL(text).hostname, `${host} with private targets allowed`);
    }
    assert.match(
      (() => {
        try {
          checkSavedUrl('http://[::ffff:7f00:1]/', false);
        } catch (e) {
          return (e as Error).message;
        }
        return '';
      })(),
      /^is \[::ffff:7f00:1\] \(loopback, via 127\.0\.0\.1\)/,
      'the refusal says which range, and through which IPv4 address',
    );
  });

  test('names and public addresses are accepted at save (a name is judged at each call, once resolved); other schemes are not', () => {
    for (const text of ['https://api.github.com', 'https://acme.atlassian.net/', 'http://8.8.8.8/x', 'https://[2606:4700::1111]/']) {
      assert.equal(checkSavedUrl(text, false).href.startsWith('http'), true, text);
    }
    for (const text of ['ftp://example.com/', 'javascript:alert(1)', 'not a url']) {
      assert.throws(
        () => checkSavedUrl(text, true),
        (e: unknown) => e instanceof OutgoingError && e.code === 'invalid_url',
        text,
      );
    }
  });
});
