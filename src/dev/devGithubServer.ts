import type { IncomingMessage, ServerResponse } from 'node:http';
import { fileURLToPath } from 'node:url';
import express from 'express';
import type { Logger } from '../shared/logger.js';
import { requestId } from '../web/middleware/requestContext.js';
import { securityHeaders } from '../web/middleware/security.js';
import type { Render } from '../web/render.js';
import { pageErrors } from './devAuthServer.js';
import { createGithubApi } from './devGithubApi.js';
import { createGithubAuthState, type GithubOAuthApp } from './devGithubAuthState.js';
import { createGithubAuthorizeRouter, GITHUB_BRAND } from './devGithubOAuth.js';
import type { GithubStore } from './devGithubStore.js';
import { createGithubAppTokenRouter, createGithubTokenRouter } from './devGithubToken.js';

export type { GithubOAuthApp } from './devGithubAuthState.js';

export interface DevGithubServerOptions {
  /** e.g. https://127.0.0.1:8446, no trailing slash. */
  origin: string;
  apps: readonly GithubOAuthApp[];
  store: GithubStore;
  render: Render;
  logger: Logger;
  now?: () => number;
}

export interface DevGithubServer {
  handler: (req: IncomingMessage, res: ServerResponse) => void;
  /** GitHub Enterprise Server's API layout, `<origin>/api/v3`; the API answers at the origin's root too, as api.github.com does. */
  apiUrl: string;
}

const publicDir = fileURLToPath(new URL('../../public/', import.meta.url));

/**
 * A development OAuth provider that behaves like GitHub (OAuth Apps): plain
 * OAuth 2.0 with no discovery document, no ID token, opaque tokens and no
 * refresh token; `/login/oauth/authorize` and `/login/oauth/access_token` as
 * on github.com and GitHub Enterprise Server, our own sign-in and consent
 * pages, and a small REST API, with "Delete an app token" for a disconnect. Development only.
 */
export function createDevGithubServer(options: DevGithubServerOptions): DevGithubServer {
  const { origin, apps, store } = options;
  const apiUrl = `${origin}/api/v3`;
  const state = createGithubAuthState(options.now);
  const app = express();
  app.disable('x-powered-by');
  app.use(requestId());
  app.use(...securityHeaders());
  app.use('/static', express.static(publicDir, { index: false }));
  app.use(createGithubTokenRouter({ apps, state, store }));
  app.use(createGithubAuthorizeRouter({ origin, apps, state, store, render: options.render }));
  const api = createGithubApi({ origin, apiUrl, store, logger: options.logger });
  const appTokens = createGithubAppTokenRouter({ apps, store, logger: options.logger });
  app.use('/api/v3', appTokens, api);
  // The sign-in pages' errors are drawn as the other development servers draw theirs.
  app.use(pageErrors({ logger: options.logger, render: options.render, brand: GITHUB_BRAND }));
  app.use(appTokens, api);
  return { handler: (req, res) => app(req, res), apiUrl };
}
