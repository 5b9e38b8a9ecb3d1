//! When a failed call is sent again.
//!
//! A request is *replay-safe* when sending it twice cannot have two effects: reads, and
//! mutations that carry an `Idempotency-Key` (the server answers the second with the first's
//! result). Only replay-safe requests are retried after the server may have seen them; a
//! request that never reached the server (the connection was refused) can always be sent again.

use std::future::Future;
use std::time::Duration;

use rand::Rng;

use crate::Error;
use swapd_types::ErrorCode;

/// How many times, and how patiently, a call is retried.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Attempts after the first (0: never retry).
    pub max_retries: u32,
    /// The first backoff after a 5xx or a transport failure; doubled each time, with jitter.
    pub base_delay: Duration,
    /// No backoff is longer than this.
    pub max_delay: Duration,
    /// A 429 asking to wait longer than this is returned to the caller instead of waited out.
    pub max_retry_after: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            max_retries: 3,
            base_delay: Duration::from_millis(200),
            max_delay: Duration::from_secs(5),
            max_retry_after: Duration::from_secs(30),
        }
    }
}

impl RetryPolicy {
    /// Never retries.
    pub const fn none() -> Self {
        Self {
            max_retries: 0,
            base_delay: Duration::ZERO,
            max_delay: Duration::ZERO,
            max_retry_after: Duration::ZERO,
        }
    }

    /// How long to wait before sending again after `error` on retry number `retry` (0-based),
    /// or `None` when the error is final.
    pub fn delay(&self, error: &Error, replay_safe: bool, retry: u32) -> Option<Duration> {
        if retry >= self.max_retries {
            return None;
        }
        let backoff = || {
            let exponential = self
                .base_delay
                .saturating_mul(2u32.saturating_pow(retry))
                .min(self.max_delay);
            // Full jitter on the upper half: spreads clients that failed together.
            let half = exponential / 2;
            half + half.mul_f64(rand::rng().random::<f64>())
        };
        match error {
            Error::Api {
                status: 429,
                retry_after_secs,
                ..
            } => {
                let wait = retry_after_secs.map_or_else(backoff, Duration::from_secs);
                (wait <= self.max_retry_after).then_some(wait)
            }
            // Another attempt with the same key is still running on the server.
            Error::Api {
                code: ErrorCode::IdempotencyKeyInUse,
                retry_after_secs,
                ..
            } if replay_safe => Some(retry_after_secs.map_or_else(backoff, Duration::from_secs)),
            Error::Api { status, .. } | Error::Unexpected { status, .. }
                if replay_safe && matches!(status, 500 | 502 | 503 | 504) =>
            {
                Some(backoff())
            }
            Error::Transport(e) if e.is_connect() => Some(backoff()),
            Error::Transport(e) if replay_safe && (e.is_timeout() || e.is_request()) => {
                Some(backoff())
            }
            _ => None,
        }
    }
}

/// Runs `attempt` until it succeeds or `policy` says its error is final, sleeping between.
pub(crate) async fn with_retries<T, F, Fut>(
    policy: &RetryPolicy,
    replay_safe: bool,
    mut attempt: F,
) -> Result<T, Error>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, Error>>,
{
    let mut retry = 0;
    loop {
        let error = match attempt().await {
            Ok(value) => return Ok(value),
            Err(error) => error,
        };
        match policy.delay(&error, replay_safe, retry) {
            Some(wait) => tokio::time::sleep(wait).await,
            None => return Err(error),
        }
        retry += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn api(status: u16, code: ErrorCode, retry_after_secs: Option<u64>) -> Error {
        Error::Api {
            status,
            code,
            message: String::new(),
            retry_after_secs,
        }
    }

    #[test]
    fn rate_limits_wait_as_long_as_the_server_asks_unless_that_is_too_long() {
        let policy = RetryPolicy::default();
        let limited = api(429, ErrorCode::RateLimitExceeded, Some(2));
        assert_eq!(
            policy.delay(&limited, false, 0),
            Some(Duration::from_secs(2))
        );
        let too_long = api(429, ErrorCode::RateLimitExceeded, Some(3_600));
        assert_eq!(policy.delay(&too_long, true, 0), None);
    }

    #[test]
    fn server_errors_are_retried_only_for_replay_safe_requests() {
        let policy = RetryPolicy::default();
        let unavailable = api(503, ErrorCode::ServiceUnavailable, None);
        assert!(policy.delay(&unavailable, true, 0).is_some());
        assert_eq!(policy.delay(&unavailable, false, 0), None);
        let in_use = api(409, ErrorCode::IdempotencyKeyInUse, None);
        assert!(policy.delay(&in_use, true, 0).is_some());
    }

    #[test]
    fn client_errors_are_final_and_retries_run_out() {
        let policy = RetryPolicy::default();
        assert_eq!(
            policy.delay(&api(400, ErrorCode::ValidationFailed, None), true, 0),
            None
        );
        assert_eq!(
            policy.delay(&api(409, ErrorCode::OrderStateConflict, None), true, 0),
            None
        );
        let unavailable = api(503, ErrorCode::ServiceUnavailable, None);
        assert_eq!(policy.delay(&unavailable, true, 3), None);
        assert_eq!(RetryPolicy::none().delay(&unavailable, true, 0), None);
    }

    #[test]
    fn backoff_doubles_within_its_cap() {
        let policy = RetryPolicy::default();
        let unavailable = api(502, ErrorCode::ProviderError, None);
        for retry in 0..3 {
            let delay = policy.delay(&unavailable, true, retry).unwrap();
            let full = (policy.base_delay * 2u32.pow(retry)).min(policy.max_delay);
            assert!(delay >= full / 2 && delay <= full, "{delay:?} vs {full:?}");
        }
    }
}
