-- Affiliates (docs/fees.md): a code's share of the operator's service fee.
CREATE TABLE affiliates (
    code        TEXT    PRIMARY KEY NOT NULL,
    name        TEXT    NOT NULL,
    share_bps   BIGINT  NOT NULL CHECK (share_bps BETWEEN 1 AND 10000),
    payout      TEXT    NOT NULL,
    active      BIGINT  NOT NULL CHECK (active IN (0, 1)),
    created_at  BIGINT  NOT NULL   -- Unix milliseconds
);
CREATE INDEX fee_ledger_affiliate_at ON fee_ledger (affiliate_code, at);
