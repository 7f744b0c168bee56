-- Refused operator access, counted: at most one access_refused row per subject (actor) and minute,
-- its `refusals` the number of refused requests it stands for (src/ops/operatorGuard.ts). A row per
-- request let anyone signed in grow this append-only table without bound.
-- `refused_minute` (UTC) is set only on those rows; older rows and other actions keep NULL, which
-- never conflicts, so the unique index takes the rows already there.
ALTER TABLE operator_actions
  ADD COLUMN refusals integer NOT NULL DEFAULT 1 CHECK (refusals >= 1),
  ADD COLUMN refused_minute timestamp;
CREATE UNIQUE INDEX operator_actions_refused_minute ON operator_actions (actor, refused_minute);

-- Still append-only, but for one change: a counted refusal's count going up. Everything else in the
-- row stays as written, and no row is deleted.
CREATE FUNCTION operator_actions_count_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'UPDATE' AND OLD.refused_minute IS NOT NULL AND NEW.refusals > OLD.refusals
     AND (NEW.id, NEW.action, NEW.reason, NEW.actor, NEW.details, NEW.created_at, NEW.refused_minute)
         IS NOT DISTINCT FROM (OLD.id, OLD.action, OLD.reason, OLD.actor, OLD.details, OLD.created_at, OLD.refused_minute)
  THEN
    RETURN NEW;
  END IF;
  RAISE EXCEPTION 'operator_actions is append-only (a counted refusal may only count up)';
END;
$$;
DROP TRIGGER operator_actions_no_update ON operator_actions;
CREATE TRIGGER operator_actions_no_update BEFORE UPDATE OR DELETE ON operator_actions
  FOR EACH ROW EXECUTE FUNCTION operator_actions_count_only();
