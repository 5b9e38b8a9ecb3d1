-- The sandbox chain: simulated deposits (POST /api/v3/sandbox/orders/{id}/deposit) and
-- transfers out, one per idempotency key, so a repeated payout is answered, never repeated.
CREATE TABLE sandbox_deposits (
    tx_id         TEXT   PRIMARY KEY NOT NULL,
    address       TEXT   NOT NULL,
    tag           TEXT,
    amount        TEXT   NOT NULL,
    confirmations BIGINT NOT NULL,
    seen_at       BIGINT NOT NULL
);
CREATE INDEX sandbox_deposits_address ON sandbox_deposits (address);

CREATE TABLE sandbox_transfers (
    idem_key   TEXT   PRIMARY KEY NOT NULL,
    tx_id      TEXT   NOT NULL,
    currency   TEXT   NOT NULL,
    address    TEXT   NOT NULL,
    tag        TEXT,
    amount     TEXT   NOT NULL,
    created_at BIGINT NOT NULL
);
