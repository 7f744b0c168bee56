import type { IncomingMessage } from 'node:http';
import { describe, expect, it } from 'vitest';
import { clientAddressOf, parseTrustProxy, TrustProxyError } from '../../src/shared/clientAddress.js';

/** A request as node:http hands it over: its TCP peer and its headers. */
function request(peer: string | undefined, forwardedFor?: string): IncomingMessage {
  return {
    socket: { remoteAddress: peer },
    headers: forwardedFor === undefined ? {} : { 'x-forwarded-for': forwardedFor },
  } as unknown as IncomingMessage;
}

describe('parseTrustProxy', () => {
  it('trusts nothing when unset or empty', () => {
    for (const value of [undefined, '', '  ']) {
      const trust = parseTrustProxy(value);
      expect(trust.shown).toBe('none');
      expect(clientAddressOf(request('10.0.0.5', '203.0.113.9'), trust)).toBe('10.0.0.5');
    }
  });

  it('takes a hop count of 1 to 10', () => {
    expect(parseTrustProxy('1').shown).toBe('1 hop');
    expect(parseTrustProxy('10').shown).toBe('10 hops');
    expect(() => parseTrustProxy('0')).toThrow(TrustProxyError);
    expect(() => parseTrustProxy('11')).toThrow(/1 to 10/);
  });

  it('takes addresses, CIDRs (IPv4 and IPv6, netmask notation too) and the named ranges', () => {
    const trust = parseTrustProxy('192.0.2.10, 10.0.0.0/8, 172.16.0.0/255.240.0.0, fd00::/8, loopback');
    expect(trust.trusts('192.0.2.10', 0)).toBe(true);
    expect(trust.trusts('10.200.0.1', 0)).toBe(true);
    expect(trust.trusts('172.31.0.1', 0)).toBe(true);
    expect(trust.trusts('fd12::1', 0)).toBe(true);
    expect(trust.trusts('127.0.0.1', 0)).toBe(true);
    expect(trust.trusts('::ffff:10.0.0.1', 0)).toBe(true);
    expect(trust.trusts('192.0.2.11', 0)).toBe(false);
  });

  it('refuses malformed entries, naming them', () => {
    for (const [value, message] of [
      ['10.0.0.0/33', /invalid range on address: 10\.0\.0\.0\/33/],
      ['10.0.0.0/', /invalid range on address: 10\.0\.0\.0\//],
      ['0.0.0.0/0', /invalid range/],
      ['10.1', /"10\.1" is not an IP address/],
      ['proxy.internal', /"proxy\.internal" is not an IP address/],
      ['true', /"true" is not an IP address/],
      ['10.0.0.1,,10.0.0.2', /"" is not an IP address/],
      ['-1', /"-1" is not an IP address/],
    ] as const)
      expect(() => parseTrustProxy(value), value).toThrow(message);
  });
});

describe('clientAddressOf', () => {
  it('ignores X-Forwarded-For from a peer that is not a trusted proxy', () => {
    const trust = parseTrustProxy('10.0.0.5');
    expect(clientAddressOf(request('192.0.2.77', '203.0.113.9'), trust)).toBe('192.0.2.77');
  });

  it('takes the entry the trusted proxy added, not one the client forged before it', () => {
    const trust = parseTrustProxy('10.0.0.5');
    expect(clientAddressOf(request('10.0.0.5', '198.51.100.1, 203.0.113.9'), trust)).toBe('203.0.113.9');
    expect(clientAddressOf(request('::ffff:10.0.0.5', '203.0.113.9'), trust)).toBe('203.0.113.9');
  });

  it('walks back through each trusted proxy in turn', () => {
    const trust = parseTrustProxy('10.0.0.0/8');
    expect(clientAddressOf(request('10.0.0.5', '198.51.100.1, 203.0.113.9, 10.0.0.7'), trust)).toBe('203.0.113.9');
  });

  it('with a hop count, trusts that many hops from whoever connects', () => {
    const trust = parseTrustProxy('1');
    expect(clientAddressOf(request('192.0.2.77', '198.51.100.1, 203.0.113.9'), trust)).toBe('203.0.113.9');
    expect(clientAddressOf(request('192.0.2.77'), trust)).toBe('192.0.2.77');
  });

  it('answers "unknown" for a request whose socket has no peer address any more', () => {
    expect(clientAddressOf(request(undefined, '203.0.113.9'), parseTrustProxy('1'))).toBe('unknown');
  });
});
