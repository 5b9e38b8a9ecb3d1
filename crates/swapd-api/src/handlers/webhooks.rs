//! Webhook subscriptions on `/api/v3` (docs/webhooks.md): create, list, update, rotate the secret,
//! replay past events, send a test callback, read the delivery log. Subscriptions and events
//! belong to the key that made them; other keys get 404. Deliveries themselves are the
//! worker's (`swapd_worker::WebhookDispatcher`).

use axum::Extension;
use axum::extract::{Path, State};
use axum::response::Response;

use swapd_app::webhooks as webhooks_app;
use swapd_core::webhooks::delivery::ReplaySelection;
use swapd_types::Success;
use swapd_types::webhooks::{
    DeliveryLog, ReplayInput, ReplayQueued, RotateInput, Rotated, TestCallbackInput,
    TestCallbackResult, Webhook, WebhookCreated, WebhookInput, WebhookList, WebhookPatch,
};

use super::input::invalid;
use crate::idempotency::{IdempotencyClaim, respond};
use crate::json::Json;
use crate::principal::Caller;
use crate::{ApiError, ApiJson, AppState, SignedQuery};
use swapd_core::webhooks::delivery;

/// Lists the key's subscriptions.
#[utoipa::path(get, path = "/api/v3/webhooks", operation_id = "list_webhooks", tag = "business",
    security(("hmac" = [])),
    description = "The key's subscriptions, oldest first (no secrets).",
    responses((status = 200, description = "Subscriptions", body = inline(Success<WebhookList>))))]
pub(crate) async fn list(
    State(state): State<AppState>,
    caller: Caller,
) -> Result<Json<Success<WebhookList>>, ApiError> {
    let webhooks = webhooks_app::list(state.app(), &caller.owner()).await?;
    Ok(Json(Success::new(WebhookList {
        count: webhooks.len(),
        webhooks,
    })))
}

/// Creates a subscription.
#[utoipa::path(post, path = "/api/v3/webhooks", operation_id = "create_webhook", tag = "business",
    security(("hmac" = [])),
    description = "The signing secret is in this \
        answer only. Live mode accepts only `https` URLs on port 443 whose every address is public; \
        the URL is checked again before every delivery. At most 20 subscriptions per key.",
    request_body = WebhookInput,
    responses(
        (status = 201, description = "The subscription and its secret", body = inline(Success<WebhookCreated>)),
        (status = 400, description = "`validation_failed`, `webhook_url_invalid`, `webhook_url_scheme_not_allowed`, \
            `webhook_url_port_not_allowed`, `webhook_url_credentials_not_allowed`, `webhook_url_host_not_allowed`, \
            `webhook_url_unresolvable`", body = swapd_types::ErrorEnvelope),
        (status = 409, description = "`webhook_limit_reached`: the key has 20 subscriptions", body = swapd_types::ErrorEnvelope),
    ))]
pub(crate) async fn create(
    State(state): State<AppState>,
    caller: Caller,
    Extension(claim): Extension<IdempotencyClaim>,
    ApiJson(input): ApiJson<WebhookInput>,
) -> Result<Response, ApiError> {
    let answer = webhooks_app::create(state.app(), &caller.owner(), input, &claim).await?;
    Ok(respond(answer))
}

/// Updates a subscription.
#[utoipa::path(patch, path = "/api/v3/webhooks/{webhookId}", operation_id = "update_webhook", tag = "business",
    security(("hmac" = [])),
    description = "Changes `url`, `description`, \
        `events` and `status` (`active`, `disabled`); fields left out stay. Enabling a subscription \
        swapd disabled clears its reason; deliveries of a disabled subscription fail without being sent.",
    params(("webhookId" = String, Path, description = "`whk_…`")),
    request_body = WebhookPatch,
    responses(
        (status = 200, description = "The subscription", body = inline(Success<Webhook>)),
        (status = 400, description = "`validation_failed`, `webhook_url_*`", body = swapd_types::ErrorEnvelope),
        (status = 404, description = "`webhook_not_found`", body = swapd_types::ErrorEnvelope),
    ))]
pub(crate) async fn update(
    State(state): State<AppState>,
    caller: Caller,
    Extension(claim): Extension<IdempotencyClaim>,
    Path(id): Path<String>,
    ApiJson(patch): ApiJson<WebhookPatch>,
) -> Result<Response, ApiError> {
    let answer = webhooks_app::update(state.app(), &caller.owner(), &id, patch, &claim).await?;
    Ok(respond(answer))
}

/// Rotates a subscription's signing secret.
#[utoipa::path(post, path = "/api/v3/webhooks/{webhookId}/rotate-secret", operation_id = "rotate_webhook_secret", tag = "business",
    security(("hmac" = [])),
    description = "Returns the new secret once. \
        The current one keeps signing beside it for `previousSecretExpiresIn` seconds (default 86400, \
        at most 604800; 0 retires it at once): every delivery in between carries both signatures. \
        A second rotation during that grace is refused unless `force: true`.",
    params(("webhookId" = String, Path, description = "`whk_…`")),
    request_body = RotateInput,
    responses(
        (status = 200, description = "The new secret", body = inline(Success<Rotated>)),
        (status = 400, description = "`validation_failed`", body = swapd_types::ErrorEnvelope),
        (status = 404, description = "`webhook_not_found`", body = swapd_types::ErrorEnvelope),
        (status = 409, description = "`rotation_in_progress`", body = swapd_types::ErrorEnvelope),
    ))]
pub(crate) async fn rotate(
    State(state): State<AppState>,
    caller: Caller,
    Extension(claim): Extension<IdempotencyClaim>,
    Path(id): Path<String>,
    ApiJson(input): ApiJson<RotateInput>,
) -> Result<Response, ApiError> {
    let answer = webhooks_app::rotate(state.app(), &caller.owner(), &id, input, &claim).await?;
    Ok(respond(answer))
}

/// Replays past events to a subscription.
#[utoipa::path(post, path = "/api/v3/webhooks/{webhookId}/replay", operation_id = "replay_webhook_events", tag = "business",
    security(("hmac" = [])),
    description = "Queues the key's event \
        `eventId`, or its events of the subscribed types created in `[since, until)` (Unix seconds; \
        `until` defaults to now; `limit` 1 to 100, default 100), oldest first. Each is delivered again \
        with its own id and stored payload, signed anew. 202 with what was queued.",
    params(("webhookId" = String, Path, description = "`whk_…`")),
    request_body = ReplayInput,
    responses(
        (status = 202, description = "What was queued", body = inline(Success<ReplayQueued>)),
        (status = 400, description = "`validation_failed`", body = swapd_types::ErrorEnvelope),
        (status = 404, description = "`webhook_not_found`, `event_not_found`", body = swapd_types::ErrorEnvelope),
        (status = 409, description = "`webhook_disabled`: enable the subscription first", body = swapd_types::ErrorEnvelope),
        (status = 429, description = "`rate_limit_exceeded`: at most `webhooks.replays_per_minute` (10) replays a minute per subscription; `Retry-After` says when", body = swapd_types::ErrorEnvelope),
    ))]
pub(crate) async fn replay(
    State(state): State<AppState>,
    caller: Caller,
    Extension(claim): Extension<IdempotencyClaim>,
    Path(id): Path<String>,
    ApiJson(input): ApiJson<ReplayInput>,
) -> Result<Response, ApiError> {
    let now_ms = state.clock.now_ms();
    let selection = match (&input.event_id, input.since) {
        (Some(event_id), None) if input.until.is_none() && input.limit.is_none() => {
            ReplaySelection::Event(event_id.clone())
        }
        (None, Some(since)) => {
            let until = input.until.unwrap_or(now_ms / 1000 + 1);
            let limit = input.limit.unwrap_or(delivery::MAX_REPLAY);
            if !(1..=delivery::MAX_REPLAY).contains(&limit) {
                return Err(invalid("limit", "must be from 1 to 100"));
            }
            if since < 0 || until <= since {
                return Err(invalid("until", "must be after since (Unix seconds)"));
            }
            ReplaySelection::Window {
                since_ms: since.saturating_mul(1000),
                until_ms: until.saturating_mul(1000),
                limit,
            }
        }
        _ => {
            return Err(invalid(
                "eventId",
                "give eventId alone, or since with optional until and limit",
            ));
        }
    };
    let answer =
        webhooks_app::replay(state.app(), &caller.owner(), &id, &selection, Some(&claim)).await?;
    Ok(respond(answer))
}

/// Sends one signed test delivery.
#[utoipa::path(post, path = "/api/v3/callbacks/test", operation_id = "test_callback", tag = "business",
    security(("hmac" = [])),
    description = "Sends one test event \
        (`\"test\": true`, `type` from `eventType`, default `order.updated`) to the subscription's URL, \
        signed like every delivery, now. Answers with the status code and latency only: what the \
        receiver sent back is never shown. The event id comes from the Idempotency-Key, so a retry \
        whose answer was lost sends the same event again.",
    request_body = TestCallbackInput,
    responses(
        (status = 200, description = "How the delivery went", body = inline(Success<TestCallbackResult>)),
        (status = 400, description = "`validation_failed`", body = swapd_types::ErrorEnvelope),
        (status = 404, description = "`webhook_not_found`", body = swapd_types::ErrorEnvelope),
    ))]
pub(crate) async fn test_callback(
    State(state): State<AppState>,
    caller: Caller,
    Extension(claim): Extension<IdempotencyClaim>,
    ApiJson(input): ApiJson<TestCallbackInput>,
) -> Result<Json<Success<TestCallbackResult>>, ApiError> {
    let result = webhooks_app::test_callback(state.app(), &caller.owner(), &input, &claim).await?;
    Ok(Json(Success::new(result)))
}

/// The delivery log of a subscription.
#[utoipa::path(get, path = "/api/v3/webhooks/{webhookId}/deliveries", operation_id = "list_webhook_deliveries", tag = "business",
    security(("hmac" = [])),
    description = "The newest deliveries (`limit` 1 to 100, default 20) \
        with every attempt: status code, latency, swapd's reason for a failure, and when the next \
        attempt is due.",
    params(
        ("webhookId" = String, Path, description = "`whk_…`"),
        ("limit" = Option<u32>, Query, minimum = 1, maximum = 100, description = "1 to 100, default 20"),
    ),
    responses(
        (status = 200, description = "The log", body = inline(Success<DeliveryLog>)),
        (status = 404, description = "`webhook_not_found`", body = swapd_types::ErrorEnvelope),
    ))]
pub(crate) async fn deliveries(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    query: SignedQuery,
) -> Result<Json<Success<DeliveryLog>>, ApiError> {
    let owner = caller.owner();
    let limit = match query.scalar("limit")? {
        None => 20,
        Some(text) => text
            .parse::<u32>()
            .ok()
            .filter(|n| (1..=100).contains(n))
            .ok_or_else(|| invalid("limit", "must be an integer from 1 to 100"))?,
    };
    if let Some((name, _)) = query.0.iter().find(|(name, _)| name != "limit") {
        return Err(invalid(name, "unknown parameter; this route takes limit"));
    }
    let (subscription, deliveries) =
        webhooks_app::deliveries(state.app(), &owner, &id, limit).await?;
    Ok(Json(Success::new(DeliveryLog {
        webhook_id: subscription.id.into_string(),
        count: deliveries.len(),
        deliveries,
    })))
}
