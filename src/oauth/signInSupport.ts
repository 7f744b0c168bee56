/** The members of an issuer's discovery document that say whether the broker's sign-in can work. */
export interface SignInMetadata {
  responseTypes: readonly string[] | undefined;
  grantTypes: readonly string[] | undefined;
  codeChallengeMethods: readonly string[] | undefined;
}

export interface SignInSupport {
  /** What the document says the issuer does not do and the sign-in needs: sign-in cannot work. */
  missing: string[];
  /** What the document does not say (an optional member left out): sign-in may work; only a sign-in tells. */
  unstated: string[];
}

/**
 * The broker signs users in with the authorization code flow and PKCE S256 (oauthClient.ts
 * beginAuthorization). OpenID Connect Discovery 1.0 §3 requires `response_types_supported`;
 * `grant_types_supported` defaults to authorization_code and implicit when absent; RFC 8414 §2
 * `code_challenge_methods_supported` means no PKCE when absent, though many issuers accept it unsaid.
 */
export function signInSupport(metadata: SignInMetadata): SignInSupport {
  const missing: string[] = [];
  const unstated: string[] = [];
  if (metadata.responseTypes !== undefined && !metadata.responseTypes.includes('code'))
    missing.push('response type "code" (response_types_supported)');
  if (metadata.grantTypes !== undefined && !metadata.grantTypes.includes('authorization_code'))
    missing.push('grant type authorization_code (grant_types_supported)');
  if (metadata.codeChallengeMethods === undefined) unstated.push('PKCE S256 (no code_challenge_methods_supported)');
  else if (!metadata.codeChallengeMethods.includes('S256'))
    missing.push('PKCE S256 (code_challenge_methods_supported)');
  return { missing, unstated };
}
