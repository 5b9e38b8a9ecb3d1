-- Per-key rate-limit state shared by every node (see swapd_core::rate_limit).
CREATE TABLE rate_limits (
    key_id          TEXT    PRIMARY KEY NOT NULL,
    tat_us          INTEGER NOT NULL,
    window_start_ms INTEGER NOT NULL,
    hour_count      INTEGER NOT NULL,
    hour_weight     INTEGER NOT NULL
) STRICT;

-- Idempotency-Key records (see swapd_core::idempotency). In flight: lease_token and lease_until
-- are set. Done: status and body hold the response replayed to retries.
CREATE TABLE idempotency_keys (
    principal   TEXT    NOT NULL,
    idem_key    TEXT    NOT NULL,
    fingerprint TEXT    NOT NULL,
    lease_token TEXT,
    lease_until INTEGER,
    status      INTEGER,
    body        BLOB,
    created_at  INTEGER NOT NULL,
    expires_at  INTEGER NOT NULL,
    PRIMARY KEY (principal, idem_key)
) STRICT;
CREATE INDEX idempotency_keys_expires_at ON idempotency_keys (expires_at);

-- The durable copy of a single node's in-memory nonce set: appended in batches, reloaded at
-- start, purged by expiry. Clustered by expiry, so appends touch only the right edge of the tree
-- (the shared `nonces` table, keyed by the random nonce, is for nodes sharing a database).
CREATE TABLE nonce_log (
    expires_at INTEGER NOT NULL,
    key_id     TEXT    NOT NULL,
    nonce      TEXT    NOT NULL,
    PRIMARY KEY (expires_at, key_id, nonce)
) STRICT, WITHOUT ROWID;
