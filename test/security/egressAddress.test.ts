import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/config.js';
import { internalKindOf } from '../../src/security/egressAddress.js';
import { configProblems, PRODUCTION_ENV } from '../support/productionSettings.js';

// The addresses the egress guard (shared/egressGuard.ts) refuses, and EGRESS_ALLOW as loadConfig reads it.

describe('internalKindOf', () => {
  it.each([
    ['127.0.0.1', 'loopback'],
    ['127.1.2.3', 'loopback'],
    ['::1', 'loopback'],
    ['::ffff:127.0.0.1', 'loopback'],
    ['::ffff:7f00:1', 'loopback'],
    ['10.1.2.3', 'private (RFC 1918)'],
    ['172.31.255.255', 'private (RFC 1918)'],
    ['192.168.0.1', 'private (RFC 1918)'],
    ['::ffff:192.168.0.1', 'private (RFC 1918)'],
    ['169.254.1.1', 'link-local'],
    ['fe80::1', 'link-local'],
    ['169.254.169.254', 'cloud metadata'],
    ['::ffff:169.254.169.254', 'cloud metadata'],
    ['fd00:ec2::254', 'cloud metadata'],
    ['100.100.100.200', 'cloud metadata'],
    ['fd12:3456::1', 'unique-local'],
    ['100.64.0.1', 'carrier-grade NAT (RFC 6598)'],
    ['224.0.0.1', 'multicast'],
    ['ff02::1', 'multicast'],
    ['0.0.0.0', 'unspecified'],
    ['::', 'unspecified'],
    ['255.255.255.255', 'broadcast'],
    ['240.0.0.1', 'reserved'],
    ['64:ff9b::a00:1', 'reserved'],
  ])('%s is %s', (address, kind) => {
    expect(internalKindOf(address)).toBe(kind);
  });

  it.each(['93.184.215.14', '8.8.8.8', '172.32.0.1', '2606:4700::1111', '::ffff:93.184.215.14'])(
    '%s is public',
    (address) => {
      expect(internalKindOf(address)).toBeUndefined();
    },
  );
});

describe('EGRESS_ALLOW', () => {
  it('is empty in production when unset, and loopback elsewhere', () => {
    expect(loadConfig(PRODUCTION_ENV).egress.allow.entries).toEqual([]);
    const test = loadConfig({ NODE_ENV: 'test' }).egress.allow;
    expect(test.ranges.check('127.0.0.1', 'ipv4')).toBe(true);
    expect(test.ranges.check('::1', 'ipv6')).toBe(true);
    expect(test.ranges.check('10.0.0.1', 'ipv4')).toBe(false);
  });

  it('reads names and CIDRs', () => {
    const allow = loadConfig({ ...PRODUCTION_ENV, EGRESS_ALLOW: 'Keycloak.Internal., 10.20.0.0/16, fd00::/8' }).egress
      .allow;
    expect([...allow.names]).toEqual(['keycloak.internal']);
    expect(allow.ranges.check('10.20.3.4', 'ipv4')).toBe(true);
    expect(allow.ranges.check('10.21.0.1', 'ipv4')).toBe(false);
    expect(allow.ranges.check('fd00::1', 'ipv6')).toBe(true);
  });

  it('refuses an entry that is neither a name nor a range', () => {
    expect(configProblems({ ...PRODUCTION_ENV, EGRESS_ALLOW: '10.0.0.0/33' })).toEqual([
      'EGRESS_ALLOW: 10.0.0.0/33 has a bad prefix length',
    ]);
    expect(configProblems({ ...PRODUCTION_ENV, EGRESS_ALLOW: 'http://svc' })).toEqual([
      'EGRESS_ALLOW: http://svc is neither a host name nor an IP address or CIDR',
    ]);
  });
});
