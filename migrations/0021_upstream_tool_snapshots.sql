-- Tool lists an operator pins for upstream MCP servers (`broker upstreams snapshot <id>`): served on
-- /mcp to users who have no connection to that upstream yet, so the model can pick the tool that
-- starts the connection. One per upstream (the provider id of its PROVIDERS_FILE entry); the tools
-- as the upstream's tools/list gives them (name, title, description, inputSchema, …), checked when
-- pinned. A connected user is always served their own list, fetched with their token.
CREATE TABLE upstream_tool_snapshots (
  provider  text PRIMARY KEY,
  tools     jsonb NOT NULL CHECK (jsonb_typeof(tools) = 'array'),
  pinned_by text NOT NULL,
  pinned_at timestamptz NOT NULL
);
