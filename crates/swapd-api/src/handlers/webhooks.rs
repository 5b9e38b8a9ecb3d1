//! Webhook subscriptions on `/api/v3` (docs/webhooks.md): create, list, update, rotate the secret,
//! replay past events, send a test callback, read the delivery log. Subscriptions and events
//! belong to the key that made them; other keys get 404. Deliveries themselves are the
//! worker's (`swapd_worker::WebhookDispatcher`).

use axum::Extension;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::Response;

use strum::VariantArray;
use swapd_app::webhooks as webhooks_app;
use swapd_core::ids;
use swapd_core::orders::EventType;
use swapd_core::webhooks::{
    self, AttemptOutcome, Delivery, ReplaySelection, Subscription, SubscriptionChange,
    SubscriptionStatus, UrlProblem,
};
use swapd_delivery::Outgoing;
use swapd_types::webhooks::{
    DeliveryAttempt, DeliveryLog, ReplayInput, ReplayQueued, RotateInput, Rotated,
    TestCallbackInput, TestCallbackResult, Webhook, WebhookCreated, WebhookDelivery, WebhookInput,
    WebhookList, WebhookPatch,
};
use swapd_types::{ErrorCode, Success};

use super::input::invalid;
use crate::error::json_response;
use crate::idempotency::{IdempotencyClaim, committed, respond};
use crate::json::Json;
use crate::principal::Caller;
use crate::{ApiError, ApiJson, AppState, SignedQuery};

/// Lists the key's subscriptions.
#[utoipa::path(get, path = "/api/v3/webhooks", operation_id = "list_webhooks", tag = "business",
    security(("hmac" = [])),
    description = "The key's subscriptions, oldest first (no secrets).",
    responses((status = 200, description = "Subscriptions", body = inline(Success<WebhookList>))))]
pub(crate) async fn list(
    State(state): State<AppState>,
    caller: Caller,
) -> Result<Json<Success<WebhookList>>, ApiError> {
    let owner = caller.scope();
    let webhooks: Vec<Webhook> = state
        .store
        .subscriptions(&owner)
        .await?
        .iter()
        .map(|s| view(s, state.clock.now_ms()))
        .collect();
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
    let owner = caller.scope();
    check_url(&state, &input.url).await?;
    let events = parse_events(&input.events)?;
    let description = check_description(input.description)?;
    let now_ms = state.clock.now_ms();
    let id = ids::new_id("whk_");
    let secret = webhooks::new_secret();
    let secret_sealed = state.master_key.seal(secret.as_bytes(), &id);
    let subscription = Subscription::create(
        id,
        owner,
        input.url,
        events,
        description,
        secret_sealed,
        now_ms,
    );
    let body = json_body(&WebhookCreated {
        webhook: view(&subscription, now_ms),
        secret,
    })?;
    // The answer carries the signing secret: it is stored for replay sealed.
    let response = claim.sealed(&state.master_key, 201, &body);
    if !state
        .store
        .insert_subscription(&subscription, claim.finish(&response))
        .await?
    {
        return Err(ApiError::new(
            ErrorCode::WebhookLimitReached,
            format!(
                "this key has {} subscriptions, the most it may have; disable and reuse one",
                webhooks::MAX_SUBSCRIPTIONS_PER_OWNER
            ),
        ));
    }
    Ok(committed(json_response(StatusCode::CREATED, body)))
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
    let owner = caller.scope();
    let events = patch.events.as_deref().map(parse_events).transpose()?;
    let description = patch
        .description
        .clone()
        .map(check_description)
        .transpose()?;
    let status = patch
        .status
        .as_deref()
        .map(|text| {
            text.parse::<SubscriptionStatus>()
                .map_err(|_| invalid("status", "must be `active` or `disabled`"))
        })
        .transpose()?;
    if let Some(url) = &patch.url {
        // Another key's subscription is not found before its new URL is resolved.
        load(&state, &owner, &id).await?;
        check_url(&state, url).await?;
    }
    let change_to = SubscriptionChange {
        url: patch.url.clone(),
        events,
        description,
        status,
    };
    change(&state, &owner, &id, &claim, |subscription, now_ms| {
        let updated = subscription.update(change_to.clone(), now_ms);
        let answer = view(&updated, now_ms);
        Ok((updated, answer))
    })
    .await
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
    let owner = caller.scope();
    let grace_secs = input
        .previous_secret_expires_in
        .unwrap_or(webhooks::DEFAULT_ROTATION_GRACE_SECS);
    if !(0..=webhooks::MAX_ROTATION_GRACE_SECS).contains(&grace_secs) {
        return Err(invalid(
            "previousSecretExpiresIn",
            "must be from 0 to 604800 seconds",
        ));
    }
    let secret = webhooks::new_secret();
    let master = state.master_key.clone();
    change(&state, &owner, &id, &claim, |subscription, now_ms| {
        let sealed = master.seal(secret.as_bytes(), &subscription.id);
        let rotated = subscription
            .rotate(sealed, grace_secs, input.force == Some(true), now_ms)
            .map_err(|_| {
                ApiError::new(
                    ErrorCode::RotationInProgress,
                    "the previous rotation's grace is still running; wait for it, or rotate with force: true",
                )
            })?;
        let answer = Rotated {
            webhook_id: rotated.id.clone(),
            secret: secret.clone(),
            previous_secret_expires_at: rotated.previous_secret_expires_at_ms.map(|at| at / 1000),
        };
        Ok((rotated, answer))
    })
    .await
}

/// Reads the subscription of `owner`, applies `apply` at the current time, and saves it with
/// the request's idempotency record (compare-and-set; read again when another writer won).
async fn change<T: serde::Serialize>(
    state: &AppState,
    owner: &str,
    id: &str,
    claim: &IdempotencyClaim,
    apply: impl Fn(&Subscription, i64) -> Result<(Subscription, T), ApiError>,
) -> Result<Response, ApiError> {
    for _ in 0..3 {
        let current = load(state, owner, id).await?;
        let now_ms = state.clock.now_ms();
        let (subscription, answer) = apply(&current, now_ms)?;
        let body = json_body(&answer)?;
        // A rotation's answer carries the new secret: stored for replay sealed.
        let response = claim.sealed(&state.master_key, 200, &body);
        if state
            .store
            .update_subscription(&subscription, Some(claim.finish(&response)))
            .await?
        {
            return Ok(committed(json_response(StatusCode::OK, body)));
        }
    }
    Err(ApiError::new(
        ErrorCode::ServiceUnavailable,
        "the subscription is changing; retry with the same Idempotency-Key",
    ))
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
            let limit = input.limit.unwrap_or(webhooks::MAX_REPLAY);
            if !(1..=webhooks::MAX_REPLAY).contains(&limit) {
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
        webhooks_app::replay(state.app(), &caller.scope(), &id, &selection, Some(&claim)).await?;
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
    let owner = caller.scope();
    let event_type = match input.event_type.as_deref() {
        None => EventType::Updated,
        Some(text) => parse_event(text, "eventType")?,
    };
    let subscription = load(&state, &owner, &input.webhook_id).await?;
    let now_ms = state.clock.now_ms();
    // A retry of a request whose answer was lost sends the same event again, not a new one.
    let event_id = claim.stable_id("evt_");
    let payload = webhooks::test_payload(&event_id, event_type, now_ms);
    let keys = subscription
        .signing_secrets(now_ms)
        .into_iter()
        .map(|sealed| {
            let secret = state.master_key.open(sealed, &subscription.id).ok()?;
            webhooks::secret_key(std::str::from_utf8(&secret).ok()?)
        })
        .collect::<Option<Vec<_>>>()
        .ok_or_else(|| ApiError::internal("a subscription's sealed secret does not open"))?;
    let keys: Vec<&[u8]> = keys.iter().map(Vec::as_slice).collect();
    let signature = webhooks::signature_header(&keys, &event_id, now_ms / 1000, &payload);
    let sent = state
        .webhooks
        .send(Outgoing {
            url: &subscription.url,
            id: &event_id,
            timestamp: now_ms / 1000,
            body: &payload,
            signature: &signature,
        })
        .await;
    let (delivered, status_code, failure) = match &sent.outcome {
        AttemptOutcome::Delivered { status } => (true, Some(*status), None),
        AttemptOutcome::Gone => (false, Some(410), Some("http_status")),
        AttemptOutcome::Failed { status, error, .. } => (
            false,
            *status,
            Some(if status.is_some() {
                "http_status"
            } else if error.starts_with("destination_blocked") {
                "destination_blocked"
            } else if error.starts_with("timeout") {
                "timeout"
            } else {
                "connection_failed"
            }),
        ),
    };
    Ok(Json(Success::new(TestCallbackResult {
        webhook_id: subscription.id,
        event_id,
        delivered,
        status_code,
        latency_ms: sent.latency_ms,
        failure: failure.map(Into::into),
    })))
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
    let owner = caller.scope();
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
    let subscription = load(&state, &owner, &id).await?;
    let deliveries: Vec<WebhookDelivery> = state
        .store
        .deliveries(&subscription.id, &owner, limit)
        .await?
        .into_iter()
        .map(delivery_view)
        .collect();
    Ok(Json(Success::new(DeliveryLog {
        webhook_id: subscription.id,
        count: deliveries.len(),
        deliveries,
    })))
}

fn delivery_view(delivery: Delivery) -> WebhookDelivery {
    WebhookDelivery {
        delivery_id: delivery.id,
        event_id: delivery.event_id,
        kind: delivery.kind,
        status: delivery.status.as_str().into(),
        attempts: delivery.attempts,
        next_attempt_at: delivery.next_attempt_at_ms.map(|ms| ms / 1000),
        last_status_code: delivery.last_status_code,
        last_error: delivery.last_error,
        last_latency_ms: delivery.last_latency_ms,
        created_at: delivery.created_at_ms / 1000,
        log: delivery
            .log
            .into_iter()
            .map(|a| DeliveryAttempt {
                attempt: a.attempt,
                started_at: a.started_at_ms / 1000,
                status_code: a.status_code,
                latency_ms: a.latency_ms,
                error: a.error,
                next_attempt_at: a.next_attempt_at_ms.map(|ms| ms / 1000),
            })
            .collect(),
    }
}

fn view(subscription: &Subscription, now_ms: i64) -> Webhook {
    Webhook {
        webhook_id: subscription.id.clone(),
        url: subscription.url.clone(),
        events: subscription
            .events
            .iter()
            .map(|e| e.as_str().to_owned())
            .collect(),
        description: subscription.description.clone(),
        status: subscription.status.as_str().into(),
        disabled_reason: subscription.disabled_reason.clone(),
        previous_secret_expires_at: subscription
            .rotation_open(now_ms)
            .then_some(subscription.previous_secret_expires_at_ms)
            .flatten()
            .map(|ms| ms / 1000),
        created_at: subscription.created_at_ms / 1000,
        updated_at: subscription.updated_at_ms / 1000,
    }
}

async fn load(state: &AppState, owner: &str, id: &str) -> Result<Subscription, ApiError> {
    Ok(webhooks_app::owned(state.app(), owner, id).await?)
}

/// Checks a URL under the mode's policy and resolves it, as a delivery would.
async fn check_url(state: &AppState, url: &str) -> Result<(), ApiError> {
    state
        .webhooks
        .check(url)
        .await
        .map(drop)
        .map_err(|problem| {
            let code = match problem {
                UrlProblem::Invalid(_) => ErrorCode::WebhookUrlInvalid,
                UrlProblem::Scheme => ErrorCode::WebhookUrlSchemeNotAllowed,
                UrlProblem::Port => ErrorCode::WebhookUrlPortNotAllowed,
                UrlProblem::Credentials => ErrorCode::WebhookUrlCredentialsNotAllowed,
                UrlProblem::Host(_) => ErrorCode::WebhookUrlHostNotAllowed,
                UrlProblem::Unresolvable(_) => ErrorCode::WebhookUrlUnresolvable,
            };
            ApiError::new(code, problem.to_string())
        })
}

fn parse_event(text: &str, field: &str) -> Result<EventType, ApiError> {
    text.parse::<EventType>().map_err(|_| {
        invalid(
            field,
            &format!(
                "unknown event type `{}`; known: {}",
                text.chars().take(64).collect::<String>(),
                EventType::VARIANTS
                    .iter()
                    .map(|e| e.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        )
    })
}

/// The event types named, each once, in the spec's order.
fn parse_events(names: &[String]) -> Result<Vec<EventType>, ApiError> {
    if names.is_empty() {
        return Err(invalid("events", "name at least one event type"));
    }
    let named = names
        .iter()
        .map(|name| parse_event(name, "events"))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(EventType::VARIANTS
        .iter()
        .copied()
        .filter(|e| named.contains(e))
        .collect())
}

fn check_description(description: Option<String>) -> Result<Option<String>, ApiError> {
    match description {
        Some(text) if text.chars().count() > webhooks::MAX_DESCRIPTION_LEN => {
            Err(invalid("description", "at most 256 characters"))
        }
        other => Ok(other),
    }
}

fn json_body<T: serde::Serialize>(data: &T) -> Result<Vec<u8>, ApiError> {
    serde_json::to_vec(&Success::new(data)).map_err(|e| ApiError::internal(&e))
}
