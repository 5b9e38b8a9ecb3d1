-- Business API keys. The HMAC secret is stored sealed under the master key, never in plaintext.
CREATE TABLE api_keys (
    id              TEXT   PRIMARY KEY NOT NULL,
    name            TEXT   NOT NULL,
    permissions     TEXT   NOT NULL,   -- space-separated permission names
    ip_allow        TEXT   NOT NULL,   -- comma-separated CIDR blocks; empty = any
    origins         TEXT   NOT NULL,   -- space-separated origins; empty = any
    per_minute      BIGINT NOT NULL CHECK (per_minute > 0),
    per_hour        BIGINT NOT NULL CHECK (per_hour > 0),
    weight_per_hour BIGINT NOT NULL CHECK (weight_per_hour > 0),
    status          TEXT   NOT NULL CHECK (status IN ('active', 'revoked')),
    sealed_secret   TEXT   NOT NULL,
    created_at      BIGINT NOT NULL,   -- Unix milliseconds
    revoked_at      BIGINT             -- Unix milliseconds
);
