-- A notifier leases the e-mails it sends (several worker nodes split them; one that dies
-- leaves them to the others when the lease ends). Orders and execution plans are leased by
-- moving their next check, which needs no column.
ALTER TABLE order_events ADD COLUMN mail_lease_until BIGINT;
