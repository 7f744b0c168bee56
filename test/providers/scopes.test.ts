import { describe, expect, it } from 'vitest';
import { catalog } from '../../src/providers/catalog/catalog.js';
import { missingScopes, scopesToRequest, type ScopeFacts } from '../../src/providers/scopes.js';

const github = (scopes: string[]): ScopeFacts => ({ scopes, impliedScopes: catalog.get('github')!.impliedScopes });
const google = (scopes: string[]): ScopeFacts => ({ scopes, impliedScopes: catalog.get('google')!.impliedScopes });
const EMAIL_URL = 'https://www.googleapis.com/auth/userinfo.email';
const CALENDAR = 'https://www.googleapis.com/auth/calendar.readonly';

describe('scopes a connection was granted, against what a tool needs', () => {
  it('counts a scope as granted by name, or through a granted scope that includes it', () => {
    expect(missingScopes(github([]), ['repo'], ['public_repo', 'repo:status'])).toEqual([]);
    expect(missingScopes(github([]), ['user'], ['read:user', 'user:email'])).toEqual([]);
    expect(missingScopes(github([]), ['public_repo'], ['repo'])).toEqual(['repo']);
    expect(missingScopes(github([]), ['read:user'], ['read:user', 'repo', 'gist'])).toEqual(['repo', 'gist']);
    expect(missingScopes(github([]), [], ['read:user'])).toEqual(['read:user']);
  });

  it("takes Google's URL for email as the scope asked for as `email`, both ways", () => {
    expect(missingScopes(google([]), ['openid', EMAIL_URL], ['email'])).toEqual([]);
    expect(missingScopes(google([]), ['openid', 'email'], [EMAIL_URL])).toEqual([]);
    expect(missingScopes(google([]), ['openid', EMAIL_URL], [CALENDAR])).toEqual([CALENDAR]);
  });

  it('asks a second consent for the union: the entry’s scopes and what is held, nothing twice under another name', () => {
    expect(scopesToRequest(github(['read:user', 'repo']), ['read:user', 'gist'])).toEqual([
      'read:user',
      'repo',
      'gist',
    ]);
    // repo (asked) includes public_repo (held): not asked again.
    expect(scopesToRequest(github(['repo']), ['public_repo'])).toEqual(['repo']);
    expect(scopesToRequest(google(['openid', 'email', CALENDAR]), ['openid', EMAIL_URL])).toEqual([
      'openid',
      'email',
      CALENDAR,
    ]);
    expect(scopesToRequest(github(['read:user']), [])).toEqual(['read:user']);
  });
});

describe("the catalog's impliedScopes", () => {
  it('are listed in full: what a scope includes, it includes directly', () => {
    for (const [id, entry] of catalog) {
      for (const [scope, included] of Object.entries(entry.impliedScopes)) {
        for (const child of included) {
          const grandchildren = (entry.impliedScopes[child] ?? []).filter((g) => g !== scope);
          expect(included, `${id}: ${scope} includes ${child}, so also what ${child} includes`).toEqual(
            expect.arrayContaining(grandchildren),
          );
        }
      }
    }
  });
});
