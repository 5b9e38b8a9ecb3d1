-- A partner's markup on its quotes, in basis points of the output (docs/fees.md).
ALTER TABLE api_keys ADD COLUMN markup_bps BIGINT NOT NULL DEFAULT 0 CHECK (markup_bps >= 0);
