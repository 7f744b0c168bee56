-- What the broker knows about a connection besides its tokens: who the user
-- is at the provider, what the provider granted, and the connection facts it
-- returned or a post-connect call found (Slack's team, Salesforce's
-- instance_url as that connection's API base). Never a token: those live
-- only in `secrets`, sealed. A forgotten connection keeps this row (the last
-- account it held); a reconnect replaces it.
CREATE TABLE connections (
  id                uuid NOT NULL UNIQUE,
  subject_iss       text NOT NULL,
  subject_sub       text NOT NULL,
  provider          text NOT NULL,
  upstream_subject  text,
  upstream_name     text,
  granted_scopes    text[] NOT NULL DEFAULT '{}',
  metadata          jsonb NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(metadata) = 'object'),
  api_base          text,
  navigation_id     uuid REFERENCES elicitation_navigations (id),
  connected_at      timestamptz NOT NULL,
  updated_at        timestamptz NOT NULL,
  PRIMARY KEY (subject_iss, subject_sub, provider)
);

-- Connections made before this table: their account as the ID token named it, nothing more known.
INSERT INTO connections (id, subject_iss, subject_sub, provider, upstream_subject, navigation_id, connected_at, updated_at)
SELECT gen_random_uuid(), subject_iss, subject_sub, provider, upstream_subject, navigation_id, created_at, updated_at
  FROM secrets WHERE kind = 'access_token';

-- One place for the upstream account.
ALTER TABLE secrets DROP COLUMN upstream_subject;
