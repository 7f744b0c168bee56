import { randomBytes } from 'node:crypto';
import { createOidcClient, discoverIssuerMetadata } from '../oauth/oauthClient.js';
import { signInSupport } from '../oauth/signInSupport.js';
import type { Fetch } from '../shared/httpClient.js';
import type { Secret } from '../shared/secret.js';
import { fail, ok, reasonOf, warn, type Finding } from './doctorFinding.js';

export interface IssuerSettings {
  issuer: string;
  clientId: string;
  clientSecret: Secret;
  /** PUBLIC_URL/auth/callback: where the issuer must send users back. */
  callbackUrl: string;
  allowLoopback: boolean;
  fetch: Fetch;
}

/**
 * The issuer as sign-in uses it (the same client /readyz asks), then what can be known of the
 * broker's registration there without a user: an authorization request with `prompt=none`. An
 * issuer may not redirect to a redirect URI it does not have for the client, nor for an unknown
 * client (RFC 6749 §4.1.2.1); one with no session sends the browser back with `login_required`
 * (OpenID Connect Core §3.1.2.6). So a redirect to the callback proves both registered; an answer
 * of its own (an error page) says one is not. Its client secret shows only at a token request.
 */
export async function checkIssuer(settings: IssuerSettings): Promise<Finding[]> {
  let problem: string | undefined;
  try {
    problem = await createOidcClient(settings).problem();
  } catch (err) {
    problem = reasonOf(err); // the URL policy refused the issuer itself
  }
  if (problem) return [fail('OIDC_ISSUER', `${settings.issuer}: ${problem}`)];
  const findings = [ok('OIDC_ISSUER', `${settings.issuer}: discovery ok, sign-in can start`)];
  const metadata = await discoverIssuerMetadata(settings).catch(() => undefined);
  if (!metadata) return findings;
  for (const unstated of signInSupport(metadata.signIn).unstated)
    findings.push(warn('OIDC_ISSUER', `its metadata does not state ${unstated}; sign-in sends it`));
  if (metadata.authorizationEndpoint) findings.push(await probeRedirect(settings, metadata.authorizationEndpoint));
  return findings;
}

async function probeRedirect(settings: IssuerSettings, authorizationEndpoint: string): Promise<Finding> {
  const subject = 'OIDC_CLIENT_ID';
  const url = new URL(authorizationEndpoint);
  const params = {
    client_id: settings.clientId,
    redirect_uri: settings.callbackUrl,
    response_type: 'code',
    scope: 'openid',
    state: randomBytes(16).toString('base64url'),
    code_challenge: randomBytes(32).toString('base64url'),
    code_challenge_method: 'S256',
    prompt: 'none',
  };
  for (const [name, value] of Object.entries(params)) url.searchParams.set(name, value);
  let response: Response;
  try {
    response = await settings.fetch(url, { redirect: 'manual' });
    await response.body?.cancel();
  } catch (err) {
    return fail(subject, `the authorization endpoint ${authorizationEndpoint} did not answer (${reasonOf(err)})`);
  }
  const location = response.headers.get('location');
  const target = location ? new URL(location, url) : undefined;
  const callback = new URL(settings.callbackUrl);
  if (target && target.origin === callback.origin && target.pathname === callback.pathname) {
    const error = target.searchParams.get('error') ?? '';
    if (['unauthorized_client', 'unsupported_response_type', 'invalid_scope', 'access_denied'].includes(error))
      return fail(
        subject,
        `${settings.issuer} sent a sign-in back with ${error}: allow the client the authorization code flow with scope openid`,
      );
    return ok(
      subject,
      `${settings.clientId} and the redirect URI ${settings.callbackUrl} are registered at ${settings.issuer}`,
    );
  }
  if (response.status >= 400 && response.status < 500)
    return fail(
      subject,
      `${settings.issuer} refused a sign-in without sending it back (HTTP ${response.status}): register the redirect URI ${settings.callbackUrl} for client ${settings.clientId}, or check OIDC_CLIENT_ID`,
    );
  return warn(
    subject,
    `cannot tell whether ${settings.issuer} has the redirect URI ${settings.callbackUrl} for ${settings.clientId} (HTTP ${response.status}${target ? ` to ${target.origin}${target.pathname}` : ''}): a sign-in will tell`,
  );
}
