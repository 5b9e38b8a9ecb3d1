//! Background work. Every loop runs under one cancellation token and finishes its current step
//! before the process exits. Jobs are safe to run on several nodes at once: each step is a
//! single atomic store call.

mod executions;
pub mod mail;
mod market_intel;
mod orders;
mod webhooks;

use std::sync::Arc;
use std::time::Duration;

pub use executions::ExecutionTracker;
pub use mail::{FileMailer, Notifier, SmtpMailer};
pub use market_intel::JobRunner;
pub use orders::OrderEngine;
pub use webhooks::{DispatchLimits, WebhookDispatcher};

use swapd_core::{Clock, Store};
use tokio_util::sync::CancellationToken;

/// How often expired rows are swept.
pub const JANITOR_INTERVAL: Duration = Duration::from_secs(60);

pub struct Worker {
    store: Arc<dyn Store>,
    clock: Arc<dyn Clock>,
    janitor_interval: Duration,
    orders: Option<OrderEngine>,
    notifier: Option<Notifier>,
    executions: Option<ExecutionTracker>,
    webhooks: Option<(WebhookDispatcher, Duration)>,
    jobs: Option<(JobRunner, Duration)>,
}

impl Worker {
    pub fn new(store: Arc<dyn Store>, clock: Arc<dyn Clock>) -> Self {
        Self {
            store,
            clock,
            janitor_interval: JANITOR_INTERVAL,
            orders: None,
            notifier: None,
            executions: None,
            webhooks: None,
            jobs: None,
        }
    }

    /// Also sends status e-mails, on the order engine's pass.
    pub fn with_notifier(mut self, notifier: Notifier) -> Self {
        self.notifier = Some(notifier);
        self
    }

    /// Also runs the order lifecycle, one pass per poll interval of its rules.
    pub fn with_orders(mut self, engine: OrderEngine) -> Self {
        self.orders = Some(engine);
        self
    }

    /// Also tracks onchain executions, on the order engine's pass.
    pub fn with_executions(mut self, tracker: ExecutionTracker) -> Self {
        self.executions = Some(tracker);
        self
    }

    /// Also delivers webhooks, one pass per `interval`.
    pub fn with_webhooks(mut self, dispatcher: WebhookDispatcher, interval: Duration) -> Self {
        self.webhooks = Some((dispatcher, interval));
        self
    }

    /// Also runs market-intel jobs, one pass per `interval`.
    pub fn with_jobs(mut self, runner: JobRunner, interval: Duration) -> Self {
        self.jobs = Some((runner, interval));
        self
    }

    pub fn with_janitor_interval(mut self, interval: Duration) -> Self {
        self.janitor_interval = interval;
        self
    }

    /// Runs every job until `shutdown` is cancelled. Webhook deliveries and market-intel jobs
    /// run in loops of their own, so a slow receiver or a long analysis never holds up the
    /// order lifecycle.
    pub async fn run(self, shutdown: CancellationToken) {
        let webhooks = async {
            if let Some((dispatcher, interval)) = &self.webhooks {
                repeat("webhooks", *interval, &shutdown, || dispatcher.run_due()).await;
            }
        };
        let intel = async {
            if let Some((runner, interval)) = &self.jobs {
                repeat("market_intel", *interval, &shutdown, || runner.run_due()).await;
            }
        };
        tokio::join!(self.run_jobs(shutdown.clone()), webhooks, intel);
    }

    async fn run_jobs(&self, shutdown: CancellationToken) {
        tracing::info!("worker started");
        let mut tick = tokio::time::interval(self.janitor_interval);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let order_interval = self
            .orders
            .as_ref()
            .map_or(Duration::from_secs(3600), |engine| {
                Duration::from_millis(engine.rules().poll_interval_ms.max(10) as u64)
            });
        let mut order_tick = tokio::time::interval(order_interval);
        order_tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);

        loop {
            tokio::select! {
                () = shutdown.cancelled() => break,
                _ = tick.tick() => supervised("janitor", self.sweep_expired()).await,

                _ = order_tick.tick(), if self.orders.is_some() || self.notifier.is_some() || self.executions.is_some() => {
                    if let Some(engine) = &self.orders {
                        supervised("orders", engine.run_due()).await;
                    }
                    if let Some(tracker) = &self.executions {
                        supervised("executions", tracker.run_due()).await;
                    }
                    if let Some(notifier) = &self.notifier {
                        supervised("notifier", notifier.run_pending()).await;
                    }
                }
            }
        }
        tracing::info!("worker stopped");
    }

    /// One janitor pass: deletes rows whose lifetime has ended. A failure is logged and retried
    /// on the next tick; nothing depends on the sweep happening on time.
    pub async fn sweep_expired(&self) {
        match self.store.purge_expired(self.clock.now_ms()).await {
            Ok(0) => {}
            Ok(purged) => tracing::debug!(purged, "janitor swept expired rows"),
            Err(error) => tracing::warn!(%error, "janitor sweep failed; retrying next tick"),
        }
    }
}

/// Runs `pass` every `interval` until `shutdown` is cancelled; a pass in progress finishes.
async fn repeat<F, Fut>(
    name: &'static str,
    interval: Duration,
    shutdown: &CancellationToken,
    pass: F,
) where
    F: Fn() -> Fut,
    Fut: std::future::Future,
{
    let mut tick = tokio::time::interval(interval);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            () = shutdown.cancelled() => break,
            _ = tick.tick() => supervised(name, pass()).await,
        }
    }
}

/// The count of passes that panicked, by loop, on `/metrics`.
pub const PASS_PANICS: &str = "worker_pass_panics_total";

/// Runs one pass of the loop `name` so that a panic in it (a bug) is logged and counted instead
/// of stopping every loop of the worker; the loop runs the pass again on its next tick.
async fn supervised<T>(name: &'static str, pass: impl std::future::Future<Output = T>) {
    use futures_util::FutureExt;
    if let Err(panic) = std::panic::AssertUnwindSafe(pass).catch_unwind().await {
        let reason = panic
            .downcast_ref::<&str>()
            .map(|s| (*s).to_owned())
            .or_else(|| panic.downcast_ref::<String>().cloned())
            .unwrap_or_default();
        tracing::error!(
            worker_loop = name,
            %reason,
            "a worker pass panicked; the loop runs it again on its next tick"
        );
        metrics::counter!(PASS_PANICS, "loop" => name).increment(1);
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    #[tokio::test(start_paused = true)]
    async fn a_pass_that_panics_is_run_again_on_the_next_tick() {
        let passes = AtomicUsize::new(0);
        let shutdown = CancellationToken::new();
        repeat("test", Duration::from_secs(1), &shutdown, || async {
            let pass = passes.fetch_add(1, Ordering::SeqCst) + 1;
            if pass == 3 {
                shutdown.cancel();
            }
            panic!("pass {pass} fails");
        })
        .await;
        assert_eq!(passes.load(Ordering::SeqCst), 3);
    }
}
