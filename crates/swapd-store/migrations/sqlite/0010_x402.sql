-- x402: the ledger facilitator's settlements (one per payer and EIP-3009 nonce), the claim of
-- the one execution each payment buys, the Sign-In-With-X nonces swapd issued, and fixed-window
-- counters of paid attempts and wallet-bound reads.
CREATE TABLE x402_settlements (
    payer       TEXT   NOT NULL,
    nonce       TEXT   NOT NULL,
    amount      TEXT   NOT NULL,
    pay_to      TEXT   NOT NULL,
    asset       TEXT   NOT NULL,
    network     TEXT   NOT NULL,
    tx_hash     TEXT   NOT NULL,
    settled_at  BIGINT NOT NULL,
    PRIMARY KEY (payer, nonce)
);

CREATE TABLE x402_payment_claims (
    payer      TEXT   NOT NULL,
    nonce      TEXT   NOT NULL,
    resource   TEXT   NOT NULL,
    claimed_at BIGINT NOT NULL,
    PRIMARY KEY (payer, nonce)
);

CREATE TABLE siwx_nonces (
    nonce      TEXT   PRIMARY KEY NOT NULL,
    expires_at BIGINT NOT NULL,
    used_at    BIGINT
);
CREATE INDEX siwx_nonces_expiry ON siwx_nonces (expires_at);

CREATE TABLE x402_windows (
    window_key   TEXT   PRIMARY KEY NOT NULL,
    window_start BIGINT NOT NULL,
    used         BIGINT NOT NULL
);
