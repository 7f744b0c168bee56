-- Browser sessions operators can see and end (src/ops/sessionRevocation.ts, `broker sessions`).
--
-- public_id names a session on the CLI and the /ops pages; it is not derived from the cookie, so
-- showing it reveals nothing that could be presented as one. revoked_at (0001) ends a session
-- before its expiry: the next request with its cookie finds no session.
ALTER TABLE web_sessions
  ADD COLUMN public_id text NOT NULL DEFAULT ('sess_' || replace(gen_random_uuid()::text, '-', ''))
    CHECK (public_id ~ '^sess_[0-9a-f]{32}$'),
  -- Kept to the minute (src/auth/signIn.ts): when the browser last used the session.
  ADD COLUMN last_seen_at timestamptz,
  -- When the user last proved who they are at the identity provider (the ID Token's auth_time),
  -- on the broker's clock; NULL when the provider did not say. Operator actions need it recent.
  ADD COLUMN authenticated_at timestamptz;
UPDATE web_sessions SET last_seen_at = created_at;
-- The broker always sets it; the default is for rows written by hand.
ALTER TABLE web_sessions ALTER COLUMN last_seen_at SET DEFAULT now(), ALTER COLUMN last_seen_at SET NOT NULL;
CREATE UNIQUE INDEX web_sessions_public_id_idx ON web_sessions (public_id);
