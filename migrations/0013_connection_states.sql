-- A connection's life as data (src/secrets/connectionStates.ts holds the same states): active;
-- refreshing, while one instance holds the refresh lease until `lease_until` (nobody holds a row lock
-- or a pooled connection during the provider call); needs_reauth, when the provider refused a refresh
-- or a call; revoked. Every change is a compare-and-set on `version`.
ALTER TABLE connections
  ADD COLUMN state text NOT NULL DEFAULT 'active'
    CHECK (state IN ('active', 'refreshing', 'needs_reauth', 'revoked')),
  ADD COLUMN version bigint NOT NULL DEFAULT 0,
  ADD COLUMN lease_until timestamptz,
  ADD COLUMN last_used_at timestamptz,
  ADD CONSTRAINT connections_lease_only_refreshing CHECK ((state = 'refreshing') = (lease_until IS NOT NULL));

-- A connection whose tokens were forgotten before states existed needs the user again.
UPDATE connections c SET state = 'needs_reauth'
 WHERE NOT EXISTS (
   SELECT 1 FROM secrets s
    WHERE s.subject_iss = c.subject_iss AND s.subject_sub = c.subject_sub AND s.provider = c.provider);

-- The proactive refresh finds live connections by their access token's expiry.
CREATE INDEX secrets_access_expiry ON secrets (expires_at) WHERE kind = 'access_token' AND expires_at IS NOT NULL;
