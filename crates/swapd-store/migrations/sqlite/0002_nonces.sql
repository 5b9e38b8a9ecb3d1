-- Request nonces seen per API key, kept until expires_at so a replayed request is refused on
-- every node sharing this database. The janitor deletes expired rows.
CREATE TABLE nonces (
    key_id     TEXT    NOT NULL,
    nonce      TEXT    NOT NULL,
    expires_at INTEGER NOT NULL,   -- Unix milliseconds
    PRIMARY KEY (key_id, nonce)
) STRICT;
CREATE INDEX nonces_expires_at ON nonces (expires_at);
