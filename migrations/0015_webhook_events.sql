-- The outbox of webhook events (src/events/): a row is written in the transaction of the change it
-- reports, so an event exists if and only if its change committed, and is posted to WEBHOOK_URL
-- afterwards by every instance. A claim counts the attempt and moves next_attempt_at past the POST's
-- timeout (a lease: an instance that stops mid-POST leaves the row to the next claim), and each
-- outcome is recorded by compare-and-set on the attempt. `data` holds ids and names only, never a
-- token. Rows go after `expires_at` whatever their state (the sweep), delivered or not.
CREATE TABLE webhook_events (
  id              uuid PRIMARY KEY,
  type            text NOT NULL
    CHECK (type IN ('connection.created', 'connection.needs_reauth', 'connection.revoked', 'operation.needs_operator')),
  data            jsonb NOT NULL CHECK (jsonb_typeof(data) = 'object'),
  occurred_at     timestamptz NOT NULL,
  state           text NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'delivered', 'dead')),
  attempts        integer NOT NULL DEFAULT 0 CHECK (attempts >= 0),
  next_attempt_at timestamptz NOT NULL,
  last_error      text,
  delivered_at    timestamptz,
  created_at      timestamptz NOT NULL DEFAULT now(),
  expires_at      timestamptz NOT NULL,
  CONSTRAINT webhook_events_delivered_when CHECK ((state = 'delivered') = (delivered_at IS NOT NULL))
);

-- What a delivery pass claims: pending rows by when they are due.
CREATE INDEX webhook_events_due ON webhook_events (next_attempt_at) WHERE state = 'pending';
-- What the sweep deletes.
CREATE INDEX webhook_events_expiry ON webhook_events (expires_at);
