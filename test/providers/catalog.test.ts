import { readdirSync } from 'node:fs';
import { basename } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { catalog, catalogEntries } from '../../src/providers/catalog/catalog.js';
import {
  type CatalogEntry,
  CatalogEntrySchema,
  CLIENT_ID_PLACEHOLDER,
  urlTemplates,
} from '../../src/providers/catalog/catalogEntry.js';
import { CatalogExpansionError, type ExpandedEntry, expandEntry } from '../../src/providers/catalog/expandEntry.js';
import { github as githubAsWritten } from '../../src/providers/catalog/github.js';
import { microsoft as microsoftAsWritten } from '../../src/providers/catalog/microsoft.js';

const thirdParty = { allowLoopback: false };
const catalogDir = fileURLToPath(new URL('../../src/providers/catalog/', import.meta.url));
const notEntries = new Set(['catalog.ts', 'catalogEntry.ts', 'expandEntry.ts']);
const github = catalog.get('github')!;
const microsoft = catalog.get('microsoft')!;

// An entry whose one parameter is a whole origin, so a value can reach every
// URL rule of the policy rather than stopping at a host pattern.
const byOrigin: CatalogEntry = {
  ...github,
  id: 'by-origin',
  params: { origin: { description: 'the server origin', pattern: '\\S+' } },
  derived: undefined,
  authorizationEndpoint: '{origin}/authorize',
  tokenEndpoint: '{origin}/token',
  revocationEndpoint: '{origin}/revoke',
  identity: { from: 'call', method: 'GET', url: '{origin}/me', subjectPath: 'id' },
  apiBase: '{origin}/api',
};

function problemsOf(entry: CatalogEntry, params: Record<string, string>, policy = thirdParty): readonly string[] {
  try {
    expandEntry(entry, params, policy);
  } catch (err) {
    expect(err).toBeInstanceOf(CatalogExpansionError);
    return (err as CatalogExpansionError).problems;
  }
  throw new Error('expected a CatalogExpansionError');
}

function schemaIssues(entry: unknown): string[] {
  const parsed = CatalogEntrySchema.safeParse(entry);
  return parsed.success ? [] : parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`);
}

function expandedUrls(expanded: ExpandedEntry): string[] {
  return [
    expanded.issuer,
    expanded.authorizationEndpoint,
    expanded.tokenEndpoint,
    expanded.revocationEndpoint,
    // The deployment's client id is filled in later (providerConfig.ts).
    expanded.revocationCall?.url.replace(CLIENT_ID_PLACEHOLDER, 'client-id'),
    expanded.identity.from === 'call' ? expanded.identity.url : undefined,
    expanded.metadataCall?.url,
    expanded.apiBase,
  ].filter((u): u is string => u !== undefined);
}

describe('the provider catalog', () => {
  it('holds one entry per provider file, valid, with the id of its file, all in the registry', async () => {
    const files = readdirSync(catalogDir).filter((f) => f.endsWith('.ts') && !notEntries.has(f));
    expect(files.length).toBeGreaterThanOrEqual(11);
    for (const file of files) {
      const exported = Object.values((await import(`${catalogDir}${file}`)) as Record<string, unknown>);
      expect(exported, file).toHaveLength(1);
      expect(schemaIssues(exported[0]), file).toEqual([]);
      const entry = CatalogEntrySchema.parse(exported[0]);
      expect(entry.id, file).toBe(basename(file, '.ts'));
      expect(catalog.get(entry.id), file).toEqual(entry);
    }
    expect(new Set(catalogEntries.map((e) => e.id)).size).toBe(catalogEntries.length);
    expect(catalog.size).toBe(files.length);
  });

  it.each(catalogEntries.map((e) => [e.id, e] as const))(
    '%s expands with its default parameters into URLs that pass the URL policy',
    (_id, entry) => {
      const expanded = expandEntry(entry, {}, thirdParty);
      const urls = expandedUrls(expanded);
      expect(urls).toHaveLength(urlTemplates(entry).length);
      for (const url of urls) expect(url).toMatch(/^https:\/\/[^{}]+$/);
    },
  );

  it('cites the provider documentation in each entry', () => {
    for (const entry of catalogEntries) expect(entry.docs, entry.id).toMatch(/^https:\/\//);
  });
});

describe('expandEntry', () => {
  it('gives github.com its login endpoints and the API on api.github.com', () => {
    const expanded = expandEntry(github, {}, thirdParty);
    expect(expanded.params).toEqual({ host: 'github.com' });
    expect(expanded.authorizationEndpoint).toBe('https://github.com/login/oauth/authorize');
    expect(expanded.tokenEndpoint).toBe('https://github.com/login/oauth/access_token');
    expect(expanded.apiBase).toBe('https://api.github.com');
    expect(expanded.identity).toEqual({
      from: 'call',
      method: 'GET',
      url: 'https://api.github.com/user',
      subjectPath: 'id',
      namePath: 'login',
    });
  });

  it('gives a GitHub Enterprise Server host its login endpoints and the API under /api/v3 on the same host', () => {
    const expanded = expandEntry(github, { host: 'github.example.com' }, thirdParty);
    expect(expanded.authorizationEndpoint).toBe('https://github.example.com/login/oauth/authorize');
    expect(expanded.tokenEndpoint).toBe('https://github.example.com/login/oauth/access_token');
    expect(expanded.apiBase).toBe('https://github.example.com/api/v3');
    expect(expanded.identity.from === 'call' && expanded.identity.url).toBe('https://github.example.com/api/v3/user');
  });

  it('takes a loopback GitHub host only when loopback is allowed (the development provider)', () => {
    expect(expandEntry(github, { host: '127.0.0.1:8446' }, { allowLoopback: true }).apiBase).toBe(
      'https://127.0.0.1:8446/api/v3',
    );
    const problems = problemsOf(github, { host: '127.0.0.1:8446' });
    expect(problems).toHaveLength(5);
    for (const p of problems) expect(p).toContain('points at a loopback host');
  });

  it('puts the Entra tenant in the path, common by default', () => {
    expect(expandEntry(microsoft, {}, thirdParty).authorizationEndpoint).toBe(
      'https://login.microsoftonline.com/common/oauth2/v2.0/authorize',
    );
    const tenant = expandEntry(microsoft, { tenant: '72f988bf-86f1-41af-91ab-2d7cd011db47' }, thirdParty);
    expect(tenant.authorizationEndpoint).toBe(
      'https://login.microsoftonline.com/72f988bf-86f1-41af-91ab-2d7cd011db47/oauth2/v2.0/authorize',
    );
    expect(tenant.tokenEndpoint).toBe(
      'https://login.microsoftonline.com/72f988bf-86f1-41af-91ab-2d7cd011db47/oauth2/v2.0/token',
    );
    expect(tenant.apiBase).toBe('https://graph.microsoft.com/v1.0');
  });

  it('refuses a missing and an unknown parameter together', () => {
    const problems = problemsOf(byOrigin, { orgin: 'https://idp.example' });
    expect(problems).toEqual([
      'params.orgin: by-origin has no such parameter (it takes: origin)',
      'params.origin: is required (the server origin)',
    ]);
  });

  it('refuses a parameter an entry does not declare, naming the ones it does', () => {
    expect(problemsOf(github, { tenant: 'common' })).toEqual([
      'params.tenant: github has no such parameter (it takes: host)',
    ]);
  });

  it('refuses a host outside its pattern before building any URL from it', () => {
    for (const host of ['evil.example@github.com', 'github.example.com/evil', 'GitHub.com', 'github.com#', 'a b']) {
      const problems = problemsOf(github, { host });
      expect(problems, host).toHaveLength(1);
      expect(problems[0], host).toMatch(/^params\.host: .* does not match /);
    }
  });

  it('lists an http URL for every endpoint a plain-http value reaches', () => {
    const problems = problemsOf(byOrigin, { origin: 'http://idp.example' });
    expect(problems).toEqual(
      ['authorizationEndpoint', 'tokenEndpoint', 'revocationEndpoint', 'identity.url', 'apiBase'].map(
        (f) =>
          `${f}: by-origin.${f} must use https: http://idp.example${{ authorizationEndpoint: '/authorize', tokenEndpoint: '/token', revocationEndpoint: '/revoke', 'identity.url': '/me', apiBase: '/api' }[f]}`,
      ),
    );
  });

  it('lists a userinfo URL for every endpoint a value with credentials reaches', () => {
    const problems = problemsOf(byOrigin, { origin: 'https://user:pw@idp.example' });
    expect(problems).toHaveLength(5);
    for (const p of problems) expect(p).toContain('carries user information');
  });

  it('lists problems of different parameters and URLs in one error', () => {
    const twoParams: CatalogEntry = {
      ...byOrigin,
      params: { ...byOrigin.params, tenant: { description: 'the tenant', pattern: '[a-z]+' } },
      apiBase: '{origin}/{tenant}',
    };
    const err = (() => {
      try {
        expandEntry(twoParams, { origin: 'http://idp.example', tenant: 'NOT-OK' }, thirdParty);
      } catch (e) {
        return e as CatalogExpansionError;
      }
      throw new Error('expected a CatalogExpansionError');
    })();
    expect(err.problems[0]).toMatch(/^params\.tenant: "NOT-OK" does not match/);
    expect(err.problems.slice(1).map((p) => p.split(':')[0])).toEqual([
      'authorizationEndpoint',
      'tokenEndpoint',
      'revocationEndpoint',
      'identity.url',
    ]);
    expect(err.message).toContain('Catalog entry by-origin cannot be used:\n  - params.tenant');
  });
});

describe('CatalogEntrySchema', () => {
  it('refuses a template that uses an undeclared parameter', () => {
    expect(schemaIssues({ ...githubAsWritten, tokenEndpoint: 'https://{hots}/login/oauth/access_token' })).toEqual([
      'tokenEndpoint: uses undeclared {hots}',
    ]);
  });

  it('refuses a parameter default outside its own pattern', () => {
    expect(
      schemaIssues({
        ...microsoftAsWritten,
        params: { tenant: { ...microsoft.params.tenant, default: 'not a tenant' } },
      }),
    ).toEqual(['params.tenant.default: does not match its own pattern']);
  });

  it('refuses an oidc entry without an issuer and an ID-token identity on plain OAuth 2.0', () => {
    expect(schemaIssues({ ...githubAsWritten, kind: 'oidc' })).toEqual(['issuer: is required for an oidc entry']);
    expect(schemaIssues({ ...githubAsWritten, identity: { from: 'idToken' } })).toEqual([
      'identity: an ID token exists only for an oidc entry',
    ]);
  });

  it('refuses a derived case keyed on an undeclared parameter', () => {
    expect(
      schemaIssues({
        ...githubAsWritten,
        derived: {
          apiRoot: {
            cases: [{ when: { hostname: 'github.com' }, value: 'https://api.github.com' }],
            otherwise: 'https://{host}/api/v3',
          },
        },
      }),
    ).toEqual(['derived.apiRoot.cases.0.when.hostname: is not a declared parameter']);
  });

  it("keeps GitHub's revocation call on its API root, the client id left for the deployment", () => {
    expect(expandEntry(github, {}, thirdParty).revocationCall).toEqual({
      method: 'DELETE',
      url: 'https://api.github.com/applications/{clientId}/token',
      tokenMember: 'access_token',
    });
    expect(expandEntry(github, { host: 'github.example.com' }, thirdParty).revocationCall?.url).toBe(
      'https://github.example.com/api/v3/applications/{clientId}/token',
    );
  });

  it('refuses {clientId} anywhere but the revocation call, and a revocation call beside an RFC 7009 endpoint', () => {
    expect(schemaIssues({ ...githubAsWritten, apiBase: 'https://{host}/apps/{clientId}' })).toEqual([
      'apiBase: uses undeclared {clientId}',
    ]);
    expect(schemaIssues({ ...githubAsWritten, revocationEndpoint: 'https://{host}/revoke' })).toEqual([
      'revocationCall: is for providers without an RFC 7009 revocationEndpoint',
    ]);
  });

  it('refuses unknown fields, a conformer it does not know and a docs link that is not https', () => {
    const issues = schemaIssues({
      ...githubAsWritten,
      scopes: ['repo'],
      conformer: 'gitlab',
      docs: 'http://docs.github.com/',
    });
    expect(issues.map((i) => i.split(':')[0]).sort()).toEqual(['', 'conformer', 'docs']);
  });
});
