//! Orders and their outbox: every change of an order is stored with the events it emits (and
//! the webhook deliveries they fan out to) in one transaction.

use crate::ids::{EventId, OrderId};
use crate::owner::Owner;
use async_trait::async_trait;

use super::{IdempotentFinish, StoreError};
use crate::market::routes::RedeemError;
use crate::offchain::order::{Order, OrderEvent};

/// What the operator console searches orders by (every field optional); newest first.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OrderSearch {
    pub id: Option<String>,
    pub status: Option<crate::offchain::order::OrderStatus>,
    /// The caller scope that created them (`key:<id>`, `wallet:<address>`).
    pub owner: Option<Owner>,
    pub created_from_ms: Option<i64>,
    pub created_until_ms: Option<i64>,
    pub limit: u32,
}

#[async_trait]
pub trait OrderStore: Send + Sync + 'static {
    /// Creates `order` with its first `events` and completes the request's idempotency record,
    /// in one transaction, with the order's expected fee ledger rows
    /// ([`crate::fees::ledger::ledger_rows`]); the change that completes it adds the realized ones. With `create_token_hash`, the createToken is redeemed by the order's
    /// owner in the same transaction; when it cannot be, nothing is written and the reason is
    /// returned.
    async fn create_order(
        &self,
        order: &Order,
        events: &[OrderEvent],
        create_token_hash: Option<&str>,
        finish: IdempotentFinish<'_>,
    ) -> Result<Result<(), RedeemError>, StoreError>;

    /// The fee ledger rows of `owner`'s orders (every owner's with `None`: the operator's view)
    /// learnt in `[since_ms, until_ms)`, oldest first, at most `limit`.
    async fn fee_ledger(
        &self,
        owner: Option<&Owner>,
        since_ms: i64,
        until_ms: i64,
        limit: u32,
    ) -> Result<Vec<crate::fees::ledger::LedgerRow>, StoreError>;

    /// The order `id` if `owner` created it; `None` otherwise (missing and foreign look the
    /// same).
    async fn order(&self, id: &OrderId, owner: &Owner) -> Result<Option<Order>, StoreError>;

    /// The order `id` whoever created it: only for the hosted order page, which checks the
    /// order's page token before showing anything (never an API handler: they read with
    /// [`OrderStore::order`]).
    async fn order_for_page(&self, id: &OrderId) -> Result<Option<Order>, StoreError>;

    /// The orders matching `search` across every owner, newest first: only for the operator
    /// console.
    async fn search_orders(&self, search: &OrderSearch) -> Result<Vec<Order>, StoreError>;

    /// Stores `order` (whose `version` was increased by one) with its `events`, only if the
    /// stored version is still the one it was read at, completing `finish` in the same
    /// transaction when given. `false`: another writer changed the order first; nothing was
    /// written.
    async fn update_order(
        &self,
        order: &Order,
        events: &[OrderEvent],
        finish: Option<IdempotentFinish<'_>>,
    ) -> Result<bool, StoreError>;

    /// Moves the next look at order `id` to `next_check_at_ms`, only if it is still at
    /// `version`, writing nothing else (a look that found nothing new: see
    /// `Followed::only_reschedules`). `false`: another writer changed the order first.
    async fn reschedule_order(
        &self,
        id: &OrderId,
        version: i64,
        next_check_at_ms: i64,
    ) -> Result<bool, StoreError>;

    /// Leases up to `limit` orders whose next check is due at `now_ms`, earliest first, until
    /// `lease_until_ms`: their next check moves to then, so no other engine takes them
    /// meanwhile (concurrent claimers get disjoint orders); the engine's save of the order sets
    /// its real next check. An engine that dies leaves them due again at the lease's end.
    async fn claim_due_orders(
        &self,
        now_ms: i64,
        lease_until_ms: i64,
        limit: u32,
    ) -> Result<Vec<Order>, StoreError>;

    /// Leases up to `limit` events with an e-mail not sent yet (and not leased to another
    /// notifier until after `now_ms`), oldest first, until `lease_until_ms`. Each claim counts
    /// an attempt: an e-mail claimed [`crate::notify::MAX_MAIL_ATTEMPTS`] times without being
    /// sent is marked failed instead, and failed ones are never claimed.
    async fn claim_notifications(
        &self,
        now_ms: i64,
        lease_until_ms: i64,
        limit: u32,
    ) -> Result<Vec<OrderEvent>, StoreError>;

    /// Records that the e-mail of event `event_id` was sent.
    async fn mark_notified(&self, event_id: &EventId, now_ms: i64) -> Result<(), StoreError>;

    /// Records that the e-mail of event `event_id` cannot be sent (its address is refused):
    /// it is not tried again.
    async fn mark_notification_failed(
        &self,
        event_id: &EventId,
        now_ms: i64,
    ) -> Result<(), StoreError>;

    /// Every outbox event of one order, by sequence.
    async fn order_events(&self, order_id: &OrderId) -> Result<Vec<OrderEvent>, StoreError>;

    /// Where the status e-mails of one order's events stand, by sequence (events without an
    /// e-mail left out): for the console.
    async fn order_mails(&self, order_id: &OrderId) -> Result<Vec<EventMail>, StoreError>;
}

/// Where an event's status e-mail stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventMail {
    pub event_id: String,
    /// Times a notifier took it to send.
    pub attempts: u32,
    pub sent_at_ms: Option<i64>,
    pub failed_at_ms: Option<i64>,
}
