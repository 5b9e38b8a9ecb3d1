-- Console logouts: a session logged out (by its random id), or every session issued up to
-- `at_ms` (the row `*`, "log out everywhere"), until the session would have expired anyway.
-- Shared by every node, so a logout holds on all of them.
CREATE TABLE console_logouts (
    session       TEXT   PRIMARY KEY NOT NULL,
    at_ms         BIGINT NOT NULL,
    expires_at_ms BIGINT NOT NULL
);

-- A status e-mail is tried a bounded number of times: each claim counts an attempt, and one
-- that cannot be sent is marked failed (shown in the console) instead of being retried forever.
ALTER TABLE order_events ADD COLUMN mail_attempts INTEGER NOT NULL DEFAULT 0;
ALTER TABLE order_events ADD COLUMN mail_failed_at BIGINT;
