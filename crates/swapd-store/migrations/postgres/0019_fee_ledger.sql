-- The fee ledger (docs/fees.md): one row per party of an order's fees, expected when the order
-- is created and realized when the provider has taken them, each written in the transaction of
-- the change that learns it.
CREATE TABLE fee_ledger (
    order_id        TEXT    NOT NULL,
    owner           TEXT    NOT NULL,   -- the order's owner: whose earnings a partner row is
    party           TEXT    NOT NULL CHECK (party IN ('service', 'partner', 'affiliate')),
    affiliate_code  TEXT,
    stage           TEXT    NOT NULL CHECK (stage IN ('expected', 'realized')),
    bps             TEXT,
    amount          TEXT    NOT NULL,   -- exact decimal
    currency        TEXT    NOT NULL,
    at              BIGINT NOT NULL,   -- Unix milliseconds
    PRIMARY KEY (order_id, party, stage)
);
CREATE INDEX fee_ledger_owner_at ON fee_ledger (owner, at);
