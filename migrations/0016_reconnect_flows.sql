-- A reconnect flow (src/broker/startReconnect.ts): the user reconnects a connection from the
-- "Your connections" page, through the same consent page, callback and vault as a tool's flow.
-- It carries no tool operation, so none may ever be accepted on it; these constraints say so in SQL.
ALTER TABLE elicitation_navigations DROP CONSTRAINT elicitation_navigations_lineage_check;
ALTER TABLE elicitation_navigations ADD CONSTRAINT elicitation_navigations_lineage_check
  CHECK (lineage IN ('mrtr', 'nested', 'error_retry', 'reconnect'));
-- No tool and no MCP client: the user asked for it in the browser.
ALTER TABLE elicitation_navigations ADD CONSTRAINT elicitation_navigations_reconnect_no_operation
  CHECK (lineage <> 'reconnect' OR (tool = '' AND client_id IS NULL));

-- A receipt's lineage is its flow's (acceptOriginalOperation already refuses another), and a
-- receipt's own CHECK allows only the three lineages of a host's call: a reconnect flow has none.
ALTER TABLE elicitation_navigations ADD CONSTRAINT elicitation_navigations_id_lineage_key UNIQUE (id, lineage);
ALTER TABLE operation_receipts ADD CONSTRAINT operation_receipts_flow_lineage_fkey
  FOREIGN KEY (navigation_id, lineage) REFERENCES elicitation_navigations (id, lineage);
