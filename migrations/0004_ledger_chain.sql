-- Tamper evidence for the ledger (issue #6): every navigation_events row carries
-- the hash of the row before it in one chain (chain_seq), computed by the
-- database itself under a transaction-scoped advisory lock, so no code path can
-- append without chaining. `broker ledger verify` recomputes the chain.

ALTER TABLE navigation_events ADD COLUMN chain_seq bigint, ADD COLUMN prev_hash bytea, ADD COLUMN hash bytea;

-- The one definition of a row's hash: its predecessor's hash and every field, in a fixed text form.
CREATE FUNCTION navigation_event_hash(prev bytea, e navigation_events) RETURNS bytea
LANGUAGE sql IMMUTABLE AS $$
  SELECT sha256(convert_to(concat_ws('|',
    coalesce(encode(prev, 'hex'), ''), e.chain_seq::text, e.id::text, e.navigation_id::text,
    e.from_status, e.to_status, e.event, e.actor, e.evidence::text,
    to_char(e.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US')), 'UTF8'))
$$;

-- Chain the rows written before this migration, in id order.
DO $$
DECLARE r navigation_events; last bytea; seq bigint := 0;
BEGIN
  ALTER TABLE navigation_events DISABLE TRIGGER navigation_events_no_update;
  FOR r IN SELECT * FROM navigation_events ORDER BY id LOOP
    seq := seq + 1;
    r.chain_seq := seq;
    UPDATE navigation_events SET chain_seq = seq, prev_hash = last, hash = navigation_event_hash(last, r) WHERE id = r.id;
    last := navigation_event_hash(last, r);
  END LOOP;
  ALTER TABLE navigation_events ENABLE TRIGGER navigation_events_no_update;
END $$;

ALTER TABLE navigation_events ALTER COLUMN chain_seq SET NOT NULL, ALTER COLUMN hash SET NOT NULL;
CREATE UNIQUE INDEX navigation_events_chain_idx ON navigation_events (chain_seq);

CREATE FUNCTION navigation_events_chain() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE last navigation_events;
BEGIN
  -- One writer at a time extends the chain; released at COMMIT or ROLLBACK.
  PERFORM pg_advisory_xact_lock(hashtext('connect-broker.ledger-chain'));
  SELECT * INTO last FROM navigation_events ORDER BY chain_seq DESC LIMIT 1;
  NEW.chain_seq := coalesce(last.chain_seq, 0) + 1;
  NEW.prev_hash := last.hash;
  NEW.hash := navigation_event_hash(last.hash, NEW);
  RETURN NEW;
END;
$$;
CREATE TRIGGER navigation_events_chain BEFORE INSERT ON navigation_events
  FOR EACH ROW EXECUTE FUNCTION navigation_events_chain();
