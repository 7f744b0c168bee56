import { createHash } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import type { TlsMaterial } from '../../../src/tls/localCa.js';
import {
  bearerOf,
  canary,
  clientCredentials,
  consentPage,
  createJwtSigner,
  escapeHtml,
  GrantBook,
  html,
  json,
  redirectBack,
  startEmulator,
  ticked,
  verifierMatches,
  type Emulator,
  type Issued,
  type PendingGrant,
  type Seen,
} from './googleMicrosoftShared.js';

// Google's OAuth 2.0 and OpenID Connect as its pages describe them, on
// Google's real hosts (mapped here by test/support/hostMap.ts):
// - Discovery, ID tokens and keys, https://developers.google.com/identity/openid-connect/openid-connect:
//   the document at accounts.google.com/.well-known/openid-configuration, issuer
//   https://accounts.google.com; ID tokens signed RS256 with iss, azp and aud (the
//   client id), sub, email and email_verified (email scope), name (profile
//   scope), at_hash, nonce, iat, exp; keys at www.googleapis.com/oauth2/v3/certs.
// - The web server flow, https://developers.google.com/identity/protocols/oauth2/web-server:
//   authorize at accounts.google.com/o/oauth2/v2/auth, token at
//   oauth2.googleapis.com/token; `access_type=offline` returns a refresh token
//   "the first time that your application exchanges an authorization code", and
//   `prompt=consent` asks again (so a refresh token comes again); a denial
//   redirects with `error=access_denied`, other request errors are shown to the
//   user, not redirected; the user may grant only some of the scopes asked for
//   (granular consent), and `scope` in the token answer says which; a refresh
//   answer carries no new refresh token.
// - Incremental authorization, https://developers.google.com/identity/protocols/oauth2/web-server#incrementalAuth:
//   with `include_granted_scopes=true` the new grant also holds what the user
//   granted the client before.
// - The token answer's `scope` names `email` and `profile` by their URLs
//   (https://www.googleapis.com/auth/userinfo.email, …userinfo.profile),
//   https://developers.google.com/identity/protocols/oauth2/scopes.
// - Revocation, https://developers.google.com/identity/protocols/oauth2/web-server#tokenrevoke:
//   POST oauth2.googleapis.com/revoke with `token` form-encoded (or in the query),
//   an access or a refresh token; revoking either ends the whole grant (a refresh
//   token and its access tokens); 200 when done, else 400 `invalid_token`.
// - API errors, https://cloud.google.com/apis/design/errors: `{error: {code,
//   message, status}}`, 401 UNAUTHENTICATED (with RFC 6750 §3.1's challenge).
// - https://developers.google.com/calendar/api/v3/reference/calendarList/list.
// Passwords, sessions and the account chooser are left out.

export const GOOGLE_HOSTS = [
  'accounts.google.com',
  'oauth2.googleapis.com',
  'www.googleapis.com',
  'openidconnect.googleapis.com',
] as const;
const ISSUER = 'https://accounts.google.com';
const SIGN_IN_SCOPES = new Set(['openid', 'email', 'profile']);
const CALENDAR_SCOPES = [
  'https://www.googleapis.com/auth/calendar.readonly',
  'https://www.googleapis.com/auth/calendar',
];
const CODE_TTL_MS = 10 * 60_000;

export interface GoogleUser {
  email: string;
  /** Google's account id: digits, stable per account. */
  sub: string;
  name: string;
  calendars: { id: string; summary: string; primary?: boolean }[];
}

export interface GoogleClient {
  clientId: string;
  clientSecret: string;
  redirectUris: string[];
}

export interface GoogleEmulator extends Emulator {
  client: GoogleClient;
  /** What each token answer held, in order. */
  tokenAnswers: { grantType: string; user: string; refreshToken: boolean; scope: string }[];
  /** Each revocation request, in order: which kind of token it named (if one Google issued), for whom, the status answered. */
  revocations: { kind: Issued['kind'] | undefined; user: string | undefined; status: number }[];
}

export async function startGoogleEmulator(options: {
  tls: TlsMaterial;
  client: GoogleClient;
  users: GoogleUser[];
}): Promise<GoogleEmulator> {
  const { client } = options;
  const signer = await createJwtSigner();
  const grants = new GrantBook();
  // What each user granted each client, by `${email}\n${clientId}`.
  const consented = new Map<string, string[]>();
  const tokenAnswers: GoogleEmulator['tokenAnswers'] = [];
  const revocations: GoogleEmulator['revocations'] = [];
  const userBy = (email: string | null) => options.users.find((u) => u.email === email);

  const routes: Record<string, (seen: Seen, res: ServerResponse) => void | Promise<void>> = {
    'GET accounts.google.com /.well-known/openid-configuration': (_seen, res) => json(res, 200, discoveryDocument()),
    'GET accounts.google.com /o/oauth2/v2/auth': authorize,
    'POST accounts.google.com /o/oauth2/v2/approve': approve,
    'POST oauth2.googleapis.com /token': token,
    'POST oauth2.googleapis.com /revoke': revoke,
    'GET www.googleapis.com /oauth2/v3/certs': (_seen, res) => json(res, 200, signer.jwks),
    'GET www.googleapis.com /oauth2/v3/userinfo': userinfo,
    'GET openidconnect.googleapis.com /v1/userinfo': userinfo,
    'GET www.googleapis.com /calendar/v3/users/me/calendarList': calendarList,
  };
  const base = await startEmulator(
    options.tls,
    { hosts: GOOGLE_HOSTS, grants, signer, clientSecret: client.clientSecret },
    (seen, res) => {
      const route = routes[`${seen.method} ${seen.host} ${seen.path}`];
      return route ? route(seen, res) : apiError(res, 404, 'NOT_FOUND', 'Requested entity was not found.');
    },
  );

  function authorize(seen: Seen, res: ServerResponse): void {
    const q = seen.query;
    if (q.get('client_id') !== client.clientId)
      return errorPage(res, 'invalid_client', 'The OAuth client was not found.');
    const redirectUri = q.get('redirect_uri') ?? '';
    if (!client.redirectUris.includes(redirectUri))
      return errorPage(
        res,
        'redirect_uri_mismatch',
        'The redirect URI in the request does not match the ones authorized for the OAuth client.',
      );
    const scopes = (q.get('scope') ?? '').split(' ').filter((s) => s !== '');
    if (q.get('response_type') !== 'code') return errorPage(res, 'invalid_request', 'Invalid response_type.');
    if (scopes.length === 0) return errorPage(res, 'invalid_request', 'Missing required parameter: scope');
    const method = q.get('code_challenge_method') ?? undefined;
    if (q.has('code_challenge') && method !== 'S256' && method !== 'plain')
      return errorPage(res, 'invalid_request', 'Invalid code_challenge_method.');
    const request: PendingGrant = {
      clientId: client.clientId,
      redirectUri,
      scopes,
      state: q.get('state') ?? undefined,
      nonce: q.get('nonce') ?? undefined,
      challenge: q.get('code_challenge') ?? undefined,
      challengeMethod: method,
      extra: {
        access_type: q.get('access_type') ?? 'online',
        prompt: q.get('prompt') ?? '',
        include_granted_scopes: q.get('include_granted_scopes') ?? 'false',
      },
    };
    const requestId = grants.remember(request);
    html(
      res,
      200,
      consentPage({
        brand: 'Google',
        app: 'Connect Broker',
        action: '/o/oauth2/v2/approve',
        requestId,
        listed: scopes.filter((s) => SIGN_IN_SCOPES.has(s)),
        choosable: scopes.filter((s) => !SIGN_IN_SCOPES.has(s)),
      }),
    );
  }

  function approve(seen: Seen, res: ServerResponse): void {
    const requestId = seen.form.get('request') ?? '';
    const request = grants.requests.get(requestId);
    if (!request) return errorPage(res, 'invalid_request', 'This request has expired.');
    if (seen.form.get('decision') !== 'allow') {
      grants.requests.delete(requestId);
      return redirectBack(res, request.redirectUri, { error: 'access_denied', state: request.state });
    }
    const user = userBy(seen.form.get('login'));
    const choosable = request.scopes.filter((s) => !SIGN_IN_SCOPES.has(s));
    if (!user) {
      return html(
        res,
        200,
        consentPage({
          brand: 'Google',
          app: 'Connect Broker',
          action: '/o/oauth2/v2/approve',
          requestId,
          listed: request.scopes.filter((s) => SIGN_IN_SCOPES.has(s)),
          choosable,
          problem: "Couldn't find your Google Account",
        }),
      );
    }
    grants.requests.delete(requestId);
    const consent = `${user.email}\n${request.clientId}`;
    const before = request.extra['include_granted_scopes'] === 'true' ? (consented.get(consent) ?? []) : [];
    const granted = [
      ...new Set([...before, ...request.scopes.filter((s) => SIGN_IN_SCOPES.has(s)), ...ticked(seen.form, choosable)]),
    ];
    // A refresh token with offline access on the first consent, or whenever the user was asked again.
    const firstConsent = !consented.has(consent);
    const askedAgain = request.extra['prompt']!.split(' ').includes('consent');
    consented.set(consent, granted);
    const code = canary('4/0A');
    grants.codes.set(code, {
      ...request,
      scopes: granted,
      user: user.email,
      expiresAt: Date.now() + CODE_TTL_MS,
      extra: {
        ...request.extra,
        refreshable: String(request.extra['access_type'] === 'offline' && (firstConsent || askedAgain)),
      },
    });
    redirectBack(res, request.redirectUri, { code, state: request.state });
  }

  async function token(seen: Seen, res: ServerResponse): Promise<void> {
    const credentials = clientCredentials(seen);
    if (credentials.method === 'both')
      return tokenError(res, 400, 'invalid_request', 'Client credentials were provided twice.');
    if (credentials.id !== client.clientId || credentials.secret !== client.clientSecret)
      return tokenError(res, 401, 'invalid_client', 'Unauthorized');
    const grantType = seen.form.get('grant_type');
    if (grantType === 'authorization_code') return exchangeCode(seen, res);
    if (grantType === 'refresh_token') return refresh(seen, res);
    return tokenError(res, 400, 'unsupported_grant_type', 'Invalid grant_type: ' + (grantType ?? ''));
  }

  function revoke(seen: Seen, res: ServerResponse): void {
    // The page's examples send no client credentials; credentials that are sent must be the client's.
    const credentials = clientCredentials(seen);
    if (
      credentials.method === 'both' ||
      (credentials.method !== 'none' &&
        (credentials.id !== client.clientId || credentials.secret !== client.clientSecret))
    )
      return tokenError(res, 401, 'invalid_client', 'Unauthorized');
    const value = seen.form.get('token') ?? seen.query.get('token') ?? undefined;
    const held = grants.issued.find(
      (t) =>
        t.value === value &&
        t.clientId === client.clientId &&
        (t.kind === 'access_token' || t.kind === 'refresh_token'),
    );
    if (!held || held.revoked || held.expiresAt <= Date.now()) {
      revocations.push({ kind: held?.kind, user: held?.user, status: 400 });
      return tokenError(res, 400, 'invalid_token', 'Token expired or revoked');
    }
    // The grant ends: every token of that user for this client, and the consent (the next one is a first consent).
    for (const t of grants.issued) if (t.user === held.user && t.clientId === client.clientId) t.revoked = true;
    consented.delete(`${held.user}\n${client.clientId}`);
    revocations.push({ kind: held.kind, user: held.user, status: 200 });
    json(res, 200, {});
  }

  async function exchangeCode(seen: Seen, res: ServerResponse): Promise<void> {
    const code = seen.form.get('code') ?? '';
    const grant = grants.codes.get(code);
    grants.codes.delete(code);
    if (
      !grant ||
      grant.expiresAt < Date.now() ||
      grant.redirectUri !== seen.form.get('redirect_uri') ||
      !verifierMatches(seen.form.get('code_verifier'), grant.challenge, grant.challengeMethod)
    ) {
      return tokenError(res, 400, 'invalid_grant', 'Bad Request');
    }
    const user = userBy(grant.user)!;
    const accessToken = issue('access_token', user, grant.scopes, grants.accessTokenLifetimeSeconds);
    const body: Record<string, unknown> = {
      access_token: accessToken,
      expires_in: grants.accessTokenLifetimeSeconds,
      scope: grant.scopes.map(reportedScope).join(' '),
      token_type: 'Bearer',
    };
    if (grant.scopes.includes('openid')) body['id_token'] = await idToken(user, grant.scopes, grant.nonce, accessToken);
    if (grant.extra['refreshable'] === 'true')
      body['refresh_token'] = issue('refresh_token', user, grant.scopes, 180 * 24 * 3600);
    answer(res, 'authorization_code', user, body);
  }

  function refresh(seen: Seen, res: ServerResponse): void {
    const held = grants.live('refresh_token', seen.form.get('refresh_token') ?? undefined);
    if (!held || held.clientId !== client.clientId)
      return tokenError(res, 400, 'invalid_grant', 'Token has been expired or revoked.');
    const user = userBy(held.user)!;
    const body = {
      access_token: issue('access_token', user, held.scopes, grants.accessTokenLifetimeSeconds),
      expires_in: grants.accessTokenLifetimeSeconds,
      scope: held.scopes.map(reportedScope).join(' '),
      token_type: 'Bearer',
    };
    answer(res, 'refresh_token', user, body);
  }

  function answer(res: ServerResponse, grantType: string, user: GoogleUser, body: Record<string, unknown>): void {
    tokenAnswers.push({
      grantType,
      user: user.email,
      refreshToken: 'refresh_token' in body,
      scope: String(body['scope']),
    });
    json(res, 200, body);
  }

  function issue(kind: Issued['kind'], user: GoogleUser, scopes: string[], lifetimeSeconds: number): string {
    return grants.issue({
      kind,
      value: canary(kind === 'access_token' ? 'ya29.' : '1//'),
      user: user.email,
      clientId: client.clientId,
      scopes,
      expiresAt: Date.now() + lifetimeSeconds * 1000,
    });
  }

  async function idToken(
    user: GoogleUser,
    scopes: string[],
    nonce: string | undefined,
    accessToken: string,
  ): Promise<string> {
    const now = Math.floor(Date.now() / 1000);
    const digest = createHash('sha256').update(accessToken).digest();
    const value = await signer.sign({
      iss: ISSUER,
      azp: client.clientId,
      aud: client.clientId,
      sub: user.sub,
      ...(scopes.includes('email') && { email: user.email, email_verified: true }),
      ...(scopes.includes('profile') && { name: user.name }),
      at_hash: digest.subarray(0, digest.length / 2).toString('base64url'),
      ...(nonce !== undefined && { nonce }),
      iat: now,
      exp: now + 3600,
    });
    grants.issue({
      kind: 'id_token',
      value,
      user: user.email,
      clientId: client.clientId,
      scopes,
      expiresAt: (now + 3600) * 1000,
    });
    return value;
  }

  /** The token's holder, or a 401 answered (RFC 6750 §3.1). */
  function holder(seen: Seen, res: ServerResponse): { user: GoogleUser; token: Issued } | undefined {
    const held = grants.live('access_token', bearerOf(seen));
    if (!held) {
      apiError(
        res,
        401,
        'UNAUTHENTICATED',
        'Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential.',
        { 'www-authenticate': 'Bearer error="invalid_token"' },
      );
      return undefined;
    }
    return { user: userBy(held.user)!, token: held };
  }

  function userinfo(seen: Seen, res: ServerResponse): void {
    const found = holder(seen, res);
    if (!found) return;
    const { user, token: held } = found;
    json(res, 200, {
      sub: user.sub,
      ...(held.scopes.includes('email') && { email: user.email, email_verified: true }),
      ...(held.scopes.includes('profile') && { name: user.name }),
    });
  }

  function calendarList(seen: Seen, res: ServerResponse): void {
    const found = holder(seen, res);
    if (!found) return;
    if (!found.token.scopes.some((s) => CALENDAR_SCOPES.includes(s))) {
      return apiError(res, 403, 'PERMISSION_DENIED', 'Request had insufficient authentication scopes.', {
        'www-authenticate': 'Bearer error="insufficient_scope"',
      });
    }
    const items = found.user.calendars.map((c) => ({
      kind: 'calendar#calendarListEntry',
      id: c.id,
      summary: c.summary,
      accessRole: 'owner',
      ...(c.primary && { primary: true }),
    }));
    json(res, 200, {
      kind: 'calendar#calendarList',
      etag: '"p32g9nb5bt6fva0g"',
      nextSyncToken: 'CPDAlvWDx70CEPDAlvWDx70CGAU=',
      items,
    });
  }

  return { ...base, client, tokenAnswers, revocations };
}

function discoveryDocument() {
  return {
    issuer: ISSUER,
    authorization_endpoint: 'https://accounts.google.com/o/oauth2/v2/auth',
    device_authorization_endpoint: 'https://oauth2.googleapis.com/device/code',
    token_endpoint: 'https://oauth2.googleapis.com/token',
    userinfo_endpoint: 'https://openidconnect.googleapis.com/v1/userinfo',
    revocation_endpoint: 'https://oauth2.googleapis.com/revoke',
    jwks_uri: 'https://www.googleapis.com/oauth2/v3/certs',
    response_types_supported: [
      'code',
      'token',
      'id_token',
      'code token',
      'code id_token',
      'token id_token',
      'code token id_token',
      'none',
    ],
    subject_types_supported: ['public'],
    id_token_signing_alg_values_supported: ['RS256'],
    scopes_supported: ['openid', 'email', 'profile'],
    token_endpoint_auth_methods_supported: ['client_secret_post', 'client_secret_basic'],
    claims_supported: [
      'aud',
      'email',
      'email_verified',
      'exp',
      'family_name',
      'given_name',
      'iat',
      'iss',
      'name',
      'picture',
      'sub',
    ],
    code_challenge_methods_supported: ['plain', 'S256'],
    grant_types_supported: [
      'authorization_code',
      'refresh_token',
      'urn:ietf:params:oauth:grant-type:device_code',
      'urn:ietf:params:oauth:grant-type:jwt-bearer',
    ],
  };
}

// Request errors are shown on Google's page ("Error 400: redirect_uri_mismatch"), never sent to the redirect URI.
function errorPage(res: ServerResponse, code: string, detail: string): void {
  html(
    res,
    400,
    `<title>Error 400: ${code}</title><h1>Access blocked: this app's request is invalid</h1><p>Error 400: ${escapeHtml(code)}</p><p>${escapeHtml(detail)}</p>`,
  );
}

function tokenError(res: ServerResponse, status: number, error: string, description: string): void {
  json(res, status, { error, error_description: description });
}

function apiError(
  res: ServerResponse,
  code: number,
  status: string,
  message: string,
  headers: Record<string, string> = {},
): void {
  json(res, code, { error: { code, message, status } }, headers);
}

// How Google names a granted scope in a token answer.
const reportedScope = (scope: string): string =>
  scope === 'email' || scope === 'profile' ? `https://www.googleapis.com/auth/userinfo.${scope}` : scope;
