//! Every call to the store within a deadline. A database whose packets are silently dropped
//! (a partition, not a refusal) leaves a statement in flight waiting for an answer that TCP
//! will not give up on for many minutes; [`BoundedStore`] answers
//! [`StoreError::Unavailable`] instead when the deadline passes, and marks the pool wary so
//! that the abandoned connections are tested, within a bound, before they are used again
//! (docs/reliability.md, "Bounded calls").

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use swapd_core::StoreError;
use swapd_core::affiliates::Affiliate;
use swapd_core::api_keys::{ApiKey, RateLimits};
use swapd_core::fees::ledger::LedgerRow;
use swapd_core::idempotency::Begin;
use swapd_core::ids::{EventId, JobId, OrderId, PlanId, RouteQuoteId, WebhookId};
use swapd_core::market::observed::{Sample, SwapOutcome};
use swapd_core::market::routes::{CreateTokenRecord, RedeemError, RouteQuote};
use swapd_core::market_intel::{Job, JobOutcome, JobPayment};
use swapd_core::offchain::order::{EventType, Order, OrderEvent};
use swapd_core::onchain::plan::ExecutionPlan;
use swapd_core::owner::Owner;
use swapd_core::purchases::{Presented, PurchaseStep};
use swapd_core::rate_limit::{RateDecision, RateState};
use swapd_core::store::*;
use swapd_core::webhooks::delivery::{
    AttemptRecord, ClaimedDelivery, Delivery, QueuedDelivery, ReplaySelection,
};
use swapd_core::webhooks::subscription::Subscription;

use crate::SqlStore;

/// How long the pool stays wary after a call was abandoned: long enough for the connections
/// that call held to come back to the pool.
const WARY_FOR: Duration = Duration::from_secs(60);

/// The longest a pooled connection may take to answer a ping (returned to a wary pool, or
/// taken after a while idle) before it is closed instead of used.
pub(crate) const PING_BOUND: Duration = Duration::from_secs(1);

/// Whether calls were abandoned lately. A connection whose call was cancelled mid-statement is
/// pinged when it returns to the pool, and over a silent network that ping would wait as long
/// as TCP does; while wary, the pool bounds it and closes the connection when it does not
/// answer. Otherwise returns are not slowed by a ping.
#[derive(Debug)]
pub(crate) struct Wariness {
    start: Instant,
    /// Milliseconds since `start` until which the pool is wary; 0 when it never was.
    until_ms: AtomicU64,
}

impl Default for Wariness {
    fn default() -> Self {
        Self {
            start: Instant::now(),
            until_ms: AtomicU64::new(0),
        }
    }
}

impl Wariness {
    fn now_ms(&self) -> u64 {
        u64::try_from(self.start.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    fn alarm(&self) {
        let until = self.now_ms() + WARY_FOR.as_millis() as u64;
        self.until_ms.fetch_max(until, Ordering::Relaxed);
    }

    pub(crate) fn is_wary(&self) -> bool {
        self.now_ms() < self.until_ms.load(Ordering::Relaxed)
    }
}

/// The store with a deadline on every call (but the migrations, which may take as long as they
/// need): past it the call is abandoned and answers [`StoreError::Unavailable`], which the API
/// turns into 503 `service_unavailable` with `Retry-After` and the worker into a later try.
#[derive(Debug, Clone)]
pub struct BoundedStore {
    inner: SqlStore,
    deadline: Duration,
}

impl BoundedStore {
    pub fn new(inner: SqlStore, deadline: Duration) -> Self {
        Self { inner, deadline }
    }

    async fn within<T>(
        &self,
        call: impl Future<Output = Result<T, StoreError>>,
    ) -> Result<T, StoreError> {
        let call = std::pin::pin!(crate::group::settled(call));
        // Declared after `call`, so dropped before it: a call abandoned here or by its caller (a
        // readiness check's shorter timeout, a client gone) makes the pool wary before its
        // connections are released.
        let mut unfinished = Unfinished(Some(&self.inner.wariness));
        match tokio::time::timeout(self.deadline, call).await {
            Ok(answer) => {
                unfinished.0 = None;
                answer
            }
            Err(_) => Err(StoreError::Unavailable(format!(
                "the database did not answer within {} ms",
                self.deadline.as_millis()
            ))),
        }
    }
}

/// A call that has not finished: dropped so, it makes the pool wary.
struct Unfinished<'a>(Option<&'a Wariness>);

impl Drop for Unfinished<'_> {
    fn drop(&mut self) {
        if let Some(wariness) = self.0 {
            wariness.alarm();
        }
    }
}

#[async_trait]
impl Maintenance for BoundedStore {
    fn backend(&self) -> &'static str {
        self.inner.backend()
    }

    async fn migrate(&self) -> Result<(), StoreError> {
        self.inner.migrate().await
    }

    async fn applied_migrations(&self) -> Result<Vec<i64>, StoreError> {
        self.within(self.inner.applied_migrations()).await
    }

    async fn ping(&self) -> Result<(), StoreError> {
        self.within(self.inner.ping()).await
    }

    async fn purge_expired(&self, now_ms: i64, limit: u32) -> Result<u64, StoreError> {
        self.within(self.inner.purge_expired(now_ms, limit)).await
    }

    async fn close(&self) {
        // Closing waits for connections in use; one stuck on a silent network is let go.
        let _ = tokio::time::timeout(self.deadline, self.inner.close()).await;
    }

    fn bells(&self) -> Arc<swapd_core::wakeup::Bells> {
        self.inner.bells()
    }

    fn listen_for_work(&self) -> Option<WorkListener> {
        self.inner.listen_for_work()
    }
}

/// Each port's methods, forwarded within the deadline: `fn name(args) -> Ok;` for a method
/// `async fn name(&self, args) -> Result<Ok, StoreError>`.
macro_rules! bounded {
    ($($port:ident { $(fn $name:ident($($arg:ident: $ty:ty),*) -> $ok:ty;)* })*) => {$(
        #[async_trait]
        impl $port for BoundedStore {
            $(async fn $name(&self, $($arg: $ty),*) -> Result<$ok, StoreError> {
                self.within(self.inner.$name($($arg),*)).await
            })*
        }
    )*};
}

bounded! {
    AffiliateStore {
        fn insert_affiliate(affiliate: &Affiliate) -> ();
        fn affiliate(code: &str) -> Option<Affiliate>;
        fn list_affiliates() -> Vec<Affiliate>;
        fn set_affiliate_active(code: &str, active: bool) -> Option<Affiliate>;
        fn affiliate_ledger(code: &str, since_ms: i64, until_ms: i64, limit: u32) -> Vec<LedgerRow>;
    }
    IdempotencyStore {
        fn begin_idempotent(principal: &str, key: &str, fingerprint: &str, lease_token: &str, holder: &str, now_ms: i64) -> Begin;
        fn idempotent_answer(principal: &str, key: &str, fingerprint: &str, now_ms: i64) -> Option<Begin>;
        fn finish_idempotent(finish: IdempotentFinish<'_>) -> bool;
        fn release_idempotent(principal: &str, key: &str, lease_token: &str) -> ();
        fn release_claims_of(holder: &str) -> u64;
    }
    JobStore {
        fn insert_job(job: &Job, finish: IdempotentFinish<'_>) -> ();
        fn job(id: &JobId, owner: &Owner) -> Option<Job>;
        fn claim_jobs(now_ms: i64, lease_token: &str, lease_until_ms: i64, limit: u32) -> Vec<Job>;
        fn finish_job(id: &JobId, lease_token: &str, outcome: &JobOutcome, payment: Option<&JobPayment>, now_ms: i64) -> bool;
    }
    KeyStore {
        fn insert_api_key(key: &ApiKey) -> ();
        fn api_key(id: &str) -> Option<ApiKey>;
        fn list_api_keys() -> Vec<ApiKey>;
        fn revoke_api_key(id: &str, now_ms: i64) -> Option<ApiKey>;
        fn remember_nonce(key_id: &str, nonce: &str, expires_at_ms: i64) -> bool;
        fn remember_nonces(batch: &[NonceRecord]) -> ();
        fn live_nonces(now_ms: i64) -> Vec<NonceRecord>;
        fn consume_rate(key_id: &str, limits: RateLimits, cost: u32, now_ms: i64) -> RateDecision;
        fn rate_state(key_id: &str) -> RateState;
        fn end_console_session(session: &str, now_ms: i64, expires_at_ms: i64) -> ();
        fn console_session_ended(session: &str, issued_at_ms: i64) -> bool;
    }
    OrderStore {
        fn create_order(order: &Order, events: &[OrderEvent], create_token_hash: Option<&str>, finish: IdempotentFinish<'_>) -> Result<(), RedeemError>;
        fn fee_ledger(owner: Option<&Owner>, since_ms: i64, until_ms: i64, limit: u32) -> Vec<LedgerRow>;
        fn order(id: &OrderId, owner: &Owner) -> Option<Order>;
        fn order_for_page(id: &OrderId) -> Option<Order>;
        fn search_orders(search: &OrderSearch) -> Vec<Order>;
        fn update_order(order: &Order, events: &[OrderEvent], finish: Option<IdempotentFinish<'_>>) -> bool;
        fn reschedule_order(id: &OrderId, version: i64, next_check_at_ms: i64) -> bool;
        fn claim_due_orders(now_ms: i64, lease_until_ms: i64, limit: u32) -> Vec<Order>;
        fn claim_notifications(now_ms: i64, lease_until_ms: i64, limit: u32) -> Vec<OrderEvent>;
        fn mark_notified(event_id: &EventId, now_ms: i64) -> ();
        fn mark_notification_failed(event_id: &EventId, now_ms: i64) -> ();
        fn order_events(order_id: &OrderId) -> Vec<OrderEvent>;
        fn order_mails(order_id: &OrderId) -> Vec<EventMail>;
    }
    OutcomeStore {
        fn outcome_samples(since_ms: i64) -> Vec<Sample>;
        fn recent_outcomes(provider: &str, limit: u32) -> Vec<SwapOutcome>;
        fn purge_outcomes(before_ms: i64, limit: u32) -> u64;
    }
    PlanStore {
        fn insert_execution_plan(plan: &ExecutionPlan, finish: IdempotentFinish<'_>) -> ();
        fn execution_plan_for(owner: &Owner, resolve_key: &str) -> Option<ExecutionPlan>;
        fn execution_plan(id: &PlanId, owner: &Owner) -> Option<ExecutionPlan>;
        fn execution_plan_for_page(id: &PlanId) -> Option<ExecutionPlan>;
        fn update_execution_plan(plan: &ExecutionPlan, finish: Option<IdempotentFinish<'_>>) -> bool;
        fn claim_due_execution_plans(now_ms: i64, lease_until_ms: i64, limit: u32) -> Vec<ExecutionPlan>;
    }
    QuoteStore {
        fn save_route_quotes(quotes: &[RouteQuote]) -> ();
        fn route_quote(id: &RouteQuoteId, owner: &Owner) -> Option<RouteQuote>;
        fn issue_create_token(token: &CreateTokenRecord, finish: IdempotentFinish<'_>) -> ();
        fn create_token(token_hash: &str, owner: &Owner) -> Option<CreateTokenRecord>;
        fn redeem_create_token(token_hash: &str, owner: &Owner, now_ms: i64) -> Result<CreateTokenRecord, RedeemError>;
        fn record_rates(observations: &[RateObservation]) -> ();
        fn rates(pair: &str, since_ms: i64, until_ms: i64, limit: u32) -> Vec<RateObservation>;
    }
    SandboxChainStore {
        fn sandbox_record_deposit(deposit: &SandboxDeposit, finish: Option<IdempotentFinish<'_>>) -> ();
        fn sandbox_deposits(address: &str, tag: Option<&str>) -> Vec<SandboxDeposit>;
        fn sandbox_transfer(transfer: &SandboxTransfer) -> SandboxTransfer;
        fn sandbox_transfers() -> Vec<SandboxTransfer>;
        fn sandbox_open_exchange(id: &str, book: &Order) -> Order;
        fn sandbox_exchange(id: &str) -> Option<Order>;
        fn sandbox_update_exchange(id: &str, book: &Order) -> bool;
    }
    WebhookStore {
        fn insert_subscription(subscription: &Subscription, finish: IdempotentFinish<'_>) -> bool;
        fn subscriptions(owner: &Owner) -> Vec<Subscription>;
        fn subscription(id: &WebhookId, owner: &Owner) -> Option<Subscription>;
        fn update_subscription(subscription: &Subscription, finish: Option<IdempotentFinish<'_>>) -> bool;
        fn claim_deliveries(now_ms: i64, lease_token: &str, lease_until_ms: i64, limit: u32) -> Vec<ClaimedDelivery>;
        fn record_attempt(record: &AttemptRecord) -> bool;
        fn replay_events(owner: &Owner, selection: &ReplaySelection, types: &[EventType]) -> Vec<(String, EventType)>;
        fn queue_deliveries(deliveries: &[QueuedDelivery], finish: Option<IdempotentFinish<'_>>) -> ();
        fn deliveries(subscription_id: &WebhookId, owner: &Owner, limit: u32) -> Vec<Delivery>;
        fn purge_event_history(before_ms: i64, limit: u32) -> u64;
    }
    X402Store {
        fn record_x402_settlement(settlement: &X402Settlement) -> bool;
        fn x402_settlement(payer: &str, nonce: &str) -> Option<X402Settlement>;
        fn begin_purchase(payer: &str, nonce: &str, presented: Presented<'_>, holder: &str, now_ms: i64) -> PurchaseStep;
        fn purchase_settled(payer: &str, nonce: &str, transaction: &str) -> ();
        fn purchase_served(payer: &str, nonce: &str) -> ();
        fn recent_purchases(limit: u32) -> Vec<PurchaseRecord>;
        fn release_purchase(payer: &str, nonce: &str) -> ();
        fn forget_purchase(payer: &str, nonce: &str) -> ();
        fn siwx_nonce_used(nonce: &str) -> bool;
        fn use_siwx_nonce(nonce: &str, expires_at_ms: i64, now_ms: i64) -> bool;
        fn consume_window(key: &str, window_ms: i64, limit: u32, now_ms: i64) -> WindowDecision;
    }
}
