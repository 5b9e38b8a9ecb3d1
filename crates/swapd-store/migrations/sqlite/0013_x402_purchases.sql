-- What each x402 payment bought (see swapd_core::purchases): settling, settled (the call is
-- owed) or served, held by one attempt at a time. Replaces the bare claims, which are all served.
CREATE TABLE x402_purchases (
    payer           TEXT   NOT NULL,
    nonce           TEXT   NOT NULL,
    resource        TEXT   NOT NULL,
    idempotency_key TEXT,
    state           TEXT   NOT NULL,
    tx_hash         TEXT,
    lease_until     BIGINT NOT NULL,
    lease_holder    TEXT,
    created_at      BIGINT NOT NULL,
    PRIMARY KEY (payer, nonce)
);
INSERT INTO x402_purchases (payer, nonce, resource, state, lease_until, created_at)
    SELECT payer, nonce, resource, 'served', 0, claimed_at FROM x402_payment_claims;
DROP TABLE x402_payment_claims;
