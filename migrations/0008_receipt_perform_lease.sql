-- One performer at a time for an accepted operation: whoever holds the lease
-- calls the provider with the receipt id as idempotency key; duplicate retries,
-- other instances and the reconcile sweep wait for its outcome instead of
-- calling the provider concurrently with the same key. A lease that outlives a
-- crashed performer simply expires and the next caller takes it.
ALTER TABLE operation_receipts
  ADD COLUMN perform_lease_owner uuid,
  ADD COLUMN perform_lease_until timestamptz,
  ADD CHECK ((perform_lease_owner IS NULL) = (perform_lease_until IS NULL));
