-- E-mail notifications ride on the outbox: an event of a status change of an order with an
-- e-mail attached names the address; `mailed_at` records the sending.
ALTER TABLE order_events ADD COLUMN notify_email TEXT;
ALTER TABLE order_events ADD COLUMN mailed_at BIGINT;
CREATE INDEX order_events_mail_pending ON order_events (mailed_at, notify_email);
