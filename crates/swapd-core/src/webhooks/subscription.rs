//! A webhook subscription: what a subscriber asked for, its secrets and their rotation, and
//! how it changes (docs/webhooks.md).

use serde::{Deserialize, Serialize};

use crate::ids::WebhookId;
use crate::offchain::order::EventType;
use crate::owner::Owner;

/// Default and largest grace of the previous secret after a rotation.
pub const DEFAULT_ROTATION_GRACE_SECS: i64 = 24 * 3600;
pub const MAX_ROTATION_GRACE_SECS: i64 = 7 * 24 * 3600;
/// Limits on what a subscriber sends.
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
    pub id: WebhookId,
    pub owner: Owner,
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
        id: WebhookId,
        owner: Owner,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subscriptions_change_by_version_and_rotate_once_per_grace() {
        let created = Subscription::create(
            "whk_1".parse().unwrap(),
            "key:a".parse().unwrap(),
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
    fn previous_secrets_sign_only_during_their_grace() {
        let mut subscription = Subscription {
            id: "whk_1".parse().unwrap(),
            owner: "key:a".parse().unwrap(),
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
}
