-- Key rotation (src/jobs/reseal.ts, `broker keys status`): every sweep of every
-- instance asks each table holding sealed values for its rows under an older
-- key, in key order, while more than one key is configured; and the keys status
-- counts rows per key id. Without these, each question is a full scan of the
-- table (elicitation_navigations keeps every flow ever started); with them, a
-- rotation that is done answers from an empty range of an index.
CREATE INDEX secrets_key_id_idx ON secrets (key_id, id);
CREATE INDEX oauth_transactions_key_id_idx ON oauth_transactions (key_id, state_digest);
CREATE INDEX operation_receipts_arguments_key_id_idx ON operation_receipts (arguments_key_id, id)
  WHERE arguments_key_id IS NOT NULL;
CREATE INDEX elicitation_navigations_handle_key_id_idx ON elicitation_navigations (handle_key_id, id)
  WHERE handle_key_id IS NOT NULL;
