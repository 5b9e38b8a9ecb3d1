//! Limits per client address, before any authentication (docs/authentication.md, check 2a):
//! a request rate for every API request, and a tighter budget of failed authentications (401s)
//! after which the address is refused for a while. Both are GCRA: in process (`governor`) on its
//! own, or in Redis when several nodes share it, so that an address's budget is global. They
//! keep floods and signature guessing off the key lookups and the nonce store; the per-key and
//! per-payer limits behind them stay the contract clients see.

use std::collections::HashMap;
use std::net::IpAddr;
use std::num::NonZeroU32;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::http::header::RETRY_AFTER;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use governor::clock::{Clock, DefaultClock};
use governor::{DefaultKeyedRateLimiter, Quota, RateLimiter};
use swapd_core::StoreError;
use swapd_core::rate_limit::{self, AddressLimits};
use swapd_redis::SharedRedis;
use swapd_types::ErrorCode;

use crate::client_address::client_ip;
use crate::{ApiError, AppState};

/// Requests per second per address by default (bursts of twice that).
pub const DEFAULT_REQUESTS_PER_SECOND: u32 = 200;
/// Failed authentications per minute per address by default.
pub const DEFAULT_AUTH_FAILURES_PER_MINUTE: u32 = 60;

/// How often (in checks) the limiters forget addresses that are back to a full budget.
const FORGET_EVERY: u64 = 4_096;
/// How long Redis keeps an address's state after its last change: past its longest window
/// (a minute of failures) and block, it is back to a full budget anyway.
const SHARED_CELL_TTL_MS: i64 = 120_000;

pub struct IpLimits {
    limits: AddressLimits,
    /// Set when the limits are shared between nodes through Redis.
    shared: Option<Arc<SharedRedis>>,
    requests: Option<DefaultKeyedRateLimiter<IpAddr>>,
    auth_failures: Option<DefaultKeyedRateLimiter<IpAddr>>,
    /// Addresses past their failure budget, and until when they are refused.
    blocked: Mutex<HashMap<IpAddr, Instant>>,
    checks: AtomicU64,
}

impl IpLimits {
    /// `requests_per_second` (burst: two seconds' worth) and `auth_failures_per_minute` (burst:
    /// a minute's worth) per client address; 0 turns a limit off.
    pub fn new(requests_per_second: u32, auth_failures_per_minute: u32) -> Self {
        let requests = NonZeroU32::new(requests_per_second).map(|rate| {
            let burst = rate.saturating_mul(NonZeroU32::new(2).expect("two"));
            RateLimiter::keyed(Quota::per_second(rate).allow_burst(burst))
        });
        let auth_failures = NonZeroU32::new(auth_failures_per_minute)
            .map(|rate| RateLimiter::keyed(Quota::per_minute(rate)));
        Self {
            limits: AddressLimits {
                requests_per_second,
                auth_failures_per_minute,
            },
            shared: None,
            requests,
            auth_failures,
            blocked: Mutex::new(HashMap::new()),
            checks: AtomicU64::new(0),
        }
    }

    /// No limits (embedding, benchmarks).
    pub fn off() -> Self {
        Self::new(0, 0)
    }

    /// The same limits, counted in Redis for every node.
    pub fn shared(mut self, redis: Arc<SharedRedis>) -> Self {
        self.shared = Some(redis);
        self
    }

    fn is_off(&self) -> bool {
        self.limits.requests_per_second == 0 && self.limits.auth_failures_per_minute == 0
    }

    /// Whether `ip` may send a request at `now_ms`; otherwise how long it must wait.
    async fn admit(&self, ip: IpAddr, now_ms: i64) -> Result<Result<(), Duration>, StoreError> {
        let Some(redis) = self.shared.as_ref().filter(|_| !self.is_off()) else {
            return Ok(self.admit_here(ip));
        };
        let admitted = redis
            .admit_address(
                &format!("address:{ip}"),
                self.limits,
                now_ms,
                SHARED_CELL_TTL_MS,
            )
            .await?;
        Ok(admitted.map_err(|wait_ms| Duration::from_millis(wait_ms.unsigned_abs())))
    }

    /// Counts a failed authentication of `ip` at `now_ms`.
    async fn failed(&self, ip: IpAddr, now_ms: i64) -> Result<(), StoreError> {
        let Some(redis) = self.shared.as_ref().filter(|_| !self.is_off()) else {
            self.failed_here(ip);
            return Ok(());
        };
        let limits = self.limits;
        redis
            .update(&format!("address:{ip}"), SHARED_CELL_TTL_MS, |state| {
                let state = state.unwrap_or_default();
                ((), Some(rate_limit::address_failed(state, limits, now_ms)))
            })
            .await
    }

    fn admit_here(&self, ip: IpAddr) -> Result<(), Duration> {
        self.forget_idle();
        let now = Instant::now();
        if let Some(until) = self.blocked.lock().expect("not poisoned").get(&ip)
            && *until > now
        {
            return Err(*until - now);
        }
        match &self.requests {
            Some(limiter) => limiter
                .check_key(&ip)
                .map_err(|refused| refused.wait_time_from(DefaultClock::default().now())),
            None => Ok(()),
        }
    }

    /// Counts a failed authentication of `ip`; past the budget, the address is refused until
    /// the budget has a failure to spare again.
    fn failed_here(&self, ip: IpAddr) {
        let Some(limiter) = &self.auth_failures else {
            return;
        };
        if let Err(refused) = limiter.check_key(&ip) {
            let wait = refused.wait_time_from(DefaultClock::default().now());
            let mut blocked = self.blocked.lock().expect("not poisoned");
            let now = Instant::now();
            blocked.retain(|_, until| *until > now);
            blocked.insert(ip, now + wait);
        }
    }

    fn forget_idle(&self) {
        if self.checks.fetch_add(1, Ordering::Relaxed) % FORGET_EVERY == FORGET_EVERY - 1 {
            for limiter in [&self.requests, &self.auth_failures].into_iter().flatten() {
                limiter.retain_recent();
                limiter.shrink_to_fit();
            }
        }
    }
}

/// Marks a 401 the client could not have avoided, which is not counted as a failed
/// authentication of its address: a request signed in the second this node's nonce set (or the
/// shared one in Redis) began again. After a restart, every busy client gets a few of these at
/// once; counting them would block its address for the rest of the minute.
#[derive(Debug, Clone, Copy)]
pub struct NotCounted;

/// The middleware: refuses an address over its limits with 429 `ip_rate_limited` and
/// `Retry-After`, and counts the 401s it gets (but those marked [`NotCounted`]).
pub async fn limit(State(state): State<AppState>, request: Request, next: Next) -> Response {
    let (parts, body) = request.into_parts();
    let Some(ip) = client_ip(&parts, &state.trusted_proxies) else {
        return next.run(Request::from_parts(parts, body)).await;
    };
    match state.ip_limits.admit(ip, state.clock.now_ms()).await {
        Ok(Ok(())) => {}
        Ok(Err(wait)) => {
            let seconds = wait.as_secs_f64().ceil().max(1.0) as u64;
            return ApiError::new(
                ErrorCode::IpRateLimited,
                format!("too many requests from this address; retry after {seconds} s"),
            )
            .with_header(RETRY_AFTER, axum::http::HeaderValue::from(seconds))
            .into_response();
        }
        Err(error) => return unavailable(error),
    }
    let response = next.run(Request::from_parts(parts, body)).await;
    if response.status() == StatusCode::UNAUTHORIZED
        && response.extensions().get::<NotCounted>().is_none()
        && let Err(error) = state.ip_limits.failed(ip, state.clock.now_ms()).await
    {
        tracing::warn!(%error, "a failed authentication could not be counted");
    }
    response
}

fn unavailable(error: StoreError) -> Response {
    tracing::warn!(%error, "the per-address limits are unavailable");
    ApiError::new(
        ErrorCode::ServiceUnavailable,
        "requests cannot be admitted right now; retry shortly",
    )
    .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: IpAddr = IpAddr::V4(std::net::Ipv4Addr::new(203, 0, 113, 7));
    const B: IpAddr = IpAddr::V4(std::net::Ipv4Addr::new(203, 0, 113, 8));

    #[test]
    fn a_burst_past_the_rate_waits_and_other_addresses_do_not() {
        let limits = IpLimits::new(5, 0);
        for _ in 0..10 {
            assert!(limits.admit_here(A).is_ok());
        }
        let wait = limits.admit_here(A).unwrap_err();
        assert!(wait > Duration::ZERO && wait <= Duration::from_millis(200));
        assert!(limits.admit_here(B).is_ok());
    }

    #[test]
    fn failures_past_the_budget_block_the_address_for_a_while() {
        let limits = IpLimits::new(0, 3);
        for _ in 0..3 {
            limits.failed_here(A);
            assert!(limits.admit_here(A).is_ok());
        }
        limits.failed_here(A);
        let wait = limits.admit_here(A).unwrap_err();
        assert!(wait > Duration::from_secs(10) && wait <= Duration::from_secs(20));
        assert!(limits.admit_here(B).is_ok());
        assert!(IpLimits::off().admit_here(A).is_ok());
    }
}
