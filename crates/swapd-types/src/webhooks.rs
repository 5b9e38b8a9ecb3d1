//! Wire shapes of webhook subscriptions, replays, test callbacks and the delivery log
//! (docs/webhooks.md). Times are Unix seconds.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// The nine webhook event types of the spec.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    strum::IntoStaticStr,
    strum::EnumString,
    strum::VariantArray,
    strum::VariantNames,
    strum::Display,
)]
pub enum EventType {
    #[strum(serialize = "order.created")]
    Created,
    #[strum(serialize = "order.awaiting_deposit")]
    AwaitingDeposit,
    #[strum(serialize = "order.exchange_started")]
    ExchangeStarted,
    #[strum(serialize = "order.withdraw_started")]
    WithdrawStarted,
    #[strum(serialize = "order.completed")]
    Completed,
    #[strum(serialize = "order.expired")]
    Expired,
    #[strum(serialize = "order.emergency")]
    Emergency,
    #[strum(serialize = "order.updated")]
    Updated,
    #[strum(serialize = "order.failed")]
    Failed,
}

crate::serde_as_str!(EventType);

impl utoipa::PartialSchema for EventType {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::Schema> {
        use strum::VariantArray;
        utoipa::openapi::schema::ObjectBuilder::new()
            .schema_type(utoipa::openapi::schema::Type::String)
            .enum_values(Some(EventType::VARIANTS.iter().map(|e| e.as_str())))
            .into()
    }
}

impl ToSchema for EventType {}

impl EventType {
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

/// A delivery's body, serialized once when the event is written and re-signed per attempt. The
/// fields are declared in sorted order, so the bytes have sorted keys. `O` is the order: the
/// server writes the view it stored (`serde_json::Value`), receivers read an
/// [`crate::orders::OrderView`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WebhookEvent<O = crate::orders::OrderView> {
    /// Unix seconds.
    pub created_at: i64,
    pub data: EventData<O>,
    /// `evt_…`: the same on every attempt and replay; deduplicate on it.
    pub id: String,
    /// Counts the order's events from 1 (0 for test deliveries): drop an event older than one
    /// already applied.
    pub sequence: i64,
    /// A test delivery (`POST /callbacks/test`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub test: bool,
    #[serde(rename = "type")]
    pub event_type: EventType,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EventData<O = crate::orders::OrderView> {
    /// The order after the change (`null` in test deliveries).
    pub order: Option<O>,
    /// The order's status before the change, when it changed.
    pub previous_status: Option<String>,
}

/// `POST /webhooks`.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[schema(example = json!({
    "url": "http://localhost:8787/swapd", "events": ["order.created", "order.completed"],
    "description": "order updates"
}))]
pub struct WebhookInput {
    /// Where deliveries go. Live: `https` on port 443 to a public address.
    #[schema(format = "uri", max_length = 2048)]
    pub url: String,
    /// Event types to receive (`order.created`, … `order.failed`), at least one.
    #[schema(value_type = Vec<EventType>, min_items = 1)]
    pub events: Vec<String>,
    #[serde(default)]
    #[schema(max_length = 256)]
    pub description: Option<String>,
}

/// `PATCH /webhooks/{webhookId}`: every field optional; `description: null` clears it.
#[derive(Debug, Clone, Default, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WebhookPatch {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(format = "uri", max_length = 2048)]
    pub url: Option<String>,
    #[serde(
        default,
        with = "double_option",
        skip_serializing_if = "Option::is_none"
    )]
    #[schema(value_type = Option<String>, max_length = 256)]
    pub description: Option<Option<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Vec<EventType>>, min_items = 1)]
    pub events: Option<Vec<String>>,
    /// `active` or `disabled`. Enabling a subscription swapd disabled clears the reason.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(pattern = "^(active|disabled)$")]
    pub status: Option<String>,
}

/// Tells a missing field (`None`) from an explicit `null` (`Some(None)`).
mod double_option {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    pub fn serialize<S: Serializer>(
        value: &Option<Option<String>>,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        value.as_ref().map(Option::as_ref).serialize(serializer)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Option<Option<String>>, D::Error> {
        Option::<String>::deserialize(deserializer).map(Some)
    }
}

/// A subscription.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Webhook {
    /// `whk_…`.
    pub webhook_id: String,
    pub url: String,
    pub events: Vec<String>,
    pub description: Option<String>,
    /// `active` or `disabled`.
    pub status: String,
    /// Why swapd disabled it (a 410 answer, failing for 5 days), when it did.
    pub disabled_reason: Option<String>,
    /// Until when the previous secret also signs (after a rotation), if it does.
    pub previous_secret_expires_at: Option<i64>,
    pub created_at: i64,
    pub updated_at: i64,
}

/// A new subscription, with its signing secret (shown only here).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct WebhookCreated {
    #[serde(flatten)]
    pub webhook: Webhook,
    /// `whsec_…`: verify deliveries with it (Standard Webhooks). Shown once.
    pub secret: String,
}

/// `GET /webhooks`.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct WebhookList {
    pub webhooks: Vec<Webhook>,
    pub count: usize,
}

/// `POST /webhooks/{webhookId}/rotate-secret`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RotateInput {
    /// How long the current secret keeps signing beside the new one, in seconds (0 to 604800,
    /// default 86400). 0 retires it at once (after a leak).
    #[serde(default)]
    #[schema(minimum = 0, maximum = 604800)]
    pub previous_secret_expires_in: Option<i64>,
    /// Rotate although the previous rotation's grace is still running (its old secret then
    /// stops signing at once).
    #[serde(default)]
    pub force: Option<bool>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Rotated {
    pub webhook_id: String,
    /// The new `whsec_…` secret. Shown once.
    pub secret: String,
    /// Until when the previous secret also signs; `null` when it stopped at once.
    pub previous_secret_expires_at: Option<i64>,
}

/// `POST /webhooks/{webhookId}/replay`: `eventId`, or a `since`/`until` window (Unix seconds;
/// `until` defaults to now) with `limit` (1 to 100, default 100).
#[derive(Debug, Clone, Default, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ReplayInput {
    #[serde(default)]
    pub event_id: Option<String>,
    #[serde(default)]
    pub since: Option<i64>,
    #[serde(default)]
    pub until: Option<i64>,
    #[serde(default)]
    #[schema(minimum = 1, maximum = 100)]
    pub limit: Option<u32>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct QueuedReplay {
    pub delivery_id: String,
    pub event_id: String,
    pub event_type: String,
}

/// What a replay queued (202).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReplayQueued {
    pub webhook_id: String,
    pub queued: usize,
    pub deliveries: Vec<QueuedReplay>,
}

/// `POST /callbacks/test`.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TestCallbackInput {
    pub webhook_id: String,
    /// The type the test event carries; default `order.updated`.
    #[serde(default)]
    #[schema(value_type = Option<EventType>)]
    pub event_type: Option<String>,
}

/// The outcome of one signed test delivery: only its status code and latency (and swapd's own
/// reason when it failed), never what the receiver answered.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct TestCallbackResult {
    pub webhook_id: String,
    /// The test event's id (`webhook-id`).
    pub event_id: String,
    /// `true` for a 2xx answer within the timeout.
    pub delivered: bool,
    pub status_code: Option<u16>,
    pub latency_ms: i64,
    /// `timeout`, `connection_failed`, `destination_blocked`, `http_status` when not delivered.
    pub failure: Option<String>,
}

/// One attempt of a delivery.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct DeliveryAttempt {
    pub attempt: u32,
    pub started_at: i64,
    pub status_code: Option<u16>,
    pub latency_ms: i64,
    pub error: Option<String>,
    /// When the next attempt was scheduled after this one.
    pub next_attempt_at: Option<i64>,
}

/// One delivery of an event to a subscription.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct WebhookDelivery {
    pub delivery_id: String,
    pub event_id: String,
    /// `event` (from the order's outbox) or `replay`.
    pub kind: String,
    /// `pending`, `succeeded` or `failed`.
    pub status: String,
    pub attempts: u32,
    pub next_attempt_at: Option<i64>,
    pub last_status_code: Option<u16>,
    pub last_error: Option<String>,
    pub last_latency_ms: Option<i64>,
    pub created_at: i64,
    pub log: Vec<DeliveryAttempt>,
}

/// `GET /webhooks/{webhookId}/deliveries`.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct DeliveryLog {
    pub webhook_id: String,
    pub deliveries: Vec<WebhookDelivery>,
    pub count: usize,
}
