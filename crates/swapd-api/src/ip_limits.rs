//! Limits per client address, before any authentication (docs/authentication.md, check 2a):
//! a request rate for every API request, and a tighter budget of failed authentications (401s)
//! after which the address is refused for a while. Both are GCRA (`governor`), in process: they
//! keep floods and signature guessing off the key lookups and the nonce store; the per-key and
//! per-payer limits behind them stay the contract clients see.

use std::collections::HashMap;
use std::net::IpAddr;
use std::num::NonZeroU32;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::http::header::RETRY_AFTER;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use governor::clock::{Clock, DefaultClock};
use governor::{DefaultKeyedRateLimiter, Quota, RateLimiter};
use swapd_types::ErrorCode;

use crate::client_address::client_ip;
use crate::{ApiError, AppState};

/// Requests per second per address by default (bursts of twice that).
pub const DEFAULT_REQUESTS_PER_SECOND: u32 = 200;
/// Failed authentications per minute per address by default.
pub const DEFAULT_AUTH_FAILURES_PER_MINUTE: u32 = 60;

/// How often (in checks) the limiters forget addresses that are back to a full budget.
const FORGET_EVERY: u64 = 4_096;

pub struct IpLimits {
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

    /// Whether `ip` may send a request now; otherwise how long it must wait.
    fn admit(&self, ip: IpAddr) -> Result<(), Duration> {
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
    fn failed(&self, ip: IpAddr) {
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

/// The middleware: refuses an address over its limits with 429 `ip_rate_limited` and
/// `Retry-After`, and counts the 401s it gets.
pub async fn limit(State(state): State<AppState>, request: Request, next: Next) -> Response {
    let (parts, body) = request.into_parts();
    let Some(ip) = client_ip(&parts, &state.trusted_proxies) else {
        return next.run(Request::from_parts(parts, body)).await;
    };
    if let Err(wait) = state.ip_limits.admit(ip) {
        let seconds = wait.as_secs_f64().ceil().max(1.0) as u64;
        return ApiError::new(
            ErrorCode::IpRateLimited,
            format!("too many requests from this address; retry after {seconds} s"),
        )
        .with_header(RETRY_AFTER, axum::http::HeaderValue::from(seconds))
        .into_response();
    }
    let response = next.run(Request::from_parts(parts, body)).await;
    if response.status() == StatusCode::UNAUTHORIZED {
        state.ip_limits.failed(ip);
    }
    response
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
            assert!(limits.admit(A).is_ok());
        }
        let wait = limits.admit(A).unwrap_err();
        assert!(wait > Duration::ZERO && wait <= Duration::from_millis(200));
        assert!(limits.admit(B).is_ok());
    }

    #[test]
    fn failures_past_the_budget_block_the_address_for_a_while() {
        let limits = IpLimits::new(0, 3);
        for _ in 0..3 {
            limits.failed(A);
            assert!(limits.admit(A).is_ok());
        }
        limits.failed(A);
        let wait = limits.admit(A).unwrap_err();
        assert!(wait > Duration::from_secs(10) && wait <= Duration::from_secs(20));
        assert!(limits.admit(B).is_ok());
        assert!(IpLimits::off().admit(A).is_ok());
    }
}
