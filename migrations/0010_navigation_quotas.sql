-- Per-principal quotas on new connect flows: "how many did this principal
-- start in the last hour" reads this index, not the table.
CREATE INDEX elicitation_navigations_subject_created_idx ON elicitation_navigations (subject_iss, subject_sub, created_at);

-- An identical call while its flow is still open gets the same connect link
-- again instead of a new flow: the link's handle is kept sealed (AES-256-GCM,
-- AAD bound to the navigation) beside its digest, which stays the lookup key.
ALTER TABLE elicitation_navigations
  ADD COLUMN handle_sealed bytea,
  ADD COLUMN handle_key_id text,
  ADD CHECK ((handle_sealed IS NULL) = (handle_key_id IS NULL));
