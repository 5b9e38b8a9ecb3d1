//! Webhook signing and delivery rules, pure: Standard Webhooks signatures
//! (`v1,<base64 HMAC-SHA256 of "{id}.{timestamp}.{body}">`, space-separated when several
//! secrets are valid), `whsec_` secrets, the retry schedule, and which network addresses a
//! delivery may reach (docs/webhooks.md, "Where deliveries may go").

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use hmac::{Hmac, Mac};
use serde::{Deserialize, Serialize};
use sha2::Sha256;

use swapd_types::webhooks::{EventData, WebhookEvent};

use crate::orders::{EventType, OrderEvent};

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

/// How a signing secret is shown: this prefix and the base64 of its bytes.
pub const SECRET_PREFIX: &str = "whsec_";
const SECRET_BYTES: usize = 32;

/// A new signing secret (256 random bits), as shown to the subscriber once.
pub fn new_secret() -> String {
    let bytes: [u8; SECRET_BYTES] = rand::random();
    format!("{SECRET_PREFIX}{}", STANDARD.encode(bytes))
}

/// The key bytes of a `whsec_` secret; `None` when it is not one.
pub fn secret_key(secret: &str) -> Option<Vec<u8>> {
    let key = STANDARD.decode(secret.strip_prefix(SECRET_PREFIX)?).ok()?;
    (!key.is_empty()).then_some(key)
}

/// One `v1,<base64>` signature of a delivery attempt.
pub fn signature(key: &[u8], id: &str, timestamp: i64, body: &[u8]) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(key).expect("HMAC takes keys of any length");
    mac.update(id.as_bytes());
    mac.update(b".");
    mac.update(timestamp.to_string().as_bytes());
    mac.update(b".");
    mac.update(body);
    format!("v1,{}", STANDARD.encode(mac.finalize().into_bytes()))
}

/// The `webhook-signature` header value: one signature per valid key (during a rotation, the
/// new secret's first), space-separated.
pub fn signature_header(keys: &[&[u8]], id: &str, timestamp: i64, body: &[u8]) -> String {
    keys.iter()
        .map(|key| signature(key, id, timestamp, body))
        .collect::<Vec<_>>()
        .join(" ")
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

/// Whether a delivery may connect to `ip`: only globally routable unicast addresses, with
/// IPv4 embedded in IPv6 (mapped, NAT64, 6to4, Teredo) checked as IPv4.
pub fn is_deliverable(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => is_global_v4(v4),
        IpAddr::V6(v6) => match embedded_v4(v6) {
            Some(v4) => is_global_v4(v4),
            None => is_global_v6(v6),
        },
    }
}

fn is_global_v4(ip: Ipv4Addr) -> bool {
    const BLOCKED: [(u32, u8); 15] = [
        (0x0000_0000, 8),  // 0.0.0.0/8
        (0x0a00_0000, 8),  // 10.0.0.0/8
        (0x6440_0000, 10), // 100.64.0.0/10
        (0x7f00_0000, 8),  // 127.0.0.0/8
        (0xa9fe_0000, 16), // 169.254.0.0/16
        (0xac10_0000, 12), // 172.16.0.0/12
        (0xc000_0000, 24), // 192.0.0.0/24
        (0xc000_0200, 24), // 192.0.2.0/24
        (0xc058_6300, 24), // 192.88.99.0/24
        (0xc0a8_0000, 16), // 192.168.0.0/16
        (0xc612_0000, 15), // 198.18.0.0/15
        (0xc633_6400, 24), // 198.51.100.0/24
        (0xcb00_7100, 24), // 203.0.113.0/24
        (0xe000_0000, 4),  // 224.0.0.0/4
        (0xf000_0000, 4),  // 240.0.0.0/4 (and broadcast)
    ];
    let bits = u32::from(ip);
    !BLOCKED
        .iter()
        .any(|&(net, len)| bits >> (32 - len) == net >> (32 - len))
}

fn is_global_v6(ip: Ipv6Addr) -> bool {
    const BLOCKED: [(u128, u8); 9] = [
        (0, 128),                                        // ::/128
        (1, 128),                                        // ::1/128
        (0x0100_0000_0000_0000_0000_0000_0000_0000, 64), // 100::/64
        (0x2001_0db8_0000_0000_0000_0000_0000_0000, 32), // 2001:db8::/32
        (0xfc00_0000_0000_0000_0000_0000_0000_0000, 7),  // fc00::/7
        (0xfe80_0000_0000_0000_0000_0000_0000_0000, 10), // fe80::/10
        (0xfec0_0000_0000_0000_0000_0000_0000_0000, 10), // fec0::/10
        (0xff00_0000_0000_0000_0000_0000_0000_0000, 8),  // ff00::/8
        (0x0064_ff9b_0001_0000_0000_0000_0000_0000, 48), // 64:ff9b:1::/48 (local NAT64)
    ];
    let bits = u128::from(ip);
    !BLOCKED
        .iter()
        .any(|&(net, len)| bits >> (128 - len) == net >> (128 - len))
}

/// The IPv4 address an IPv6 address carries: IPv4-mapped (`::ffff:0:0/96`), NAT64
/// (`64:ff9b::/96`; the local-use `64:ff9b:1::/48` is blocked whole), 6to4 (`2002::/16`) or Teredo (`2001::/32`, XOR-ed).
fn embedded_v4(ip: Ipv6Addr) -> Option<Ipv4Addr> {
    if let Some(v4) = ip.to_ipv4_mapped() {
        return Some(v4);
    }
    let bits = u128::from(ip);
    let low32 = Ipv4Addr::from(bits as u32);
    let s = ip.segments();
    match (s[0], s[1]) {
        (0x0064, 0xff9b) if s[2..6] == [0, 0, 0, 0] => Some(low32),
        (0x2002, _) => Some(Ipv4Addr::from((bits >> 80) as u32)),
        (0x2001, 0x0000) => Some(Ipv4Addr::from(!(bits as u32))),
        _ => None,
    }
}

/// How long a receiver may take to answer one delivery.
pub const DELIVERY_TIMEOUT_MS: u64 = 15_000;
/// How long a worker holds a claimed delivery before another worker may take it over.
pub const LEASE_MS: i64 = 60_000;
/// A subscription whose deliveries have failed for this long without one success is disabled.
pub const DISABLE_AFTER_FAILING_MS: i64 = 5 * 24 * 3600 * 1000;
/// Default and largest grace of the previous secret after a rotation.
pub const DEFAULT_ROTATION_GRACE_SECS: i64 = 24 * 3600;
pub const MAX_ROTATION_GRACE_SECS: i64 = 7 * 24 * 3600;
/// At most this many events per replay.
pub const MAX_REPLAY: u32 = 100;
/// Limits on what a subscriber sends.
pub const MAX_URL_LEN: usize = 2_048;
pub const MAX_DESCRIPTION_LEN: usize = 256;
pub const MAX_SUBSCRIPTIONS_PER_OWNER: usize = 20;

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
pub enum SubscriptionStatus {
    Active,
    Disabled,
}

impl SubscriptionStatus {
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

/// A webhook subscription. Secrets are stored sealed under the master key (bound to the
/// subscription id); the previous secret keeps signing until its grace ends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Subscription {
    /// `whk_…`.
    pub id: String,
    pub owner: String,
    pub url: String,
    pub events: Vec<EventType>,
    pub description: Option<String>,
    pub status: SubscriptionStatus,
    /// Why it was disabled, when swapd disabled it (410, failing for days).
    pub disabled_reason: Option<String>,
    pub secret_sealed: String,
    pub previous_secret_sealed: Option<String>,
    pub previous_secret_expires_at_ms: Option<i64>,
    /// Since when every delivery has failed; `None` after a success.
    pub failing_since_ms: Option<i64>,
    pub created_at_ms: i64,
    pub updated_at_ms: i64,
    pub version: i64,
}

/// What an update changes; `None` keeps the field (`description: Some(None)` clears it).
#[derive(Debug, Clone, Default)]
pub struct SubscriptionChange {
    pub url: Option<String>,
    pub events: Option<Vec<EventType>>,
    pub description: Option<Option<String>>,
    pub status: Option<SubscriptionStatus>,
}

/// A rotation refused: the previous one's grace is still running.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RotationInProgress;

impl Subscription {
    /// The sealed secrets that sign a delivery at `now_ms`: the current one, then the
    /// previous one during its grace.
    pub fn signing_secrets(&self, now_ms: i64) -> Vec<&str> {
        let mut secrets = vec![self.secret_sealed.as_str()];
        if self.rotation_open(now_ms)
            && let Some(previous) = &self.previous_secret_sealed
        {
            secrets.push(previous);
        }
        secrets
    }

    /// Whether the previous secret still signs.
    /// A new, active subscription at version 1, signing with `secret_sealed`.
    pub fn create(
        id: String,
        owner: String,
        url: String,
        events: Vec<EventType>,
        description: Option<String>,
        secret_sealed: String,
        now_ms: i64,
    ) -> Self {
        Self {
            id,
            owner,
            url,
            events,
            description,
            status: SubscriptionStatus::Active,
            disabled_reason: None,
            secret_sealed,
            previous_secret_sealed: None,
            previous_secret_expires_at_ms: None,
            failing_since_ms: None,
            created_at_ms: now_ms,
            updated_at_ms: now_ms,
            version: 1,
        }
    }

    /// The next version with `change` applied. Enabling a subscription clears why and since
    /// when it was failing, so deliveries start afresh.
    pub fn update(&self, change: SubscriptionChange, now_ms: i64) -> Self {
        let mut next = self.next_version(now_ms);
        if let Some(url) = change.url {
            next.url = url;
        }
        if let Some(events) = change.events {
            next.events = events;
        }
        if let Some(description) = change.description {
            next.description = description;
        }
        if let Some(status) = change.status {
            if status == SubscriptionStatus::Active {
                next.disabled_reason = None;
                next.failing_since_ms = None;
            }
            next.status = status;
        }
        next
    }

    /// The next version signing with `new_sealed`, the current secret signing beside it for
    /// `grace_secs` (none when 0). A rotation during another's grace needs `force`.
    pub fn rotate(
        &self,
        new_sealed: String,
        grace_secs: i64,
        force: bool,
        now_ms: i64,
    ) -> Result<Self, RotationInProgress> {
        if self.rotation_open(now_ms) && !force {
            return Err(RotationInProgress);
        }
        let mut next = self.next_version(now_ms);
        next.previous_secret_sealed = (grace_secs > 0).then(|| self.secret_sealed.clone());
        next.previous_secret_expires_at_ms = (grace_secs > 0).then_some(now_ms + grace_secs * 1000);
        next.secret_sealed = new_sealed;
        Ok(next)
    }

    fn next_version(&self, now_ms: i64) -> Self {
        let mut next = self.clone();
        next.version += 1;
        next.updated_at_ms = now_ms;
        next
    }

    pub fn rotation_open(&self, now_ms: i64) -> bool {
        self.previous_secret_sealed.is_some()
            && self
                .previous_secret_expires_at_ms
                .is_some_and(|expires| now_ms < expires)
    }

    /// The `events` column: every type between commas, so `LIKE '%,type,%'` finds it.
    pub fn events_column(&self) -> String {
        let mut column = String::from(",");
        for event in &self.events {
            column.push_str(event.as_str());
            column.push(',');
        }
        column
    }
}

/// The `LIKE` pattern that finds subscriptions to `event` in the events column.
pub fn events_pattern(event: EventType) -> String {
    format!("%,{},%", event.as_str())
}

/// The body of a delivery, serialized once when the event is written:
/// `{id, type, createdAt, sequence, data: {order, previousStatus}}` with sorted keys.
/// `sequence` counts the order's events, so a receiver can drop a stale one.
pub fn event_payload(event: &OrderEvent) -> Vec<u8> {
    let mut order = event.data.clone();
    let previous_status = order
        .as_object_mut()
        .and_then(|fields| fields.remove("previousStatus"))
        .and_then(|status| status.as_str().map(str::to_owned));
    serde_json::to_vec(&WebhookEvent {
        created_at: event.created_at_ms / 1000,
        data: EventData {
            order: Some(order),
            previous_status,
        },
        id: event.id.clone(),
        sequence: event.sequence,
        test: false,
        event_type: event.event_type,
    })
    .expect("JSON values serialize")
}

/// The body of a test delivery (`POST /callbacks/test`): the shape of an event, marked `test`.
pub fn test_payload(id: &str, event: EventType, now_ms: i64) -> Vec<u8> {
    serde_json::to_vec(&WebhookEvent::<serde_json::Value> {
        created_at: now_ms / 1000,
        data: EventData {
            order: None,
            previous_status: None,
        },
        id: id.to_owned(),
        sequence: 0,
        test: true,
        event_type: event,
    })
    .expect("JSON values serialize")
}

/// Which destinations deliveries may reach.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UrlPolicy {
    /// `https` on port 443 to global addresses only.
    Live,
    /// Also `http`, any port, and loopback addresses, so a local receiver works.
    Sandbox,
}

/// Why a webhook URL is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UrlProblem {
    #[error("url: {0}")]
    Invalid(String),
    #[error("url: only https is allowed")]
    Scheme,
    #[error("url: only port 443 is allowed")]
    Port,
    #[error("url: user names and passwords are not allowed in webhook URLs")]
    Credentials,
    #[error("url: {0} is not a public address")]
    Host(String),
    #[error("url: {0} does not resolve")]
    Unresolvable(String),
}

/// A checked destination: where to connect before the addresses are resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Destination {
    pub url: url::Url,
    /// The host name (or literal address) as written.
    pub host: String,
    pub port: u16,
    /// Set when the host is a literal address (no resolution).
    pub literal: Option<IpAddr>,
}

/// Checks the shape of a webhook URL under `policy`, parsed as browsers do (WHATWG: `127.1`,
/// `2130706433` and `0177.0.0.1` are IPv4 literals). Addresses are checked after resolution
/// with [`address_allowed`].
pub fn check_url(text: &str, policy: UrlPolicy) -> Result<Destination, UrlProblem> {
    if text.len() > MAX_URL_LEN {
        return Err(UrlProblem::Invalid(format!(
            "at most {MAX_URL_LEN} characters"
        )));
    }
    let url = url::Url::parse(text).map_err(|e| UrlProblem::Invalid(e.to_string()))?;
    match (url.scheme(), policy) {
        ("https", _) | ("http", UrlPolicy::Sandbox) => {}
        _ => return Err(UrlProblem::Scheme),
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(UrlProblem::Credentials);
    }
    if url.fragment().is_some() {
        return Err(UrlProblem::Invalid("fragments are not allowed".into()));
    }
    let (host, literal) = match url.host() {
        Some(url::Host::Domain(name)) => (name.to_owned(), None),
        Some(url::Host::Ipv4(ip)) => (ip.to_string(), Some(IpAddr::V4(ip))),
        Some(url::Host::Ipv6(ip)) => (ip.to_string(), Some(IpAddr::V6(ip))),
        None => return Err(UrlProblem::Invalid("no host".into())),
    };
    if let Some(ip) = literal
        && !address_allowed(ip, policy)
    {
        return Err(UrlProblem::Host(ip.to_string()));
    }
    let port = url
        .port_or_known_default()
        .ok_or_else(|| UrlProblem::Invalid("no port".into()))?;
    if policy == UrlPolicy::Live && port != 443 {
        return Err(UrlProblem::Port);
    }
    Ok(Destination {
        url,
        host,
        port,
        literal,
    })
}

/// Whether a delivery may connect to `ip` under `policy`.
pub fn address_allowed(ip: IpAddr, policy: UrlPolicy) -> bool {
    is_deliverable(ip) || (policy == UrlPolicy::Sandbox && is_loopback(ip))
}

fn is_loopback(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => v4.is_loopback(),
        IpAddr::V6(v6) => {
            v6.is_loopback() || v6.to_ipv4_mapped().is_some_and(|v4| v4.is_loopback())
        }
    }
}

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
    pub subscription_id: String,
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
    pub subscription_id: String,
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
    pub subscription_id: String,
    pub event_id: String,
    pub owner: String,
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

    fn event(sequence: i64) -> OrderEvent {
        OrderEvent {
            id: "evt_00000000000000000000000000000001".into(),
            order_id: "ord_1".into(),
            owner: "key:a".into(),
            sequence,
            event_type: EventType::Completed,
            data: serde_json::json!({"orderId": "ord_1", "status": "completed", "previousStatus": "withdrawing"}),
            created_at_ms: 1_800_000_000_123,
            notify_email: None,
        }
    }

    #[test]
    fn subscriptions_change_by_version_and_rotate_once_per_grace() {
        let created = Subscription::create(
            "whk_1".into(),
            "key:a".into(),
            "https://example.com/h".into(),
            vec![EventType::Completed],
            None,
            "sealed-1".into(),
            1_000,
        );
        assert_eq!(
            (created.version, created.status),
            (1, SubscriptionStatus::Active)
        );

        let mut disabled = created.update(
            SubscriptionChange {
                status: Some(SubscriptionStatus::Disabled),
                ..Default::default()
            },
            2_000,
        );
        disabled.disabled_reason = Some("410 Gone".into());
        disabled.failing_since_ms = Some(1_500);
        assert_eq!((disabled.version, disabled.updated_at_ms), (2, 2_000));
        let enabled = disabled.update(
            SubscriptionChange {
                status: Some(SubscriptionStatus::Active),
                description: Some(Some("again".into())),
                ..Default::default()
            },
            3_000,
        );
        assert_eq!(enabled.version, 3);
        assert_eq!(
            (enabled.disabled_reason, enabled.failing_since_ms),
            (None, None)
        );
        assert_eq!(enabled.description.as_deref(), Some("again"));
        assert_eq!(enabled.url, "https://example.com/h");

        let rotated = created
            .rotate("sealed-2".into(), 60, false, 10_000)
            .unwrap();
        assert_eq!(rotated.secret_sealed, "sealed-2");
        assert_eq!(rotated.previous_secret_sealed.as_deref(), Some("sealed-1"));
        assert_eq!(rotated.previous_secret_expires_at_ms, Some(70_000));
        assert_eq!(
            rotated.rotate("sealed-3".into(), 60, false, 20_000),
            Err(RotationInProgress)
        );
        let forced = rotated.rotate("sealed-3".into(), 0, true, 20_000).unwrap();
        assert_eq!((forced.previous_secret_sealed, forced.version), (None, 3));
    }

    #[test]
    fn payloads_are_stable_bytes_with_sorted_keys() {
        let payload = event_payload(&event(7));
        assert_eq!(
            std::str::from_utf8(&payload).unwrap(),
            r#"{"createdAt":1800000000,"data":{"order":{"orderId":"ord_1","status":"completed"},"previousStatus":"withdrawing"},"id":"evt_00000000000000000000000000000001","sequence":7,"type":"order.completed"}"#
        );
        assert_eq!(payload, event_payload(&event(7)));
        let test = test_payload("evt_t", EventType::Updated, 1_800_000_000_000);
        let test: serde_json::Value = serde_json::from_slice(&test).unwrap();
        assert_eq!(test["test"], true);
        assert_eq!(test["type"], "order.updated");
    }

    #[test]
    fn urls_are_parsed_as_browsers_do_and_checked_per_policy() {
        use UrlPolicy::{Live, Sandbox};
        let ok = check_url("https://hooks.example.com/swapd?x=1", Live).unwrap();
        assert_eq!(
            (ok.host.as_str(), ok.port, ok.literal),
            ("hooks.example.com", 443, None)
        );
        assert_eq!(
            check_url("http://hooks.example.com/", Live),
            Err(UrlProblem::Scheme)
        );
        assert_eq!(
            check_url("ftp://hooks.example.com/", Sandbox),
            Err(UrlProblem::Scheme)
        );
        assert_eq!(
            check_url("https://example.com:22/", Live),
            Err(UrlProblem::Port)
        );
        assert!(check_url("https://example.com:8443/", Sandbox).is_ok());
        assert_eq!(
            check_url("https://user:pass@example.com/", Live),
            Err(UrlProblem::Credentials)
        );
        assert!(matches!(
            check_url("not a url", Live),
            Err(UrlProblem::Invalid(_))
        ));
        assert!(matches!(
            check_url(&format!("https://example.com/{}", "a".repeat(2_100)), Live),
            Err(UrlProblem::Invalid(_))
        ));
        for blocked in [
            "https://127.0.0.1/",
            "https://[::1]/",
            "https://0.0.0.0/",
            "https://[::ffff:127.0.0.1]/",
            "https://[::ffff:7f00:1]/",
            "https://169.254.169.254/latest/meta-data/",
            "https://[::ffff:a9fe:a9fe]/",
            "https://[64:ff9b::a9fe:a9fe]/",
            "https://[2002:7f00:1::]/",
            "https://10.0.0.1/",
            "https://100.64.0.1/",
            "https://[fd00::1]/",
            "https://2130706433/",
            "https://0177.0.0.1/",
            "https://127.1/",
        ] {
            assert!(
                matches!(check_url(blocked, Live), Err(UrlProblem::Host(_))),
                "{blocked} must be refused in live mode"
            );
        }
        // Sandbox reaches loopback (a local receiver), and nothing else private.
        assert!(check_url("http://127.0.0.1:9000/hook", Sandbox).is_ok());
        assert!(check_url("http://[::1]:9000/hook", Sandbox).is_ok());
        assert!(matches!(
            check_url("http://169.254.169.254/", Sandbox),
            Err(UrlProblem::Host(_))
        ));
        assert!(matches!(
            check_url("http://10.0.0.1/", Sandbox),
            Err(UrlProblem::Host(_))
        ));
    }

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
    fn previous_secrets_sign_only_during_their_grace() {
        let mut subscription = Subscription {
            id: "whk_1".into(),
            owner: "key:a".into(),
            url: "https://example.com/".into(),
            events: vec![EventType::Created, EventType::AwaitingDeposit],
            description: None,
            status: SubscriptionStatus::Active,
            disabled_reason: None,
            secret_sealed: "new".into(),
            previous_secret_sealed: Some("old".into()),
            previous_secret_expires_at_ms: Some(100),
            failing_since_ms: None,
            created_at_ms: 0,
            updated_at_ms: 0,
            version: 1,
        };
        assert_eq!(subscription.signing_secrets(99), ["new", "old"]);
        assert_eq!(subscription.signing_secrets(100), ["new"]);
        assert_eq!(
            subscription.events_column(),
            ",order.created,order.awaiting_deposit,"
        );
        assert!(
            subscription
                .events_column()
                .contains(&events_pattern(EventType::Created).replace('%', ""))
        );
        subscription.previous_secret_sealed = None;
        assert!(!subscription.rotation_open(0));
    }

    #[test]
    fn secrets_round_trip() {
        let secret = new_secret();
        assert!(secret.starts_with(SECRET_PREFIX));
        assert_eq!(secret_key(&secret).unwrap().len(), SECRET_BYTES);
        assert_ne!(secret, new_secret());
        assert!(secret_key("whsec_").is_none());
        assert!(secret_key("sec_abc").is_none());
        assert!(secret_key("whsec_not base64!").is_none());
    }

    /// An off-the-shelf Standard Webhooks verifier accepts our signatures, alone and in a
    /// rotation list, and refuses a changed body.
    #[test]
    fn standard_webhooks_verifiers_accept_our_signatures() {
        let secret = new_secret();
        let old = new_secret();
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs() as i64;
        let body = br#"{"id":"evt_1","type":"order.completed","sequence":7,"data":{}}"#;
        let keys = [secret_key(&secret).unwrap(), secret_key(&old).unwrap()];
        let header = signature_header(&[&keys[0], &keys[1]], "evt_1", now, body);
        assert_eq!(header.split(' ').count(), 2);
        let mut headers = http::HeaderMap::new();
        headers.insert("webhook-id", "evt_1".parse().unwrap());
        headers.insert("webhook-timestamp", now.to_string().parse().unwrap());
        headers.insert("webhook-signature", header.parse().unwrap());
        for secret in [&secret, &old] {
            let verifier = standardwebhooks::Webhook::new(secret).unwrap();
            verifier.verify(body, &headers).unwrap();
            assert!(verifier.verify(b"{}", &headers).is_err());
        }
        let stranger = standardwebhooks::Webhook::new(&new_secret()).unwrap();
        assert!(stranger.verify(body, &headers).is_err());
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

    #[test]
    fn only_global_addresses_are_deliverable() {
        let ip = |s: &str| s.parse::<IpAddr>().unwrap();
        for blocked in [
            "127.0.0.1",
            "10.1.2.3",
            "172.31.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "0.0.0.0",
            "224.0.0.1",
            "255.255.255.255",
            "198.18.0.1",
            "::1",
            "::",
            "fe80::1",
            "fc00::1",
            "ff02::1",
            "2001:db8::1",
            "::ffff:127.0.0.1",
            "::ffff:10.0.0.1",
            "64:ff9b::7f00:1",
            "64:ff9b:1::a9fe:a9fe",
            "2002:7f00:1::",
            "2001:0:0:0:0:0:80ff:fefe",
        ] {
            assert!(!is_deliverable(ip(blocked)), "{blocked} must be blocked");
        }
        for allowed in [
            "93.184.216.34",
            "1.1.1.1",
            "2606:4700:4700::1111",
            "::ffff:8.8.8.8",
            "64:ff9b::808:808",
            "2002:0808:0808::",
        ] {
            assert!(is_deliverable(ip(allowed)), "{allowed} must be allowed");
        }
    }
}
