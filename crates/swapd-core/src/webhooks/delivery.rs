//! Delivering webhooks: the courier port that sends a signed attempt, the retry schedule, the
//! leases of claimed deliveries, and what an attempt's outcome does to its delivery and
//! subscription (docs/webhooks.md).

use serde::{Deserialize, Serialize};

use crate::ids::WebhookId;
use crate::owner::Owner;
use crate::webhooks::subscription::Subscription;
use crate::webhooks::url_policy::UrlProblem;

/// One signed delivery to make.
#[derive(Debug, Clone, Copy)]
pub struct Outgoing<'a> {
    pub url: &'a str,
    /// The event id (`webhook-id`): the same on every attempt.
    pub id: &'a str,
    /// Unix seconds of this attempt (`webhook-timestamp`).
    pub timestamp: i64,
    pub body: &'a [u8],
    /// `webhook-signature`: `v1,<base64>` per valid secret, space-separated.
    pub signature: &'a str,
}

/// What an attempt came to, and how long it took.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sent {
    pub outcome: AttemptOutcome,
    pub latency_ms: i64,
}

/// Where webhook deliveries go out (SSRF-safe HTTP in `swapd-delivery`): the URL checked as a
/// delivery would, and one signed delivery sent now.
#[async_trait::async_trait]
pub trait Courier: Send + Sync {
    async fn check_url(&self, url: &str) -> Result<(), UrlProblem>;
    async fn send(&self, outgoing: Outgoing<'_>) -> Sent;
}

/// Delays before attempts 2, 3, … (attempt 1 is immediate): about three days in all.
pub const RETRY_DELAYS_SECS: [i64; 9] = [
    5,
    5 * 60,
    30 * 60,
    2 * 3600,
    5 * 3600,
    10 * 3600,
    14 * 3600,
    20 * 3600,
    24 * 3600,
];

/// The most a receiver's `Retry-After` may push the next attempt back.
pub const MAX_RETRY_AFTER_SECS: i64 = 3600;

/// When attempt `failed_attempts + 1` is due after `failed_attempts` failures, `jitter` in
/// [-1, 1] spreading it by up to ±10 %; a receiver's `Retry-After` is honoured up to an hour.
/// `None`: the schedule is exhausted.
pub fn next_attempt_delay_ms(
    failed_attempts: usize,
    jitter: f64,
    retry_after_secs: Option<i64>,
) -> Option<i64> {
    let base = *RETRY_DELAYS_SECS.get(failed_attempts.checked_sub(1)?)? * 1000;
    // Jitter is a spread of a delay, not an amount of money: a float is fine here.
    let spread = (base as f64 * 0.1 * jitter.clamp(-1.0, 1.0)) as i64;
    let scheduled = base + spread;
    let asked = retry_after_secs.map_or(0, |s| s.clamp(0, MAX_RETRY_AFTER_SECS) * 1000);
    Some(scheduled.max(asked))
}

/// How long a receiver may take to answer one delivery.
pub const DELIVERY_TIMEOUT_MS: u64 = 15_000;
/// How long a worker holds a claimed delivery before another worker may take it over.
pub const LEASE_MS: i64 = 60_000;
/// A subscription whose deliveries have failed for this long without one success is disabled.
pub const DISABLE_AFTER_FAILING_MS: i64 = 5 * 24 * 3600 * 1000;
/// At most this many events per replay.
pub const MAX_REPLAY: u32 = 100;
/// What one delivery attempt came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AttemptOutcome {
    /// A 2xx answer.
    Delivered { status: u16 },
    /// 410 Gone: the receiver wants no more deliveries.
    Gone,
    /// Anything else: another status (3xx included: redirects are not followed), a timeout, a
    /// connection failure, or a destination the policy blocks.
    Failed {
        status: Option<u16>,
        error: String,
        retry_after_secs: Option<i64>,
    },
}

#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Serialize,
    Deserialize,
    strum::IntoStaticStr,
    strum::EnumString,
)]
#[serde(rename_all = "lowercase")]
#[strum(serialize_all = "lowercase")]
pub enum DeliveryStatus {
    Pending,
    Succeeded,
    Failed,
}

impl DeliveryStatus {
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

/// A delivery claimed by a worker, with what an attempt needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClaimedDelivery {
    pub delivery_id: String,
    pub lease_token: String,
    /// Attempts made before this one.
    pub attempts: u32,
    pub event_id: String,
    /// The stored payload bytes.
    pub payload: Vec<u8>,
    pub subscription: Subscription,
}

/// One attempt's result, to record with the lease that made it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AttemptRecord {
    pub delivery_id: String,
    pub lease_token: String,
    pub subscription_id: WebhookId,
    /// 1 for the first attempt.
    pub attempt: u32,
    pub started_at_ms: i64,
    pub finished_at_ms: i64,
    pub status_code: Option<u16>,
    pub latency_ms: i64,
    pub error: Option<String>,
    pub after: AfterAttempt,
}

/// A delivery as its subscriber sees it in the log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Delivery {
    pub id: String,
    pub subscription_id: WebhookId,
    pub event_id: String,
    /// `event` (from the outbox) or `replay`.
    pub kind: String,
    pub status: DeliveryStatus,
    pub attempts: u32,
    pub next_attempt_at_ms: Option<i64>,
    pub last_status_code: Option<u16>,
    pub last_error: Option<String>,
    pub last_latency_ms: Option<i64>,
    pub created_at_ms: i64,
    pub log: Vec<Attempt>,
}

/// One attempt in the log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attempt {
    pub attempt: u32,
    pub started_at_ms: i64,
    pub status_code: Option<u16>,
    pub latency_ms: i64,
    pub error: Option<String>,
    pub next_attempt_at_ms: Option<i64>,
}

/// Which past events a replay sends again.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReplaySelection {
    Event(String),
    /// Events created in `[since_ms, until_ms)`, oldest first, of the types the subscription
    /// receives.
    Window {
        since_ms: i64,
        until_ms: i64,
        limit: u32,
    },
}

/// A delivery to queue for a replay.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueuedDelivery {
    pub id: String,
    pub subscription_id: WebhookId,
    pub event_id: String,
    pub owner: Owner,
    pub created_at_ms: i64,
}

/// What follows an attempt: the delivery's new state, and whether the subscription must be
/// disabled.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AfterAttempt {
    pub status: DeliveryStatus,
    /// When to try again (`Pending` only).
    pub next_attempt_at_ms: Option<i64>,
    pub disable_subscription: Option<String>,
}

/// Decides what follows attempt number `attempt` (1 for the first) that came to `outcome` at
/// `now_ms`. `failing_since_ms`: since when the subscription's deliveries have failed, if they
/// have. `jitter` in [-1, 1] spreads the retry.
pub fn after_attempt(
    attempt: usize,
    outcome: &AttemptOutcome,
    now_ms: i64,
    failing_since_ms: Option<i64>,
    jitter: f64,
) -> AfterAttempt {
    match outcome {
        AttemptOutcome::Delivered { .. } => AfterAttempt {
            status: DeliveryStatus::Succeeded,
            next_attempt_at_ms: None,
            disable_subscription: None,
        },
        AttemptOutcome::Gone => AfterAttempt {
            status: DeliveryStatus::Failed,
            next_attempt_at_ms: None,
            disable_subscription: Some("the receiver answered 410 Gone".into()),
        },
        AttemptOutcome::Failed {
            retry_after_secs, ..
        } => {
            let failing_for = now_ms - failing_since_ms.unwrap_or(now_ms);
            if failing_for >= DISABLE_AFTER_FAILING_MS {
                return AfterAttempt {
                    status: DeliveryStatus::Failed,
                    next_attempt_at_ms: None,
                    disable_subscription: Some("every delivery has failed for 5 days".into()),
                };
            }
            match next_attempt_delay_ms(attempt, jitter, *retry_after_secs) {
                Some(delay) => AfterAttempt {
                    status: DeliveryStatus::Pending,
                    next_attempt_at_ms: Some(now_ms + delay),
                    disable_subscription: None,
                },
                None => AfterAttempt {
                    status: DeliveryStatus::Failed,
                    next_attempt_at_ms: None,
                    disable_subscription: None,
                },
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attempts_retry_on_schedule_stop_on_410_and_disable_after_days_of_failure() {
        let failed = |retry_after| AttemptOutcome::Failed {
            status: Some(500),
            error: "500".into(),
            retry_after_secs: retry_after,
        };
        let now = 1_000_000_000;
        let first = after_attempt(1, &failed(None), now, None, 0.0);
        assert_eq!(first.status, DeliveryStatus::Pending);
        assert_eq!(first.next_attempt_at_ms, Some(now + 5_000));
        assert_eq!(first.disable_subscription, None);
        let asked = after_attempt(1, &failed(Some(60)), now, None, 0.0);
        assert_eq!(asked.next_attempt_at_ms, Some(now + 60_000));
        let last = after_attempt(10, &failed(None), now, Some(now - 1_000), 0.0);
        assert_eq!(
            (last.status, last.next_attempt_at_ms),
            (DeliveryStatus::Failed, None)
        );
        let days = after_attempt(
            3,
            &failed(None),
            now,
            Some(now - DISABLE_AFTER_FAILING_MS),
            0.0,
        );
        assert_eq!(days.status, DeliveryStatus::Failed);
        assert!(days.disable_subscription.is_some());
        let gone = after_attempt(1, &AttemptOutcome::Gone, now, None, 0.0);
        assert_eq!(gone.status, DeliveryStatus::Failed);
        assert!(gone.disable_subscription.unwrap().contains("410"));
        let ok = after_attempt(
            4,
            &AttemptOutcome::Delivered { status: 204 },
            now,
            Some(0),
            0.0,
        );
        assert_eq!(ok.status, DeliveryStatus::Succeeded);
    }

    #[test]
    fn retries_span_about_three_days_with_bounded_jitter() {
        assert_eq!(
            next_attempt_delay_ms(0, 0.0, None),
            None,
            "the first attempt is immediate"
        );
        assert_eq!(next_attempt_delay_ms(1, 0.0, None), Some(5_000));
        assert_eq!(next_attempt_delay_ms(2, 1.0, None), Some(330_000));
        assert_eq!(next_attempt_delay_ms(2, -1.0, None), Some(270_000));
        assert_eq!(next_attempt_delay_ms(1, 0.0, Some(120)), Some(120_000));
        assert_eq!(
            next_attempt_delay_ms(1, 0.0, Some(86_400)),
            Some(3_600_000),
            "capped"
        );
        assert_eq!(next_attempt_delay_ms(10, 0.0, None), None, "exhausted");
        let total: i64 = RETRY_DELAYS_SECS.iter().sum();
        assert!((2 * 86_400..4 * 86_400).contains(&total), "{total}");
    }
}
