import { createHash, randomUUID } from 'node:crypto';
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
  verifierMatches,
  type Emulator,
  type Issued,
  type PendingGrant,
  type Seen,
} from './googleMicrosoftShared.js';

// The Microsoft identity platform (Entra ID, v2.0 endpoints) and Microsoft
// Graph as Microsoft's pages describe them, on the real hosts (mapped by
// test/support/hostMap.ts):
// - https://learn.microsoft.com/en-us/entra/identity-platform/v2-oauth2-auth-code-flow:
//   `/{tenant}/oauth2/v2.0/authorize` and `/token` on login.microsoftonline.com;
//   scopes space-separated; PKCE plain or S256; the client secret in the body or
//   HTTP Basic; a refresh token "only provided if offline_access scope was
//   requested", an ID token only with `openid`; a refresh answer carries a new
//   refresh token to replace the old one, and the old one is not revoked; errors
//   redirected as `error=access_denied&error_description=…`, token errors as
//   `{error, error_description, error_codes, timestamp, trace_id, correlation_id}`.
// - https://learn.microsoft.com/en-us/entra/identity-platform/reference-error-codes:
//   every AADSTS code used here (AADSTS50194: a single-tenant app on /common;
//   AADSTS90002: a tenant not found; AADSTS501481: the PKCE verifier). Where that
//   page gives only a code's name, the message is the emulator's.
// - The RFC 8707 `resource` parameter beside v2 scopes is refused with
//   AADSTS9010010 ("The resource parameter provided in the request doesn't match
//   with the requested scopes."). That code is not in the reference page (which
//   lists AADSTS901002, "The 'resource' request parameter isn't supported"): its
//   text is as users report it; the `error` value is RFC 8707 §2's invalid_target.
// - https://learn.microsoft.com/en-us/entra/identity-platform/id-tokens: iss
//   `https://login.microsoftonline.com/{tid}/v2.0`, aud, sub, oid, tid, ver,
//   preferred_username and name (profile scope), nonce; signed RS256.
// - https://learn.microsoft.com/en-us/entra/identity-platform/v2-oauth2-client-creds-grant-flow: ext_expires_in.
// - https://learn.microsoft.com/en-us/graph/api/user-get (GET /me: id, userPrincipalName; User.Read),
//   https://learn.microsoft.com/en-us/graph/api/user-list-calendars (Calendars.Read),
//   https://learn.microsoft.com/en-us/graph/errors (`{error: {code, message, innerError}}`;
//   401 InvalidAuthenticationToken).
// Passwords, sessions, conditional access and admin consent are left out.

export const MICROSOFT_HOSTS = ['login.microsoftonline.com', 'graph.microsoft.com'] as const;
const CODE_TTL_MS = 10 * 60_000;
const GRAPH = 'https://graph.microsoft.com/';
const MULTI_TENANT_SEGMENTS = new Set(['common', 'organizations', 'consumers']);

export interface EntraTenant {
  /** The directory (tenant) id, a GUID. */
  id: string;
  /** A verified domain of the tenant (contoso.onmicrosoft.com). */
  domain: string;
}

export interface EntraUser {
  userPrincipalName: string;
  /** The object id, a GUID. */
  id: string;
  displayName: string;
  calendars: { id: string; name: string; isDefaultCalendar: boolean }[];
}

/** A single-tenant app registration: it may sign in only through its tenant's endpoints. */
export interface EntraApp {
  clientId: string;
  clientSecret: string;
  redirectUris: string[];
}

export interface MicrosoftEmulator extends Emulator {
  tenant: EntraTenant;
  app: EntraApp;
  /** What each token answer held, in order, and the tenant path it was asked at. */
  tokenAnswers: {
    grantType: string;
    tenant: string;
    user: string;
    refreshToken: boolean;
    idToken: boolean;
    scope: string;
  }[];
}

export async function startMicrosoftEmulator(options: {
  tls: TlsMaterial;
  tenant: EntraTenant;
  app: EntraApp;
  users: EntraUser[];
}): Promise<MicrosoftEmulator> {
  const { tenant, app } = options;
  const signer = await createJwtSigner();
  const grants = new GrantBook();
  const tokenAnswers: MicrosoftEmulator['tokenAnswers'] = [];
  const userBy = (upn: string | null) =>
    options.users.find((u) => u.userPrincipalName.toLowerCase() === upn?.toLowerCase());

  const base = await startEmulator(
    options.tls,
    { hosts: MICROSOFT_HOSTS, grants, signer, clientSecret: app.clientSecret },
    (seen, res) => {
      if (seen.host === 'graph.microsoft.com') return graph(seen, res);
      const [, segment = '', ...rest] = seen.path.split('/');
      const endpoint = `${seen.method} /${rest.join('/')}`;
      const problem = tenantProblem(segment);
      if (endpoint === 'GET /oauth2/v2.0/authorize')
        return problem ? errorPage(res, problem) : authorize(seen, res, segment);
      if (endpoint === 'POST /oauth2/v2.0/approve') return approve(seen, res, segment);
      if (endpoint === 'POST /oauth2/v2.0/token')
        return problem ? entraError(res, 400, 'invalid_request', problem) : token(seen, res, segment);
      if (endpoint === 'GET /discovery/v2.0/keys' && !problem) return json(res, 200, signer.jwks);
      return json(res, 404, { error: 'not_found' });
    },
  );

  function tenantProblem(segment: string): { code: number; message: string } | undefined {
    const name = segment.toLowerCase();
    if (name === tenant.id || name === tenant.domain) return undefined;
    if (MULTI_TENANT_SEGMENTS.has(name)) {
      return {
        code: 50194,
        message: `Application '${app.clientId}' is not configured as a multi-tenant application. Usage of the /${name} endpoint is not supported for such applications. Use a tenant-specific endpoint or configure the application to be multi-tenant.`,
      };
    }
    return { code: 90002, message: `Tenant '${segment}' not found.` };
  }

  function authorize(seen: Seen, res: ServerResponse, segment: string): void {
    const q = seen.query;
    if (q.get('client_id') !== app.clientId)
      return errorPage(res, {
        code: 700016,
        message: `Application with identifier '${q.get('client_id') ?? ''}' was not found in the directory '${tenant.domain}'.`,
      });
    const redirectUri = q.get('redirect_uri') ?? '';
    if (!app.redirectUris.includes(redirectUri))
      return errorPage(res, {
        code: 50011,
        message: `The redirect URI '${redirectUri}' specified in the request does not match the redirect URIs configured for the application '${app.clientId}'.`,
      });
    const state = q.get('state') ?? undefined;
    const refuse = (error: string, code: number, message: string) =>
      redirectBack(res, redirectUri, { error, error_description: `AADSTS${code}: ${message}`, state });
    if (q.has('resource'))
      return refuse(
        'invalid_target',
        9010010,
        "The resource parameter provided in the request doesn't match with the requested scopes.",
      );
    if (q.get('response_type') !== 'code')
      return refuse('unsupported_response_type', 70005, 'The app returned an unsupported response type.');
    const scopes = (q.get('scope') ?? '').split(' ').filter((s) => s !== '');
    if (scopes.length === 0)
      return refuse('invalid_request', 900144, "The request body must contain the following parameter: 'scope'.");
    const method = q.get('code_challenge_method') ?? (q.has('code_challenge') ? 'plain' : undefined);
    if (method !== undefined && method !== 'S256' && method !== 'plain')
      return refuse('invalid_request', 90100, 'The code_challenge_method parameter is not valid.');
    const request: PendingGrant = {
      clientId: app.clientId,
      redirectUri,
      scopes,
      state,
      nonce: q.get('nonce') ?? undefined,
      challenge: q.get('code_challenge') ?? undefined,
      challengeMethod: method,
      extra: { tenant: segment },
    };
    html(res, 200, page(grants.remember(request), segment, scopes));
  }

  function page(requestId: string, segment: string, scopes: string[], problem?: string): string {
    return consentPage({
      brand: 'Microsoft',
      app: 'Connect Broker',
      action: `/${segment}/oauth2/v2.0/approve`,
      requestId,
      listed: scopes,
      choosable: [],
      ...(problem && { problem }),
    });
  }

  function approve(seen: Seen, res: ServerResponse, segment: string): void {
    const requestId = seen.form.get('request') ?? '';
    const request = grants.requests.get(requestId);
    if (!request || request.extra['tenant'] !== segment)
      return errorPage(res, { code: 90100, message: 'The request is not valid or has expired.' });
    if (seen.form.get('decision') !== 'allow') {
      grants.requests.delete(requestId);
      return redirectBack(res, request.redirectUri, {
        error: 'access_denied',
        error_description: 'the user canceled the authentication',
        state: request.state,
      });
    }
    const user = userBy(seen.form.get('login'));
    if (!user)
      return html(
        res,
        200,
        page(requestId, segment, request.scopes, 'This username may be incorrect. Make sure you typed it correctly.'),
      );
    grants.requests.delete(requestId);
    const code = canary('M.C5');
    grants.codes.set(code, { ...request, user: user.userPrincipalName, expiresAt: Date.now() + CODE_TTL_MS });
    redirectBack(res, request.redirectUri, { code, state: request.state });
  }

  async function token(seen: Seen, res: ServerResponse, segment: string): Promise<void> {
    const form = seen.form;
    const credentials = clientCredentials(seen);
    if (credentials.method === 'both')
      return entraError(res, 400, 'invalid_request', { code: 90023, message: 'Client credentials were sent twice.' });
    if (credentials.id !== app.clientId)
      return entraError(res, 400, 'unauthorized_client', {
        code: 700016,
        message: `Application with identifier '${credentials.id ?? ''}' was not found in the directory '${tenant.domain}'.`,
      });
    if (credentials.secret === undefined)
      return entraError(res, 401, 'invalid_client', {
        code: 7000218,
        message: "The request body must contain the following parameter: 'client_assertion' or 'client_secret'.",
      });
    if (credentials.secret !== app.clientSecret)
      return entraError(res, 401, 'invalid_client', { code: 7000215, message: 'Invalid client secret provided.' });
    if (form.has('resource'))
      return entraError(res, 400, 'invalid_target', {
        code: 9010010,
        message: "The resource parameter provided in the request doesn't match with the requested scopes.",
      });
    const grantType = form.get('grant_type');
    if (grantType === 'authorization_code') return exchangeCode(seen, res, segment);
    if (grantType === 'refresh_token') return refresh(seen, res, segment);
    return entraError(res, 400, 'unsupported_grant_type', {
      code: 70003,
      message: `The app requested an unsupported grant type '${grantType ?? ''}'.`,
    });
  }

  async function exchangeCode(seen: Seen, res: ServerResponse, segment: string): Promise<void> {
    const code = seen.form.get('code') ?? '';
    const grant = grants.codes.get(code);
    if (!grant)
      return entraError(res, 400, 'invalid_grant', {
        code: 54005,
        message:
          'OAuth2 Authorization code was already redeemed, please retry with a new valid code or use an existing refresh token.',
      });
    grants.codes.delete(code);
    if (grant.expiresAt < Date.now())
      return entraError(res, 400, 'invalid_grant', {
        code: 70008,
        message: 'The provided authorization code or refresh token has expired.',
      });
    if (grant.redirectUri !== seen.form.get('redirect_uri'))
      return entraError(res, 400, 'invalid_grant', {
        code: 70000,
        message: 'The redirect_uri does not match the one of the authorization request.',
      });
    if (!verifierMatches(seen.form.get('code_verifier'), grant.challenge, grant.challengeMethod))
      return entraError(res, 400, 'invalid_grant', {
        code: 501481,
        message: 'The Code_Verifier does not match the code_challenge supplied in the authorization request.',
      });
    await answer(res, 'authorization_code', userBy(grant.user)!, grant.scopes, segment, grant.nonce);
  }

  async function refresh(seen: Seen, res: ServerResponse, segment: string): Promise<void> {
    const held = grants.live('refresh_token', seen.form.get('refresh_token') ?? undefined);
    if (!held || held.clientId !== app.clientId)
      return entraError(res, 400, 'invalid_grant', {
        code: 70008,
        message: 'The provided authorization code or refresh token has expired due to inactivity.',
      });
    await answer(res, 'refresh_token', userBy(held.user)!, held.scopes, segment, undefined);
  }

  async function answer(
    res: ServerResponse,
    grantType: string,
    user: EntraUser,
    scopes: string[],
    segment: string,
    nonce: string | undefined,
  ): Promise<void> {
    const lifetime = grants.accessTokenLifetimeSeconds;
    const body: Record<string, unknown> = {
      token_type: 'Bearer',
      scope: scopes.join(' '),
      expires_in: lifetime,
      ext_expires_in: lifetime,
      access_token: issue('access_token', canary('EwB'), user, scopes, lifetime),
    };
    if (scopes.includes('offline_access'))
      body['refresh_token'] = issue('refresh_token', canary('M.R3_BAY.'), user, scopes, 90 * 24 * 3600);
    if (scopes.includes('openid'))
      body['id_token'] = issue('id_token', await idToken(user, scopes, nonce), user, scopes, 3600);
    tokenAnswers.push({
      grantType,
      tenant: segment,
      user: user.userPrincipalName,
      refreshToken: 'refresh_token' in body,
      idToken: 'id_token' in body,
      scope: String(body['scope']),
    });
    json(res, 200, body);
  }

  function issue(
    kind: Issued['kind'],
    value: string,
    user: EntraUser,
    scopes: string[],
    lifetimeSeconds: number,
  ): string {
    return grants.issue({
      kind,
      value,
      user: user.userPrincipalName,
      clientId: app.clientId,
      scopes,
      expiresAt: Date.now() + lifetimeSeconds * 1000,
    });
  }

  function idToken(user: EntraUser, scopes: string[], nonce: string | undefined): Promise<string> {
    const now = Math.floor(Date.now() / 1000);
    return signer.sign({
      ver: '2.0',
      iss: `https://login.microsoftonline.com/${tenant.id}/v2.0`,
      aud: app.clientId,
      // `sub` is pairwise: one user has a different one in each app.
      sub: createHash('sha256').update(`${user.id}\n${app.clientId}`).digest('base64url').slice(0, 43),
      oid: user.id,
      tid: tenant.id,
      ...(scopes.includes('profile') && { preferred_username: user.userPrincipalName, name: user.displayName }),
      ...(nonce !== undefined && { nonce }),
      iat: now,
      nbf: now,
      exp: now + 3600,
    });
  }

  function graph(seen: Seen, res: ServerResponse): void {
    const held = grants.live('access_token', bearerOf(seen));
    if (!held)
      return graphError(res, 401, 'InvalidAuthenticationToken', 'Access token has expired or is not yet valid.');
    const user = userBy(held.user)!;
    const granted = new Set(
      held.scopes.map((s) => (s.toLowerCase().startsWith(GRAPH) ? s.slice(GRAPH.length) : s).toLowerCase()),
    );
    if (seen.method === 'GET' && seen.path === '/v1.0/me') {
      if (!granted.has('user.read'))
        return graphError(
          res,
          403,
          'Authorization_RequestDenied',
          'Insufficient privileges to complete the operation.',
        );
      return json(res, 200, {
        '@odata.context': 'https://graph.microsoft.com/v1.0/$metadata#users/$entity',
        businessPhones: [],
        displayName: user.displayName,
        givenName: null,
        jobTitle: null,
        mail: user.userPrincipalName,
        mobilePhone: null,
        officeLocation: null,
        preferredLanguage: 'en-US',
        surname: null,
        userPrincipalName: user.userPrincipalName,
        id: user.id,
      });
    }
    if (seen.method === 'GET' && seen.path === '/v1.0/me/calendars') {
      if (!['calendars.read', 'calendars.readbasic', 'calendars.readwrite'].some((s) => granted.has(s)))
        return graphError(res, 403, 'ErrorAccessDenied', 'Access is denied. Check credentials and try again.');
      const value = user.calendars.map((c) => ({
        id: c.id,
        name: c.name,
        color: 'auto',
        isDefaultCalendar: c.isDefaultCalendar,
        canEdit: true,
        owner: { name: user.displayName, address: user.userPrincipalName },
      }));
      return json(res, 200, {
        '@odata.context': `https://graph.microsoft.com/v1.0/$metadata#users('${user.id}')/calendars`,
        value,
      });
    }
    graphError(res, 400, 'BadRequest', `Resource not found for the segment '${seen.path.split('/').pop() ?? ''}'.`);
  }

  return { ...base, tenant, app, tokenAnswers };
}

// Sign-in problems Entra shows on its own page rather than sending to an unverified redirect URI.
function errorPage(res: ServerResponse, problem: { code: number; message: string }): void {
  html(
    res,
    400,
    `<title>Sign in to your account</title><h1>Sorry, but we're having trouble signing you in.</h1><p>AADSTS${problem.code}: ${escapeHtml(problem.message)}</p>`,
  );
}

function entraError(
  res: ServerResponse,
  status: number,
  error: string,
  problem: { code: number; message: string },
): void {
  const traceId = randomUUID();
  const correlationId = randomUUID();
  const timestamp = `${new Date().toISOString().slice(0, 19).replace('T', ' ')}Z`;
  json(res, status, {
    error,
    error_description: `AADSTS${problem.code}: ${problem.message}\r\nTrace ID: ${traceId}\r\nCorrelation ID: ${correlationId}\r\nTimestamp: ${timestamp}`,
    error_codes: [problem.code],
    timestamp,
    trace_id: traceId,
    correlation_id: correlationId,
    error_uri: `https://login.microsoftonline.com/error?code=${problem.code}`,
  });
}

function graphError(res: ServerResponse, status: number, code: string, message: string): void {
  json(res, status, {
    error: {
      code,
      message,
      innerError: {
        date: new Date().toISOString().slice(0, 19),
        'request-id': randomUUID(),
        'client-request-id': randomUUID(),
      },
    },
  });
}
