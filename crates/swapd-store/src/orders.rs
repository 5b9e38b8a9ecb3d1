//! Orders and their outbox: events are written with the order change that emits them, and fan
//! out to webhook deliveries in the same transaction.

use swapd_core::StoreError;
use swapd_core::market::observed::SwapOutcome;

use swapd_core::fees::ledger::{LedgerRow, Stage, ledger_rows};
use swapd_core::market::routes::RedeemError;
use swapd_core::offchain::order::{EventType, Order, OrderEvent};
use swapd_core::store::{EventMail, IdempotentFinish, OrderSearch, OrderStore};
use swapd_core::wakeup::Work;

use swapd_core::ids::{EventId, OrderId};
use swapd_core::notify::Email;
use swapd_core::owner::Owner;

use crate::codec::{decode_body, decode_packed, encode_body, encode_packed};
use crate::ledger::{self, insert_ledger_in};
use crate::map_sqlx_error;
use crate::outcomes::record_outcome_in;
use crate::packed::Stored;
use crate::quotes::redeem_in;
use crate::rows::stored::{id_of, owner_of};
use crate::sql::{Claim, LEASE_CLAIM, SqlStore, Tx, VersionedBody, built, leased};

/// The columns of an outbox event, as [`EventRow`] reads them.
pub(crate) const EVENT_COLUMNS: &str =
    "id, order_id, owner, sequence, event_type, data, created_at, notify_email";

#[derive(sqlx::FromRow)]
pub(crate) struct EventRow {
    id: String,
    order_id: String,
    owner: String,
    sequence: i64,
    event_type: String,
    data: Stored,
    created_at: i64,
    notify_email: Option<String>,
}

impl EventRow {
    pub(crate) fn into_event(self) -> Result<OrderEvent, StoreError> {
        Ok(OrderEvent {
            event_type: self.event_type.parse::<EventType>().map_err(|_| {
                StoreError::Corrupt(format!("unknown event type {}", self.event_type))
            })?,
            data: decode_packed(&self.data)?,
            notify_email: self.notify_email.map(Email::stored),
            id: id_of(&self.id)?,
            order_id: id_of(&self.order_id)?,
            owner: owner_of(&self.owner)?,
            sequence: self.sequence,
            created_at_ms: self.created_at,
        })
    }
}

/// The work a write of an order and its `events` makes: the order loop's when `engine` (the
/// order may be due now), deliveries when the outbox fan-out queued some, and e-mails when one
/// of the events has an address. A bell rung for work there is not would only send a loop
/// through a claim that finds nothing: under load, one per order (docs/benchmarks.md).
fn order_work(engine: bool, deliveries_queued: u64, events: &[OrderEvent]) -> Vec<Work> {
    let mut works = Vec::new();
    if engine {
        works.push(Work::Orders);
    }
    if deliveries_queued > 0 {
        works.push(Work::Deliveries);
    }
    if events.iter().any(|event| event.notify_email.is_some()) {
        works.push(Work::Notifications);
    }
    works
}

/// Outbox events ready to write: each one's data packed before the write transaction begins.
struct Outbox<'a> {
    events: &'a [OrderEvent],
    data: Vec<Vec<u8>>,
}

impl<'a> Outbox<'a> {
    fn packed(events: &'a [OrderEvent]) -> Result<Self, StoreError> {
        let data = events
            .iter()
            .map(|event| encode_packed(&event.data))
            .collect::<Result<_, _>>()?;
        Ok(Self { events, data })
    }
}

/// Inside a write transaction: appends outbox events, each with its webhook deliveries, in two
/// statements whatever their number; returns how many deliveries that queued. The webhook
/// payload is not stored: delivery renders it from the event with
/// [`swapd_core::webhooks::signing::event_payload`], the same bytes on every attempt
/// (docs/webhooks.md, "Payloads").
async fn insert_events_in(
    store: &SqlStore,
    tx: &mut Tx,
    Outbox { events, data }: Outbox<'_>,
) -> Result<u64, StoreError> {
    if events.is_empty() {
        return Ok(0);
    }
    let mut insert = sqlx::query(built(format!(
        "INSERT INTO order_events (id, order_id, owner, sequence, event_type, data, created_at, \
         notify_email) VALUES {}",
        store.values(events.len(), 8)
    )));
    for (event, data) in events.iter().zip(data) {
        insert = insert
            .bind(event.id.as_str())
            .bind(event.order_id.as_str())
            .bind(event.owner.scope())
            .bind(event.sequence)
            .bind(event.event_type.as_str())
            .bind(data)
            .bind(event.created_at_ms)
            .bind(event.notify_email.as_ref().map(Email::as_str));
    }
    insert.execute(&mut **tx).await.map_err(map_sqlx_error)?;
    // The outbox fan-out: one delivery per active subscription of the owner to each event's
    // type, in the transaction that wrote the events, so none can be lost. `VALUES` names its
    // columns column1… in both dialects.
    let mut fan_out = sqlx::query(built(format!(
        "INSERT INTO webhook_deliveries (id, subscription_id, event_id, owner, kind, status, \
         attempts, next_attempt_at, created_at, updated_at) \
         SELECT e.column1 || ':' || s.id, s.id, e.column1, s.owner, 'event', 'pending', 0, \
         e.column2, e.column2, e.column2 \
         FROM (VALUES {}) AS e JOIN webhook_subscriptions s \
         ON s.owner = e.column3 AND s.status = 'active' AND s.events LIKE e.column4",
        store.values(events.len(), 4)
    )));
    for event in events {
        fan_out = fan_out
            .bind(event.id.as_str())
            .bind(event.created_at_ms)
            .bind(event.owner.scope())
            .bind(swapd_core::webhooks::subscription::events_pattern(
                event.event_type,
            ));
    }
    let queued = fan_out.execute(&mut **tx).await.map_err(map_sqlx_error)?;
    Ok(queued.rows_affected())
}

/// What an order is read from: its body, its next check, which a reschedule moves alone (the
/// body keeps the one of its last write), and its version, which a claim moves alone
/// ([`crate::sql::Leased`]).
const ORDER_COLUMNS: &str = "body, next_check_at, version";

type OrderRow = (Stored, Option<i64>, i64);

fn stored_order((body, next_check_at, version): OrderRow) -> Result<Order, StoreError> {
    let mut order: Order = decode_body(&body)?;
    order.next_check_at_ms = next_check_at;
    order.version = version;
    Ok(order)
}

leased!(Order);

impl SqlStore {
    /// The order `query` (of [`ORDER_COLUMNS`]) finds, if any.
    async fn one_order(
        &self,
        query: sqlx::query::QueryAs<'_, sqlx::Any, OrderRow, sqlx::any::AnyArguments>,
    ) -> Result<Option<Order>, StoreError> {
        query
            .fetch_optional(&self.pool)
            .await
            .map_err(map_sqlx_error)?
            .map(stored_order)
            .transpose()
    }
}

/// Orders the worker looks at next: due first, each leased until the claim's end.
const DUE_ORDERS: Claim = Claim {
    table: "orders",
    set: LEASE_CLAIM,
    pick: "next_check_at <= $1 ORDER BY next_check_at LIMIT $3",
    returning: "body, version",
};

/// E-mails to send: each claimed for one attempt.
const DUE_MAILS: Claim = Claim {
    table: "order_events",
    set: "mail_lease_until = $2, mail_attempts = mail_attempts + 1",
    pick: "notify_email IS NOT NULL AND mailed_at IS NULL AND mail_failed_at IS NULL \
           AND (mail_lease_until IS NULL OR mail_lease_until <= $1) \
           ORDER BY created_at, order_id, sequence LIMIT $3",
    returning: EVENT_COLUMNS,
};

#[async_trait::async_trait]
impl OrderStore for SqlStore {
    async fn create_order(
        &self,
        order: &Order,
        events: &[OrderEvent],
        create_token_hash: Option<&str>,
        finish: IdempotentFinish<'_>,
    ) -> Result<Result<(), RedeemError>, StoreError> {
        let body = encode_body(order)?;
        let outbox = Outbox::packed(events)?;
        let mut tx = self.write_tx().await?;
        if let Some(hash) = create_token_hash
            && let Err(refused) =
                redeem_in(self, &mut tx, hash, &order.owner, order.created_at_ms).await?
        {
            return Ok(Err(refused));
        }
        sqlx::query(
            "INSERT INTO orders (id, owner, status, version, body, create_token_hash, \
             created_at, updated_at, next_check_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
        )
        .bind(order.id.as_str())
        .bind(order.owner.scope())
        .bind(order.status.as_str())
        .bind(order.version)
        .bind(body)
        .bind(create_token_hash)
        .bind(order.created_at_ms)
        .bind(order.updated_at_ms)
        .bind(order.next_check_at_ms)
        .execute(&mut *tx)
        .await
        .map_err(map_sqlx_error)?;
        let queued = insert_events_in(self, &mut tx, outbox).await?;
        let expected = ledger_rows(
            order.charged(Stage::Expected),
            Stage::Expected,
            order.created_at_ms,
        );
        insert_ledger_in(&mut tx, &expected).await?;
        // A new order is due for the engine later, as a rule: nothing to wake it for.
        let due = order
            .next_check_at_ms
            .is_some_and(|at| at <= order.created_at_ms);
        self.commit(tx, Some(finish), &order_work(due, queued, events))
            .await?;
        Ok(Ok(()))
    }

    async fn fee_ledger(
        &self,
        owner: Option<&Owner>,
        since_ms: i64,
        until_ms: i64,
        limit: u32,
    ) -> Result<Vec<LedgerRow>, StoreError> {
        let scope = owner.map(Owner::scope);
        let filter = scope.as_deref().map(|owner| ("owner", owner));
        ledger::select(self, filter, since_ms, until_ms, limit).await
    }

    async fn order(&self, id: &OrderId, owner: &Owner) -> Result<Option<Order>, StoreError> {
        self.one_order(
            sqlx::query_as(built(format!(
                "SELECT {ORDER_COLUMNS} FROM orders WHERE id = $1 AND owner = $2"
            )))
            .bind(id.as_str())
            .bind(owner.scope()),
        )
        .await
    }

    async fn order_for_page(&self, id: &OrderId) -> Result<Option<Order>, StoreError> {
        self.one_order(
            sqlx::query_as(built(format!(
                "SELECT {ORDER_COLUMNS} FROM orders WHERE id = $1"
            )))
            .bind(id.as_str()),
        )
        .await
    }

    async fn search_orders(&self, search: &OrderSearch) -> Result<Vec<Order>, StoreError> {
        let rows: Vec<OrderRow> = sqlx::query_as(built(format!(
            "SELECT {ORDER_COLUMNS} FROM orders WHERE ($1 IS NULL OR id = $1) \
             AND ($2 IS NULL OR status = $2) AND ($3 IS NULL OR owner = $3) \
             AND ($4 IS NULL OR created_at >= $4) AND ($5 IS NULL OR created_at < $5) \
             ORDER BY created_at DESC, id LIMIT $6"
        )))
        .bind(search.id.as_deref())
        .bind(search.status.map(|s| s.as_str()))
        .bind(search.owner.as_ref().map(Owner::scope))
        .bind(search.created_from_ms)
        .bind(search.created_until_ms)
        .bind(i64::from(search.limit))
        .fetch_all(&self.pool)
        .await
        .map_err(map_sqlx_error)?;
        rows.into_iter().map(stored_order).collect()
    }

    async fn reschedule_order(
        &self,
        id: &OrderId,
        version: i64,
        next_check_at_ms: i64,
    ) -> Result<bool, StoreError> {
        // One statement, no new version: the order itself did not change. The body keeps the
        // next check of its last write; the column is the one claims read.
        let done = self
            .write_one(
                sqlx::query("UPDATE orders SET next_check_at = $3 WHERE id = $1 AND version = $2")
                    .bind(id.as_str())
                    .bind(version)
                    .bind(next_check_at_ms),
            )
            .await?;
        Ok(done.rows_affected() == 1)
    }

    async fn update_order(
        &self,
        order: &Order,
        events: &[OrderEvent],
        finish: Option<IdempotentFinish<'_>>,
    ) -> Result<bool, StoreError> {
        let written = VersionedBody {
            table: "orders",
            id: order.id.as_str(),
            status: order.status.as_str(),
            version: order.version,
            body: encode_body(order)?,
            updated_at_ms: order.updated_at_ms,
            next_check_at_ms: order.next_check_at_ms,
        };
        let outbox = Outbox::packed(events)?;
        let mut tx = self.write_tx().await?;
        if !written.compare_and_set(&mut tx).await? {
            return Ok(false);
        }
        let queued = insert_events_in(self, &mut tx, outbox).await?;
        if let Some(outcome) = SwapOutcome::of_order(order) {
            record_outcome_in(&mut tx, &outcome).await?;
        }
        // The sandbox desks carry the fees they quote: a completed order's provider has taken
        // them. (Live desks' reports take over here: docs/fees.md.)
        if events.iter().any(|e| e.event_type == EventType::Completed) {
            let realized = ledger_rows(
                order.charged(Stage::Realized),
                Stage::Realized,
                order.updated_at_ms,
            );
            insert_ledger_in(&mut tx, &realized).await?;
        }
        self.commit(tx, finish, &order_work(true, queued, events))
            .await?;
        Ok(true)
    }

    async fn claim_due_orders(
        &self,
        now_ms: i64,
        lease_until_ms: i64,
        limit: u32,
    ) -> Result<Vec<Order>, StoreError> {
        self.claim_due(&DUE_ORDERS, now_ms, lease_until_ms, limit)
            .await
    }

    async fn claim_notifications(
        &self,
        now_ms: i64,
        lease_until_ms: i64,
        limit: u32,
    ) -> Result<Vec<OrderEvent>, StoreError> {
        let mut tx = self.write_tx().await?;
        // Tried enough: failed, not claimed again.
        sqlx::query(
            "UPDATE order_events SET mail_failed_at = $1 WHERE notify_email IS NOT NULL \
             AND mailed_at IS NULL AND mail_failed_at IS NULL AND mail_attempts >= $2 \
             AND (mail_lease_until IS NULL OR mail_lease_until <= $1)",
        )
        .bind(now_ms)
        .bind(i64::from(swapd_core::notify::MAX_MAIL_ATTEMPTS))
        .execute(&mut *tx)
        .await
        .map_err(map_sqlx_error)?;
        let rows: Vec<EventRow> = self
            .claim_in(&mut tx, &DUE_MAILS, now_ms, lease_until_ms, limit)
            .await?;
        tx.commit().await.map_err(map_sqlx_error)?;
        let mut events = rows
            .into_iter()
            .map(EventRow::into_event)
            .collect::<Result<Vec<_>, _>>()?;
        events.sort_by(|a, b| {
            (a.created_at_ms, &a.order_id, a.sequence).cmp(&(
                b.created_at_ms,
                &b.order_id,
                b.sequence,
            ))
        });
        Ok(events)
    }

    async fn mark_notified(&self, event_id: &EventId, now_ms: i64) -> Result<(), StoreError> {
        self.write_one(
            sqlx::query("UPDATE order_events SET mailed_at = $2 WHERE id = $1")
                .bind(event_id.as_str())
                .bind(now_ms),
        )
        .await
        .map(drop)
    }

    async fn mark_notification_failed(
        &self,
        event_id: &EventId,
        now_ms: i64,
    ) -> Result<(), StoreError> {
        self.write_one(
            sqlx::query(
                "UPDATE order_events SET mail_failed_at = $2 WHERE id = $1 AND mailed_at IS NULL",
            )
            .bind(event_id.as_str())
            .bind(now_ms),
        )
        .await
        .map(drop)
    }

    async fn order_mails(&self, order_id: &OrderId) -> Result<Vec<EventMail>, StoreError> {
        let rows: Vec<(String, i64, Option<i64>, Option<i64>)> = sqlx::query_as(
            "SELECT id, CAST(mail_attempts AS BIGINT), mailed_at, mail_failed_at \
             FROM order_events WHERE order_id = $1 AND notify_email IS NOT NULL \
             ORDER BY sequence",
        )
        .bind(order_id.as_str())
        .fetch_all(&self.pool)
        .await
        .map_err(map_sqlx_error)?;
        Ok(rows
            .into_iter()
            .map(|(event_id, attempts, sent_at_ms, failed_at_ms)| EventMail {
                event_id,
                attempts: u32::try_from(attempts).unwrap_or(u32::MAX),
                sent_at_ms,
                failed_at_ms,
            })
            .collect())
    }

    async fn order_events(&self, order_id: &OrderId) -> Result<Vec<OrderEvent>, StoreError> {
        let rows: Vec<EventRow> = sqlx::query_as(built(format!(
            "SELECT {EVENT_COLUMNS} FROM order_events WHERE order_id = $1 ORDER BY sequence"
        )))
        .bind(order_id.as_str())
        .fetch_all(&self.pool)
        .await
        .map_err(map_sqlx_error)?;
        rows.into_iter().map(EventRow::into_event).collect()
    }
}
