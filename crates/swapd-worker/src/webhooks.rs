//! The webhook dispatcher: claims due deliveries with a lease, signs the stored payload bytes
//! anew for each attempt (with every secret still valid for the subscription), sends them
//! through the SSRF-safe [`Sender`], and records each attempt with what follows from it
//! (`swapd_core::webhooks::delivery::after_attempt`). A worker killed mid-delivery loses nothing: its
//! lease runs out and another worker sends the delivery again (same event id).

use std::sync::Arc;

use futures_util::StreamExt;
use swapd_core::secrets::MasterKey;
use swapd_core::webhooks::delivery;
use swapd_core::webhooks::delivery::{
    AfterAttempt, AttemptOutcome, AttemptRecord, ClaimedDelivery, DeliveryStatus,
};
use swapd_core::webhooks::signing;
use swapd_core::webhooks::subscription::SubscriptionStatus;
use swapd_core::{Clock, Store};
use swapd_delivery::{Outgoing, Sender};

/// How many deliveries one pass claims, and how many are in flight at once.
#[derive(Debug, Clone, Copy)]
pub struct DispatchLimits {
    pub batch: u32,
    pub concurrency: usize,
}

impl Default for DispatchLimits {
    fn default() -> Self {
        Self {
            batch: 64,
            concurrency: 16,
        }
    }
}

pub struct WebhookDispatcher {
    store: Arc<dyn Store>,
    clock: Arc<dyn Clock>,
    master: MasterKey,
    sender: Sender,
    limits: DispatchLimits,
}

impl WebhookDispatcher {
    pub fn new(
        store: Arc<dyn Store>,
        clock: Arc<dyn Clock>,
        master: MasterKey,
        sender: Sender,
        limits: DispatchLimits,
    ) -> Self {
        Self {
            store,
            clock,
            master,
            sender,
            limits,
        }
    }

    /// Claims and delivers batches until none is due. Returns how many attempts were made.
    pub async fn run_due(&self) -> usize {
        let mut made = 0;
        loop {
            let now_ms = self.clock.now_ms();
            let lease = swapd_core::ids::new_id("lse_");
            let claimed = match self
                .store
                .claim_deliveries(
                    now_ms,
                    &lease,
                    now_ms + delivery::LEASE_MS,
                    self.limits.batch,
                )
                .await
            {
                Ok(claimed) => claimed,
                Err(error) => {
                    tracing::warn!(%error, "cannot claim webhook deliveries; retrying next pass");
                    return made;
                }
            };
            let count = claimed.len();
            futures_util::stream::iter(claimed)
                .for_each_concurrent(self.limits.concurrency, |delivery| self.attempt(delivery))
                .await;
            made += count;
            if count < self.limits.batch as usize {
                return made;
            }
        }
    }

    async fn attempt(&self, delivery: ClaimedDelivery) {
        let subscription = &delivery.subscription;
        let attempt = delivery.attempts + 1;
        let started_at_ms = self.clock.now_ms();
        let (outcome, latency_ms) = self.send(&delivery, started_at_ms).await;
        let finished_at_ms = self.clock.now_ms();
        let after = if subscription.status == SubscriptionStatus::Active {
            delivery::after_attempt(
                attempt as usize,
                &outcome,
                finished_at_ms,
                subscription.failing_since_ms,
                rand::random::<f64>() * 2.0 - 1.0,
            )
        } else {
            AfterAttempt {
                status: DeliveryStatus::Failed,
                next_attempt_at_ms: None,
                disable_subscription: None,
            }
        };
        let (status_code, error) = match &outcome {
            AttemptOutcome::Delivered { status } => (Some(*status), None),
            AttemptOutcome::Gone => (Some(410), Some("HTTP 410 Gone".to_owned())),
            AttemptOutcome::Failed { status, error, .. } => (*status, Some(error.clone())),
        };
        if let Some(reason) = &after.disable_subscription {
            tracing::warn!(subscription = %subscription.id, %reason, "disabling a webhook subscription");
        }
        let record = AttemptRecord {
            delivery_id: delivery.delivery_id.clone(),
            lease_token: delivery.lease_token.clone(),
            subscription_id: subscription.id.clone(),
            attempt,
            started_at_ms,
            finished_at_ms,
            status_code,
            latency_ms,
            error,
            after,
        };
        match self.store.record_attempt(&record).await {
            Ok(true) => {}
            Ok(false) => tracing::warn!(
                delivery = %delivery.delivery_id,
                "the delivery lease ran out before its attempt was recorded; another worker retries it"
            ),
            Err(error) => tracing::warn!(
                delivery = %delivery.delivery_id,
                %error,
                "cannot record a webhook attempt; the lease runs out and the delivery is retried"
            ),
        }
    }

    /// Sends the delivery signed at `started_at_ms` (nothing when its subscription was disabled
    /// since it was queued): what came of it, and how long it took.
    async fn send(&self, delivery: &ClaimedDelivery, started_at_ms: i64) -> (AttemptOutcome, i64) {
        let subscription = &delivery.subscription;
        if subscription.status != SubscriptionStatus::Active {
            // Disabled since the delivery was queued: nothing is sent.
            let outcome = AttemptOutcome::Failed {
                status: None,
                error: "subscription_disabled: the subscription is disabled".into(),
                retry_after_secs: None,
            };
            (outcome, 0)
        } else {
            match self.signature(delivery, started_at_ms) {
                Err(error) => (
                    AttemptOutcome::Failed {
                        status: None,
                        error,
                        retry_after_secs: None,
                    },
                    0,
                ),
                Ok(signature) => {
                    let sent = self
                        .sender
                        .send(Outgoing {
                            url: &subscription.url,
                            id: &delivery.event_id,
                            timestamp: started_at_ms / 1000,
                            body: &delivery.payload,
                            signature: &signature,
                        })
                        .await;
                    (sent.outcome, sent.latency_ms)
                }
            }
        }
    }

    /// The `webhook-signature` value for this attempt: every valid secret, the newest first.
    fn signature(&self, delivery: &ClaimedDelivery, now_ms: i64) -> Result<String, String> {
        let subscription = &delivery.subscription;
        let keys = subscription
            .signing_secrets(now_ms)
            .into_iter()
            .map(|sealed| {
                let secret = self
                    .master
                    .open(sealed, subscription.id.as_str())
                    .map_err(|e| format!("signing secret: {e}"))?;
                let secret = String::from_utf8(secret).map_err(|_| "signing secret: not text")?;
                signing::secret_key(&secret).ok_or_else(|| "signing secret: malformed".to_owned())
            })
            .collect::<Result<Vec<_>, String>>()?;
        let keys: Vec<&[u8]> = keys.iter().map(Vec::as_slice).collect();
        Ok(signing::signature_header(
            &keys,
            &delivery.event_id,
            now_ms / 1000,
            &delivery.payload,
        ))
    }
}
