-- An accepted operation whose call was sent and whose answer was lost (a timeout, a reset) has an
-- unknown outcome. For a provider that cannot dedupe (an upstream MCP server: MCP has no
-- idempotency key) it is never sent again by a retry or another instance: only an operator's
-- re-drive performs it again, and until then it is a reconciliation finding.
ALTER TABLE operation_receipts ADD COLUMN outcome_unknown_at timestamptz;
