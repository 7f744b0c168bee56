import { errors } from 'jose';
import { describe, expect, it } from 'vitest';
import { checkAccessTokenType, scopesOf } from '../../src/security/accessTokenPolicy.js';

const jwtTyp = { signInClientId: 'sign-in-client' };
const header = (typ?: string) => ({ alg: 'RS256', ...(typ === undefined ? {} : { typ }) });

function refused(run: () => void): boolean {
  try {
    run();
    return false;
  } catch (err) {
    expect(err).toBeInstanceOf(errors.JWTClaimValidationFailed);
    return true;
  }
}

describe('checkAccessTokenType', () => {
  it('takes at+jwt and no typ always, and JWT only when MCP_TOKEN_TYP=jwt allows it', () => {
    const token = { aud: 'api', scp: 'mcp' };
    expect(refused(() => checkAccessTokenType(header('at+jwt'), token))).toBe(false);
    expect(refused(() => checkAccessTokenType(header(), token))).toBe(false);
    expect(refused(() => checkAccessTokenType(header('JWT'), token))).toBe(true);
    expect(refused(() => checkAccessTokenType(header('JWT'), token, jwtTyp))).toBe(false);
    expect(refused(() => checkAccessTokenType(header('application/jwt'), token, jwtTyp))).toBe(false);
  });

  it('refuses a typ JWT token without scopes, or addressed to the sign-in client, even when allowed', () => {
    // An ID Token: no scope claim (OpenID Connect Core §2), whatever its audience.
    expect(refused(() => checkAccessTokenType(header('JWT'), { aud: 'api', nonce: 'n' }, jwtTyp))).toBe(true);
    expect(refused(() => checkAccessTokenType(header('JWT'), { aud: 'api', scp: [] }, jwtTyp))).toBe(true);
    // Scopes, but the sign-in client among its audiences.
    const both = { aud: ['api', 'sign-in-client'], scope: 'mcp' };
    expect(refused(() => checkAccessTokenType(header('JWT'), both, jwtTyp))).toBe(true);
    expect(refused(() => checkAccessTokenType(header('JWT'), { aud: 'sign-in-client', scp: 'mcp' }, jwtTyp))).toBe(
      true,
    );
  });

  it('refuses other types whatever is allowed', () => {
    for (const typ of ['dpop+jwt', 'id_token+jwt', 'logout+jwt'])
      expect(
        refused(() => checkAccessTokenType(header(typ), { aud: 'api', scope: 'mcp' }, jwtTyp)),
        typ,
      ).toBe(true);
  });
});

describe('scopesOf', () => {
  it("reads scope and scp, as a space-separated string (RFC 9068, Entra ID) or an array (Okta's scp)", () => {
    expect(scopesOf({ scope: 'openid  mcp' })).toEqual(['openid', 'mcp']);
    expect(scopesOf({ scp: 'mcp User.Read' })).toEqual(['mcp', 'User.Read']);
    expect(scopesOf({ scp: ['openid', 'mcp', 7] })).toEqual(['openid', 'mcp']);
    expect(scopesOf({ scope: 'a', scp: ['b'] })).toEqual(['a', 'b']);
    expect(scopesOf({ scope: { mcp: true }, scp: 1 })).toEqual([]);
  });
});
