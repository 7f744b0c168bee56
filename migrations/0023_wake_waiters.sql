-- Calls waiting on a flow (src/broker/completionSignal.ts, LISTEN navigation_verified, on every
-- instance) are woken by the change they wait for, from the row's own update: a flow reaching
-- REQUIREMENT_VERIFIED, and its operation's receipt getting an outcome, an unknown outcome, or a
-- question for the host. The NOTIFY is queued in the updating transaction and delivered on COMMIT,
-- as before, but takes no statement of its own, and no path that makes the change can leave it out.
CREATE FUNCTION wake_navigation_waiters() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_TABLE_NAME = 'operation_receipts' THEN
    PERFORM pg_notify('navigation_verified', NEW.navigation_id::text);
  ELSE
    PERFORM pg_notify('navigation_verified', NEW.id::text);
  END IF;
  RETURN NULL;
END;
$$;

CREATE TRIGGER navigation_verified_wakes AFTER UPDATE OF status ON elicitation_navigations
  FOR EACH ROW WHEN (NEW.status = 'REQUIREMENT_VERIFIED' AND OLD.status IS DISTINCT FROM NEW.status)
  EXECUTE FUNCTION wake_navigation_waiters();

CREATE TRIGGER receipt_outcome_wakes AFTER UPDATE ON operation_receipts
  FOR EACH ROW WHEN (
    OLD.outcome_status IS DISTINCT FROM NEW.outcome_status
    OR OLD.outcome_unknown_at IS DISTINCT FROM NEW.outcome_unknown_at
    OR (NEW.awaiting_input_until IS NOT NULL AND OLD.awaiting_input_until IS DISTINCT FROM NEW.awaiting_input_until)
  )
  EXECUTE FUNCTION wake_navigation_waiters();
