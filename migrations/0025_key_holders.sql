-- Which key ids of SECRET_KEYS each running instance holds (src/secrets/keyAgreement.ts). During a
-- key rotation instances restart one by one, so for a while some hold the new key and some do not:
-- nothing is sealed under a new key, and nothing re-sealed, until every live instance holds it. A
-- row is live while its instance renews seen_at; a stopped instance removes its own, a killed one
-- ages out.
CREATE TABLE key_holders (
  instance_id text PRIMARY KEY,
  key_ids text[] NOT NULL CHECK (cardinality(key_ids) > 0),
  seen_at timestamptz NOT NULL DEFAULT now()
);
