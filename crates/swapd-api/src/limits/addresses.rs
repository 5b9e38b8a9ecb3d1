//! Each client address's budgets before authentication (docs/authentication.md, check 2a), in
//! this process: GCRA limiters (`governor`) for the request rate and the failed
//! authentications, and the addresses refused until their failure budget has one to spare.

use std::collections::HashMap;
use std::net::IpAddr;
use std::num::NonZeroU32;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use governor::clock::{Clock, DefaultClock};
use governor::{DefaultKeyedRateLimiter, Quota, RateLimiter};
use swapd_core::StoreError;
use swapd_core::rate_limit::{AddressLimits, Addresses};

/// How often (in checks) the limiters forget addresses that are back to a full budget.
const FORGET_EVERY: u64 = 4_096;

pub struct MemoryAddresses {
    requests: Option<DefaultKeyedRateLimiter<IpAddr>>,
    auth_failures: Option<DefaultKeyedRateLimiter<IpAddr>>,
    /// Addresses past their failure budget, and until when they are refused.
    blocked: Mutex<HashMap<IpAddr, Instant>>,
    checks: AtomicU64,
}

impl MemoryAddresses {
    /// `requests_per_second` (burst: two seconds' worth) and `auth_failures_per_minute` (burst:
    /// a minute's worth) per client address; 0 turns a limit off.
    pub fn new(limits: AddressLimits) -> Self {
        let requests = NonZeroU32::new(limits.requests_per_second).map(|rate| {
            let burst = rate.saturating_mul(NonZeroU32::new(2).expect("two"));
            RateLimiter::keyed(Quota::per_second(rate).allow_burst(burst))
        });
        let auth_failures = NonZeroU32::new(limits.auth_failures_per_minute)
            .map(|rate| RateLimiter::keyed(Quota::per_minute(rate)));
        Self {
            requests,
            auth_failures,
            blocked: Mutex::new(HashMap::new()),
            checks: AtomicU64::new(0),
        }
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

#[async_trait::async_trait]
impl Addresses for MemoryAddresses {
    async fn admit(&self, ip: IpAddr, _now_ms: i64) -> Result<Result<(), Duration>, StoreError> {
        Ok(self.admit_here(ip))
    }

    async fn failed(&self, ip: IpAddr, _now_ms: i64) -> Result<(), StoreError> {
        self.failed_here(ip);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: IpAddr = IpAddr::V4(std::net::Ipv4Addr::new(203, 0, 113, 7));
    const B: IpAddr = IpAddr::V4(std::net::Ipv4Addr::new(203, 0, 113, 8));

    fn per_address(requests_per_second: u32, auth_failures_per_minute: u32) -> MemoryAddresses {
        MemoryAddresses::new(AddressLimits {
            requests_per_second,
            auth_failures_per_minute,
        })
    }

    #[test]
    fn a_burst_past_the_rate_waits_and_other_addresses_do_not() {
        let limits = per_address(5, 0);
        for _ in 0..10 {
            assert!(limits.admit_here(A).is_ok());
        }
        let wait = limits.admit_here(A).unwrap_err();
        assert!(wait > Duration::ZERO && wait <= Duration::from_millis(200));
        assert!(limits.admit_here(B).is_ok());
    }

    #[test]
    fn failures_past_the_budget_block_the_address_for_a_while() {
        let limits = per_address(0, 3);
        for _ in 0..3 {
            limits.failed_here(A);
            assert!(limits.admit_here(A).is_ok());
        }
        limits.failed_here(A);
        let wait = limits.admit_here(A).unwrap_err();
        assert!(wait > Duration::from_secs(10) && wait <= Duration::from_secs(20));
        assert!(limits.admit_here(B).is_ok());
        assert!(
            per_address(0, 0).admit_here(A).is_ok(),
            "0 and 0: no limits"
        );
    }
}
