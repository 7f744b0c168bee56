import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/config.js';
import { configProblems as problemsOf, PRODUCTION_ENV as production } from '../support/productionSettings.js';

const { TLS_CERT_FILE: _cert, TLS_KEY_FILE: _key, ...productionWithoutTls } = production;

describe('TRUST_PROXY and TLS_TERMINATED_BY_PROXY', () => {
  it('trusts no proxy and serves its own TLS by default', () => {
    const config = loadConfig(production);
    expect(config.http.trustProxy.shown).toBe('none');
    expect(config.http.trustProxy.trusts('127.0.0.1', 0)).toBe(false);
    expect(config.tls.terminatedByProxy).toBe(false);
  });

  it('parses TRUST_PROXY once, as a hop count or a list of addresses and CIDRs', () => {
    expect(loadConfig({ ...production, TRUST_PROXY: '2' }).http.trustProxy.shown).toBe('2 hops');
    const listed = loadConfig({ ...production, TRUST_PROXY: ' 10.0.0.0/8 , fd00::/8,loopback ' }).http.trustProxy;
    expect(listed.shown).toBe('10.0.0.0/8, fd00::/8, loopback');
    expect(listed.trusts('10.2.3.4', 0)).toBe(true);
    expect(listed.trusts('192.0.2.1', 0)).toBe(false);
  });

  it('refuses a malformed TRUST_PROXY with a message naming the entry', () => {
    expect(problemsOf({ ...production, TRUST_PROXY: '10.0.0.0/33' })).toEqual([
      expect.stringMatching(/^TRUST_PROXY: invalid range on address: 10\.0\.0\.0\/33/),
    ]);
    expect(problemsOf({ ...production, TRUST_PROXY: '10.0.0.1, proxy.internal' })).toEqual([
      expect.stringMatching(/^TRUST_PROXY: "proxy\.internal" is not an IP address, a CIDR/),
    ]);
    expect(problemsOf({ ...production, TRUST_PROXY: 'true' })).toEqual([
      expect.stringMatching(/^TRUST_PROXY: "true" is not an IP address/),
    ]);
    expect(problemsOf({ ...production, TRUST_PROXY: '0' })).toEqual([
      'TRUST_PROXY: a hop count must be 1 to 10; leave it unset to trust no proxy',
    ]);
  });

  it('listens on plain HTTP behind a TLS-terminating proxy in production, with no certificate of its own', () => {
    const config = loadConfig({ ...productionWithoutTls, TLS_TERMINATED_BY_PROXY: 'true', TRUST_PROXY: '10.0.0.5' });
    expect(config.tls.terminatedByProxy).toBe(true);
    expect(config.http.publicUrl.href).toBe('https://broker.example.com/');
  });

  it('refuses TLS_TERMINATED_BY_PROXY with a certificate of its own, or without TRUST_PROXY', () => {
    expect(problemsOf({ ...production, TLS_TERMINATED_BY_PROXY: 'true', TRUST_PROXY: '10.0.0.5' })).toEqual([
      expect.stringMatching(/^TLS_CERT_FILE: must not be set with TLS_TERMINATED_BY_PROXY=true/),
      expect.stringMatching(/^TLS_KEY_FILE: must not be set with TLS_TERMINATED_BY_PROXY=true/),
    ]);
    expect(problemsOf({ ...productionWithoutTls, TLS_TERMINATED_BY_PROXY: 'true' })).toEqual([
      expect.stringMatching(/^TRUST_PROXY: is required with TLS_TERMINATED_BY_PROXY=true/),
    ]);
  });

  it('still requires a certificate in production without TLS_TERMINATED_BY_PROXY', () => {
    expect(problemsOf(productionWithoutTls)).toEqual([
      'TLS_CERT_FILE: TLS_CERT_FILE is required in production (or TLS_TERMINATED_BY_PROXY=true)',
      'TLS_KEY_FILE: TLS_KEY_FILE is required in production (or TLS_TERMINATED_BY_PROXY=true)',
    ]);
  });

  it('refuses TLS_TERMINATED_BY_PROXY outside production, where the broker serves its own local TLS', () => {
    for (const NODE_ENV of ['development', 'test'])
      expect(problemsOf({ NODE_ENV, TLS_TERMINATED_BY_PROXY: 'true', TRUST_PROXY: '127.0.0.1' })).toEqual([
        'TLS_TERMINATED_BY_PROXY: is a production setting (with an https PUBLIC_URL served by the proxy)',
      ]);
  });

  it('refuses a plain-http PUBLIC_URL with TLS_TERMINATED_BY_PROXY: the public URL stays https', () => {
    expect(
      problemsOf({
        ...productionWithoutTls,
        PUBLIC_URL: 'http://broker.example.com',
        TLS_TERMINATED_BY_PROXY: 'true',
        TRUST_PROXY: '10.0.0.5',
      }),
    ).toEqual([expect.stringMatching(/^PUBLIC_URL: must be an https:\/\/ URL/)]);
  });
});
