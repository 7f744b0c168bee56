-- Several connections per provider, one per upstream account (work and personal GitHub): a
-- connection is its id, unique per (subject, provider, upstream account). A provider whose accounts
-- cannot be known (an upstream MCP server, identity `none`) records no account, and NULLS NOT
-- DISTINCT keeps it to one connection. One connection per (subject, provider) is the user's
-- default (`preferred`): the first one made, or the one the user chose (`preferred_chosen_at`).
ALTER TABLE connections DROP CONSTRAINT connections_pkey;
ALTER TABLE connections ADD PRIMARY KEY (id);
ALTER TABLE connections DROP CONSTRAINT connections_id_key;
ALTER TABLE connections ADD CONSTRAINT connections_account_key
  UNIQUE NULLS NOT DISTINCT (subject_iss, subject_sub, provider, upstream_subject);
ALTER TABLE connections
  ADD COLUMN preferred boolean NOT NULL DEFAULT false,
  ADD COLUMN preferred_chosen_at timestamptz,
  ADD CONSTRAINT connections_chosen_is_preferred CHECK (preferred_chosen_at IS NULL OR preferred);
-- Until now each user had one connection per provider: it is their default.
UPDATE connections SET preferred = true;
CREATE UNIQUE INDEX connections_one_preferred ON connections (subject_iss, subject_sub, provider) WHERE preferred;
CREATE INDEX connections_subject_provider_idx ON connections (subject_iss, subject_sub, provider);

-- Secrets belong to a connection. Their AAD binds the connection id from now on
-- (src/secrets/sealedTokens.ts, layout 2), so a ciphertext cannot be moved to another connection
-- of the same user and provider. A row sealed before (layout 1: subject, provider, kind) keeps
-- opening under its old AAD until the re-seal job (src/jobs/reseal.ts) seals it again under
-- layout 2; SQL cannot re-seal, as the keys live only in SECRET_KEYS.
ALTER TABLE secrets
  ADD COLUMN connection_id uuid REFERENCES connections (id),
  ADD COLUMN aad_layout smallint NOT NULL DEFAULT 2 CHECK (aad_layout IN (1, 2));
UPDATE secrets s SET connection_id = c.id, aad_layout = 1
  FROM connections c
 WHERE c.subject_iss = s.subject_iss AND c.subject_sub = s.subject_sub AND c.provider = s.provider;
-- A token row with no connection record (only possible before 0011 recorded every connection) has no
-- access token beside it, so no call could use it: nothing to keep.
DELETE FROM secrets WHERE connection_id IS NULL;
ALTER TABLE secrets ALTER COLUMN connection_id SET NOT NULL;
ALTER TABLE secrets DROP CONSTRAINT secrets_subject_iss_subject_sub_provider_kind_key;
ALTER TABLE secrets ADD CONSTRAINT secrets_connection_kind_key UNIQUE (connection_id, kind);
-- What the re-seal job still has to move to layout 2: an empty range once it is done.
CREATE INDEX secrets_old_aad_idx ON secrets (id) WHERE aad_layout = 1;

-- Which connection an accepted operation was performed through (src/broker/receiptConnectionRepo.ts):
-- with several accounts at a provider, the receipt says which one acted, and a re-drive uses it again.
ALTER TABLE operation_receipts ADD COLUMN connection_id uuid REFERENCES connections (id);
