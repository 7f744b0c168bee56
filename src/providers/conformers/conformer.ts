// A conformer turns one provider family's token-endpoint answer into the
// shape RFC 6749 defines (§5.1 success, §5.2 error), before the OAuth client
// parses it: openid-client accepts only `token_type` bearer or dpop, a string
// `refresh_token`, and an error body only on a non-200 status. Conformers are
// pure and total: any input gives one of the two shapes below, never a throw,
// and no error ever carries a token value.

/** The provider's raw answer: status, headers, and the body parsed as JSON or form-decoded (a string when neither worked). */
export interface RawTokenResponse {
  status: number;
  headers: Readonly<Record<string, string>>;
  body: unknown;
}

/** RFC 6749 §5.1, with the broker's fixed `token_type` (it only ever sends Bearer tokens, RFC 6750). */
export interface StandardTokenBody {
  access_token: string;
  token_type: 'Bearer';
  expires_in?: number;
  refresh_token?: string;
  scope?: string;
  /** Kept for OpenID Connect providers (OpenID Connect Core 1.0 §3.1.3.3). */
  id_token?: string;
}

/** RFC 6749 §5.2. */
export interface StandardTokenError {
  error: string;
  error_description?: string;
}

/**
 * Connection metadata a provider returns beside the token (Slack `team.id`,
 * Salesforce `instance_url`, Notion `workspace_id`), keyed by the member's
 * path in the provider's answer. Never a token.
 */
export type TokenExtras = Readonly<Record<string, string>>;

export type ConformedTokenResponse =
  { status: 200; body: StandardTokenBody; extras: TokenExtras } | { status: 400; body: StandardTokenError };

/** `keep`: more member paths to keep as extras, the ones a provider entry reads from the answer (its identity, its connection API base). */
export type Conformer = (raw: RawTokenResponse, keep?: readonly string[]) => ConformedTokenResponse;
