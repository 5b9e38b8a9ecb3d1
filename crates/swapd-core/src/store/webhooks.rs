//! Webhook subscriptions and their deliveries (the outbox's fan-out is written with the
//! events, see [`super::OrderStore`]).

use crate::ids::WebhookId;
use crate::owner::Owner;
use async_trait::async_trait;

use super::{IdempotentFinish, StoreError};
use crate::offchain::order::EventType;
use crate::webhooks::delivery::{
    AttemptRecord, ClaimedDelivery, Delivery, QueuedDelivery, ReplaySelection,
};
use crate::webhooks::subscription::Subscription;

#[async_trait]
pub trait WebhookStore: Send + Sync + 'static {
    /// Stores a new webhook subscription and completes the request's idempotency record, in
    /// one transaction, unless its owner already has
    /// [`MAX_SUBSCRIPTIONS_PER_OWNER`](crate::webhooks::subscription::MAX_SUBSCRIPTIONS_PER_OWNER): then it
    /// writes nothing and answers `false`. Concurrent inserts of one owner are serialized, so
    /// the cap holds under any race.
    async fn insert_subscription(
        &self,
        subscription: &Subscription,
        finish: IdempotentFinish<'_>,
    ) -> Result<bool, StoreError>;

    /// Every subscription of `owner`, oldest first.
    async fn subscriptions(&self, owner: &Owner) -> Result<Vec<Subscription>, StoreError>;

    /// The subscription `id` if `owner` made it.
    async fn subscription(
        &self,
        id: &WebhookId,
        owner: &Owner,
    ) -> Result<Option<Subscription>, StoreError>;

    /// Stores `subscription` (whose `version` was increased by one) only if the stored version
    /// is still the one it was read at, completing `finish` in the same transaction when given.
    async fn update_subscription(
        &self,
        subscription: &Subscription,
        finish: Option<IdempotentFinish<'_>>,
    ) -> Result<bool, StoreError>;

    /// Leases up to `limit` pending deliveries due at `now_ms` (whose lease, if any, ended) to
    /// `lease_token` until `lease_until_ms`. Concurrent claimers never get the same delivery.
    async fn claim_deliveries(
        &self,
        now_ms: i64,
        lease_token: &str,
        lease_until_ms: i64,
        limit: u32,
    ) -> Result<Vec<ClaimedDelivery>, StoreError>;

    /// Records an attempt and its consequences (the delivery's new state, the subscription's
    /// failing streak, disabling it) in one transaction, if the lease is still held. `false`:
    /// the lease was lost (another worker took over); nothing was written.
    async fn record_attempt(&self, record: &AttemptRecord) -> Result<bool, StoreError>;

    /// The events of `owner` a replay selects: `(event id, type)`, oldest first. An event of
    /// another owner is not found.
    async fn replay_events(
        &self,
        owner: &Owner,
        selection: &ReplaySelection,
        types: &[EventType],
    ) -> Result<Vec<(String, EventType)>, StoreError>;

    /// Queues replay deliveries and completes the request's idempotency record (when given), in
    /// one transaction.
    async fn queue_deliveries(
        &self,
        deliveries: &[QueuedDelivery],
        finish: Option<IdempotentFinish<'_>>,
    ) -> Result<(), StoreError>;

    /// The newest `limit` deliveries of a subscription of `owner`, with their attempts.
    async fn deliveries(
        &self,
        subscription_id: &WebhookId,
        owner: &Owner,
        limit: u32,
    ) -> Result<Vec<Delivery>, StoreError>;

    /// Deletes up to `limit` of the oldest events created before `before_ms`, with their
    /// deliveries and attempts, in one transaction. Returns how many events went.
    async fn purge_event_history(&self, before_ms: i64, limit: u32) -> Result<u64, StoreError>;
}
