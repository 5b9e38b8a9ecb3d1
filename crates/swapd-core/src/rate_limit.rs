//! Per-key request quotas as a pure function of (state, limits, cost, now), so the in-memory
//! limiter of a single node and the database-backed limiter of several nodes decide identically.
//!
//! Three policies: `key-minute` (GCRA with a burst of the whole per-minute quota), `key-hour`
//! (fixed UTC hour window counting requests) and `key-weight-hour` (the same window counting
//! route weights). A request is admitted only if every policy admits it, and a refused request
//! consumes nothing.

use crate::StoreError;
use crate::api_keys::RateLimits;
use crate::store::{NonceOutcome, WindowDecision};

// The state behind the limits, one port per kind, each kept wherever the deployment keeps its
// limits: memory on one node, the store or Redis on several (chosen once at wiring).

/// The nonces signed requests used, for as long as a signature is valid.
#[async_trait::async_trait]
pub trait Nonces: Send + Sync {
    /// Records `nonce` for `key_id` (on a request signed at `signed_at_secs`), or reports that
    /// it was already used.
    async fn claim(
        &self,
        key_id: &str,
        nonce: &str,
        signed_at_secs: i64,
    ) -> Result<NonceOutcome, StoreError>;
}

/// Each API key's rate cell: the state [`decide`] reads and writes.
#[async_trait::async_trait]
pub trait RateCells: Send + Sync {
    /// Admits or refuses one request of `cost` units under `limits`, in one atomic step.
    async fn consume(
        &self,
        key_id: &str,
        limits: RateLimits,
        cost: u32,
    ) -> Result<RateDecision, StoreError>;

    /// The tightest quota of the cell under `limits` now, on the clock the cell is decided on,
    /// changing nothing.
    async fn peek(&self, key_id: &str, limits: RateLimits) -> Result<Quota, StoreError>;
}

/// Each client address's budgets before authentication: a request rate, and failed
/// authentications after which the address is refused for a while ([`AddressLimits`]).
#[async_trait::async_trait]
pub trait Addresses: Send + Sync {
    /// Whether `ip` may send a request at `now_ms`; otherwise how long it must wait.
    async fn admit(
        &self,
        ip: std::net::IpAddr,
        now_ms: i64,
    ) -> Result<Result<(), std::time::Duration>, StoreError>;

    /// Counts a failed authentication of `ip` at `now_ms`.
    async fn failed(&self, ip: std::net::IpAddr, now_ms: i64) -> Result<(), StoreError>;
}

/// Fixed windows (`n` a minute per key): the port use cases spend such budgets through.
#[async_trait::async_trait]
pub trait Windows: Send + Sync {
    /// Counts one under `key` in its current window of `window_ms`, unless `limit` are counted
    /// already; a refusal counts nothing.
    async fn consume_window(
        &self,
        key: &str,
        window_ms: i64,
        limit: u32,
    ) -> Result<WindowDecision, StoreError>;
}

const MINUTE_US: i64 = 60_000_000;
const HOUR_MS: i64 = 3_600_000;

/// What is remembered per key between requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RateState {
    /// GCRA theoretical arrival time (Unix microseconds) of the per-minute policy. Microseconds,
    /// so that quotas of more than one request per millisecond keep their exact rate.
    pub tat_us: i64,
    /// Start (Unix ms) of the hour window the counters belong to.
    pub window_start_ms: i64,
    pub hour_count: u32,
    pub hour_weight: u32,
}

/// A rate-limit policy, named as `X-RateLimit-Resource` reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, strum::IntoStaticStr)]
#[strum(serialize_all = "kebab-case")]
pub enum Policy {
    KeyMinute,
    KeyHour,
    KeyWeightHour,
}

impl Policy {
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

/// The `X-RateLimit-*` values of one policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Quota {
    pub policy: Policy,
    pub limit: u32,
    pub remaining: u32,
    pub used: u32,
    /// When the policy is fully replenished (minute) or its window ends (hour), epoch seconds.
    pub reset_secs: i64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RateDecision {
    /// `None` when admitted; otherwise the policy that refused.
    pub refused_by: Option<Policy>,
    /// Seconds to wait before the refused request could be admitted (≥ 1 when refused).
    pub retry_after_secs: u64,
    /// The quota to report: the refusing policy, or else the tightest one after this request.
    pub report: Quota,
    /// The state to store (unchanged when refused).
    pub state: RateState,
}

/// Admits or refuses a request of `cost` weight units at `now_ms`.
pub fn decide(state: RateState, limits: RateLimits, cost: u32, now_ms: i64) -> RateDecision {
    let state = roll_window(state, now_ms);
    let now_us = now_ms * 1000;
    let interval = emission_interval(limits);
    let next_tat = state.tat_us.max(now_us) + interval;

    let minute_refused = next_tat - MINUTE_US > now_us;
    let hour_refused = state.hour_count >= limits.per_hour;
    let weight_refused = state.hour_weight.saturating_add(cost) > limits.weight_per_hour;
    let window_end = state.window_start_ms + HOUR_MS;

    let refusal = if minute_refused {
        Some((
            Policy::KeyMinute,
            ceil_div(next_tat - MINUTE_US - now_us, 1000),
        ))
    } else if hour_refused {
        Some((Policy::KeyHour, window_end - now_ms))
    } else if weight_refused {
        Some((Policy::KeyWeightHour, window_end - now_ms))
    } else {
        None
    };
    if let Some((policy, wait_ms)) = refusal {
        let report = quotas(state, limits, now_ms)
            .into_iter()
            .find(|q| q.policy == policy)
            .expect("every policy has a quota");
        return RateDecision {
            refused_by: Some(policy),
            retry_after_secs: ceil_secs(wait_ms).max(1) as u64,
            report,
            state,
        };
    }
    let admitted = RateState {
        tat_us: next_tat,
        window_start_ms: state.window_start_ms,
        hour_count: state.hour_count + 1,
        hour_weight: state.hour_weight + cost,
    };
    RateDecision {
        refused_by: None,
        retry_after_secs: 0,
        report: tightest(admitted, limits, now_ms),
        state: admitted,
    }
}

/// The tightest quota without consuming anything (for responses to refused requests).
pub fn peek(state: RateState, limits: RateLimits, now_ms: i64) -> Quota {
    tightest(roll_window(state, now_ms), limits, now_ms)
}

fn tightest(state: RateState, limits: RateLimits, now_ms: i64) -> Quota {
    quotas(state, limits, now_ms)
        .into_iter()
        .min_by(|a, b| {
            // remaining/limit, compared without floats
            (u64::from(a.remaining) * u64::from(b.limit))
                .cmp(&(u64::from(b.remaining) * u64::from(a.limit)))
        })
        .expect("three quotas")
}

fn quotas(state: RateState, limits: RateLimits, now_ms: i64) -> [Quota; 3] {
    let interval = emission_interval(limits);
    let backlog = (state.tat_us - now_ms * 1000).max(0);
    let minute_remaining = u32::try_from((MINUTE_US - backlog).max(0) / interval)
        .unwrap_or(0)
        .min(limits.per_minute);
    let window_end_secs = ceil_secs(state.window_start_ms + HOUR_MS);
    let hour_remaining = limits.per_hour.saturating_sub(state.hour_count);
    let weight_remaining = limits.weight_per_hour.saturating_sub(state.hour_weight);
    [
        Quota {
            policy: Policy::KeyMinute,
            limit: limits.per_minute,
            remaining: minute_remaining,
            used: limits.per_minute - minute_remaining,
            reset_secs: ceil_secs(ceil_div(state.tat_us, 1000).max(now_ms)),
        },
        Quota {
            policy: Policy::KeyHour,
            limit: limits.per_hour,
            remaining: hour_remaining,
            used: limits.per_hour - hour_remaining,
            reset_secs: window_end_secs,
        },
        Quota {
            policy: Policy::KeyWeightHour,
            limit: limits.weight_per_hour,
            remaining: weight_remaining,
            used: limits.weight_per_hour - weight_remaining,
            reset_secs: window_end_secs,
        },
    ]
}

fn roll_window(state: RateState, now_ms: i64) -> RateState {
    let window_start_ms = now_ms - now_ms.rem_euclid(HOUR_MS);
    if state.window_start_ms == window_start_ms {
        state
    } else {
        RateState {
            window_start_ms,
            hour_count: 0,
            hour_weight: 0,
            ..state
        }
    }
}

/// Microseconds between requests at the sustained per-minute rate.
fn emission_interval(limits: RateLimits) -> i64 {
    (MINUTE_US / i64::from(limits.per_minute.max(1))).max(1)
}

fn ceil_secs(ms: i64) -> i64 {
    ceil_div(ms, 1000)
}

fn ceil_div(value: i64, unit: i64) -> i64 {
    value.div_euclid(unit) + i64::from(value.rem_euclid(unit) != 0)
}

/// A fixed window's count for one key: the window it belongs to (its start, Unix ms) and the
/// requests counted in it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct WindowCount {
    pub start_ms: i64,
    pub used: u32,
}

/// Counts one request against the fixed window of `window_ms` that holds `now_ms`, admitting
/// it while fewer than `limit` were counted there; a refused request counts nothing. The same
/// decision for the in-memory windows of one node and the shared ones of several.
pub fn count_in_window(
    stored: Option<WindowCount>,
    window_ms: i64,
    limit: u32,
    now_ms: i64,
) -> (crate::store::WindowDecision, WindowCount) {
    let start_ms = now_ms - now_ms.rem_euclid(window_ms.max(1));
    let used = stored
        .filter(|count| count.start_ms == start_ms)
        .map_or(0, |count| count.used);
    let allowed = used < limit;
    let used = if allowed { used + 1 } else { used };
    let decision = crate::store::WindowDecision {
        allowed,
        limit,
        used,
        resets_at_ms: start_ms + window_ms,
    };
    (decision, WindowCount { start_ms, used })
}

/// One step of the generic cell rate algorithm: a cell whose theoretical arrival time is
/// `tat_us` admits a request at `now_us` when at most `burst` requests spaced `interval_us`
/// apart are outstanding. `Ok(new tat)`, or `Err(microseconds to wait)`.
pub fn gcra(tat_us: i64, now_us: i64, interval_us: i64, burst: u32) -> Result<i64, i64> {
    let next = tat_us.max(now_us) + interval_us;
    let early = next - interval_us * i64::from(burst.max(1)) - now_us;
    if early > 0 { Err(early) } else { Ok(next) }
}

/// The limits per client address, before authentication (docs/authentication.md, check 2a).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AddressLimits {
    /// Requests per second (bursts of twice that); 0: no limit.
    pub requests_per_second: u32,
    /// Failed authentications per minute (bursts of a minute's worth); past them the address
    /// is refused until it has one to spare again. 0: no limit.
    pub auth_failures_per_minute: u32,
}

/// What is remembered per client address when several nodes share the limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct AddressState {
    pub requests_tat_us: i64,
    pub failures_tat_us: i64,
    /// Refused until then (Unix ms), after spending its failure budget.
    pub blocked_until_ms: i64,
}

/// Admits one request from an address (`Ok` with the state to store) or says how many
/// milliseconds it must wait.
pub fn admit_address(
    state: AddressState,
    limits: AddressLimits,
    now_ms: i64,
) -> Result<AddressState, i64> {
    if state.blocked_until_ms > now_ms {
        return Err(state.blocked_until_ms - now_ms);
    }
    if limits.requests_per_second == 0 {
        return Ok(state);
    }
    let interval = 1_000_000 / i64::from(limits.requests_per_second);
    let burst = limits.requests_per_second.saturating_mul(2);
    match gcra(state.requests_tat_us, now_ms * 1000, interval.max(1), burst) {
        Ok(tat) => Ok(AddressState {
            requests_tat_us: tat,
            ..state
        }),
        Err(wait_us) => Err(ceil_div(wait_us, 1000)),
    }
}

/// Counts a failed authentication of an address; past its budget it is blocked until the
/// budget has a failure to spare.
pub fn address_failed(state: AddressState, limits: AddressLimits, now_ms: i64) -> AddressState {
    if limits.auth_failures_per_minute == 0 {
        return state;
    }
    let interval = MINUTE_US / i64::from(limits.auth_failures_per_minute);
    match gcra(
        state.failures_tat_us,
        now_ms * 1000,
        interval.max(1),
        limits.auth_failures_per_minute,
    ) {
        Ok(tat) => AddressState {
            failures_tat_us: tat,
            ..state
        },
        Err(wait_us) => AddressState {
            blocked_until_ms: now_ms + ceil_div(wait_us, 1000),
            ..state
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const NOW: i64 = 1_700_000_000_000;

    #[test]
    fn an_address_bursts_twice_its_rate_then_waits() {
        let limits = AddressLimits {
            requests_per_second: 5,
            auth_failures_per_minute: 0,
        };
        let mut state = AddressState::default();
        for _ in 0..10 {
            state = admit_address(state, limits, NOW).unwrap();
        }
        let wait = admit_address(state, limits, NOW).unwrap_err();
        assert!(wait > 0 && wait <= 200, "{wait}");
        assert!(admit_address(state, limits, NOW + wait).is_ok());
    }

    #[test]
    fn failures_past_the_budget_block_an_address_for_a_while() {
        let limits = AddressLimits {
            requests_per_second: 0,
            auth_failures_per_minute: 3,
        };
        let mut state = AddressState::default();
        for _ in 0..3 {
            state = address_failed(state, limits, NOW);
            assert!(admit_address(state, limits, NOW).is_ok());
        }
        state = address_failed(state, limits, NOW);
        let wait = admit_address(state, limits, NOW).unwrap_err();
        assert!((10_000..=20_000).contains(&wait), "{wait}");
        assert!(admit_address(state, limits, NOW + wait).is_ok());
    }

    fn limits(per_minute: u32, per_hour: u32, weight_per_hour: u32) -> RateLimits {
        RateLimits {
            per_minute,
            per_hour,
            weight_per_hour,
        }
    }

    #[test]
    fn a_window_admits_its_limit_counts_no_refusal_and_starts_over_when_it_ends() {
        let hour = 3_600_000;
        let mut stored = None;
        for used in 1..=3 {
            let (decision, counted) = count_in_window(stored, hour, 3, NOW);
            assert!(decision.allowed);
            assert_eq!((decision.used, decision.remaining()), (used, 3 - used));
            stored = Some(counted);
        }
        let (refused, unchanged) = count_in_window(stored, hour, 3, NOW);
        assert!(!refused.allowed);
        assert_eq!(unchanged, stored.unwrap(), "a refusal counts nothing");
        let start = NOW - NOW.rem_euclid(hour);
        assert_eq!(refused.resets_at_ms, start + hour);
        let (next, counted) = count_in_window(stored, hour, 3, start + hour);
        assert!(next.allowed);
        assert_eq!(counted.used, 1, "the next window starts from zero");
    }

    #[test]
    fn a_burst_of_the_minute_quota_is_admitted_then_refused_with_retry_after() {
        let limits = limits(5, 1000, 1000);
        let mut state = RateState::default();
        for i in 0..5 {
            let d = decide(state, limits, 1, NOW);
            assert_eq!(d.refused_by, None, "request {i}");
            state = d.state;
        }
        let refused = decide(state, limits, 1, NOW);
        assert_eq!(refused.refused_by, Some(Policy::KeyMinute));
        assert_eq!(refused.state, state, "a refusal consumes nothing");
        assert_eq!(refused.report.remaining, 0);
        assert_eq!(
            refused.retry_after_secs, 12,
            "one emission interval of 60/5 s"
        );
        assert_eq!(decide(state, limits, 1, NOW + 12_000).refused_by, None);
    }

    #[test]
    fn hourly_count_and_weight_windows_reset_on_the_hour() {
        let limits = limits(1000, 2, 1000);
        let mut state = RateState::default();
        state = decide(state, limits, 1, NOW).state;
        state = decide(state, limits, 1, NOW).state;
        let refused = decide(state, limits, 1, NOW);
        assert_eq!(refused.refused_by, Some(Policy::KeyHour));
        let window_end = NOW - NOW.rem_euclid(HOUR_MS) + HOUR_MS;
        assert_eq!(refused.report.reset_secs, window_end / 1000);
        assert_eq!(refused.retry_after_secs as i64, ceil_secs(window_end - NOW));
        assert_eq!(decide(state, limits, 1, window_end).refused_by, None);
    }

    #[test]
    fn a_costly_request_that_does_not_fit_is_refused_without_partial_debit() {
        let limits = limits(1000, 1000, 10);
        let state = decide(RateState::default(), limits, 6, NOW).state;
        let refused = decide(state, limits, 5, NOW);
        assert_eq!(refused.refused_by, Some(Policy::KeyWeightHour));
        assert_eq!(refused.report.remaining, 4);
        assert_eq!(decide(state, limits, 4, NOW).refused_by, None);
    }

    #[test]
    fn quotas_above_one_per_millisecond_keep_their_rate() {
        // 600 000 per minute = 10 per millisecond.
        let limits = limits(600_000, u32::MAX, u32::MAX);
        let mut state = decide(RateState::default(), limits, 1, NOW).state;
        // Drain the burst, then a millisecond later exactly 100 more fit.
        for _ in 1..600_000 {
            state = decide(state, limits, 1, NOW).state;
        }
        assert!(decide(state, limits, 1, NOW).refused_by.is_some());
        let mut admitted = 0;
        while decide(state, limits, 1, NOW + 1).refused_by.is_none() {
            state = decide(state, limits, 1, NOW + 1).state;
            admitted += 1;
        }
        assert_eq!(admitted, 10);
    }

    #[test]
    fn the_report_names_the_tightest_policy_and_adds_up() {
        let limits = limits(10, 1000, 1000);
        let d = decide(RateState::default(), limits, 1, NOW);
        assert_eq!(d.report.policy, Policy::KeyMinute);
        assert_eq!((d.report.used, d.report.remaining), (1, 9));
        let peeked = peek(d.state, limits, NOW);
        assert_eq!(peeked, d.report);
    }

    proptest! {
        #[test]
        /// The GCRA bound: between any two admitted requests `t_i <= t_j`, at most
        /// `(t_j - t_i + one minute) / T` were admitted, T being the emission interval: a burst of
        /// the per-minute quota, then one request per interval.
        fn admissions_respect_the_gcra_bound(
            gaps in proptest::collection::vec(0i64..3_000, 1..200),
            per_minute in 1u32..30,
        ) {
            let limits = limits(per_minute, 100_000, 100_000);
            let mut state = RateState::default();
            let mut now = NOW;
            let mut admitted: Vec<i64> = Vec::new();
            for gap in gaps {
                now += gap;
                let d = decide(state, limits, 1, now);
                if d.refused_by.is_none() {
                    admitted.push(now);
                } else {
                    prop_assert!(d.retry_after_secs >= 1);
                    prop_assert_eq!(d.state, state);
                }
                prop_assert_eq!(d.report.used + d.report.remaining, d.report.limit);
                state = d.state;
            }
            let interval = emission_interval(limits);
            for i in 0..admitted.len() {
                for j in i..admitted.len() {
                    let count = (j - i + 1) as i64;
                    let allowed = ((admitted[j] - admitted[i]) * 1000 + MINUTE_US) / interval;
                    prop_assert!(count <= allowed, "{} admitted in {} ms", count, admitted[j] - admitted[i]);
                }
            }
        }
    }
}
