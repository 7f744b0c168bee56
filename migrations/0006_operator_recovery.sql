-- Operator identity, recovery and approval (issue #6 items 2, 5, 8).

-- Item 2: a browser session remembers whether its sign-in carried the operator
-- role (OPERATOR_ROLE_CLAIM / OPERATOR_ROLE), decided once at sign-in.
ALTER TABLE web_sessions ADD COLUMN operator boolean NOT NULL DEFAULT false;

-- Item 8: an operator may reject a held operation; that ends the flow.
ALTER TABLE elicitation_navigations DROP CONSTRAINT elicitation_navigations_status_check;
ALTER TABLE elicitation_navigations ADD CONSTRAINT elicitation_navigations_status_check CHECK (status IN (
  'CREATED', 'USER_REVIEW', 'DECLINED', 'CANCELLED', 'NAVIGATION_ACCEPTED',
  'OUT_OF_BAND_PENDING', 'COMPLETION_NOTIFIED', 'REQUIREMENT_VERIFIED', 'EXPIRED',
  'USER_RETRY', 'NESTED_SERVER_CONTINUES', 'ORIGINAL_RESPONSE_ACCEPTED',
  'ERROR_RETRY_ELIGIBLE', 'OPTIONAL_CLIENT_RETRY', 'RETRY_RESPONSE_ACCEPTED',
  'MRTR_RETRY_ACCEPTED', 'OPERATION_REJECTED'));

-- Item 5, re-issue: a new navigation in the same lineage for the same operation
-- names the one it replaces; each flow is replaced at most once.
ALTER TABLE elicitation_navigations ADD COLUMN reissued_from uuid REFERENCES elicitation_navigations (id);
CREATE UNIQUE INDEX elicitation_navigations_reissued_idx ON elicitation_navigations (reissued_from) WHERE reissued_from IS NOT NULL;

-- Item 5, re-drive: the accepted operation's arguments, sealed (AES-256-GCM, AAD
-- bound to the operation key), so an operation whose outcome is unknown can be
-- performed again with the same idempotency key. redrive_after leases a re-drive
-- to one instance at a time.
ALTER TABLE operation_receipts
  ADD COLUMN arguments_sealed bytea,
  ADD COLUMN arguments_key_id text,
  ADD COLUMN redrive_after timestamptz,
  ADD CHECK ((arguments_sealed IS NULL) = (arguments_key_id IS NULL));
CREATE INDEX operation_receipts_pending_idx ON operation_receipts (created_at) WHERE outcome_status = 'pending';

-- Item 8: verified operations of high-risk tools or providers wait here for an
-- operator's decision, at most one per navigation, decided at most once.
CREATE TABLE operation_approvals (
  id             uuid PRIMARY KEY,
  navigation_id  uuid NOT NULL UNIQUE REFERENCES elicitation_navigations (id),
  tool           text NOT NULL,
  provider       text NOT NULL,
  subject_sub    text NOT NULL,
  status         text NOT NULL CHECK (status IN ('pending', 'approved', 'rejected')),
  reason         text CHECK (reason IS NULL OR char_length(reason) BETWEEN 3 AND 500),
  decided_by     text,
  requested_at   timestamptz NOT NULL,
  decided_at     timestamptz,
  CHECK ((status = 'pending') = (decided_at IS NULL)),
  CHECK ((status = 'pending') = (reason IS NULL))
);
CREATE INDEX operation_approvals_pending_idx ON operation_approvals (requested_at) WHERE status = 'pending';
