-- Market-intel jobs: a durable queue claimed with leases (any node's worker runs a job; a dead
-- worker's job is taken over when its lease ends; only the lease holder may finish it), and the
-- rates swapd served (quotes and route cards), which rate_history jobs summarize.
CREATE TABLE market_jobs (
    id          TEXT   PRIMARY KEY NOT NULL,
    owner       TEXT   NOT NULL,
    kind        TEXT   NOT NULL,
    request     TEXT   NOT NULL,
    status      TEXT   NOT NULL,
    result      TEXT,
    error       TEXT,
    attempts    BIGINT NOT NULL,
    lease_token TEXT,
    lease_until BIGINT,
    created_at  BIGINT NOT NULL,
    started_at  BIGINT,
    finished_at BIGINT
);
CREATE INDEX market_jobs_due ON market_jobs (status, created_at);

CREATE TABLE rate_observations (
    pair        TEXT   NOT NULL,
    observed_at BIGINT NOT NULL,
    rate        TEXT   NOT NULL,
    provider    TEXT   NOT NULL
);
CREATE INDEX rate_observations_pair ON rate_observations (pair, observed_at);
