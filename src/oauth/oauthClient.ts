import * as client from 'openid-client';
import type { Fetch } from '../shared/httpClient.js';
import type { Secret } from '../shared/secret.js';
import { oauthErrorHandler } from './oauthErrors.js';

// The only importer of openid-client (style.md B7.1). The rest of the app sees
// these types, never openid-client's.

export interface OidcClientOptions {
  issuer: string;
  clientId: string;
  clientSecret: Secret;
  fetch: Fetch;
}

export interface LoginRedirect {
  url: URL;
  state: string;
  nonce: string;
  codeVerifier: string;
}

export interface LoginChecks {
  state: string;
  nonce: string;
  codeVerifier: string;
}

export interface VerifiedLogin {
  issuer: string;
  subject: string;
  displayName: string;
}

export interface OidcClient {
  beginLogin(params: { redirectUri: string; scope: string }): Promise<LoginRedirect>;
  completeLogin(currentUrl: URL, redirectUri: string, checks: LoginChecks): Promise<VerifiedLogin>;
  /** Resolves when the issuer's metadata could be loaded (for /readyz). */
  ready(): Promise<void>;
}

/** OIDC code flow with PKCE S256, state and nonce against one issuer; discovery is lazy and retried. */
export function createOidcClient(options: OidcClientOptions): OidcClient {
  let configuration: Promise<client.Configuration> | undefined;
  // openid-client's options are a subset of RequestInit (method, headers, body, redirect, signal).
  const customFetch: client.CustomFetch = (url, init) => options.fetch(url, init as RequestInit);
  const discover = (): Promise<client.Configuration> => {
    configuration ??= client
      .discovery(new URL(options.issuer), options.clientId, options.clientSecret.reveal(), undefined, {
        [client.customFetch]: customFetch,
      })
      .then((config) => {
        config[client.customFetch] = customFetch;
        return config;
      })
      .catch((err: unknown) => {
        configuration = undefined; // the next request tries again
        return oauthErrorHandler(err);
      });
    return configuration;
  };

  return {
    async ready() {
      await discover();
    },
    async beginLogin({ redirectUri, scope }) {
      const config = await discover();
      const codeVerifier = client.randomPKCECodeVerifier();
      const state = client.randomState();
      const nonce = client.randomNonce();
      const url = client.buildAuthorizationUrl(config, {
        redirect_uri: redirectUri,
        scope,
        response_type: 'code',
        code_challenge: await client.calculatePKCECodeChallenge(codeVerifier),
        code_challenge_method: 'S256',
        state,
        nonce,
      });
      return { url, state, nonce, codeVerifier };
    },
    async completeLogin(currentUrl, redirectUri, checks) {
      const config = await discover();
      try {
        const tokens = await client.authorizationCodeGrant(
          config,
          currentUrl,
          { pkceCodeVerifier: checks.codeVerifier, expectedState: checks.state, expectedNonce: checks.nonce, idTokenExpected: true },
          { redirect_uri: redirectUri },
        );
        const claims = tokens.claims();
        if (!claims) throw new client.ClientError('no ID Token claims');
        const name = typeof claims['name'] === 'string' ? claims['name'] : undefined;
        const username = typeof claims['preferred_username'] === 'string' ? claims['preferred_username'] : undefined;
        return { issuer: claims.iss, subject: claims.sub, displayName: username ?? name ?? claims.sub };
      } catch (err) {
        return oauthErrorHandler(err);
      }
    },
  };
}
