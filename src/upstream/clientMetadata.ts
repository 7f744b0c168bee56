import { callbackPathFor } from '../broker/brokerDeps.js';

// What the broker tells an upstream's authorization server about itself as a client (RFC 7591 §2):
// sent in a Dynamic Client Registration, or served as its Client ID Metadata Document. Each
// upstream gets its own redirect URI, so an authorization response only ever reaches the token
// endpoint of the upstream it came back for (RFC 9700 §4.4.2).

/** Where the broker serves an upstream's Client ID Metadata Document; the URL is its client_id. */
export const CLIENT_METADATA_ROUTE = '/oauth/clients/:provider';

export const clientMetadataUrl = (publicUrl: URL, providerId: string): string =>
  new URL(`/oauth/clients/${providerId}`, publicUrl).href;

export const redirectUriFor = (publicUrl: URL, providerId: string): string =>
  new URL(callbackPathFor(providerId), publicUrl).href;

/** The client metadata for `providerId`'s authorization server: a web application with one redirect URI. */
export function clientMetadataOf(publicUrl: URL, providerId: string) {
  return {
    client_name: 'Connect Broker',
    client_uri: publicUrl.origin,
    redirect_uris: [redirectUriFor(publicUrl, providerId)],
    grant_types: ['authorization_code', 'refresh_token'],
    response_types: ['code'],
    // The MCP spec ("Dynamic Client Registration") asks for it: an https redirect on the broker's origin is a web client's.
    application_type: 'web',
  };
}

/**
 * The Client ID Metadata Document (draft-ietf-oauth-client-id-metadata-document): the metadata, its
 * own URL as client_id, and no client secret (a document is public: the client is too, PKCE its proof).
 */
export function clientMetadataDocument(publicUrl: URL, providerId: string) {
  return {
    client_id: clientMetadataUrl(publicUrl, providerId),
    ...clientMetadataOf(publicUrl, providerId),
    token_endpoint_auth_method: 'none',
  };
}
