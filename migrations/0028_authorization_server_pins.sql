-- The authorization server each provider whose endpoints come from discovery is bound to: an
-- upstream MCP server's (its Protected Resource Metadata, RFC 9728, names it) or a catalog
-- provider's discovered one. Pinned on first successful use, or declared by the operator
-- (PROVIDERS_FILE `issuer`); a refresh token, a client secret or a registration request only ever
-- goes to these endpoints. When discovery later names another server it is kept here
-- (`changed_to`, `changed_at`) and nothing is sent until an operator re-pins
-- (`broker upstreams repin`, recorded in operator_actions).
CREATE TABLE authorization_server_pins (
  provider    text PRIMARY KEY,
  issuer      text NOT NULL,
  -- The endpoints as they were pinned (authorizationEndpoint, tokenEndpoint, registrationEndpoint,
  -- revocationEndpoint): the same issuer naming others is a change too.
  endpoints   jsonb NOT NULL CHECK (jsonb_typeof(endpoints) = 'object'),
  pinned_by   text NOT NULL,
  pinned_at   timestamptz NOT NULL,
  changed_to  text,
  changed_at  timestamptz,
  CHECK ((changed_to IS NULL) = (changed_at IS NULL))
);

-- The issuer whose grant a connection's tokens are (NULL: stored before issuers were recorded).
ALTER TABLE connections ADD COLUMN issuer text;
