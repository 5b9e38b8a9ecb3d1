-- What providers delivered (docs/market.md, "Observed figures"): one row per order or plan
-- that ended, written with the change that ended it; purged after market.observed_window_days.
CREATE TABLE swap_outcomes (
    source_id       TEXT    PRIMARY KEY NOT NULL,  -- ord_… or ocx_…
    provider        TEXT    NOT NULL,
    execution_type  TEXT    NOT NULL CHECK (execution_type IN ('offchain', 'onchain')),
    from_code       TEXT    NOT NULL,
    to_code         TEXT    NOT NULL,
    rate_type       TEXT    NOT NULL CHECK (rate_type IN ('fixed', 'float')),
    size_usd        TEXT,                          -- exact decimal
    quoted          TEXT    NOT NULL,              -- exact decimal, in to_code
    quoted_min      TEXT,
    delivered       TEXT,
    ending          TEXT    NOT NULL,
    emergency       TEXT,
    counted         INTEGER NOT NULL CHECK (counted IN (0, 1)),
    duration_secs   INTEGER,
    delivered_vs_quoted_bps INTEGER,
    ended_at        INTEGER NOT NULL               -- Unix milliseconds
) STRICT;
CREATE INDEX swap_outcomes_ended_at ON swap_outcomes (ended_at);
CREATE INDEX swap_outcomes_provider_ended_at ON swap_outcomes (provider, ended_at);
