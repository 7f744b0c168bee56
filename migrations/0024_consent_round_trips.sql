-- The kill switch's row exists from the start: a consent reads it FOR SHARE, and a pause's update of
-- it waits for those consents, then makes later ones wait and read it paused (READ COMMITTED re-reads
-- a locked row once its updater commits). The row lock is what the advisory lock was, in the read.
INSERT INTO broker_switches (name, engaged, reason, actor, changed_at)
VALUES ('url_elicitation_paused', false, 'never engaged', 'system', now())
ON CONFLICT (name) DO NOTHING;

-- The scopes a consent asked the provider for, kept for its callback, which takes them as granted
-- where the provider's answer names none (src/connect/oauthCallback.ts). NULL on transactions
-- written before: their callback reads them from the connection, as it did.
ALTER TABLE oauth_transactions ADD COLUMN requested_scopes text[];
