-- Operator controls (issue #6): named switches, and an append-only record of
-- every operator action with its reason.
CREATE TABLE broker_switches (
  name        text PRIMARY KEY CHECK (name IN ('url_elicitation_paused')),
  engaged     boolean NOT NULL,
  reason      text NOT NULL CHECK (char_length(reason) BETWEEN 1 AND 500),
  actor       text NOT NULL,
  changed_at  timestamptz NOT NULL
);

CREATE TABLE operator_actions (
  id          bigserial PRIMARY KEY,
  action      text NOT NULL,
  reason      text NOT NULL CHECK (char_length(reason) BETWEEN 1 AND 500),
  actor       text NOT NULL,
  details     jsonb NOT NULL DEFAULT '{}'::jsonb,
  created_at  timestamptz NOT NULL
);
CREATE TRIGGER operator_actions_no_update BEFORE UPDATE OR DELETE ON operator_actions
  FOR EACH ROW EXECUTE FUNCTION navigation_events_append_only();
