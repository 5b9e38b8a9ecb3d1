-- Aggregates' bodies and outbox events' data are stored packed (deflate against a dictionary,
-- swapd-store's `packed` module; docs/benchmarks.md, "Storage"). SQLite keeps each value's own
-- type: the columns declared TEXT hold the new BLOBs beside the JSON text written before, and
-- reads take both, so no column changes here.
SELECT 1;
