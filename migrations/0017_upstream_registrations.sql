-- The broker's clients at upstream MCP servers' authorization servers, registered by Dynamic Client
-- Registration (RFC 7591; src/upstream/registration.ts). A registration belongs to the issuer that
-- made it and is never used with another (the MCP authorization spec, "Authorization Server
-- Binding"); each upstream has its own redirect URI, so one is kept per (issuer, upstream,
-- redirect URI), made once and reused by every instance. A client secret, when the server issued
-- one, is sealed like the vault's tokens (AAD: the row's id); a public client has none.
CREATE TABLE upstream_registrations (
  id                         uuid PRIMARY KEY,
  issuer                     text NOT NULL,
  upstream                   text NOT NULL,
  redirect_uri               text NOT NULL,
  client_id                  text NOT NULL,
  client_secret_sealed       bytea,
  key_id                     text,
  token_endpoint_auth_method text NOT NULL
    CHECK (token_endpoint_auth_method IN ('none', 'client_secret_basic', 'client_secret_post')),
  -- RFC 7591 §3.2.1 client_secret_expires_at; null: it does not expire.
  client_secret_expires_at   timestamptz,
  registered_at              timestamptz NOT NULL,
  UNIQUE (issuer, upstream, redirect_uri),
  CONSTRAINT upstream_registrations_sealed_with_key CHECK ((client_secret_sealed IS NULL) = (key_id IS NULL)),
  CONSTRAINT upstream_registrations_secret_when_confidential
    CHECK ((token_endpoint_auth_method = 'none') = (client_secret_sealed IS NULL))
);

-- What the re-seal job and `broker keys status` look up by (as migration 0012 for the other sealed columns).
CREATE INDEX upstream_registrations_key_id_idx ON upstream_registrations (key_id, id) WHERE key_id IS NOT NULL;
