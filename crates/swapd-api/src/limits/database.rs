//! The limits of several nodes kept in their shared database: every decision is one
//! transaction of the store.

use std::sync::Arc;

use swapd_core::api_keys::RateLimits;
use swapd_core::rate_limit::{self, Nonces, Quota, RateCells, RateDecision, Windows};
use swapd_core::signing::NONCE_TTL_SECS;
use swapd_core::store::{NonceOutcome, WindowDecision};
use swapd_core::{Clock, Store, StoreError};

/// The store, as every kind of limit state.
pub struct InStore {
    store: Arc<dyn Store>,
    clock: Arc<dyn Clock>,
}

impl InStore {
    pub fn new(store: Arc<dyn Store>, clock: Arc<dyn Clock>) -> Self {
        Self { store, clock }
    }
}

#[async_trait::async_trait]
impl Nonces for InStore {
    async fn claim(
        &self,
        key_id: &str,
        nonce: &str,
        _signed_at_secs: i64,
    ) -> Result<NonceOutcome, StoreError> {
        let expires_at_ms = self.clock.now_ms() + NONCE_TTL_SECS * 1000;
        let fresh = self
            .store
            .remember_nonce(key_id, nonce, expires_at_ms)
            .await?;
        Ok(if fresh {
            NonceOutcome::Fresh
        } else {
            NonceOutcome::Reused
        })
    }
}

#[async_trait::async_trait]
impl RateCells for InStore {
    async fn consume(
        &self,
        key_id: &str,
        limits: RateLimits,
        cost: u32,
    ) -> Result<RateDecision, StoreError> {
        self.store
            .consume_rate(key_id, limits, cost, self.clock.now_ms())
            .await
    }

    async fn peek(&self, key_id: &str, limits: RateLimits) -> Result<Quota, StoreError> {
        let state = self.store.rate_state(key_id).await?;
        Ok(rate_limit::peek(state, limits, self.clock.now_ms()))
    }
}

#[async_trait::async_trait]
impl Windows for InStore {
    async fn consume_window(
        &self,
        key: &str,
        window_ms: i64,
        limit: u32,
    ) -> Result<WindowDecision, StoreError> {
        self.store
            .consume_window(key, window_ms, limit, self.clock.now_ms())
            .await
    }
}
