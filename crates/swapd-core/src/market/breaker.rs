//! A circuit breaker per provider, as pure state: a provider that fails several calls in a row
//! (down, timing out, answering garbage) is skipped for a while instead of costing every
//! request its deadline; after the pause one call goes through, and its outcome closes or
//! reopens the breaker. An answer that refuses a request (pair unsupported, out of range) is a
//! working provider. Readiness reports each provider's state (docs/providers.md).

/// Consecutive failures after which a provider is skipped.
pub const FAILURES_TO_OPEN: u32 = 3;
/// How long a provider is skipped before one call tries it again.
pub const OPEN_FOR_MS: i64 = 30_000;

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Breaker {
    failures: u32,
    /// While skipped: until when.
    open_until_ms: Option<i64>,
    /// The last failure, in swapd's words.
    last_failure: Option<String>,
}

/// How a provider is doing, for readiness.
#[derive(Debug, Clone, Copy, PartialEq, Eq, strum::IntoStaticStr)]
#[strum(serialize_all = "lowercase")]
pub enum ProviderState {
    /// Its last call worked.
    Up,
    /// Some calls in a row failed; it is still asked.
    Degraded,
    /// It kept failing and is skipped for now.
    Down,
}

impl Breaker {
    /// Whether a call may go to the provider at `now_ms`: not while it is skipped. The first
    /// call after the pause goes through (and closes or reopens the breaker).
    pub fn allows(&self, now_ms: i64) -> bool {
        self.open_until_ms.is_none_or(|until| now_ms >= until)
    }

    /// Until when the provider is skipped, while it is at `now_ms`.
    pub fn skipped_until(&self, now_ms: i64) -> Option<i64> {
        self.open_until_ms.filter(|until| now_ms < *until)
    }

    pub fn succeeded(&mut self) {
        *self = Breaker::default();
    }

    pub fn failed(&mut self, reason: String, now_ms: i64) {
        self.failures = self.failures.saturating_add(1);
        self.last_failure = Some(reason);
        if self.failures >= FAILURES_TO_OPEN {
            self.open_until_ms = Some(now_ms + OPEN_FOR_MS);
        }
    }

    pub fn state(&self, now_ms: i64) -> ProviderState {
        match (self.failures, self.allows(now_ms)) {
            (0, _) => ProviderState::Up,
            (_, false) => ProviderState::Down,
            _ if self.failures >= FAILURES_TO_OPEN => ProviderState::Down,
            _ => ProviderState::Degraded,
        }
    }

    pub fn last_failure(&self) -> Option<&str> {
        self.last_failure.as_deref()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn three_failures_skip_a_provider_until_one_call_after_the_pause_works() {
        let mut breaker = Breaker::default();
        assert_eq!(breaker.state(0), ProviderState::Up);
        breaker.failed("timed out".into(), 0);
        breaker.failed("timed out".into(), 1);
        assert_eq!(breaker.state(1), ProviderState::Degraded);
        assert!(breaker.allows(1));
        breaker.failed("timed out".into(), 2);
        assert_eq!(breaker.state(3), ProviderState::Down);
        assert!(!breaker.allows(2 + OPEN_FOR_MS - 1));
        assert_eq!(breaker.last_failure(), Some("timed out"));
        // The pause is over: one call may try; it fails, and the pause starts again.
        assert!(breaker.allows(2 + OPEN_FOR_MS));
        breaker.failed("still down".into(), 2 + OPEN_FOR_MS);
        assert!(!breaker.allows(2 + OPEN_FOR_MS + 1));
        // A later call works: the provider is up again.
        breaker.succeeded();
        assert_eq!(breaker.state(3 + 2 * OPEN_FOR_MS), ProviderState::Up);
        assert!(breaker.allows(0));
    }
}
