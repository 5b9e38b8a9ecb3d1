//! Webhook subscriptions, leased deliveries, attempts and replays.

use swapd_core::StoreError;
use swapd_core::ids::WebhookId;
use swapd_core::offchain::order::EventType;
use swapd_core::owner::Owner;
use swapd_core::store::{IdempotentFinish, WebhookStore};
use swapd_core::webhooks::delivery::{
    Attempt, AttemptRecord, ClaimedDelivery, Delivery, DeliveryStatus, QueuedDelivery,
    ReplaySelection,
};
use swapd_core::webhooks::subscription::Subscription;

use crate::map_sqlx_error;
use crate::orders::{EVENT_COLUMNS, EventRow};
use crate::rows::{SUBSCRIPTION_COLUMNS, SubscriptionRow};
use crate::sql::{Claim, SqlStore, built, compare_and_set};

/// An event's columns, with the payload bytes that releases before 2026-11-28 stored.
#[derive(sqlx::FromRow)]
struct PayloadRow {
    payload: Option<Vec<u8>>,
    #[sqlx(flatten)]
    event: EventRow,
}

/// `statement` with a subscription's columns bound as `$1`… in [`SUBSCRIPTION_COLUMNS`] order.
fn with_subscription<'q>(
    statement: sqlx::query::Query<'q, sqlx::Any, sqlx::any::AnyArguments>,
    subscription: &Subscription,
) -> sqlx::query::Query<'q, sqlx::Any, sqlx::any::AnyArguments> {
    statement
        .bind(subscription.id.as_str())
        .bind(subscription.owner.scope())
        .bind(&subscription.url)
        .bind(subscription.events_column())
        .bind(&subscription.description)
        .bind(subscription.status.as_str())
        .bind(&subscription.disabled_reason)
        .bind(&subscription.secret_sealed)
        .bind(&subscription.previous_secret_sealed)
        .bind(subscription.previous_secret_expires_at_ms)
        .bind(subscription.failing_since_ms)
        .bind(subscription.created_at_ms)
        .bind(subscription.updated_at_ms)
        .bind(subscription.version)
}

/// Webhook deliveries to send: pending and due ones no other sender holds, oldest due first.
const DUE_DELIVERIES: Claim = Claim {
    table: "webhook_deliveries",
    set: "lease_token = $1, lease_until = $2",
    pick: "status = 'pending' AND next_attempt_at <= $3 \
           AND (lease_until IS NULL OR lease_until <= $3) ORDER BY next_attempt_at LIMIT $4",
    returning: "id, attempts, event_id, subscription_id",
};

type DeliveryRow = (
    String,
    String,
    String,
    String,
    String,
    i64,
    Option<i64>,
    Option<i64>,
    Option<String>,
    Option<i64>,
    i64,
);

#[async_trait::async_trait]
impl WebhookStore for SqlStore {
    async fn insert_subscription(
        &self,
        subscription: &Subscription,
        finish: IdempotentFinish<'_>,
    ) -> Result<bool, StoreError> {
        let mut tx = self.write_tx().await?;
        let owner = subscription.owner.scope();
        self.serialize_owner(&mut tx, &owner).await?;
        let existing: i64 =
            sqlx::query_scalar("SELECT count(*) FROM webhook_subscriptions WHERE owner = $1")
                .bind(&owner)
                .fetch_one(&mut *tx)
                .await
                .map_err(map_sqlx_error)?;
        if existing >= swapd_core::webhooks::subscription::MAX_SUBSCRIPTIONS_PER_OWNER as i64 {
            return Ok(false);
        }
        with_subscription(
            sqlx::query(built(format!(
                "INSERT INTO webhook_subscriptions ({SUBSCRIPTION_COLUMNS}) VALUES {}",
                self.values(1, 14)
            ))),
            subscription,
        )
        .execute(&mut *tx)
        .await
        .map_err(map_sqlx_error)?;
        self.commit(tx, Some(finish), &[]).await?;
        Ok(true)
    }

    async fn subscriptions(&self, owner: &Owner) -> Result<Vec<Subscription>, StoreError> {
        sqlx::query_as::<_, SubscriptionRow>(built(format!(
            "SELECT {SUBSCRIPTION_COLUMNS} FROM webhook_subscriptions WHERE owner = $1 \
             ORDER BY created_at, id"
        )))
        .bind(owner.scope())
        .fetch_all(&self.pool)
        .await
        .map_err(map_sqlx_error)?
        .into_iter()
        .map(SubscriptionRow::into_domain)
        .collect()
    }

    async fn subscription(
        &self,
        id: &WebhookId,
        owner: &Owner,
    ) -> Result<Option<Subscription>, StoreError> {
        sqlx::query_as::<_, SubscriptionRow>(built(format!(
            "SELECT {SUBSCRIPTION_COLUMNS} FROM webhook_subscriptions \
             WHERE id = $1 AND owner = $2"
        )))
        .bind(id.as_str())
        .bind(owner.scope())
        .fetch_optional(&self.pool)
        .await
        .map_err(map_sqlx_error)?
        .map(SubscriptionRow::into_domain)
        .transpose()
    }

    async fn update_subscription(
        &self,
        subscription: &Subscription,
        finish: Option<IdempotentFinish<'_>>,
    ) -> Result<bool, StoreError> {
        let mut tx = self.write_tx().await?;
        // The columns as [`with_subscription`] numbers them; `created_at` ($12) never changes.
        let update = with_subscription(
            sqlx::query(
                "UPDATE webhook_subscriptions SET url = $3, events = $4, description = $5, \
                 status = $6, disabled_reason = $7, secret_sealed = $8, \
                 previous_secret_sealed = $9, previous_secret_expires_at = $10, \
                 failing_since = $11, updated_at = $13, version = $14 \
                 WHERE id = $1 AND owner = $2 AND version = $15",
            ),
            subscription,
        )
        .bind(subscription.version - 1);
        if !compare_and_set(&mut tx, update).await? {
            return Ok(false);
        }
        self.commit(tx, finish, &[]).await?;
        Ok(true)
    }

    async fn claim_deliveries(
        &self,
        now_ms: i64,
        lease_token: &str,
        lease_until_ms: i64,
        limit: u32,
    ) -> Result<Vec<ClaimedDelivery>, StoreError> {
        let mut tx = self.write_tx().await?;
        let claimed: Vec<(String, i64, String, String)> =
            sqlx::query_as(self.claiming(&DUE_DELIVERIES))
                .bind(lease_token)
                .bind(lease_until_ms)
                .bind(now_ms)
                .bind(i64::from(limit))
                .fetch_all(&mut *tx)
                .await
                .map_err(map_sqlx_error)?;
        let mut subscriptions: std::collections::HashMap<String, Subscription> =
            std::collections::HashMap::new();
        let mut deliveries = Vec::with_capacity(claimed.len());
        for (delivery_id, attempts, event_id, subscription_id) in claimed {
            if !subscriptions.contains_key(&subscription_id) {
                let row = sqlx::query_as::<_, SubscriptionRow>(built(format!(
                    "SELECT {SUBSCRIPTION_COLUMNS} FROM webhook_subscriptions WHERE id = $1"
                )))
                .bind(&subscription_id)
                .fetch_one(&mut *tx)
                .await
                .map_err(map_sqlx_error)?;
                subscriptions.insert(subscription_id.clone(), row.into_domain()?);
            }
            let PayloadRow { payload, event } = sqlx::query_as(built(format!(
                "SELECT payload, {EVENT_COLUMNS} FROM order_events WHERE id = $1"
            )))
            .bind(&event_id)
            .fetch_one(&mut *tx)
            .await
            .map_err(map_sqlx_error)?;
            // Rendered from the event, as the event was when written; events written by releases
            // that stored the payload bytes keep theirs (docs/webhooks.md, "Payloads").
            let payload = match payload {
                Some(bytes) => bytes,
                None => swapd_core::webhooks::signing::event_payload(&event.into_event()?),
            };
            deliveries.push(ClaimedDelivery {
                delivery_id,
                lease_token: lease_token.to_owned(),
                attempts: u32::try_from(attempts).unwrap_or(u32::MAX),
                event_id,
                payload,
                subscription: subscriptions[&subscription_id].clone(),
            });
        }
        tx.commit().await.map_err(map_sqlx_error)?;
        Ok(deliveries)
    }

    async fn record_attempt(&self, record: &AttemptRecord) -> Result<bool, StoreError> {
        let after = &record.after;
        let mut tx = self.write_tx().await?;
        let updated = sqlx::query(
                    "UPDATE webhook_deliveries SET status = $3, attempts = $4, next_attempt_at = $5, \
                     lease_token = NULL, lease_until = NULL, last_status_code = $6, last_error = $7, \
                     last_latency_ms = $8, last_attempt_at = $9, updated_at = $10 \
                     WHERE id = $1 AND lease_token = $2",
                )
                .bind(&record.delivery_id)
                .bind(&record.lease_token)
                .bind(after.status.as_str())
                .bind(i64::from(record.attempt))
                .bind(after.next_attempt_at_ms)
                .bind(record.status_code.map(i64::from))
                .bind(&record.error)
                .bind(record.latency_ms)
                .bind(record.started_at_ms)
                .bind(record.finished_at_ms)
                .execute(&mut *tx)
                .await
                .map_err(map_sqlx_error)?;
        if updated.rows_affected() != 1 {
            return Ok(false);
        }
        sqlx::query(
            "INSERT INTO webhook_attempts (delivery_id, attempt, subscription_id, started_at, \
             status_code, latency_ms, error, next_attempt_at) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
        )
        .bind(&record.delivery_id)
        .bind(i64::from(record.attempt))
        .bind(record.subscription_id.as_str())
        .bind(record.started_at_ms)
        .bind(record.status_code.map(i64::from))
        .bind(record.latency_ms)
        .bind(&record.error)
        .bind(after.next_attempt_at_ms)
        .execute(&mut *tx)
        .await
        .map_err(map_sqlx_error)?;
        let streak = if after.status == DeliveryStatus::Succeeded {
            "UPDATE webhook_subscriptions SET failing_since = NULL \
             WHERE id = $1 AND failing_since IS NOT NULL"
        } else {
            "UPDATE webhook_subscriptions SET failing_since = COALESCE(failing_since, $2) \
             WHERE id = $1"
        };
        let mut streak = sqlx::query(streak).bind(record.subscription_id.as_str());
        if after.status != DeliveryStatus::Succeeded {
            streak = streak.bind(record.started_at_ms);
        }
        streak.execute(&mut *tx).await.map_err(map_sqlx_error)?;
        if let Some(reason) = &after.disable_subscription {
            sqlx::query(
                        "UPDATE webhook_subscriptions SET status = 'disabled', disabled_reason = $2, \
                         updated_at = $3, version = version + 1 WHERE id = $1 AND status = 'active'",
                    )
                    .bind(record.subscription_id.as_str())
                    .bind(reason)
                    .bind(record.finished_at_ms)
                    .execute(&mut *tx)
                    .await
                    .map_err(map_sqlx_error)?;
        }
        tx.commit().await.map_err(map_sqlx_error)?;
        Ok(true)
    }

    async fn replay_events(
        &self,
        owner: &Owner,
        selection: &ReplaySelection,
        types: &[EventType],
    ) -> Result<Vec<(String, EventType)>, StoreError> {
        let owner = owner.scope();
        let rows: Vec<(String, String)> = match selection {
            ReplaySelection::Event(id) => sqlx::query_as(
                "SELECT id, event_type FROM order_events WHERE id = $1 AND owner = $2",
            )
            .bind(id)
            .bind(owner)
            .fetch_all(&self.pool)
            .await
            .map_err(map_sqlx_error)?,
            ReplaySelection::Window {
                since_ms,
                until_ms,
                limit,
            } => {
                if types.is_empty() {
                    return Ok(Vec::new());
                }
                let mut query = sqlx::query_as(built(format!(
                    "SELECT id, event_type FROM order_events WHERE owner = $1 \
                     AND created_at >= $2 AND created_at < $3 AND event_type IN {} \
                     ORDER BY created_at, order_id, sequence LIMIT ${}",
                    self.list(4, types.len()),
                    4 + types.len()
                )))
                .bind(owner)
                .bind(*since_ms)
                .bind(*until_ms);
                for event_type in types {
                    query = query.bind(event_type.as_str());
                }
                query
                    .bind(i64::from(*limit))
                    .fetch_all(&self.pool)
                    .await
                    .map_err(map_sqlx_error)?
            }
        };
        rows.into_iter()
            .map(|(id, event_type)| {
                event_type
                    .parse::<EventType>()
                    .ok()
                    .map(|t| (id, t))
                    .ok_or_else(|| StoreError::Corrupt(format!("unknown event type {event_type}")))
            })
            .collect()
    }

    async fn queue_deliveries(
        &self,
        deliveries: &[QueuedDelivery],
        finish: Option<IdempotentFinish<'_>>,
    ) -> Result<(), StoreError> {
        let mut tx = self.write_tx().await?;
        for delivery in deliveries {
            sqlx::query(
                "INSERT INTO webhook_deliveries (id, subscription_id, event_id, owner, kind, \
                 status, attempts, next_attempt_at, created_at, updated_at) \
                 VALUES ($1, $2, $3, $4, 'replay', 'pending', 0, $5, $5, $5)",
            )
            .bind(&delivery.id)
            .bind(delivery.subscription_id.as_str())
            .bind(&delivery.event_id)
            .bind(delivery.owner.scope())
            .bind(delivery.created_at_ms)
            .execute(&mut *tx)
            .await
            .map_err(map_sqlx_error)?;
        }
        self.commit(tx, finish, &[swapd_core::wakeup::Work::Deliveries])
            .await
    }

    async fn deliveries(
        &self,
        subscription_id: &WebhookId,
        owner: &Owner,
        limit: u32,
    ) -> Result<Vec<Delivery>, StoreError> {
        let rows: Vec<DeliveryRow> = sqlx::query_as(
            "SELECT id, subscription_id, event_id, kind, status, attempts, next_attempt_at, \
             last_status_code, last_error, last_latency_ms, created_at \
             FROM webhook_deliveries WHERE subscription_id = $1 AND owner = $2 \
             ORDER BY created_at DESC, id LIMIT $3",
        )
        .bind(subscription_id.as_str())
        .bind(owner.scope())
        .bind(i64::from(limit))
        .fetch_all(&self.pool)
        .await
        .map_err(map_sqlx_error)?;
        let mut deliveries = Vec::with_capacity(rows.len());
        for row in rows {
            let (
                id,
                subscription_id,
                event_id,
                kind,
                status,
                attempts,
                next,
                code,
                error,
                latency,
                created,
            ) = row;
            let log: Vec<(i64, i64, Option<i64>, i64, Option<String>, Option<i64>)> =
                sqlx::query_as(
                    "SELECT attempt, started_at, status_code, latency_ms, error, next_attempt_at \
                     FROM webhook_attempts WHERE delivery_id = $1 ORDER BY attempt",
                )
                .bind(&id)
                .fetch_all(&self.pool)
                .await
                .map_err(map_sqlx_error)?;
            deliveries.push(Delivery {
                status: status
                    .parse::<DeliveryStatus>()
                    .ok()
                    .ok_or_else(|| StoreError::Corrupt(format!("delivery status {status}")))?,
                id,
                subscription_id: crate::rows::stored::id_of(&subscription_id)?,
                event_id,
                kind,
                attempts: u32::try_from(attempts).unwrap_or(u32::MAX),
                next_attempt_at_ms: next,
                last_status_code: code.and_then(|c| u16::try_from(c).ok()),
                last_error: error,
                last_latency_ms: latency,
                created_at_ms: created,
                log: log
                    .into_iter()
                    .map(|(attempt, started, code, latency, error, next)| Attempt {
                        attempt: u32::try_from(attempt).unwrap_or(u32::MAX),
                        started_at_ms: started,
                        status_code: code.and_then(|c| u16::try_from(c).ok()),
                        latency_ms: latency,
                        error,
                        next_attempt_at_ms: next,
                    })
                    .collect(),
            });
        }
        Ok(deliveries)
    }

    async fn purge_event_history(&self, before_ms: i64, limit: u32) -> Result<u64, StoreError> {
        const OLDEST: &str = "SELECT id FROM order_events WHERE created_at < $1 \
                              ORDER BY created_at, id LIMIT $2";
        let mut tx = self.write_tx().await?;
        for statement in [
            format!(
                "DELETE FROM webhook_attempts WHERE delivery_id IN \
                 (SELECT id FROM webhook_deliveries WHERE event_id IN ({OLDEST}))"
            ),
            format!("DELETE FROM webhook_deliveries WHERE event_id IN ({OLDEST})"),
        ] {
            sqlx::query(sqlx::AssertSqlSafe(statement))
                .bind(before_ms)
                .bind(i64::from(limit))
                .execute(&mut *tx)
                .await
                .map_err(map_sqlx_error)?;
        }
        let events = sqlx::query(sqlx::AssertSqlSafe(format!(
            "DELETE FROM order_events WHERE id IN ({OLDEST})"
        )))
        .bind(before_ms)
        .bind(i64::from(limit))
        .execute(&mut *tx)
        .await
        .map_err(map_sqlx_error)?
        .rows_affected();
        tx.commit().await.map_err(map_sqlx_error)?;
        Ok(events)
    }
}

#[cfg(test)]
mod tests {
    use strum::VariantArray;
    use swapd_core::store::{Maintenance, WebhookStore};
    use swapd_core::webhooks::signing::event_payload;

    use crate::conformance::{order_with_three_events, sample_subscription, subscribe};
    use crate::{SqlStore, StoreOptions};

    /// An event written by a release that stored its payload bytes is delivered with those
    /// bytes; one written since, with the bytes rendered from it.
    #[tokio::test]
    async fn stored_payloads_are_sent_as_stored_and_others_rendered() {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("sqlite://{}", dir.path().join("swapd.db").display());
        let store = SqlStore::open(&url, &StoreOptions::default())
            .await
            .unwrap();
        store.migrate().await.unwrap();
        let now = 1_700_000_300_000;
        let owner = "key:payloads";
        let events = swapd_types::webhooks::EventType::VARIANTS;
        subscribe(
            &store,
            &sample_subscription("whk_payloads", owner, events, now),
            now,
        )
        .await;
        let next = order_with_three_events(&store, owner, now).await;
        let stored = b"{\"stored\":\"by an earlier release\"}".to_vec();
        sqlx::query("UPDATE order_events SET payload = $1 WHERE id = 'evt_ord_fanout_1'")
            .bind(&stored)
            .execute(&store.writer)
            .await
            .unwrap();

        let claimed = store
            .claim_deliveries(now + 10, "lease", now + 60_000, 10)
            .await
            .unwrap();
        let payload = |id: &str| {
            claimed
                .iter()
                .find(|d| d.event_id == id)
                .map(|d| d.payload.clone())
                .unwrap()
        };
        assert_eq!(payload("evt_ord_fanout_1"), stored);
        let completed =
            crate::conformance::event(&next, 3, swapd_types::webhooks::EventType::Completed);
        assert_eq!(payload("evt_ord_fanout_3"), event_payload(&completed));
    }
}
