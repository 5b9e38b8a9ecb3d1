//! Webhook subscriptions' use cases (docs/webhooks.md): finding one of the caller's, and
//! replaying past events to it, for the API and the operator console alike.

use std::time::Duration;

use swapd_core::ids;
use swapd_core::webhooks::{QueuedDelivery, ReplaySelection, Subscription, SubscriptionStatus};
use swapd_types::webhooks::{QueuedReplay, ReplayQueued};

use crate::{Answer, App, Error, IdempotencyKey};

/// The window replays to one subscription are counted in.
const REPLAY_WINDOW_MS: i64 = 60_000;

/// `owner`'s subscription `id`: unknown ids and other principals' subscriptions are the same
/// "not found".
pub async fn owned(app: App<'_>, owner: &str, id: &str) -> Result<Subscription, Error> {
    if !swapd_types::ids::is_valid_id(id, "whk_") {
        return Err(Error::WebhookNotFound);
    }
    app.store
        .subscription(id, owner)
        .await?
        .ok_or(Error::WebhookNotFound)
}

/// Queues the replay of `selection` to `owner`'s subscription `id` (202 with what was queued):
/// an active subscription only, within its replays a minute.
pub async fn replay(
    app: App<'_>,
    owner: &str,
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
            owner: owner.to_owned(),
            created_at_ms: now_ms,
        })
        .collect();
    let answer = Answer::json(
        202,
        &ReplayQueued {
            webhook_id: subscription.id.clone(),
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
