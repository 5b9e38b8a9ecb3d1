-- The sandbox desks' own books: one exchange per order reference, as JSON of
-- swapd_core::orders::Order (the desk runs the sandbox lifecycle on it). `version` guards every
-- update (compare-and-set). swapd's orders follow these through the desk port, as they follow a
-- live desk's exchanges through its API.
CREATE TABLE sandbox_exchanges (
    id      TEXT   PRIMARY KEY NOT NULL,
    version BIGINT NOT NULL,
    body    TEXT   NOT NULL
);
