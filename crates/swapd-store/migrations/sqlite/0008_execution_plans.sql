-- Onchain execution plans as JSON of swapd_core::onchain::ExecutionPlan, with where their
-- execution stands. `version` guards every update (compare-and-set); one plan per principal
-- and resolve request (`resolve_key`), so resolving the same card twice answers the same plan;
-- `next_check_at` lets the tracker find executions to look at.
CREATE TABLE execution_plans (
    id            TEXT   PRIMARY KEY NOT NULL,
    owner         TEXT   NOT NULL,
    resolve_key   TEXT   NOT NULL,
    status        TEXT   NOT NULL,
    version       BIGINT NOT NULL,
    body          TEXT   NOT NULL,
    created_at    BIGINT NOT NULL,
    updated_at    BIGINT NOT NULL,
    next_check_at BIGINT,
    UNIQUE (owner, resolve_key)
);
CREATE INDEX execution_plans_next_check ON execution_plans (next_check_at);
