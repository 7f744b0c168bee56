-- Browser sessions (design §3, §4). The cookie carries a random 256-bit id;
-- only its SHA-256 digest is stored, so a database read cannot hijack a session.
CREATE TABLE web_sessions (
  id_digest     bytea PRIMARY KEY CHECK (octet_length(id_digest) = 32),
  subject_iss   text,
  subject_sub   text,
  display_name  text,
  created_at    timestamptz NOT NULL DEFAULT now(),
  expires_at    timestamptz NOT NULL,
  revoked_at    timestamptz,
  -- A session is either anonymous (sign-in pending) or bound to one whole subject.
  CHECK ((subject_iss IS NULL) = (subject_sub IS NULL)),
  CHECK (expires_at > created_at)
);
CREATE INDEX web_sessions_subject_idx ON web_sessions (subject_iss, subject_sub) WHERE subject_sub IS NOT NULL;
CREATE INDEX web_sessions_expires_idx ON web_sessions (expires_at);

-- One row per sign-in redirect to the identity provider, consumed at most once
-- by the callback (DELETE … RETURNING) and only from the browser session that
-- started it.
CREATE TABLE login_transactions (
  state_digest    bytea PRIMARY KEY CHECK (octet_length(state_digest) = 32),
  session_digest  bytea NOT NULL REFERENCES web_sessions (id_digest) ON DELETE CASCADE,
  code_verifier   text NOT NULL,
  nonce           text NOT NULL,
  return_to       text NOT NULL CHECK (return_to LIKE '/%' AND return_to NOT LIKE '//%'),
  created_at      timestamptz NOT NULL DEFAULT now(),
  expires_at      timestamptz NOT NULL,
  CHECK (expires_at > created_at)
);
CREATE INDEX login_transactions_expires_idx ON login_transactions (expires_at);
