-- The node holding an in-flight idempotency claim, so a node that restarts after a crash
-- releases the claims it left behind at once instead of after their lease.
ALTER TABLE idempotency_keys ADD COLUMN lease_holder TEXT;
CREATE INDEX idempotency_keys_in_flight ON idempotency_keys (lease_holder)
    WHERE lease_token IS NOT NULL;
