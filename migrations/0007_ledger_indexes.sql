-- Indexes for the operators' ledger queries (issue #6), found with
-- `npm run bench:ledger` over 100,000 and 1,000,000 seeded navigations. Plain
-- CREATE INDEX (a migration runs in a transaction): on a large existing ledger
-- it holds writes to the table while the index builds.

-- One flow's operation receipt (findFlowDetail), and "has this flow a receipt?"
-- for every expired flow (findGateFigures): without it, each is a full scan.
CREATE INDEX operation_receipts_navigation_idx ON operation_receipts (navigation_id);

-- findFlows lists the newest flows first, under any filter, LIMIT n: read the
-- newest entries of this index instead of sorting the whole table.
CREATE INDEX elicitation_navigations_created_idx ON elicitation_navigations (created_at);

-- The two ledger steps the gates and the reconciliation join on (reached the
-- provider; verified): small partial indexes read instead of the whole event table.
CREATE INDEX navigation_events_pending_idx ON navigation_events (navigation_id, created_at) WHERE to_status = 'OUT_OF_BAND_PENDING';
CREATE INDEX navigation_events_verified_idx ON navigation_events (navigation_id, created_at) WHERE to_status = 'REQUIREMENT_VERIFIED';

-- Completions that moved a flow out of order (a release gate): empty while the
-- broker is healthy, so counting them reads an empty index, not the ledger.
CREATE INDEX navigation_events_unexpected_completion_idx ON navigation_events (id)
  WHERE event IN ('callback_received', 'callback_verified') AND from_status <> to_status
    AND from_status NOT IN ('OUT_OF_BAND_PENDING', 'COMPLETION_NOTIFIED');
