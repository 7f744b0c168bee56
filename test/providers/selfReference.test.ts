import { generateKeyPair, SignJWT, UnsecuredJWT } from 'jose';
import { describe, expect, it } from 'vitest';
import { tokenAudienceProblem } from '../../src/providers/selfReference.js';

// An upstream's JWT access token is kept only when it is for that upstream (RFC 9068 §4, RFC 8707).

const RESOURCE = 'https://mcp.example.com/mcp';
const { privateKey } = await generateKeyPair('ES256');
const signed = (claims: Record<string, unknown>) =>
  new SignJWT(claims).setProtectedHeader({ alg: 'ES256', typ: 'at+jwt' }).sign(privateKey);

describe('an upstream access token audience', () => {
  it('keeps a JWT for the upstream, its audience as one string or in a list, in canonical form', async () => {
    expect(tokenAudienceProblem(await signed({ aud: RESOURCE }), RESOURCE)).toBeUndefined();
    expect(
      tokenAudienceProblem(await signed({ aud: ['other', 'HTTPS://MCP.example.com/mcp'] }), RESOURCE),
    ).toBeUndefined();
  });

  it("refuses a JWT for another audience, the broker's own included, or for none", async () => {
    expect(tokenAudienceProblem(await signed({ aud: 'https://broker.example/mcp' }), RESOURCE)).toBe(
      'its JWT access token is for "https://broker.example/mcp", not https://mcp.example.com/mcp',
    );
    expect(tokenAudienceProblem(await signed({ sub: 'alice' }), RESOURCE)).toMatch(/names no audience/);
    expect(tokenAudienceProblem(new UnsecuredJWT({ aud: 'elsewhere' }).encode(), RESOURCE)).toMatch(/"elsewhere"/);
  });

  it('leaves what it cannot read to the server: an opaque token, an encrypted one', () => {
    expect(tokenAudienceProblem('gho_16C7e42F292c6912E7710c838347Ae178B4a', RESOURCE)).toBeUndefined();
    expect(tokenAudienceProblem('a.b.c.d.e', RESOURCE)).toBeUndefined();
    expect(tokenAudienceProblem('not.a.jwt', RESOURCE)).toBeUndefined();
  });
});
