-- The URL-mode connection broker (design §4, seed 001). Every table below is
-- written only through its repo module; status moves only through the
-- transition table (src/broker/navigationStates.ts) by compare-and-set.

CREATE TABLE elicitation_navigations (
  id                  uuid PRIMARY KEY,
  record_version      text NOT NULL DEFAULT 'elicitationNavigation.v1' CHECK (record_version = 'elicitationNavigation.v1'),
  server_id           text NOT NULL,
  subject_iss         text NOT NULL,
  subject_sub         text NOT NULL,
  client_id           text,
  request_digest      text NOT NULL,
  tool                text NOT NULL,
  target_scheme       text NOT NULL CHECK (target_scheme IN ('https', 'http')),
  target_host         text NOT NULL,
  redirect_policy     jsonb NOT NULL,
  purpose             text NOT NULL,
  provider            text NOT NULL,
  -- The connect link carries a random handle; only its digest is stored.
  handle_digest       bytea NOT NULL UNIQUE CHECK (octet_length(handle_digest) = 32),
  state_nonce_digest  bytea CHECK (octet_length(state_nonce_digest) = 32),
  session_generation  integer NOT NULL DEFAULT 0,
  lineage             text NOT NULL CHECK (lineage IN ('mrtr', 'nested', 'error_retry')),
  retry_generation    integer NOT NULL DEFAULT 0,
  status              text NOT NULL CHECK (status IN (
                        'CREATED', 'USER_REVIEW', 'DECLINED', 'CANCELLED', 'NAVIGATION_ACCEPTED',
                        'OUT_OF_BAND_PENDING', 'COMPLETION_NOTIFIED', 'REQUIREMENT_VERIFIED', 'EXPIRED',
                        'USER_RETRY', 'NESTED_SERVER_CONTINUES', 'ORIGINAL_RESPONSE_ACCEPTED',
                        'ERROR_RETRY_ELIGIBLE', 'OPTIONAL_CLIENT_RETRY', 'RETRY_RESPONSE_ACCEPTED',
                        'MRTR_RETRY_ACCEPTED')),
  row_version         integer NOT NULL DEFAULT 1,
  created_at          timestamptz NOT NULL,
  expires_at          timestamptz NOT NULL,
  updated_at          timestamptz NOT NULL,
  CHECK (expires_at > created_at)
);
CREATE INDEX elicitation_navigations_subject_idx ON elicitation_navigations (subject_iss, subject_sub, provider, status);
CREATE INDEX elicitation_navigations_open_idx ON elicitation_navigations (expires_at) WHERE status IN ('CREATED', 'USER_REVIEW', 'NAVIGATION_ACCEPTED', 'OUT_OF_BAND_PENDING', 'COMPLETION_NOTIFIED');

-- Append-only ledger: one row per transition (or refusal), written in the transaction that made it.
CREATE TABLE navigation_events (
  id             bigserial PRIMARY KEY,
  navigation_id  uuid NOT NULL REFERENCES elicitation_navigations (id),
  from_status    text NOT NULL,
  to_status      text NOT NULL,
  event          text NOT NULL,
  actor          text NOT NULL,
  evidence       jsonb NOT NULL DEFAULT '{}'::jsonb,
  created_at     timestamptz NOT NULL
);
CREATE INDEX navigation_events_navigation_idx ON navigation_events (navigation_id, id);

CREATE FUNCTION navigation_events_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'navigation_events is append-only';
END;
$$;
CREATE TRIGGER navigation_events_no_update BEFORE UPDATE OR DELETE ON navigation_events
  FOR EACH ROW EXECUTE FUNCTION navigation_events_append_only();
CREATE TRIGGER navigation_events_no_truncate BEFORE TRUNCATE ON navigation_events
  FOR EACH STATEMENT EXECUTE FUNCTION navigation_events_append_only();

-- The user's explicit consent to be sent to the third party: at most one per navigation.
CREATE TABLE consent_receipts (
  id                     uuid PRIMARY KEY,
  navigation_id          uuid NOT NULL UNIQUE REFERENCES elicitation_navigations (id),
  browser_iss            text NOT NULL,
  browser_sub            text NOT NULL,
  displayed_destination  text NOT NULL,
  created_at             timestamptz NOT NULL
);

-- One row per authorization redirect; the callback consumes it at most once.
CREATE TABLE oauth_transactions (
  state_digest            bytea PRIMARY KEY CHECK (octet_length(state_digest) = 32),
  navigation_id           uuid NOT NULL REFERENCES elicitation_navigations (id),
  provider                text NOT NULL,
  code_verifier_sealed    bytea NOT NULL,
  key_id                  text NOT NULL,
  nonce                   text NOT NULL,
  redirect_uri            text NOT NULL,
  browser_iss             text NOT NULL,
  browser_sub             text NOT NULL,
  created_at              timestamptz NOT NULL,
  expires_at              timestamptz NOT NULL,
  CHECK (expires_at > created_at)
);
CREATE INDEX oauth_transactions_expires_idx ON oauth_transactions (expires_at);

-- The only place a third-party token exists at rest: AES-256-GCM, AAD binds subject, provider, kind, key id.
CREATE TABLE secrets (
  id                uuid PRIMARY KEY,
  subject_iss       text NOT NULL,
  subject_sub       text NOT NULL,
  provider          text NOT NULL,
  kind              text NOT NULL CHECK (kind IN ('access_token', 'refresh_token')),
  ciphertext        bytea NOT NULL,
  key_id            text NOT NULL,
  expires_at        timestamptz,
  upstream_subject  text,
  navigation_id     uuid REFERENCES elicitation_navigations (id),
  row_version       integer NOT NULL DEFAULT 1,
  created_at        timestamptz NOT NULL,
  updated_at        timestamptz NOT NULL,
  UNIQUE (subject_iss, subject_sub, provider, kind)
);

-- acceptOriginalOperation: at most one acceptance per original operation, across lineages and instances.
CREATE TABLE operation_receipts (
  id                    uuid PRIMARY KEY,
  operation_key         text NOT NULL UNIQUE,
  navigation_id         uuid NOT NULL REFERENCES elicitation_navigations (id),
  lineage               text NOT NULL CHECK (lineage IN ('mrtr', 'nested', 'error_retry')),
  jsonrpc_id            text,
  retry_generation      integer,
  requirement_receipt   text NOT NULL,
  outcome_status        text NOT NULL CHECK (outcome_status IN ('pending', 'succeeded', 'failed')),
  outcome               jsonb,
  result_digest         text,
  created_at            timestamptz NOT NULL,
  completed_at          timestamptz
);
