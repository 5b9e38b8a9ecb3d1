//! The onchain execution tracker: looks at every due execution plan, expires the ones nothing
//! was reported for in time, and asks the provider where reported ones stand. What changes is
//! decided by `swapd_core::onchain::plan` (statuses only move forward); saves are compare-and-set, so
//! trackers on several nodes cannot overwrite each other or a report arriving meanwhile.

use std::sync::Arc;

use swapd_core::market::Market;
use swapd_core::market::provider::ProviderError;
use swapd_core::onchain::plan::ExecutionPlan;
use swapd_core::onchain::router::{TRACK_DEADLINE, TrackRequest};
use swapd_core::{Clock, Store};

/// Plans looked at per pass.
const BATCH: u32 = 100;
/// After a provider failure, wait this many poll intervals before asking again.
const BACKOFF_POLLS: i64 = 5;

pub struct ExecutionTracker {
    store: Arc<dyn Store>,
    market: Arc<dyn Market>,
    clock: Arc<dyn Clock>,
    poll_interval_ms: i64,
}

impl ExecutionTracker {
    pub fn new(
        store: Arc<dyn Store>,
        market: Arc<dyn Market>,
        clock: Arc<dyn Clock>,
        poll_interval_ms: i64,
    ) -> Self {
        Self {
            store,
            market,
            clock,
            poll_interval_ms,
        }
    }

    /// One pass over the due plans. Failures are logged; the plan is looked at again later.
    pub async fn run_due(&self) {
        let now_ms = self.clock.now_ms();
        let lease_until_ms = now_ms + crate::LEASE_MS;
        let due = match self
            .store
            .claim_due_execution_plans(now_ms, lease_until_ms, BATCH)
            .await
        {
            Ok(due) => due,
            Err(error) => {
                tracing::warn!(%error, "cannot list due executions; retrying next pass");
                return;
            }
        };
        for plan in due {
            if !crate::lease_allows_a_step(self.clock.now_ms(), lease_until_ms) {
                tracing::debug!(
                    "the executions' lease is ending; the rest are left to their next claim"
                );
                return;
            }
            let id = plan.id.clone();
            if let Err(error) = self.step(plan).await {
                tracing::warn!(plan = %id, %error, "execution step failed; retrying later");
            }
        }
    }

    async fn step(&self, mut plan: ExecutionPlan) -> Result<(), swapd_core::StoreError> {
        let now_ms = self.clock.now_ms();
        let next_check_ms = now_ms + self.poll_interval_ms;
        let retry_ms = now_ms + BACKOFF_POLLS * self.poll_interval_ms;
        if plan.expire_if_due(now_ms) {
            return self.save(&plan).await;
        }
        let Some(report) = plan.report.clone() else {
            // Awaiting its report and not expired yet: look again when it would expire.
            plan.reschedule(plan.expires_at_ms);
            return self.save(&plan).await;
        };
        let Some(router) = self.market.router(&plan.provider) else {
            tracing::warn!(plan = %plan.id, provider = %plan.provider, "the plan's router is not configured");
            plan.reschedule(retry_ms);
            return self.save(&plan).await;
        };
        if let Some(signatures) = plan.signatures_to_relay() {
            let relayed = within_deadline(router.relay_signatures(&plan, signatures)).await;
            match relayed {
                Ok(state) => plan.relayed(state, now_ms),
                Err(ProviderError::Unavailable(reason)) => {
                    tracing::warn!(plan = %plan.id, %reason, "cannot relay the signatures yet");
                    plan.reschedule(retry_ms);
                    return self.save(&plan).await;
                }
                Err(refusal) => {
                    tracing::warn!(plan = %plan.id, reason = %refusal, "the relayer refused the signatures");
                    plan.relay_refused(now_ms);
                    return self.save(&plan).await;
                }
            }
        }
        let reported_at_ms = plan.reported_at_ms.unwrap_or(plan.updated_at_ms);
        let tracked = within_deadline(router.track_execution(TrackRequest {
            plan: &plan,
            report: &report,
            reported_at_ms,
            now_ms,
        }))
        .await;
        match tracked {
            Ok(tracked) => {
                if plan.apply_tracked(tracked, now_ms, next_check_ms) {
                    tracing::info!(
                        plan = %plan.id,
                        status = plan.status.as_str(),
                        substatus = plan.substatus.as_deref().unwrap_or(""),
                        "execution advanced"
                    );
                }
            }
            Err(error) => {
                tracing::warn!(plan = %plan.id, reason = %error, "cannot track the execution");
                plan.reschedule(retry_ms);
            }
        }
        self.save(&plan).await
    }

    /// A lost compare-and-set means another writer moved the plan: the next pass sees theirs.
    async fn save(&self, plan: &ExecutionPlan) -> Result<(), swapd_core::StoreError> {
        if !self.store.update_execution_plan(plan, None).await? {
            tracing::debug!(plan = %plan.id, "execution changed meanwhile; skipped");
        }
        Ok(())
    }
}

/// A provider call bounded by [`TRACK_DEADLINE`]; running out of time is "unavailable".
async fn within_deadline<T>(
    call: impl Future<Output = Result<T, ProviderError>>,
) -> Result<T, ProviderError> {
    tokio::time::timeout(TRACK_DEADLINE, call)
        .await
        .unwrap_or_else(|_| {
            Err(ProviderError::Unavailable(
                "no answer within the tracking deadline".into(),
            ))
        })
}
