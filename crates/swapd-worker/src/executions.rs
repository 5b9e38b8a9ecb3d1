//! The onchain execution tracker: looks at every due execution plan, expires the ones nothing
//! was reported for in time, and asks the provider where reported ones stand. What changes is
//! decided by `swapd_core::onchain` (statuses only move forward); saves are compare-and-set, so
//! trackers on several nodes cannot overwrite each other or a report arriving meanwhile.

use std::sync::Arc;

use swapd_core::market::Market;
use swapd_core::onchain::ExecutionPlan;
use swapd_core::provider::TrackRequest;
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
        let due = match self
            .store
            .due_execution_plans(self.clock.now_ms(), BATCH)
            .await
        {
            Ok(due) => due,
            Err(error) => {
                tracing::warn!(%error, "cannot list due executions; retrying next pass");
                return;
            }
        };
        for plan in due {
            let id = plan.id.clone();
            if let Err(error) = self.step(plan).await {
                tracing::warn!(plan = %id, %error, "execution step failed; retrying later");
            }
        }
    }

    async fn step(&self, mut plan: ExecutionPlan) -> Result<(), swapd_core::StoreError> {
        let now_ms = self.clock.now_ms();
        let next_check_ms = now_ms + self.poll_interval_ms;
        if !plan.expire_if_due(now_ms) {
            let Some(report) = plan.report.clone() else {
                // Awaiting its report and not expired yet: look again when it would expire.
                plan.reschedule(plan.expires_at_ms);
                return self.save(&plan).await;
            };
            let reported_at_ms = plan.reported_at_ms.unwrap_or(plan.updated_at_ms);
            let tracked = match self.market.provider(&plan.provider) {
                None => Err(format!("provider {} is not configured", plan.provider)),
                Some(provider) => tokio::time::timeout(
                    swapd_core::provider::TRACK_DEADLINE,
                    provider.track_execution(TrackRequest {
                        plan: &plan,
                        report: &report,
                        reported_at_ms,
                        now_ms,
                    }),
                )
                .await
                .map_err(|_| "no answer within the provider deadline".to_owned())
                .and_then(|answer| answer.map_err(|e| e.to_string())),
            };
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
                Err(reason) => {
                    tracing::warn!(plan = %plan.id, %reason, "cannot track the execution");
                    plan.reschedule(now_ms + BACKOFF_POLLS * self.poll_interval_ms);
                }
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
