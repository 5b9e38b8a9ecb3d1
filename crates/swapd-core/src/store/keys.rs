//! API keys, the nonces their requests used, and their rate-limit state.

use async_trait::async_trait;

use super::StoreError;
use crate::api_keys::{ApiKey, RateLimits};
use crate::rate_limit::{RateDecision, RateState};

/// A nonce a key used, remembered until `expires_at_ms`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NonceRecord {
    pub key_id: String,
    pub nonce: String,
    pub expires_at_ms: i64,
}

/// The outcome of presenting a nonce, wherever the nonce set lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NonceOutcome {
    Fresh,
    Reused,
    /// The shared nonce set lost its memory at `since_secs` and the request was signed no later:
    /// its nonce may be one the set forgot.
    SignedBeforeReset {
        since_secs: i64,
    },
}

#[async_trait]
pub trait KeyStore: Send + Sync + 'static {
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

    /// Appends many nonces to the durable log of a single node's in-memory nonce set, in one
    /// transaction. The log is separate from the shared set of [`KeyStore::remember_nonce`]: it
    /// is only appended, reloaded and purged, never searched.
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

    /// Ends the operator console session `session` (its random id; `*` ends every session
    /// issued up to `now_ms`), on every node, until `expires_at_ms`.
    async fn end_console_session(
        &self,
        session: &str,
        now_ms: i64,
        expires_at_ms: i64,
    ) -> Result<(), StoreError>;

    /// Whether the console session `session`, issued at `issued_at_ms`, was ended.
    async fn console_session_ended(
        &self,
        session: &str,
        issued_at_ms: i64,
    ) -> Result<bool, StoreError>;
}

/// The console-session id that stands for every session ([`KeyStore::end_console_session`]).
pub const EVERY_CONSOLE_SESSION: &str = "*";
