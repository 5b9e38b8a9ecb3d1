//! The storage port. Methods are shaped by use cases and each one is atomic inside its
//! implementation, so no transaction type ever crosses this boundary.

use async_trait::async_trait;

use crate::api_keys::{ApiKey, RateLimits};
use crate::idempotency::{Begin, StoredResponse};
use crate::market::routes::{CreateTokenRecord, RedeemError, RouteQuote};
use crate::market_intel::{Job, JobOutcome};
use crate::onchain::ExecutionPlan;
use crate::orders::EventType;
use crate::orders::{Order, OrderEvent};
use crate::rate_limit::{RateDecision, RateState};
use crate::webhooks::{
    AttemptRecord, ClaimedDelivery, Delivery, QueuedDelivery, ReplaySelection, Subscription,
};

/// The idempotency record a domain write completes in its own transaction: the claim taken by
/// the request and the response to replay to its retries.
#[derive(Debug, Clone, Copy)]
pub struct IdempotentFinish<'a> {
    pub principal: &'a str,
    pub key: &'a str,
    pub lease_token: &'a str,
    pub response: &'a StoredResponse,
}

/// How long expired route quotes and createTokens are kept, so late callers learn "expired"
/// (410) rather than "not found" (404).
pub const EXPIRED_RETENTION_MS: i64 = 24 * 60 * 60 * 1000;

/// A nonce a key used, remembered until `expires_at_ms`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NonceRecord {
    pub key_id: String,
    pub nonce: String,
    pub expires_at_ms: i64,
}

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// A uniqueness rule refused the write (duplicate id, replayed nonce, ...).
    #[error("conflict: {0}")]
    Conflict(String),
    /// The database could not be reached or timed out; retrying later may succeed.
    #[error("database unavailable: {0}")]
    Unavailable(String),
    /// A stored row could not be turned back into a domain value.
    #[error("stored data is corrupt: {0}")]
    Corrupt(String),
    /// Anything else the database reported.
    #[error("database error: {0}")]
    Database(String),
}

#[async_trait]
pub trait Store: Send + Sync + 'static {
    /// `"sqlite"` or `"postgres"`.
    fn backend(&self) -> &'static str;

    /// Applies pending migrations; a no-op when the schema is current.
    async fn migrate(&self) -> Result<(), StoreError>;

    /// The applied migration versions, oldest first.
    async fn applied_migrations(&self) -> Result<Vec<i64>, StoreError>;

    /// Cheap round trip used by readiness checks.
    async fn ping(&self) -> Result<(), StoreError>;

    async fn insert_api_key(&self, key: &ApiKey) -> Result<(), StoreError>;

    async fn api_key(&self, id: &str) -> Result<Option<ApiKey>, StoreError>;

    /// Every key, oldest first.
    async fn list_api_keys(&self) -> Result<Vec<ApiKey>, StoreError>;

    /// Marks the key revoked at `now_ms` and returns it; revoking a revoked key keeps its first
    /// revocation time. `None` when no such key exists.
    async fn revoke_api_key(&self, id: &str, now_ms: i64) -> Result<Option<ApiKey>, StoreError>;

    /// Records that `key_id` used `nonce`, remembered until `expires_at_ms`. Returns `false` when
    /// the pair was already recorded and has not been purged: a replay.
    async fn remember_nonce(
        &self,
        key_id: &str,
        nonce: &str,
        expires_at_ms: i64,
    ) -> Result<bool, StoreError>;

    /// Deletes every record whose lifetime ended at or before `now_ms` (shared and logged
    /// nonces, idempotency keys). Returns how many rows went.
    async fn purge_expired(&self, now_ms: i64) -> Result<u64, StoreError>;

    /// Appends many nonces to the durable log of a single node's in-memory nonce set, in one
    /// transaction. The log is separate from the shared set of [`Store::remember_nonce`]: it is
    /// only appended, reloaded and purged, never searched.
    async fn remember_nonces(&self, batch: &[NonceRecord]) -> Result<(), StoreError>;

    /// Every logged nonce still live at `now_ms` (to rebuild the in-memory set on start).
    async fn live_nonces(&self, now_ms: i64) -> Result<Vec<NonceRecord>, StoreError>;

    /// Atomically decides one request of `cost` units for `key_id` with
    /// [`crate::rate_limit::decide`] and stores the new state when admitted.
    async fn consume_rate(
        &self,
        key_id: &str,
        limits: RateLimits,
        cost: u32,
        now_ms: i64,
    ) -> Result<RateDecision, StoreError>;

    /// The stored rate-limit state of `key_id` (default when none).
    async fn rate_state(&self, key_id: &str) -> Result<RateState, StoreError>;

    /// Starts an idempotent execution or says how to answer instead, applying
    /// [`crate::idempotency::plan`] atomically.
    async fn begin_idempotent(
        &self,
        principal: &str,
        key: &str,
        fingerprint: &str,
        lease_token: &str,
        now_ms: i64,
    ) -> Result<Begin, StoreError>;

    /// Stores the outcome of the execution holding `lease_token`. `false` when the lease was
    /// lost (another attempt took over after it expired).
    async fn finish_idempotent(
        &self,
        principal: &str,
        key: &str,
        lease_token: &str,
        response: &StoredResponse,
    ) -> Result<bool, StoreError>;

    /// Forgets an in-flight execution that stored nothing, so a retry executes afresh.
    async fn release_idempotent(
        &self,
        principal: &str,
        key: &str,
        lease_token: &str,
    ) -> Result<(), StoreError>;

    /// Stores the usable route cards of one `GET /routes` answer.
    async fn save_route_quotes(&self, quotes: &[RouteQuote]) -> Result<(), StoreError>;

    /// The route quote `id` if `owner` received it; `None` otherwise (missing and foreign look
    /// the same).
    async fn route_quote(&self, id: &str, owner: &str) -> Result<Option<RouteQuote>, StoreError>;

    /// Stores a new createToken and completes the request's idempotency record in the same
    /// transaction. [`StoreError::Conflict`] when the idempotency lease was lost.
    async fn issue_create_token(
        &self,
        token: &CreateTokenRecord,
        finish: IdempotentFinish<'_>,
    ) -> Result<(), StoreError>;

    /// The createToken with hash `token_hash` if it was issued to `owner`, used or not.
    async fn create_token(
        &self,
        token_hash: &str,
        owner: &str,
    ) -> Result<Option<CreateTokenRecord>, StoreError>;

    /// Marks the createToken with hash `token_hash` used by `owner` at `now_ms` and returns it,
    /// or says why it cannot be used. A token issued to another owner is `NotFound`.
    async fn redeem_create_token(
        &self,
        token_hash: &str,
        owner: &str,
        now_ms: i64,
    ) -> Result<Result<CreateTokenRecord, RedeemError>, StoreError>;

    /// Creates `order` with its first `events` and completes the request's idempotency record,
    /// in one transaction. With `create_token_hash`, the createToken is redeemed by the order's
    /// owner in the same transaction; when it cannot be, nothing is written and the reason is
    /// returned.
    async fn create_order(
        &self,
        order: &Order,
        events: &[OrderEvent],
        create_token_hash: Option<&str>,
        finish: IdempotentFinish<'_>,
    ) -> Result<Result<(), RedeemError>, StoreError>;

    /// The order `id` if `owner` created it; `None` otherwise (missing and foreign look the
    /// same).
    async fn order(&self, id: &str, owner: &str) -> Result<Option<Order>, StoreError>;

    /// Stores `order` (whose `version` was increased by one) with its `events`, only if the
    /// stored version is still the one it was read at. `false`: another writer changed the
    /// order first; nothing was written.
    async fn update_order(&self, order: &Order, events: &[OrderEvent]) -> Result<bool, StoreError>;

    /// Orders whose next check is due at `now_ms`, earliest first.
    async fn due_orders(&self, now_ms: i64, limit: u32) -> Result<Vec<Order>, StoreError>;

    /// Events with an e-mail to send that was not sent yet, oldest first.
    async fn pending_notifications(&self, limit: u32) -> Result<Vec<OrderEvent>, StoreError>;

    /// Records that the e-mail of event `event_id` was sent.
    async fn mark_notified(&self, event_id: &str, now_ms: i64) -> Result<(), StoreError>;

    /// Every outbox event of one order, by sequence.
    async fn order_events(&self, order_id: &str) -> Result<Vec<OrderEvent>, StoreError>;

    /// Stores a new execution plan and completes the request's idempotency record, in one
    /// transaction. [`StoreError::Conflict`] when the owner already has a plan for the plan's
    /// `resolve_key` (nothing is written), or when the idempotency lease was lost.
    async fn insert_execution_plan(
        &self,
        plan: &ExecutionPlan,
        finish: IdempotentFinish<'_>,
    ) -> Result<(), StoreError>;

    /// The plan `owner` resolved with `resolve_key`, if any.
    async fn execution_plan_for(
        &self,
        owner: &str,
        resolve_key: &str,
    ) -> Result<Option<ExecutionPlan>, StoreError>;

    /// The plan `id` if `owner` resolved it; `None` otherwise (missing and foreign look the
    /// same).
    async fn execution_plan(
        &self,
        id: &str,
        owner: &str,
    ) -> Result<Option<ExecutionPlan>, StoreError>;

    /// Stores `plan` (whose `version` was increased by one) only if the stored version is still
    /// the one it was read at, completing `finish` in the same transaction when given. `false`:
    /// another writer changed the plan first; nothing was written.
    async fn update_execution_plan(
        &self,
        plan: &ExecutionPlan,
        finish: Option<IdempotentFinish<'_>>,
    ) -> Result<bool, StoreError>;

    /// Plans whose next check is due at `now_ms`, earliest first.
    async fn due_execution_plans(
        &self,
        now_ms: i64,
        limit: u32,
    ) -> Result<Vec<ExecutionPlan>, StoreError>;

    /// Stores a new webhook subscription and completes the request's idempotency record, in
    /// one transaction.
    async fn insert_subscription(
        &self,
        subscription: &Subscription,
        finish: IdempotentFinish<'_>,
    ) -> Result<(), StoreError>;

    /// Every subscription of `owner`, oldest first.
    async fn subscriptions(&self, owner: &str) -> Result<Vec<Subscription>, StoreError>;

    /// The subscription `id` if `owner` made it.
    async fn subscription(&self, id: &str, owner: &str)
    -> Result<Option<Subscription>, StoreError>;

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
        owner: &str,
        selection: &ReplaySelection,
        types: &[EventType],
    ) -> Result<Vec<(String, EventType)>, StoreError>;

    /// Queues replay deliveries and completes the request's idempotency record, in one
    /// transaction.
    async fn queue_deliveries(
        &self,
        deliveries: &[QueuedDelivery],
        finish: IdempotentFinish<'_>,
    ) -> Result<(), StoreError>;

    /// The newest `limit` deliveries of a subscription of `owner`, with their attempts.
    async fn deliveries(
        &self,
        subscription_id: &str,
        owner: &str,
        limit: u32,
    ) -> Result<Vec<Delivery>, StoreError>;

    /// Ledger facilitator: records a settlement unless `(payer, nonce)` was settled before.
    /// `false`: it was (nothing written).
    async fn record_x402_settlement(&self, settlement: &X402Settlement)
    -> Result<bool, StoreError>;

    /// Ledger facilitator: the settlement of `(payer, nonce)`, if any.
    async fn x402_settlement(
        &self,
        payer: &str,
        nonce: &str,
    ) -> Result<Option<X402Settlement>, StoreError>;

    /// Claims the one execution a payment `(payer, nonce)` buys, for `resource`. `false`: the
    /// payment was claimed before (by this or a concurrent request).
    async fn claim_x402_payment(
        &self,
        payer: &str,
        nonce: &str,
        resource: &str,
        now_ms: i64,
    ) -> Result<bool, StoreError>;

    /// Forgets a claim whose payment was never settled (the facilitator could not be asked),
    /// so the same payment can be presented again.
    async fn release_x402_payment(&self, payer: &str, nonce: &str) -> Result<(), StoreError>;

    /// Records a Sign-In-With-X nonce swapd issued, valid until `expires_at_ms`.
    async fn issue_siwx_nonce(&self, nonce: &str, expires_at_ms: i64) -> Result<(), StoreError>;

    /// Whether `nonce` was issued by swapd, is unexpired at `now_ms` and unused; with
    /// `consume`, marks it used in the same step (only one caller ever gets `true`).
    async fn check_siwx_nonce(
        &self,
        nonce: &str,
        now_ms: i64,
        consume: bool,
    ) -> Result<bool, StoreError>;

    /// Counts one request against the fixed window of `window_ms` that holds `now_ms` for
    /// `key`, admitting it while fewer than `limit` were counted. Refused requests count nothing.
    async fn consume_window(
        &self,
        key: &str,
        window_ms: i64,
        limit: u32,
        now_ms: i64,
    ) -> Result<WindowDecision, StoreError>;

    /// Stores a new market-intel job and completes the request's idempotency record, in one
    /// transaction.
    async fn insert_job(&self, job: &Job, finish: IdempotentFinish<'_>) -> Result<(), StoreError>;

    /// The job `id` if `owner` created it.
    async fn job(&self, id: &str, owner: &str) -> Result<Option<Job>, StoreError>;

    /// Leases up to `limit` jobs to `lease_token` until `lease_until_ms`: queued ones, and
    /// running ones whose lease ended (their worker died). Each claim counts an attempt.
    /// Concurrent claimers never get the same job.
    async fn claim_jobs(
        &self,
        now_ms: i64,
        lease_token: &str,
        lease_until_ms: i64,
        limit: u32,
    ) -> Result<Vec<Job>, StoreError>;

    /// Finishes a running job with `outcome`, only while `lease_token` holds it. `false`: the
    /// lease was lost (another worker took the job over); nothing was written.
    async fn finish_job(
        &self,
        id: &str,
        lease_token: &str,
        outcome: &JobOutcome,
        now_ms: i64,
    ) -> Result<bool, StoreError>;

    /// Records rates as they were served.
    async fn record_rates(&self, observations: &[RateObservation]) -> Result<(), StoreError>;

    /// The rates of `pair` observed in `[since_ms, until_ms)`, oldest first, at most `limit`.
    async fn rates(
        &self,
        pair: &str,
        since_ms: i64,
        until_ms: i64,
        limit: u32,
    ) -> Result<Vec<RateObservation>, StoreError>;

    /// Sandbox chain: records a deposit (a transfer to a deposit address). `Conflict` for a
    /// repeated transaction id.
    async fn sandbox_record_deposit(&self, deposit: &SandboxDeposit) -> Result<(), StoreError>;

    /// Sandbox chain: the deposits to `address`/`tag`, oldest first.
    async fn sandbox_deposits(
        &self,
        address: &str,
        tag: Option<&str>,
    ) -> Result<Vec<SandboxDeposit>, StoreError>;

    /// Sandbox chain: records the transfer `key` unless it exists, and returns the stored one.
    async fn sandbox_transfer(
        &self,
        transfer: &SandboxTransfer,
    ) -> Result<SandboxTransfer, StoreError>;

    /// Sandbox chain: every transfer out, oldest first (tests count payouts with it).
    async fn sandbox_transfers(&self) -> Result<Vec<SandboxTransfer>, StoreError>;
}

/// A simulated transfer into a deposit address.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SandboxDeposit {
    pub tx_id: String,
    pub address: String,
    pub tag: Option<String>,
    pub amount: String,
    /// Confirmations it had when recorded; more accrue with time.
    pub confirmations: u32,
    pub seen_at_ms: i64,
}

/// A simulated transfer out (payout or refund), made once per idempotency key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SandboxTransfer {
    pub key: String,
    pub tx_id: String,
    pub currency: String,
    pub address: String,
    pub tag: Option<String>,
    pub amount: String,
    pub created_at_ms: i64,
}

/// One payment settled by the ledger facilitator.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct X402Settlement {
    pub payer: String,
    pub nonce: String,
    pub amount: String,
    pub pay_to: String,
    pub asset: String,
    pub network: String,
    pub transaction: String,
    pub settled_at_ms: i64,
}

/// What [`Store::consume_window`] decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WindowDecision {
    pub allowed: bool,
    pub limit: u32,
    /// Requests counted in the window, this one included when allowed.
    pub used: u32,
    /// When the window ends (Unix milliseconds).
    pub resets_at_ms: i64,
}

impl WindowDecision {
    pub fn remaining(&self) -> u32 {
        self.limit.saturating_sub(self.used)
    }
}

/// A rate swapd served: `pair` is `FROM/TO`, `rate` output per unit of input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RateObservation {
    pub pair: String,
    pub observed_at_ms: i64,
    pub rate: String,
    pub provider: String,
}
