import { describe, expect, it } from 'vitest';
import type { ServerTokens } from '../../src/oauth/oauthClient.js';
import { tokenAnswerPaths, upstreamConnectionOf } from '../../src/oauth/upstreamAccount.js';
import { parseProviders, type Provider } from '../../src/providers/providerConfig.js';
import type { Fetch } from '../../src/shared/httpClient.js';
import { TEST_SELF } from '../support/brokerSelf.js';

// What the broker learns about a connection right after the code exchange,
// for each way a provider entry declares it. The fetch is the provider's API,
// answering by URL; every call it gets is kept.

const TOKEN = 'canary-access-token-0f3c';

function providerOf(entry: Record<string, unknown>): Provider {
  return parseProviders([{ clientId: 'client', clientSecret: 'secret', ...entry }], {
    allowLoopback: false,
    self: TEST_SELF,
  })[0]!;
}

function tokens(overrides: Partial<ServerTokens> = {}): ServerTokens {
  return {
    accessToken: TOKEN,
    refreshToken: undefined,
    expiresInSeconds: undefined,
    idTokenSubject: undefined,
    idTokenIssuer: undefined,
    idTokenClaims: undefined,
    scope: undefined,
    extras: {},
    ...overrides,
  };
}

function api(answers: Record<string, { status?: number; body: unknown }>) {
  const calls: { url: string; method: string; headers: Headers; body: string | undefined }[] = [];
  const fetch = (async (input: string | URL | Request, init?: RequestInit) => {
    const url = String(input);
    calls.push({
      url,
      method: init?.method ?? 'GET',
      headers: new Headers(init?.headers),
      body: init?.body as string | undefined,
    });
    const answer = answers[url];
    if (!answer) return new Response('{"message":"Not Found"}', { status: 404 });
    return new Response(typeof answer.body === 'string' ? answer.body : JSON.stringify(answer.body), {
      status: answer.status ?? 200,
      headers: { 'content-type': 'application/json' },
    });
  }) as Fetch;
  return { fetch, calls };
}

describe('the upstream account and connection facts', () => {
  it('GitHub: the identity call names the account by its numeric id and login, scopes as granted', async () => {
    const github = providerOf({ id: 'github', catalog: 'github', scopes: ['repo'] });
    const { fetch, calls } = api({ 'https://api.github.com/user': { body: { id: 583231, login: 'octocat' } } });
    const connection = await upstreamConnectionOf(github, tokens({ scope: 'repo read:user' }), {
      fetch,
      allowLoopback: false,
    });
    expect(connection).toEqual({
      upstreamSubject: '583231',
      upstreamName: 'octocat',
      grantedScopes: ['repo', 'read:user'],
      metadata: {},
      apiBase: undefined,
    });
    expect(calls.map((c) => [c.method, c.url, c.headers.get('authorization')])).toEqual([
      ['GET', 'https://api.github.com/user', `Bearer ${TOKEN}`],
    ]);
  });

  it('takes the scopes asked for when the token answer names none (RFC 6749 §5.1)', async () => {
    const github = providerOf({ id: 'github', catalog: 'github', scopes: ['repo', 'read:user'] });
    const { fetch } = api({ 'https://api.github.com/user': { body: { id: 1, login: 'a' } } });
    expect((await upstreamConnectionOf(github, tokens(), { fetch, allowLoopback: false })).grantedScopes).toEqual([
      'repo',
      'read:user',
    ]);
  });

  it('Slack: the account is a member of the token answer, which the conformer is told to keep; no call is made', async () => {
    const slack = providerOf({ id: 'slack', catalog: 'slack', scopes: ['channels:read'] });
    expect(tokenAnswerPaths(slack)).toEqual(['authed_user.id']);
    const { fetch, calls } = api({});
    const connection = await upstreamConnectionOf(
      slack,
      tokens({ extras: { 'authed_user.id': 'U0123', 'team.id': 'T9' } }),
      { fetch, allowLoopback: false },
    );
    expect(connection).toMatchObject({
      upstreamSubject: 'U0123',
      metadata: { 'authed_user.id': 'U0123', 'team.id': 'T9' },
    });
    expect(calls).toEqual([]);
  });

  it('Atlassian: the declared metadata call finds the cloud id of the first site', async () => {
    const atlassian = providerOf({ id: 'atlassian', catalog: 'atlassian' });
    const { fetch, calls } = api({
      'https://api.atlassian.com/me': { body: { account_id: '5b10ac8d82e05b22cc7d4ef5', email: 'mia@example.com' } },
      'https://api.atlassian.com/oauth/token/accessible-resources': {
        body: [
          { id: '1324a887-45db-1bf4-1e99-ef0ff456d421', url: 'https://your-domain.atlassian.net', name: 'your-domain' },
        ],
      },
    });
    const connection = await upstreamConnectionOf(atlassian, tokens(), { fetch, allowLoopback: false });
    expect(connection).toMatchObject({
      upstreamSubject: '5b10ac8d82e05b22cc7d4ef5',
      upstreamName: 'mia@example.com',
      metadata: { cloudId: '1324a887-45db-1bf4-1e99-ef0ff456d421', siteUrl: 'https://your-domain.atlassian.net' },
    });
    expect(calls).toHaveLength(2);
  });

  it('Salesforce: instance_url becomes the connection API base, only on an allowed host', async () => {
    const salesforce = providerOf({ id: 'salesforce', catalog: 'salesforce' });
    const identity = {
      'https://login.salesforce.com/services/oauth2/userinfo': {
        body: { user_id: '005xx', preferred_username: 'ada@example.com' },
      },
    };
    const ok = await upstreamConnectionOf(
      salesforce,
      tokens({ extras: { instance_url: 'https://acme.my.salesforce.com' } }),
      { fetch: api(identity).fetch, allowLoopback: false },
    );
    expect(ok).toMatchObject({ upstreamSubject: '005xx', apiBase: 'https://acme.my.salesforce.com' });
    for (const instance of [
      'https://acme.my.salesforce.com.evil.example',
      'http://acme.my.salesforce.com',
      'https://127.0.0.1',
    ]) {
      await expect(
        upstreamConnectionOf(salesforce, tokens({ extras: { instance_url: instance } }), {
          fetch: api(identity).fetch,
          allowLoopback: false,
        }),
        instance,
      ).rejects.toMatchObject({ code: 'upstream_auth_failed' });
    }
  });

  it('refuses, without echoing the token, an identity call that fails or names no account', async () => {
    const github = providerOf({ id: 'github', catalog: 'github' });
    const answers: { status?: number; body: unknown }[] = [
      { status: 401, body: { message: 'Bad credentials' } },
      { body: { login: 'no-id' } },
      { body: 'not json' },
      { body: { id: { nested: true } } },
      { body: { id: 'a\nb' } },
    ];
    for (const answer of answers) {
      const { fetch } = api({ 'https://api.github.com/user': answer });
      const refused = await upstreamConnectionOf(github, tokens(), { fetch, allowLoopback: false }).catch(
        (err: unknown) => err,
      );
      expect(refused, JSON.stringify(answer)).toMatchObject({
        code: 'upstream_auth_failed',
        message: expect.stringMatching(/^GitHub connected, but .*Nothing was stored/),
      });
      expect(JSON.stringify(refused) + String((refused as Error).message)).not.toContain(TOKEN);
    }
  });

  it('an OIDC provider: the ID token subject, named by its preferred_username', async () => {
    const google = providerOf({ id: 'google', catalog: 'google' });
    const { fetch, calls } = api({});
    const connection = await upstreamConnectionOf(
      google,
      tokens({ idTokenSubject: '1098', idTokenClaims: { sub: '1098', email: 'ada@example.com' } }),
      { fetch, allowLoopback: false },
    );
    expect(connection).toMatchObject({ upstreamSubject: '1098', upstreamName: 'ada@example.com' });
    expect(calls).toEqual([]);
    await expect(upstreamConnectionOf(google, tokens(), { fetch, allowLoopback: false })).rejects.toMatchObject({
      code: 'upstream_auth_failed',
    });
  });
});
