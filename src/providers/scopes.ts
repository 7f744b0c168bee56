/** What the broker knows about a provider's scopes beyond their names. */
export interface ScopeFacts {
  /** Every scope the provider asks for on a connect (the operator's `scopes`, or the entry's defaults). */
  scopes: readonly string[];
  /**
   * A granted scope → the scopes it includes, as the provider documents them (GitHub's `repo` includes
   * `public_repo`; Google grants `email` as `https://www.googleapis.com/auth/userinfo.email`). Closed:
   * what a scope includes is listed in full, not through another entry.
   */
  impliedScopes: Readonly<Record<string, readonly string[]>>;
}

/**
 * The scopes of `needed` that `granted` does not cover, in `needed`'s order. A scope is covered when it
 * was granted by name or is included in one that was. An empty grant on record covers nothing.
 */
export function missingScopes(facts: ScopeFacts, granted: readonly string[], needed: readonly string[]): string[] {
  const covered = new Set(granted.flatMap((scope) => [scope, ...(facts.impliedScopes[scope] ?? [])]));
  return needed.filter((scope) => !covered.has(scope));
}

/**
 * The scopes a connect asks for: the provider's, plus what the existing connection already holds, so
 * a second consent is for the union (RFC 6749 §3.3 leaves the grant to the request; without the held
 * ones a provider that replaces the grant would take them away). Held scopes that a requested one
 * already includes are not repeated.
 */
export function scopesToRequest(facts: ScopeFacts, held: readonly string[]): string[] {
  const extra = missingScopes(facts, facts.scopes, held);
  return [...new Set([...facts.scopes, ...extra])];
}
