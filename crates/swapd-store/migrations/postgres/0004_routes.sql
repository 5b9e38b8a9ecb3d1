-- Route cards handed out by GET /routes (one row per usable card), as JSON of
-- swapd_core::market::routes::RouteQuote, readable only by the caller scope that received them.
CREATE TABLE route_quotes (
    id         TEXT   PRIMARY KEY NOT NULL,
    owner      TEXT   NOT NULL,
    body       TEXT   NOT NULL,
    created_at BIGINT NOT NULL,
    expires_at BIGINT NOT NULL
);
CREATE INDEX route_quotes_expires_at ON route_quotes (expires_at);

-- createTokens from POST /routes/resolve: stored by SHA-256 only, single use, bound to the
-- owner, with a copy of the route they lock.
CREATE TABLE create_tokens (
    token_hash     TEXT   PRIMARY KEY NOT NULL,
    owner          TEXT   NOT NULL,
    route_quote_id TEXT   NOT NULL,
    route          TEXT   NOT NULL,
    created_at     BIGINT NOT NULL,
    expires_at     BIGINT NOT NULL,
    used_at        BIGINT
);
CREATE INDEX create_tokens_expires_at ON create_tokens (expires_at);
