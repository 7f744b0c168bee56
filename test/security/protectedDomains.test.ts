import { writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { catalogEntries } from '../../src/providers/catalog/catalog.js';
import { urlTemplates } from '../../src/providers/catalog/catalogEntry.js';
import { skeleton } from '../../src/security/confusables.js';
import {
  ProtectedDomainsError,
  protectedDomains,
  readProtectedDomainsFile,
} from '../../src/security/protectedDomains.js';
import { registrableDomainOf } from '../../src/security/registrableDomain.js';

const shipped = readProtectedDomainsFile();

describe('the shipped protected domains (config/protected-domains.txt)', () => {
  it('lists a few hundred registrable domains, each once', () => {
    expect(shipped.length).toBeGreaterThan(300);
    expect(new Set(shipped).size).toBe(shipped.length);
  });

  it('has no two domains with one skeleton, so a lookalike names the one it imitates', () => {
    const bySkeleton = new Map<string, string>();
    for (const domain of shipped) {
      expect({ domain, clash: bySkeleton.get(skeleton(domain)) }).toEqual({ domain, clash: undefined });
      bySkeleton.set(skeleton(domain), domain);
    }
  });

  it("holds the registrable domain of every fixed host of the provider catalog's entries", () => {
    const hosts = catalogEntries.flatMap((entry) =>
      [entry.docs, ...urlTemplates(entry).map(([, template]) => template)]
        .map((template) => /^https:\/\/([^/{]+)(\/|$)/.exec(template)?.[1])
        .filter((host): host is string => host !== undefined),
    );
    expect(hosts.length).toBeGreaterThan(20);
    const missing = hosts.map((host) => registrableDomainOf(host).domain).filter((d) => !shipped.includes(d!));
    expect(missing).toEqual([]);
  });
});

describe('protectedDomains', () => {
  it("reduces a provider's hosts to their registrable domains and ignores what protects nothing", () => {
    const list = protectedDomains(['login.acme.example.co.uk', '127.0.0.1', 'localhost', 'co.uk', 'bücher.de.']);
    expect(list.has('acme.example.co.uk')).toBe(false);
    expect(list.has('example.co.uk')).toBe(true);
    expect(list.has('bücher.de')).toBe(true);
    expect(list.bySkeleton(skeleton('exarnple.co.uk'))).toBe('example.co.uk');
    expect(list.byLabelSkeleton(skeleton('exarnple'))).toEqual({ domain: 'example.co.uk', label: 'example' });
    expect(list.has('co.uk')).toBe(false);
  });

  it('refuses a list line that is not a registrable domain, naming the line', () => {
    const file = join(tmpdir(), `protected-${process.pid}.txt`);
    writeFileSync(file, '# a comment\n\nexample.com\nwww.example.org\n');
    expect(() => readProtectedDomainsFile(file)).toThrow(ProtectedDomainsError);
    expect(() => readProtectedDomainsFile(file)).toThrow(/:4: "www.example.org" is not a registrable domain/);
  });
});
