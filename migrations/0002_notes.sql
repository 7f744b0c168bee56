-- The notes tool (seed 000, design §8). Scope is explicit: a principal may
-- use a workspace only through a grant; notes carry their canonical file URI.
CREATE TABLE workspace_grants (
  principal_iss  text NOT NULL,
  principal_sub  text NOT NULL,
  workspace_uri  text NOT NULL CHECK (workspace_uri LIKE 'file:///_%'),
  granted_at     timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (principal_iss, principal_sub, workspace_uri)
);

CREATE TABLE notes (
  id              text PRIMARY KEY CHECK (id ~ '^note_[a-z0-9]{12}$'),
  workspace_uri   text NOT NULL CHECK (workspace_uri LIKE 'file:///_%'),
  note_uri        text NOT NULL UNIQUE CHECK (note_uri LIKE workspace_uri || '/%'),
  title           text NOT NULL CHECK (char_length(title) BETWEEN 1 AND 200),
  body            text NOT NULL CHECK (char_length(body) <= 20000),
  created_by_iss  text NOT NULL,
  created_by_sub  text NOT NULL,
  created_at      timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX notes_workspace_idx ON notes (workspace_uri, created_at);

-- Single-use confirmation nonces from sealed MRTR requestState (design §4):
-- claimed by INSERT in the same transaction as the mutation they guard, so a
-- replayed state, on any instance, finds the row and does nothing.
CREATE TABLE mrtr_nonces (
  nonce_digest   bytea PRIMARY KEY CHECK (octet_length(nonce_digest) = 32),
  principal_iss  text NOT NULL,
  principal_sub  text NOT NULL,
  purpose        text NOT NULL,
  outcome        text NOT NULL,
  expires_at     timestamptz NOT NULL,
  claimed_at     timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX mrtr_nonces_expires_idx ON mrtr_nonces (expires_at);
