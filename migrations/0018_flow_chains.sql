-- The ledger without a cluster-wide lock. 0004 chained every navigation_events
-- row to the one before it under one advisory lock held until COMMIT, so every
-- ledger write in the deployment waited for the previous one to commit. Now
-- each flow's events form their own chain (flow_seq 1, 2, 3…; prev_hash is the
-- hash of the flow's previous event), extended under a lock on that flow's row
-- in ledger_heads: appends to one flow take turns, appends to different flows
-- never wait on each other. What ties the flows together is ledger_anchors: a
-- chain of anchors, each sealing the heads of the flows that moved since the
-- anchor before it (the sweep writes them; `broker ledger anchor export` prints
-- the latest so it can be kept outside the database). The rows written before
-- this migration are re-chained per flow and sealed by the first anchor, after
-- the 0004 chain is checked one last time; what that check found is part of the
-- first anchor, so re-chaining cannot launder an earlier break.

-- Re-chaining a long ledger takes longer than the application's statement timeout.
SET LOCAL statement_timeout = 0;

-- The one definition of an event's hash: its flow's previous hash, its place in
-- the flow, and every field, as a JSON array (a '|' inside a field cannot pose
-- as a boundary). seq is passed apart because the trigger hashes a row before
-- its flow_seq is set. STABLE, as its body is (to_char), so the planner inlines
-- it: verify recomputes every hash, about twice as fast inlined.
CREATE FUNCTION navigation_event_hash(prev bytea, seq bigint, e navigation_events) RETURNS bytea
LANGUAGE sql STABLE AS $$
  SELECT sha256(convert_to(json_build_array(
    encode(prev, 'hex'), seq, e.id, e.navigation_id, e.from_status, e.to_status, e.event, e.actor, e.evidence,
    to_char(e.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US'))::text, 'UTF8'))
$$;

-- Which events a window between two snapshots holds: those whose transaction
-- had finished in `upto` but not in `since`. Unlike a position handed out at
-- INSERT, this never skips a row that commits late, and takes no lock: the
-- anchors and /metrics read the ledger window by window with it. A plain SQL
-- expression, so the planner inlines it and reads the tx_id index.
CREATE FUNCTION ledger_between(tx xid8, since pg_snapshot, upto pg_snapshot) RETURNS boolean
LANGUAGE sql IMMUTABLE AS $$
  SELECT tx >= pg_snapshot_xmin(since) AND tx < pg_snapshot_xmax(upto)
     AND pg_visible_in_snapshot(tx, upto) AND NOT pg_visible_in_snapshot(tx, since)
$$;

-- 1. The 0004 chain, checked one last time as `broker ledger verify` did.
CREATE TEMP TABLE legacy_chain ON COMMIT DROP AS
  SELECT jsonb_build_object(
    'rows', (SELECT count(*) FROM navigation_events),
    'headSeq', (SELECT max(chain_seq) FROM navigation_events),
    'headHash', (SELECT encode(hash, 'hex') FROM navigation_events ORDER BY chain_seq DESC LIMIT 1),
    'firstBreak', (
      SELECT jsonb_build_object('chainSeq', chain_seq, 'id', id, 'navigationId', navigation_id, 'reason',
               CASE WHEN hash <> expected THEN 'hash' WHEN chain_seq <> coalesce(prev_seq, 0) + 1 THEN 'gap' ELSE 'link' END)
        FROM (SELECT e.id, e.chain_seq, e.navigation_id, e.hash, e.prev_hash,
                     navigation_event_hash(e.prev_hash, e) AS expected,
                     lag(e.hash) OVER (ORDER BY e.chain_seq) AS prev_actual,
                     lag(e.chain_seq) OVER (ORDER BY e.chain_seq) AS prev_seq
                FROM navigation_events e) c
       WHERE hash <> expected OR chain_seq <> coalesce(prev_seq, 0) + 1 OR prev_hash IS DISTINCT FROM prev_actual
       ORDER BY chain_seq LIMIT 1)) AS legacy;

-- 2. Per-flow chains. Existing rows keep their order (0004's chain_seq was commit order) and
-- get tx_id 1, which every snapshot after this migration shows as finished.
ALTER TABLE navigation_events ADD COLUMN flow_seq bigint, ADD COLUMN tx_id xid8 NOT NULL DEFAULT '1';
ALTER TABLE navigation_events ALTER COLUMN tx_id SET DEFAULT pg_current_xact_id();

CREATE FUNCTION ledger_rechain_step(prev bytea, e navigation_events, seq bigint) RETURNS bytea
LANGUAGE sql STABLE AS 'SELECT navigation_event_hash(prev, seq, e)';
CREATE AGGREGATE ledger_rechain(navigation_events, bigint) (SFUNC = ledger_rechain_step, STYPE = bytea);

ALTER TABLE navigation_events DISABLE TRIGGER navigation_events_no_update;
UPDATE navigation_events t SET flow_seq = c.seq, prev_hash = c.prev, hash = c.hash
  FROM (SELECT id, seq, lag(hash) OVER (PARTITION BY navigation_id ORDER BY seq) AS prev, hash
          FROM (SELECT r.id, r.navigation_id, r.seq,
                       ledger_rechain(r.e, r.seq) OVER (PARTITION BY r.navigation_id ORDER BY r.seq) AS hash
                  FROM (SELECT e.id, e.navigation_id, e,
                               row_number() OVER (PARTITION BY e.navigation_id ORDER BY e.chain_seq) AS seq
                          FROM navigation_events e) r) h) c
 WHERE t.id = c.id;
ALTER TABLE navigation_events ENABLE TRIGGER navigation_events_no_update;
DROP AGGREGATE ledger_rechain(navigation_events, bigint);
DROP FUNCTION ledger_rechain_step(bytea, navigation_events, bigint);

DROP INDEX navigation_events_chain_idx;
ALTER TABLE navigation_events DROP COLUMN chain_seq, ALTER COLUMN flow_seq SET NOT NULL;
DROP FUNCTION navigation_event_hash(bytea, navigation_events);
-- A flow's events in chain order (replacing (navigation_id, id): ids are drawn before the
-- flow's lock is taken, so two appends to one flow may hold them the other way round).
DROP INDEX navigation_events_navigation_idx;
CREATE UNIQUE INDEX navigation_events_flow_idx ON navigation_events (navigation_id, flow_seq);
-- The window of ledger_between, read in (tx_id, id) order by /metrics in bounded chunks.
CREATE INDEX navigation_events_tx_idx ON navigation_events (tx_id, id);

-- 3. Each flow's head: its last event's position and hash. Its row is the flow's lock, and it
-- shows a flow whose newest events were deleted. prev_hash lets one statement move the head
-- and return both hashes the new event needs. Room on every page for a row's next version
-- keeps moving a head a HOT update (no index touched).
CREATE TABLE ledger_heads (
  navigation_id  uuid PRIMARY KEY REFERENCES elicitation_navigations (id),
  seq            bigint NOT NULL CHECK (seq > 0),
  prev_hash      bytea,
  hash           bytea NOT NULL
) WITH (fillfactor = 70);
INSERT INTO ledger_heads (navigation_id, seq, prev_hash, hash)
  SELECT DISTINCT ON (navigation_id) navigation_id, flow_seq, prev_hash, hash
    FROM navigation_events ORDER BY navigation_id, flow_seq DESC;

CREATE FUNCTION ledger_refuse() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION '% on % refused: the ledger only grows', TG_OP, TG_TABLE_NAME;
END;
$$;
CREATE TRIGGER ledger_heads_forward_only BEFORE UPDATE ON ledger_heads FOR EACH ROW
  WHEN (NEW.navigation_id IS DISTINCT FROM OLD.navigation_id OR NEW.seq IS DISTINCT FROM OLD.seq + 1
        OR NEW.prev_hash IS DISTINCT FROM OLD.hash)
  EXECUTE FUNCTION ledger_refuse();
CREATE TRIGGER ledger_heads_no_delete BEFORE DELETE ON ledger_heads FOR EACH ROW EXECUTE FUNCTION ledger_refuse();
CREATE TRIGGER ledger_heads_no_truncate BEFORE TRUNCATE ON ledger_heads FOR EACH STATEMENT EXECUTE FUNCTION ledger_refuse();

-- The trigger 0004 created keeps its name and now extends the event's own flow.
CREATE OR REPLACE FUNCTION navigation_events_chain() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  -- The flow's head row is locked until COMMIT or ROLLBACK: one writer at a time per flow.
  INSERT INTO ledger_heads AS h (navigation_id, seq, prev_hash, hash)
    VALUES (NEW.navigation_id, 1, NULL, navigation_event_hash(NULL, 1, NEW))
  ON CONFLICT (navigation_id) DO UPDATE
    SET seq = h.seq + 1, prev_hash = h.hash, hash = navigation_event_hash(h.hash, h.seq + 1, NEW)
  RETURNING h.seq, h.prev_hash, h.hash INTO NEW.flow_seq, NEW.prev_hash, NEW.hash;
  RETURN NEW;
END;
$$;

-- 4. Anchors. An anchor seals, for every flow with an event in the window from the previous
-- anchor's snapshot to its own, the flow's latest position there and its hash
-- (ledger_anchor_heads), and is itself chained to the anchor before it. A window's flows go to
-- anchors of at most 10,000 heads each, so that verify checks any anchor in one short statement
-- (the first anchor of an upgraded ledger seals every flow it has). An anchor kept outside the
-- database pins everything it and the anchors before it sealed.
CREATE TABLE ledger_anchors (
  seq           bigint PRIMARY KEY CHECK (seq > 0),
  created_at    timestamptz NOT NULL,
  snapshot      pg_snapshot NOT NULL,
  flows         integer NOT NULL CHECK (flows BETWEEN 1 AND 10000),
  heads_digest  bytea NOT NULL,
  legacy        jsonb,
  prev_hash     bytea,
  hash          bytea NOT NULL
);
CREATE TABLE ledger_anchor_heads (
  anchor_seq     bigint NOT NULL REFERENCES ledger_anchors (seq) DEFERRABLE INITIALLY DEFERRED,
  navigation_id  uuid NOT NULL,
  flow_seq       bigint NOT NULL,
  hash           bytea NOT NULL,
  PRIMARY KEY (anchor_seq, navigation_id)
);
CREATE TRIGGER ledger_anchors_no_update BEFORE UPDATE OR DELETE ON ledger_anchors FOR EACH ROW EXECUTE FUNCTION ledger_refuse();
CREATE TRIGGER ledger_anchors_no_truncate BEFORE TRUNCATE ON ledger_anchors FOR EACH STATEMENT EXECUTE FUNCTION ledger_refuse();
CREATE TRIGGER ledger_anchor_heads_no_update BEFORE UPDATE OR DELETE ON ledger_anchor_heads FOR EACH ROW EXECUTE FUNCTION ledger_refuse();
CREATE TRIGGER ledger_anchor_heads_no_truncate BEFORE TRUNCATE ON ledger_anchor_heads FOR EACH STATEMENT EXECUTE FUNCTION ledger_refuse();

-- An anchor's heads, in one text form (uuid, position, hex: no field can hold a separator).
CREATE FUNCTION ledger_anchor_digest(anchor bigint) RETURNS bytea
LANGUAGE sql STABLE AS $$
  SELECT sha256(convert_to(coalesce(string_agg(navigation_id::text || ':' || flow_seq || ':' || encode(hash, 'hex'), ','
           ORDER BY navigation_id), ''), 'UTF8'))
    FROM ledger_anchor_heads WHERE anchor_seq = anchor
$$;

CREATE FUNCTION ledger_anchor_hash(prev bytea, a ledger_anchors) RETURNS bytea
LANGUAGE sql STABLE AS $$
  SELECT sha256(convert_to(json_build_array(
    encode(prev, 'hex'), a.seq, to_char(a.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US'),
    a.snapshot::text, a.flows, encode(a.heads_digest, 'hex'), a.legacy)::text, 'UTF8'))
$$;

-- Seals the events that finished after the last anchor's snapshot and before `upto` in as many
-- anchors as their flows need; returns the last one's position, or NULL when there is nothing
-- new to seal or another session is writing anchors (the anchors' chain has one writer at a
-- time; appends never wait on it).
CREATE FUNCTION ledger_anchor(anchored_at timestamptz, upto pg_snapshot, legacy_check jsonb DEFAULT NULL) RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
  last ledger_anchors;
  since pg_snapshot;
  first_seq bigint;
  last_seq bigint;
  a ledger_anchors;
BEGIN
  IF NOT pg_try_advisory_xact_lock(hashtext('connect-broker.ledger-anchor')) THEN
    RETURN NULL;
  END IF;
  SELECT * INTO last FROM ledger_anchors ORDER BY seq DESC LIMIT 1;
  -- Before the first anchor nothing is sealed: a snapshot in which no transaction has finished.
  since := coalesce(last.snapshot, '1:1:'::pg_snapshot);
  first_seq := coalesce(last.seq, 0) + 1;
  INSERT INTO ledger_anchor_heads (anchor_seq, navigation_id, flow_seq, hash)
    SELECT first_seq + (row_number() OVER (ORDER BY navigation_id) - 1) / 10000, navigation_id, flow_seq, hash
      FROM (SELECT DISTINCT ON (navigation_id) navigation_id, flow_seq, hash FROM navigation_events
             WHERE ledger_between(tx_id, since, upto) ORDER BY navigation_id, flow_seq DESC) h;
  SELECT max(anchor_seq) INTO last_seq FROM ledger_anchor_heads WHERE anchor_seq >= first_seq;
  IF last_seq IS NULL THEN
    RETURN NULL;
  END IF;
  a.created_at := anchored_at;
  a.snapshot := upto;
  a.prev_hash := last.hash;
  FOR k IN first_seq..last_seq LOOP
    a.seq := k;
    a.flows := (SELECT count(*) FROM ledger_anchor_heads WHERE anchor_seq = k);
    a.heads_digest := ledger_anchor_digest(k);
    a.legacy := CASE WHEN k = first_seq THEN legacy_check END;
    a.hash := ledger_anchor_hash(a.prev_hash, a);
    INSERT INTO ledger_anchors (seq, created_at, snapshot, flows, heads_digest, legacy, prev_hash, hash)
      VALUES (a.seq, a.created_at, a.snapshot, a.flows, a.heads_digest, a.legacy, a.prev_hash, a.hash);
    a.prev_hash := a.hash;
  END LOOP;
  RETURN last_seq;
END;
$$;

-- 5. The first anchor seals every row re-chained above (tx_id 1 finished, nothing after it),
-- with what the 0004 chain's last check found. A new, empty ledger has nothing to seal.
SELECT ledger_anchor(now(), '2:2:'::pg_snapshot, legacy) FROM legacy_chain WHERE (legacy->>'rows')::bigint > 0;
