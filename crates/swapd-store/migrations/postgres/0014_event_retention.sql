-- Events older than the retention (webhooks.retention_days) are purged, oldest first, with
-- their deliveries.
CREATE INDEX order_events_created ON order_events (created_at, id);
CREATE INDEX webhook_deliveries_event ON webhook_deliveries (event_id);
