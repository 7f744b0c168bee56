-- An accepted operation whose provider (an upstream MCP server) asked the host for more input did
-- nothing: its receipt stays pending until the host's answer performs it, at the latest when the
-- question's requestState expires. Set while the question waits, cleared when a perform takes the
-- lease (the answer may then be sent), so a receipt still holding it past that time was never
-- performed: the sweep records it as not answered instead of holding it for an operator.
ALTER TABLE operation_receipts ADD COLUMN awaiting_input_until timestamptz;
