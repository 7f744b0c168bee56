import { type Configuration, errors } from 'oidc-provider';
import type { Fetch } from '../shared/httpClient.js';

// oidc-provider's own list (lib/consts/client_attributes.js LOOPBACKS).
const LOOPBACK_HOSTS = new Set(['127.0.0.1', '[::1]', 'localhost']);

export function isLoopbackRedirect(uri: string): boolean {
  const url = URL.parse(uri);
  return url !== null && url.protocol === 'http:' && LOOPBACK_HOSTS.has(url.hostname);
}

/**
 * The client policy of a development server.
 *
 * - A client whose redirect URIs are all http loopback URIs is a native app
 *   (RFC 8252 §7.3: "MUST allow any port to be specified at the time of the
 *   request for loopback IP redirect URIs"); oidc-provider ignores the port
 *   only for `application_type: native`.
 * - With open registration, a client that is not one of `staticClientIds`
 *   (registered through RFC 7591, or named by its Client ID Metadata
 *   Document) may only redirect to loopback: codes go to the user's own
 *   machine, never to a site that registered itself.
 *
 * oidc-provider runs `extraClientMetadata.validator` for every client and lets
 * it change the metadata (lib/helpers/client_schema.js processCustomMetadata);
 * software_id and software_version are RFC 7591 §2 fields it would otherwise drop.
 */
export function clientPolicy(options: {
  staticClientIds: ReadonlySet<string>;
  openRegistration: boolean;
}): NonNullable<Configuration['extraClientMetadata']> {
  return {
    properties: ['software_id', 'software_version'],
    validator: (_ctx, key, _value, metadata) => {
      if (key !== 'software_id') return; // once per client, not once per property
      const redirects = [...(metadata.redirect_uris ?? []), ...(metadata.post_logout_redirect_uris ?? [])];
      const loopbackOnly = redirects.length > 0 && redirects.every(isLoopbackRedirect);
      if (options.openRegistration && !options.staticClientIds.has(metadata.client_id)) {
        if (!loopbackOnly)
          throw new errors.InvalidClientMetadata(
            'this development server accepts only loopback redirect URIs (http://127.0.0.1:<port>/…, http://[::1]:<port>/…) from clients it does not know',
          );
        delete metadata.scope;
      }
      if (loopbackOnly) metadata.application_type = 'native';
    },
  };
}

/**
 * Open Dynamic Client Registration (RFC 7591, no initial access token) and
 * Client ID Metadata Documents (the MCP 2026-07-28 authorization spec: an
 * https client_id is the URL of the client's metadata). Development only.
 * Documents are fetched with `fetch` (verified TLS, the development CA
 * trusted): its dispatcher replaces the one oidc-provider passes
 * (lib/helpers/fetch_request.js), whose SSRF guard refuses loopback
 * addresses, where development hosts serve their documents. oidc-provider
 * still refuses redirects, caps the body at 5 KiB and times out at 2.5 s.
 */
export function openRegistrationFeatures(fetch: Fetch): Pick<Configuration, 'fetch'> & {
  features: Pick<NonNullable<Configuration['features']>, 'registration' | 'clientIdMetadataDocument'>;
} {
  return {
    fetch: (url, options) => fetch(url, options),
    features: {
      registration: { enabled: true, initialAccessToken: false, issueRegistrationAccessToken: false },
      // 'draft-02' is the version oidc-provider 9.13 implements; a newer one fails at start, not silently.
      clientIdMetadataDocument: { enabled: true, ack: 'draft-02' },
    },
  };
}
