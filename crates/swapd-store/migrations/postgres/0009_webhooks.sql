-- Webhook subscriptions. `events` holds the subscribed types between commas
-- (",order.created,order.updated,") so the outbox fan-out finds them with LIKE. Secrets are
-- sealed under the master key; the previous one signs until previous_secret_expires_at.
CREATE TABLE webhook_subscriptions (
    id                          TEXT   PRIMARY KEY NOT NULL,
    owner                       TEXT   NOT NULL,
    url                         TEXT   NOT NULL,
    events                      TEXT   NOT NULL,
    description                 TEXT,
    status                      TEXT   NOT NULL,
    disabled_reason             TEXT,
    secret_sealed               TEXT   NOT NULL,
    previous_secret_sealed      TEXT,
    previous_secret_expires_at  BIGINT,
    failing_since               BIGINT,
    created_at                  BIGINT NOT NULL,
    updated_at                  BIGINT NOT NULL,
    version                     BIGINT NOT NULL
);
CREATE INDEX webhook_subscriptions_owner ON webhook_subscriptions (owner, status);

-- The payload bytes of each event, serialized once when the event is written and signed anew
-- on every attempt.
ALTER TABLE order_events ADD COLUMN payload BYTEA;

-- One row per (event or replay, subscription): written in the transaction that wrote the
-- event (or the replay). Workers claim due rows with a lease; the attempt log keeps every try.
CREATE TABLE webhook_deliveries (
    id               TEXT   PRIMARY KEY NOT NULL,
    subscription_id  TEXT   NOT NULL,
    event_id         TEXT   NOT NULL,
    owner            TEXT   NOT NULL,
    kind             TEXT   NOT NULL,
    status           TEXT   NOT NULL,
    attempts         BIGINT NOT NULL,
    next_attempt_at  BIGINT,
    lease_token      TEXT,
    lease_until      BIGINT,
    last_status_code BIGINT,
    last_error       TEXT,
    last_latency_ms  BIGINT,
    last_attempt_at  BIGINT,
    created_at       BIGINT NOT NULL,
    updated_at       BIGINT NOT NULL
);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (status, next_attempt_at);
CREATE INDEX webhook_deliveries_subscription ON webhook_deliveries (subscription_id, created_at);

CREATE TABLE webhook_attempts (
    delivery_id     TEXT   NOT NULL,
    attempt         BIGINT NOT NULL,
    subscription_id TEXT   NOT NULL,
    started_at      BIGINT NOT NULL,
    status_code     BIGINT,
    latency_ms      BIGINT NOT NULL,
    error           TEXT,
    next_attempt_at BIGINT,
    PRIMARY KEY (delivery_id, attempt)
);
