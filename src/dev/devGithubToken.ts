import { createHash, timingSafeEqual } from 'node:crypto';
import express, { type Request, type Response, Router } from 'express';
import { z } from 'zod';
import { type GithubAuthState, type GithubOAuthApp, takeUnexpired } from './devGithubAuthState.js';
import type { Logger } from '../shared/logger.js';
import type { GithubStore } from './devGithubStore.js';

export interface GithubTokenDeps {
  apps: readonly GithubOAuthApp[];
  state: GithubAuthState;
  store: GithubStore;
}

const TokenRequestSchema = z.object({
  client_id: z.string().max(100).optional(),
  client_secret: z.string().max(200).optional(),
  code: z.string().max(200).optional(),
  redirect_uri: z.string().max(2000).optional(),
  code_verifier: z.string().max(200).optional(),
  grant_type: z.string().max(100).optional(),
});
type TokenRequest = z.infer<typeof TokenRequestSchema>;

const DOCS = 'https://docs.github.com/apps/managing-oauth-apps/troubleshooting-oauth-app-access-token-request-errors';
const ERRORS = {
  incorrect_client_credentials: 'The client_id and/or client_secret passed are incorrect.',
  redirect_uri_mismatch: 'The redirect_uri MUST match the registered callback URL for this application.',
  bad_verification_code: 'The code passed is incorrect or expired.',
  unsupported_grant_type: 'The grant type is not supported.',
} as const;
type TokenError = keyof typeof ERRORS;

/**
 * POST /login/oauth/access_token as GitHub answers it: form-encoded unless the
 * client sends `Accept: application/json`, errors inside an HTTP 200 (a client
 * that only looks at the status takes an error for a token), an opaque token,
 * no refresh token and no expiry (OAuth App tokens live until revoked).
 */
export function createGithubTokenRouter(deps: GithubTokenDeps): Router {
  const router = Router();
  const bodies = [
    express.urlencoded({ extended: false, limit: '8kb', parameterLimit: 20 }),
    express.json({ limit: '8kb' }),
  ];

  router.post('/login/oauth/access_token', ...bodies, async (req, res) => {
    const parsed = TokenRequestSchema.safeParse({ ...req.query, ...(req.body ?? {}) });
    if (!parsed.success) {
      answer(req, res, errorBody('bad_verification_code'));
      return;
    }
    const outcome = await exchange(deps, parsed.data, basicCredentials(req.get('authorization')));
    answer(req, res, typeof outcome === 'string' ? errorBody(outcome) : outcome);
  });
  return router;
}

const DELETE_DOCS = 'https://docs.github.com/rest/apps/oauth-applications#delete-an-app-token';
const DeleteTokenSchema = z.object({ access_token: z.string().min(1).max(255) });

/**
 * DELETE /applications/{client_id}/token, "Delete an app token": the app, authenticated with HTTP
 * Basic (its client id and secret), revokes one of its tokens (JSON body `{access_token}`), 204.
 * A token the app did not issue, or an app whose credentials do not match, is answered as GitHub
 * answers what it does not find, 404; a body without the token 422. Each call is logged (never the
 * token): the record a test or a developer reads.
 */
export function createGithubAppTokenRouter(deps: Pick<GithubTokenDeps, 'apps' | 'store'> & { logger: Logger }): Router {
  const router = Router();
  router.delete('/applications/:clientId/token', express.json({ limit: '8kb' }), async (req, res) => {
    const clientId = String(req.params['clientId']);
    const basic = basicCredentials(req.get('authorization'));
    const app = deps.apps.find((a) => a.clientId === clientId);
    const answer = (status: number, login?: string) => {
      deps.logger.info({ clientId, status, ...(login !== undefined && { login }) }, 'delete an app token');
      if (status === 204) res.status(204).end();
      else
        res.status(status).json({
          message: status === 422 ? 'Validation Failed' : 'Not Found',
          documentation_url: DELETE_DOCS,
          status: String(status),
        });
    };
    if (!app || !basic || basic.id !== clientId || !sameSecret(basic.secret, app.clientSecret)) return answer(404);
    const body = DeleteTokenSchema.safeParse(req.body ?? {});
    if (!body.success) return answer(422);
    const deleted = await deps.store.deleteToken(body.data.access_token, app.clientId);
    return deleted ? answer(204, deleted.login) : answer(404);
  });
  return router;
}

async function exchange(
  deps: GithubTokenDeps,
  input: TokenRequest,
  basic: { id: string; secret: string } | undefined,
): Promise<TokenError | Record<string, string>> {
  if (input.grant_type !== undefined && input.grant_type !== 'authorization_code') return 'unsupported_grant_type';
  const clientId = basic?.id ?? input.client_id;
  const secret = basic?.secret ?? input.client_secret;
  const app = deps.apps.find((a) => a.clientId === clientId);
  if (!app || secret === undefined || !sameSecret(secret, app.clientSecret)) return 'incorrect_client_credentials';
  // A code is spent by its first redemption attempt, right or wrong (RFC 6749 §4.1.2: used at most once).
  const issued = input.code === undefined ? undefined : takeUnexpired(deps.state.codes, input.code, deps.state.now());
  if (!issued || issued.clientId !== app.clientId) return 'bad_verification_code';
  if (input.redirect_uri !== undefined && input.redirect_uri !== issued.redirectUri) return 'redirect_uri_mismatch';
  if (issued.codeChallenge !== undefined && !verifierMatches(input.code_verifier, issued.codeChallenge))
    return 'bad_verification_code';
  const accessToken = await deps.store.issueToken({
    login: issued.login,
    clientId: app.clientId,
    scopes: issued.scopes,
  });
  return { access_token: accessToken, token_type: 'bearer', scope: issued.scopes.join(',') };
}

function errorBody(error: TokenError): Record<string, string> {
  return { error, error_description: ERRORS[error], error_uri: `${DOCS}#${error.replaceAll('_', '-')}` };
}

function answer(req: Request, res: Response, body: Record<string, string>): void {
  res.set('Cache-Control', 'no-store');
  // Only an explicit application/json gets JSON; GitHub answers `*/*` or no Accept form-encoded.
  if (/\bapplication\/json\b/i.test(req.get('accept') ?? '')) {
    res.status(200).json(body);
    return;
  }
  res.status(200).type('application/x-www-form-urlencoded; charset=utf-8').send(new URLSearchParams(body).toString());
}

// RFC 7636 §4.6: BASE64URL(SHA256(code_verifier)) == code_challenge.
function verifierMatches(verifier: string | undefined, challenge: string): boolean {
  if (verifier === undefined || !/^[A-Za-z0-9\-._~]{43,128}$/.test(verifier)) return false;
  return sameSecret(createHash('sha256').update(verifier).digest('base64url'), challenge);
}

function sameSecret(given: string, expected: string): boolean {
  const a = createHash('sha256').update(given).digest();
  const b = createHash('sha256').update(expected).digest();
  return timingSafeEqual(a, b);
}

// RFC 6749 §2.3.1: client_id and client_secret form-urlencoded, then Basic.
function basicCredentials(header: string | undefined): { id: string; secret: string } | undefined {
  const match = /^Basic +([A-Za-z0-9+/]+=*)$/i.exec(header ?? '');
  if (!match?.[1]) return undefined;
  const decoded = Buffer.from(match[1], 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon < 0) return undefined;
  try {
    return { id: decodeURIComponent(decoded.slice(0, colon)), secret: decodeURIComponent(decoded.slice(colon + 1)) };
  } catch {
    return undefined;
  }
}
