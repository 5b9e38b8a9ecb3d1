//! Webhook subscriptions' use cases (docs/webhooks.md): create, change, rotate the secret,
//! replay past events, send a test callback, read the delivery log, for the API and the
//! operator console alike. Subscriptions belong to the principal that made them.

use std::time::Duration;

use strum::VariantArray;
use swapd_core::ids::{self, WebhookId};
use swapd_core::offchain::order::EventType;
use swapd_core::owner::Owner;
use swapd_core::webhooks::delivery::{
    AttemptOutcome, Delivery, Outgoing, QueuedDelivery, ReplaySelection,
};
use swapd_core::webhooks::subscription::{Subscription, SubscriptionChange, SubscriptionStatus};
use swapd_types::webhooks::{
    DeliveryAttempt, QueuedReplay, ReplayQueued, RotateInput, Rotated, TestCallbackInput,
    TestCallbackResult, Webhook, WebhookCreated, WebhookDelivery, WebhookInput, WebhookPatch,
};

use crate::{Answer, Context, Error, IdempotencyKey};
use swapd_core::webhooks::signing;
use swapd_core::webhooks::subscription;

/// Times a change is re-read and re-applied when another writer saved the subscription first.
const CHANGE_ATTEMPTS: usize = 3;

/// `owner`'s subscriptions, oldest first (no secrets).
pub async fn list(app: Context<'_>, owner: &Owner) -> Result<Vec<Webhook>, Error> {
    let now_ms = app.clock.now_ms();
    Ok(app
        .store
        .subscriptions(owner)
        .await?
        .iter()
        .map(|s| view(s, now_ms))
        .collect())
}

/// Creates `owner`'s subscription (201 with its signing secret, which only this answer
/// carries: it is recorded sealed).
pub async fn create(
    app: Context<'_>,
    owner: &Owner,
    input: WebhookInput,
    key: &dyn IdempotencyKey,
) -> Result<Answer, Error> {
    check_url(app, &input.url).await?;
    let events = parse_events(&input.events)?;
    let description = check_description(input.description)?;
    let now_ms = app.clock.now_ms();
    let id = WebhookId::generate();
    let secret = signing::new_secret();
    let secret_sealed = app.master_key.seal(secret.as_bytes(), id.as_str());
    let subscription = Subscription::create(
        id,
        owner.clone(),
        input.url,
        events,
        description,
        secret_sealed,
        now_ms,
    );
    let answer = Answer::json(
        201,
        &WebhookCreated {
            webhook: view(&subscription, now_ms),
            secret,
        },
    )?
    .sealed(key, app.master_key);
    if !app
        .store
        .insert_subscription(&subscription, key.finish(&answer.stored))
        .await?
    {
        return Err(Error::WebhookLimitReached(format!(
            "this key has {} subscriptions, the most it may have; disable and reuse one",
            subscription::MAX_SUBSCRIPTIONS_PER_OWNER
        )));
    }
    Ok(answer.written(Some(key)))
}

/// Changes `owner`'s subscription `id`: the fields given, the others stay (200).
pub async fn update(
    app: Context<'_>,
    owner: &Owner,
    id: &str,
    patch: WebhookPatch,
    key: &dyn IdempotencyKey,
) -> Result<Answer, Error> {
    let events = patch.events.as_deref().map(parse_events).transpose()?;
    let description = patch.description.map(check_description).transpose()?;
    let status = patch
        .status
        .as_deref()
        .map(|text| {
            text.parse::<SubscriptionStatus>()
                .map_err(|_| Error::invalid("status", "must be `active` or `disabled`"))
        })
        .transpose()?;
    if let Some(url) = &patch.url {
        // Another principal's subscription is not found before its new URL is resolved.
        owned(app, owner, id).await?;
        check_url(app, url).await?;
    }
    let change_to = SubscriptionChange {
        url: patch.url,
        events,
        description,
        status,
    };
    change(app, owner, id, key, |subscription, now_ms| {
        let updated = subscription.update(change_to.clone(), now_ms);
        let answer = view(&updated, now_ms);
        Ok((updated, answer))
    })
    .await
}

/// Rotates the signing secret of `owner`'s subscription `id` (200 with the new secret, recorded
/// sealed); the current one keeps signing beside it for the grace asked.
pub async fn rotate(
    app: Context<'_>,
    owner: &Owner,
    id: &str,
    input: RotateInput,
    key: &dyn IdempotencyKey,
) -> Result<Answer, Error> {
    let grace_secs = input
        .previous_secret_expires_in
        .unwrap_or(subscription::DEFAULT_ROTATION_GRACE_SECS);
    if !(0..=subscription::MAX_ROTATION_GRACE_SECS).contains(&grace_secs) {
        return Err(Error::invalid(
            "previousSecretExpiresIn",
            "must be from 0 to 604800 seconds",
        ));
    }
    let secret = signing::new_secret();
    change(app, owner, id, key, |subscription, now_ms| {
        let sealed = app
            .master_key
            .seal(secret.as_bytes(), subscription.id.as_str());
        let rotated = subscription
            .rotate(sealed, grace_secs, input.force == Some(true), now_ms)
            .map_err(|_| Error::RotationInProgress)?;
        let answer = Rotated {
            webhook_id: rotated.id.to_string(),
            secret: secret.clone(),
            previous_secret_expires_at: rotated.previous_secret_expires_at_ms.map(|at| at / 1000),
        };
        Ok((rotated, answer))
    })
    .await
}

/// Reads `owner`'s subscription `id`, applies `apply` at the current time, and saves it with
/// the answer, recorded sealed (compare-and-set; read again when another writer won).
async fn change<T: serde::Serialize>(
    app: Context<'_>,
    owner: &Owner,
    id: &str,
    key: &dyn IdempotencyKey,
    apply: impl Fn(&Subscription, i64) -> Result<(Subscription, T), Error>,
) -> Result<Answer, Error> {
    for _ in 0..CHANGE_ATTEMPTS {
        let current = owned(app, owner, id).await?;
        let now_ms = app.clock.now_ms();
        let (subscription, data) = apply(&current, now_ms)?;
        // A rotation's answer carries the new secret: recorded sealed, as every change's.
        let answer = Answer::json(200, &data)?.sealed(key, app.master_key);
        if app
            .store
            .update_subscription(&subscription, Some(key.finish(&answer.stored)))
            .await?
        {
            return Ok(answer.written(Some(key)));
        }
    }
    Err(Error::Busy(
        "the subscription is changing; retry with the same Idempotency-Key".into(),
    ))
}

/// The window replays to one subscription are counted in.
const REPLAY_WINDOW_MS: i64 = 60_000;

/// `owner`'s subscription `id`: unknown ids and other principals' subscriptions are the same
/// "not found".
pub async fn owned(app: Context<'_>, owner: &Owner, id: &str) -> Result<Subscription, Error> {
    crate::find_owned(
        id,
        WebhookId::parse,
        || Error::WebhookNotFound,
        |id| async move { app.store.subscription(&id, owner).await },
    )
    .await
}

/// Queues the replay of `selection` to `owner`'s subscription `id` (202 with what was queued):
/// an active subscription only, within its replays a minute.
pub async fn replay(
    app: Context<'_>,
    owner: &Owner,
    id: &str,
    selection: &ReplaySelection,
    key: Option<&dyn IdempotencyKey>,
) -> Result<Answer, Error> {
    let now_ms = app.clock.now_ms();
    let subscription = owned(app, owner, id).await?;
    if subscription.status != SubscriptionStatus::Active {
        return Err(Error::WebhookDisabled);
    }
    let per_minute = app.replays_per_minute;
    let window = app
        .windows
        .consume_window(
            &format!("replay|{}", subscription.id),
            REPLAY_WINDOW_MS,
            per_minute,
        )
        .await?;
    if !window.allowed {
        let secs = ((window.resets_at_ms - now_ms).max(0) + 999) / 1000;
        return Err(Error::RateLimited {
            message: format!(
                "at most {per_minute} replays per minute for one subscription; retry in {secs} s"
            ),
            retry_after: Duration::from_secs(secs.unsigned_abs()),
        });
    }
    let events = app
        .store
        .replay_events(owner, selection, &subscription.events)
        .await?;
    if let ReplaySelection::Event(event_id) = selection
        && events.is_empty()
    {
        return Err(Error::EventNotFound(event_id.chars().take(64).collect()));
    }
    let queued: Vec<QueuedDelivery> = events
        .iter()
        .map(|(event_id, _)| QueuedDelivery {
            id: ids::new_id("dlv_"),
            subscription_id: subscription.id.clone(),
            event_id: event_id.clone(),
            owner: owner.clone(),
            created_at_ms: now_ms,
        })
        .collect();
    let answer = Answer::json(
        202,
        &ReplayQueued {
            webhook_id: subscription.id.to_string(),
            queued: queued.len(),
            deliveries: queued
                .iter()
                .zip(&events)
                .map(|(delivery, (_, event_type))| QueuedReplay {
                    delivery_id: delivery.id.clone(),
                    event_id: delivery.event_id.clone(),
                    event_type: event_type.as_str().into(),
                })
                .collect(),
        },
    )?;
    app.store
        .queue_deliveries(&queued, answer.finish(key))
        .await?;
    Ok(answer.written(key))
}

/// Sends one signed test event to `owner`'s subscription now, and says how it went (never what
/// the receiver answered). Its id comes from the Idempotency-Key: a retry sends the same event.
pub async fn test_callback(
    app: Context<'_>,
    owner: &Owner,
    input: &TestCallbackInput,
    key: &dyn IdempotencyKey,
) -> Result<TestCallbackResult, Error> {
    let event_type = match input.event_type.as_deref() {
        None => EventType::Updated,
        Some(text) => parse_event(text, "eventType")?,
    };
    let subscription = owned(app, owner, &input.webhook_id).await?;
    let now_ms = app.clock.now_ms();
    let event_id = key.stable_id("evt_");
    let payload = signing::test_payload(&event_id, event_type, now_ms);
    let keys = subscription
        .signing_secrets(now_ms)
        .into_iter()
        .map(|sealed| {
            let secret = app.master_key.open(sealed, subscription.id.as_str()).ok()?;
            signing::secret_key(std::str::from_utf8(&secret).ok()?)
        })
        .collect::<Option<Vec<_>>>()
        .ok_or_else(|| Error::internal("a subscription's sealed secret does not open"))?;
    let keys: Vec<&[u8]> = keys.iter().map(Vec::as_slice).collect();
    let signature = signing::signature_header(&keys, &event_id, now_ms / 1000, &payload);
    let sent = app
        .courier
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
    Ok(TestCallbackResult {
        webhook_id: subscription.id.into_string(),
        event_id,
        delivered,
        status_code,
        latency_ms: sent.latency_ms,
        failure: failure.map(Into::into),
    })
}

/// The newest `limit` deliveries of `owner`'s subscription `id`, with every attempt.
pub async fn deliveries(
    app: Context<'_>,
    owner: &Owner,
    id: &str,
    limit: u32,
) -> Result<(Subscription, Vec<WebhookDelivery>), Error> {
    let subscription = owned(app, owner, id).await?;
    let deliveries = app
        .store
        .deliveries(&subscription.id, owner, limit)
        .await?
        .into_iter()
        .map(delivery_view)
        .collect();
    Ok((subscription, deliveries))
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

/// A subscription as its owner sees it (no secrets).
pub fn view(subscription: &Subscription, now_ms: i64) -> Webhook {
    Webhook {
        webhook_id: subscription.id.to_string(),
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

/// Checks a URL under the mode's policy and resolves it, as a delivery would.
async fn check_url(app: Context<'_>, url: &str) -> Result<(), Error> {
    Ok(app.courier.check_url(url).await?)
}

fn parse_event(text: &str, field: &str) -> Result<EventType, Error> {
    text.parse::<EventType>().map_err(|_| {
        Error::invalid(
            field,
            format!(
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
fn parse_events(names: &[String]) -> Result<Vec<EventType>, Error> {
    if names.is_empty() {
        return Err(Error::invalid("events", "name at least one event type"));
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

fn check_description(description: Option<String>) -> Result<Option<String>, Error> {
    match description {
        Some(text) if text.chars().count() > subscription::MAX_DESCRIPTION_LEN => {
            Err(Error::invalid("description", "at most 256 characters"))
        }
        other => Ok(other),
    }
}
