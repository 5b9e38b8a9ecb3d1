//! The limits of several nodes kept in Redis: every decision is one atomic script.

use std::sync::Arc;

use swapd_core::api_keys::RateLimits;
use swapd_core::rate_limit::{
    self, AddressLimits, Addresses, Nonces, Quota, RateCells, RateDecision, RateState, Windows,
};
use swapd_core::signing::NONCE_TTL_SECS;
use swapd_core::store::{NonceOutcome, WindowDecision};
use swapd_core::{Clock, StoreError};
use swapd_redis::SharedRedis;

/// An hour's window and a minute of slack: past it a key's rate state is back to its default.
const RATE_CELL_TTL_MS: i64 = 3_660_000;

/// The shared cell of a key's rate limits.
fn rate_cell(key_id: &str) -> String {
    format!("rate:{key_id}")
}

/// Redis, as every kind of limit state.
pub struct InRedis {
    redis: Arc<SharedRedis>,
    clock: Arc<dyn Clock>,
}

impl InRedis {
    pub fn new(redis: Arc<SharedRedis>, clock: Arc<dyn Clock>) -> Self {
        Self { redis, clock }
    }
}

#[async_trait::async_trait]
impl Nonces for InRedis {
    async fn claim(
        &self,
        key_id: &str,
        nonce: &str,
        signed_at_secs: i64,
    ) -> Result<NonceOutcome, StoreError> {
        let now_secs = self.redis.shared_ms(self.clock.now_ms()).div_euclid(1000);
        self.redis
            .claim_nonce(
                key_id,
                nonce,
                NONCE_TTL_SECS * 1000,
                signed_at_secs,
                now_secs,
            )
            .await
    }
}

#[async_trait::async_trait]
impl RateCells for InRedis {
    async fn consume(
        &self,
        key_id: &str,
        limits: RateLimits,
        cost: u32,
    ) -> Result<RateDecision, StoreError> {
        let now = self.redis.shared_ms(self.clock.now_ms());
        self.redis
            .consume_rate(&rate_cell(key_id), limits, cost, now, RATE_CELL_TTL_MS)
            .await
    }

    async fn peek(&self, key_id: &str, limits: RateLimits) -> Result<Quota, StoreError> {
        let state: RateState = self
            .redis
            .read(&rate_cell(key_id))
            .await?
            .unwrap_or_default();
        let now = self.redis.shared_ms(self.clock.now_ms());
        Ok(rate_limit::peek(state, limits, now))
    }
}

#[async_trait::async_trait]
impl Windows for InRedis {
    async fn consume_window(
        &self,
        key: &str,
        window_ms: i64,
        limit: u32,
    ) -> Result<WindowDecision, StoreError> {
        let now = self.redis.shared_ms(self.clock.now_ms());
        self.redis
            .update(&format!("window:{key}"), window_ms, |stored| {
                let (decision, counted) =
                    rate_limit::count_in_window(stored, window_ms, limit, now);
                (decision, decision.allowed.then_some(counted))
            })
            .await
    }
}

/// How long Redis keeps an address's state after its last change: past its longest window
/// (a minute of failures) and block, it is back to a full budget anyway.
const ADDRESS_CELL_TTL_MS: i64 = 120_000;

/// Each client address's budgets, counted in Redis for every node.
pub struct AddressesInRedis {
    pub redis: Arc<SharedRedis>,
    pub limits: AddressLimits,
}

#[async_trait::async_trait]
impl Addresses for AddressesInRedis {
    async fn admit(
        &self,
        ip: std::net::IpAddr,
        now_ms: i64,
    ) -> Result<Result<(), std::time::Duration>, StoreError> {
        let admitted = self
            .redis
            .admit_address(
                &format!("address:{ip}"),
                self.limits,
                self.redis.shared_ms(now_ms),
                ADDRESS_CELL_TTL_MS,
            )
            .await?;
        Ok(admitted.map_err(|wait_ms| std::time::Duration::from_millis(wait_ms.unsigned_abs())))
    }

    async fn failed(&self, ip: std::net::IpAddr, now_ms: i64) -> Result<(), StoreError> {
        let limits = self.limits;
        let now_ms = self.redis.shared_ms(now_ms);
        self.redis
            .update(&format!("address:{ip}"), ADDRESS_CELL_TTL_MS, |state| {
                let state = state.unwrap_or_default();
                ((), Some(rate_limit::address_failed(state, limits, now_ms)))
            })
            .await
    }
}
