-- Aggregates' bodies and outbox events' data are stored packed (deflate against a dictionary,
-- swapd-store's `packed` module; docs/benchmarks.md, "Storage"): bytes, no longer text. Rows
-- written before keep their JSON, converted to its UTF-8 bytes, which reads as it did.
ALTER TABLE orders ALTER COLUMN body TYPE BYTEA USING convert_to(body, 'UTF8');
ALTER TABLE order_events ALTER COLUMN data TYPE BYTEA USING convert_to(data, 'UTF8');
ALTER TABLE execution_plans ALTER COLUMN body TYPE BYTEA USING convert_to(body, 'UTF8');
ALTER TABLE route_quotes ALTER COLUMN body TYPE BYTEA USING convert_to(body, 'UTF8');
ALTER TABLE create_tokens ALTER COLUMN route TYPE BYTEA USING convert_to(route, 'UTF8');
ALTER TABLE sandbox_exchanges ALTER COLUMN body TYPE BYTEA USING convert_to(body, 'UTF8');
