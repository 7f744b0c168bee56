import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/config.js';
import { configProblems as problemsOf, PRODUCTION_ENV } from '../support/productionSettings.js';

// The settings that fit MCP token verification to identity providers that cannot write the
// resource URL as the audience or at+jwt as the type (docs/identity-providers.md).

const production = {
  ...PRODUCTION_ENV,
  OIDC_ISSUER: 'https://login.microsoftonline.com/8e1c1d57-7d5c-4d5e-9f3a-0c5d2b7f1a10/v2.0',
  OIDC_CLIENT_ID: '3f1b4c2a-0d7e-4a35-9b8e-2c6f1d0a9e41',
};
const API_CLIENT_ID = 'b7a0e5c4-91d2-4f7e-8c3b-5e6a2d1f0c98';

describe('MCP token settings', () => {
  it('default to the resource URL as audience, at+jwt only, and the checked scope advertised', () => {
    const config = loadConfig(production);
    expect(config.mcp).toEqual({
      requiredScope: 'mcp',
      advertisedScope: 'mcp',
      allowAnonymous: false,
      tokenAudience: undefined,
      jwtTyp: undefined,
    });
  });

  it('take an audience of its own, typ JWT with the sign-in client named, and an advertised scope apart', () => {
    const config = loadConfig({
      ...production,
      MCP_TOKEN_AUDIENCE: API_CLIENT_ID,
      MCP_TOKEN_TYP: 'jwt',
      MCP_ADVERTISED_SCOPE: `api://${API_CLIENT_ID}/mcp`,
    });
    expect(config.mcp).toEqual({
      requiredScope: 'mcp',
      advertisedScope: `api://${API_CLIENT_ID}/mcp`,
      allowAnonymous: false,
      tokenAudience: API_CLIENT_ID,
      jwtTyp: { signInClientId: production.OIDC_CLIENT_ID },
    });
    // The resource the broker is stays its URL (RFC 9728 `resource`), whatever its tokens carry.
    expect(config.http.mcpResourceUrl).toBe('https://broker.example.com/mcp');
  });

  it('refuses the sign-in client id as the MCP audience, its own or the development default', () => {
    expect(problemsOf({ ...production, MCP_TOKEN_AUDIENCE: production.OIDC_CLIENT_ID })).toEqual([
      expect.stringMatching(/^MCP_TOKEN_AUDIENCE: must not be OIDC_CLIENT_ID/),
    ]);
    expect(problemsOf({ MCP_TOKEN_AUDIENCE: 'connect-broker' })).toEqual([
      expect.stringMatching(/^MCP_TOKEN_AUDIENCE: must not be OIDC_CLIENT_ID/),
    ]);
  });

  it('refuses an unknown MCP_TOKEN_TYP, an audience with spaces and an advertised scope of two', () => {
    expect(
      problemsOf({
        ...production,
        MCP_TOKEN_TYP: 'JWT',
        MCP_TOKEN_AUDIENCE: 'api://a b',
        MCP_ADVERTISED_SCOPE: 'openid mcp',
      }).map((p) => p.split(':')[0]),
    ).toEqual(['MCP_ADVERTISED_SCOPE', 'MCP_TOKEN_AUDIENCE', 'MCP_TOKEN_TYP']);
  });
});
