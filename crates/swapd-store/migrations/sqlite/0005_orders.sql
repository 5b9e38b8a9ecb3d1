-- Offchain orders as JSON of swapd_core::orders::Order. `version` guards every update
-- (compare-and-set); `status` and `next_check_at` let the lifecycle engine find due work.
CREATE TABLE orders (
    id                TEXT   PRIMARY KEY NOT NULL,
    owner             TEXT   NOT NULL,
    status            TEXT   NOT NULL,
    version           BIGINT NOT NULL,
    body              TEXT   NOT NULL,
    create_token_hash TEXT   UNIQUE,
    created_at        BIGINT NOT NULL,
    updated_at        BIGINT NOT NULL,
    next_check_at     BIGINT
);
CREATE INDEX orders_owner_created ON orders (owner, created_at);
CREATE INDEX orders_next_check ON orders (next_check_at);

-- The transactional outbox: one row per event, written in the transaction that changed the
-- order. `sequence` counts per order from 1.
CREATE TABLE order_events (
    id         TEXT   PRIMARY KEY NOT NULL,
    order_id   TEXT   NOT NULL,
    owner      TEXT   NOT NULL,
    sequence   BIGINT NOT NULL,
    event_type TEXT   NOT NULL,
    data       TEXT   NOT NULL,
    created_at BIGINT NOT NULL,
    UNIQUE (order_id, sequence)
);
CREATE INDEX order_events_owner_created ON order_events (owner, created_at);
