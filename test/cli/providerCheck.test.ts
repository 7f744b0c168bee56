import { describe, expect, it } from 'vitest';
import { checkProviders, EXPLICIT_ENDPOINTS, UPSTREAM } from '../../src/cli/providerCheck.js';
import { parseProviders } from '../../src/providers/providerConfig.js';
import type { Fetch } from '../../src/shared/httpClient.js';
import { TEST_SELF } from '../support/brokerSelf.js';

const oidcEntry = (id: string) => ({
  id,
  kind: 'oidc',
  displayName: `Slow ${id}`,
  docs: 'https://openid.net/specs/openid-connect-discovery-1_0.html',
  issuer: `https://${id}.example.com`,
  authorizationEndpoint: `https://${id}.example.com/authorize`,
  tokenEndpoint: `https://${id}.example.com/token`,
  identity: { from: 'idToken' },
  clientAuth: 'client_secret_basic',
  pkce: true,
  apiBase: `https://api.${id}.example.com`,
  clientId: 'client',
  clientSecret: 'secret',
});
const explicitEntry = {
  ...oidcEntry('explicit'),
  kind: 'oauth2',
  identity: { from: 'tokenResponse', subjectPath: 'user_id' },
};

describe('checkProviders', () => {
  it('bounds each discovery by the timeout, all of them at once', async () => {
    const providers = parseProviders([oidcEntry('one'), oidcEntry('two'), oidcEntry('three')], {
      allowLoopback: false,
      self: TEST_SELF,
    });
    const asked: string[] = [];
    // A server that accepts the request and never answers.
    const hanging: Fetch = (input) => {
      asked.push(String(input instanceof Request ? input.url : input));
      return new Promise<Response>(() => undefined);
    };
    const started = Date.now();
    const checks = await checkProviders(providers, { fetch: hanging, allowLoopback: false, timeoutMs: 300 });
    const elapsed = Date.now() - started;
    expect(checks).toEqual(
      ['one', 'two', 'three'].map((id) => ({
        id,
        ok: false,
        result: `discovery from https://${id}.example.com failed: no answer within 0.3 s`,
      })),
    );
    expect(asked).toEqual(
      ['one', 'two', 'three'].map((id) => `https://${id}.example.com/.well-known/openid-configuration`),
    );
    expect(elapsed).toBeGreaterThanOrEqual(290);
    expect(elapsed).toBeLessThan(800);
  });

  it('passes an entry with explicit endpoints without a request', async () => {
    const providers = parseProviders([explicitEntry], { allowLoopback: false, self: TEST_SELF });
    const refusing: Fetch = () => Promise.reject(new Error('no request was expected'));
    expect(await checkProviders(providers, { fetch: refusing, allowLoopback: false, timeoutMs: 300 })).toEqual([
      { id: 'explicit', ok: true, result: EXPLICIT_ENDPOINTS },
    ]);
  });

  it('leaves an upstream MCP server to broker upstreams check, without a request', async () => {
    const providers = parseProviders(
      [{ id: 'linear', kind: 'mcp', url: 'https://mcp.linear.app/mcp', prefix: 'linear', registration: 'auto' }],
      { allowLoopback: false, self: TEST_SELF },
    );
    const refusing: Fetch = () => Promise.reject(new Error('no request was expected'));
    expect(await checkProviders(providers, { fetch: refusing, allowLoopback: false, timeoutMs: 300 })).toEqual([
      { id: 'linear', ok: true, result: UPSTREAM },
    ]);
  });
});
