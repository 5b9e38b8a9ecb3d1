//! Background work. Every loop runs under one cancellation token and finishes its current step
//! before the process exits. Several worker nodes split the work: each loop leases what it
//! handles (orders, execution plans, e-mails, deliveries, market-intel jobs) for
//! [`LEASE_MS`], so one upstream call is made by one node; saves stay compare-and-set, and a
//! node that dies leaves its work to the others when its leases end.

mod executions;
pub mod mail;
mod market_intel;
mod orders;
mod reconcile;
mod webhooks;

use std::sync::Arc;
use std::time::Duration;

pub use executions::ExecutionTracker;
pub use mail::{FileMailer, Notifier, SmtpMailer};
pub use market_intel::JobRunner;
pub use orders::OrderEngine;
pub use reconcile::Reconciler;
pub use webhooks::{DispatchLimits, WebhookDispatcher};

use swapd_core::health::WorkerHealth;
use swapd_core::wakeup::{Bells, Work};
use swapd_core::{Clock, Store};
use tokio_util::sync::CancellationToken;

/// How long a claimed order, execution plan or e-mail stays with the node that claimed it: more
/// than one step takes (a desk call, or one look at an execution, is at most [`STEP_MS`]).
pub const LEASE_MS: i64 = 60_000;

/// The longest one step under a lease takes (a desk call, one look at an execution).
const STEP_MS: i64 = 30_000;

/// Whether a step may start at `now_ms` under a lease that ends at `lease_until_ms`: only while
/// the whole step fits in what is left of it, so a node never acts on work after its lease
/// ended (one cut off from the database, or slow, leaves the rest to the next claim). Its saves
/// are fenced by the store besides (a claim moves the version).
fn lease_allows_a_step(now_ms: i64, lease_until_ms: i64) -> bool {
    now_ms.saturating_add(STEP_MS) <= lease_until_ms
}

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
    reconciler: Option<(Reconciler, Duration)>,
    health: WorkerHealth,
    event_retention: Option<Duration>,
    outcome_retention: Option<Duration>,
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
            reconciler: None,
            health: WorkerHealth::default(),
            event_retention: None,
            outcome_retention: None,
        }
    }

    /// The janitor also purges swap outcomes older than `window` (docs/market.md).
    pub fn with_outcome_retention(mut self, window: Duration) -> Self {
        self.outcome_retention = Some(window);
        self
    }

    /// The janitor also purges events older than `retention`, with their deliveries.
    pub fn with_event_retention(mut self, retention: Duration) -> Self {
        self.event_retention = Some(retention);
        self
    }

    /// Reports each loop's passes to `health` (read by readiness).
    pub fn with_health(mut self, health: WorkerHealth) -> Self {
        self.health = health;
        self
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

    /// Also reconciles the fee ledger, one pass per `interval`.
    pub fn with_reconciler(mut self, reconciler: Reconciler, interval: Duration) -> Self {
        self.reconciler = Some((reconciler, interval));
        self
    }

    pub fn with_janitor_interval(mut self, interval: Duration) -> Self {
        self.janitor_interval = interval;
        self
    }

    /// Runs every loop until `shutdown` is cancelled. Each loop is its own supervised task: a
    /// slow receiver, a long analysis or a failing pass in one never holds up another.
    pub async fn run(self, shutdown: CancellationToken) {
        tracing::info!("worker started");
        let order_interval = self
            .orders
            .as_ref()
            .map_or(Duration::from_secs(1), |engine| {
                Duration::from_millis(engine.rules().poll_interval_ms.max(10) as u64)
            });
        let bells = self.store.bells();
        let each = |name, interval, work: Option<Work>| Loop {
            name,
            interval,
            shutdown: &shutdown,
            health: &self.health,
            bell: work.map(|work| (bells.as_ref(), work)),
        };
        let listener = self.store.listen_for_work();
        tokio::join!(
            async {
                // Other nodes' commits ring this process's bells (PostgreSQL).
                if let Some(listener) = listener {
                    tokio::select! {
                        () = shutdown.cancelled() => {}
                        () = listener => {}
                    }
                }
            },
            async {
                each("janitor", self.janitor_interval, None)
                    .repeat(|| self.sweep_expired())
                    .await;
            },
            async {
                if let Some(engine) = &self.orders {
                    each("orders", order_interval, Some(Work::Orders))
                        .repeat(|| engine.run_due())
                        .await;
                }
            },
            async {
                if let Some(tracker) = &self.executions {
                    each("executions", order_interval, Some(Work::Executions))
                        .repeat(|| tracker.run_due())
                        .await;
                }
            },
            async {
                if let Some(notifier) = &self.notifier {
                    each("notifier", order_interval, Some(Work::Notifications))
                        .repeat(|| notifier.run_pending())
                        .await;
                }
            },
            async {
                if let Some((dispatcher, interval)) = &self.webhooks {
                    each("webhooks", *interval, Some(Work::Deliveries))
                        .repeat(|| dispatcher.run_due())
                        .await;
                }
            },
            async {
                if let Some((reconciler, interval)) = &self.reconciler {
                    each("fee_reconciliation", *interval, None)
                        .repeat(|| reconciler.run())
                        .await;
                }
            },
            async {
                if let Some((runner, interval)) = &self.jobs {
                    each("market_intel", *interval, Some(Work::Jobs))
                        .repeat(|| runner.run_due())
                        .await;
                }
            },
        );
        tracing::info!("worker stopped");
    }

    /// One janitor pass: deletes rows whose lifetime has ended, and events past their
    /// retention, in batches of [`PURGE_BATCH`] rows (each a short write, so that requests
    /// queued for the writer wait for one batch at most), at most [`PURGE_BATCHES`] of each a
    /// pass. A failure is logged and retried on the next tick; nothing depends on the sweep
    /// happening on time.
    pub async fn sweep_expired(&self) {
        let now_ms = self.clock.now_ms();
        purge_in_batches("expired rows", || {
            self.store.purge_expired(now_ms, PURGE_BATCH)
        })
        .await;
        let before =
            |retention: Duration| now_ms - i64::try_from(retention.as_millis()).unwrap_or(i64::MAX);
        if let Some(retention) = self.event_retention {
            let before_ms = before(retention);
            purge_in_batches("old events", || {
                self.store.purge_event_history(before_ms, PURGE_BATCH)
            })
            .await;
        }
        if let Some(window) = self.outcome_retention {
            let before_ms = before(window);
            purge_in_batches("old swap outcomes", || {
                self.store.purge_outcomes(before_ms, PURGE_BATCH)
            })
            .await;
        }
    }
}

/// Runs `purge` (one batch of [`PURGE_BATCH`] rows a call) until a batch comes back short, at
/// most [`PURGE_BATCHES`] times; a failure waits for the next tick.
async fn purge_in_batches<F, P>(what: &str, purge: P)
where
    P: Fn() -> F,
    F: std::future::Future<Output = Result<u64, swapd_core::StoreError>>,
{
    for _ in 0..PURGE_BATCHES {
        match purge().await {
            Ok(purged) if purged < u64::from(PURGE_BATCH) => break,
            Ok(_) => {}
            Err(error) => {
                tracing::warn!(%error, "purging {what} failed; retrying next tick");
                break;
            }
        }
    }
}

/// Rows purged per batch, and batches of each kind per janitor pass.
const PURGE_BATCH: u32 = 1_000;
const PURGE_BATCHES: u32 = 20;

/// The longest a failing loop waits before trying again.
const MAX_BACKOFF: Duration = Duration::from_secs(60);

/// One background loop.
struct Loop<'a> {
    name: &'static str,
    interval: Duration,
    shutdown: &'a CancellationToken,
    health: &'a WorkerHealth,
    /// The bell that wakes it before its interval ends: a commit made work for it.
    bell: Option<(&'a Bells, Work)>,
}

impl Loop<'_> {
    /// Runs `pass` now and then `interval` after each pass, or sooner when its bell rings,
    /// until `shutdown` is cancelled (a pass in progress finishes). After a pass that panicked
    /// it waits twice as long each time (at most a minute, bells or not), and reports to health
    /// how many failed in a row.
    async fn repeat<F, Fut>(&self, pass: F)
    where
        F: Fn() -> Fut,
        Fut: std::future::Future,
    {
        let mut wait = Duration::ZERO;
        let mut failing = false;
        loop {
            let rung = async {
                match self.bell {
                    Some((bells, work)) if !failing => bells.rung(work).await,
                    _ => std::future::pending().await,
                }
            };
            tokio::select! {
                () = self.shutdown.cancelled() => break,
                () = tokio::time::sleep(wait) => {}
                () = rung => {}
            }
            failing = !supervised(self.name, pass()).await;
            wait = if failing {
                let failures = self.health.failed(self.name);
                backoff(self.interval, failures)
            } else {
                self.health.passed(self.name);
                self.interval
            };
        }
    }
}

/// The wait after `failures` failed passes in a row: the interval doubled for each, at most
/// [`MAX_BACKOFF`] (never less than the interval).
fn backoff(interval: Duration, failures: u32) -> Duration {
    interval
        .saturating_mul(2u32.saturating_pow(failures.min(16)))
        .min(MAX_BACKOFF)
        .max(interval)
}

/// The count of passes that panicked, by loop, on `/metrics`.
pub const PASS_PANICS: &str = "worker_pass_panics_total";

/// Runs one pass of the loop `name` so that a panic in it (a bug) is logged and counted instead
/// of stopping every loop of the worker. `false` when it panicked.
async fn supervised<T>(name: &'static str, pass: impl std::future::Future<Output = T>) -> bool {
    use futures_util::FutureExt;
    let Err(panic) = std::panic::AssertUnwindSafe(pass).catch_unwind().await else {
        return true;
    };
    let reason = panic
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_default();
    tracing::error!(
        worker_loop = name,
        %reason,
        "a worker pass panicked; the loop runs it again after a backoff"
    );
    metrics::counter!(PASS_PANICS, "loop" => name).increment(1);
    false
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    #[test]
    fn a_step_starts_only_while_it_fits_in_its_lease() {
        let claimed_at = 1_000_000;
        let lease_until = claimed_at + LEASE_MS;
        assert!(lease_allows_a_step(claimed_at, lease_until));
        assert!(lease_allows_a_step(lease_until - STEP_MS, lease_until));
        assert!(!lease_allows_a_step(lease_until - STEP_MS + 1, lease_until));
        assert!(!lease_allows_a_step(lease_until + 90_000, lease_until));
    }

    #[tokio::test(start_paused = true)]
    async fn a_pass_that_panics_is_run_again_after_a_growing_backoff_and_reported() {
        let passes = AtomicUsize::new(0);
        let started = tokio::time::Instant::now();
        let times = std::sync::Mutex::new(Vec::new());
        let shutdown = CancellationToken::new();
        let health = WorkerHealth::default();
        let each = Loop {
            name: "test",
            interval: Duration::from_secs(1),
            shutdown: &shutdown,
            health: &health,
            bell: None,
        };
        each.repeat(|| async {
            let pass = passes.fetch_add(1, Ordering::SeqCst) + 1;
            times.lock().unwrap().push(started.elapsed().as_secs());
            match pass {
                1..=4 => panic!("pass {pass} fails"),
                5 => assert_eq!(health.failing(), vec![("test", 4)]),
                _ => shutdown.cancel(),
            }
        })
        .await;
        assert_eq!(passes.load(Ordering::SeqCst), 6);
        // Now, then 2, 4, 8 and 16 s after each failure, then the interval again.
        assert_eq!(*times.lock().unwrap(), vec![0, 2, 6, 14, 30, 31]);
        assert!(health.failing().is_empty(), "a pass succeeded");
    }

    #[tokio::test(start_paused = true)]
    async fn a_ring_runs_the_pass_before_its_interval_ends() {
        let passes = AtomicUsize::new(0);
        let started = tokio::time::Instant::now();
        let shutdown = CancellationToken::new();
        let health = WorkerHealth::default();
        let bells = Bells::default();
        let each = Loop {
            name: "test",
            interval: Duration::from_secs(60),
            shutdown: &shutdown,
            health: &health,
            bell: Some((&bells, Work::Deliveries)),
        };
        let ringer = async {
            tokio::time::sleep(Duration::from_secs(5)).await;
            bells.ring(Work::Orders); // another loop's bell: no pass
            tokio::time::sleep(Duration::from_secs(5)).await;
            bells.ring(Work::Deliveries);
            tokio::time::sleep(Duration::from_secs(1)).await;
            let woken = passes.load(Ordering::SeqCst);
            shutdown.cancel();
            woken
        };
        let (woken, ()) = tokio::join!(
            ringer,
            each.repeat(|| async {
                passes.fetch_add(1, Ordering::SeqCst);
            })
        );
        // The first pass at once, the second at the ring (10 s), not at 60 s.
        assert_eq!(woken, 2);
        assert!(started.elapsed() < Duration::from_secs(60));
    }

    #[test]
    fn backoff_doubles_up_to_a_minute() {
        let second = Duration::from_secs(1);
        assert_eq!(backoff(second, 1), 2 * second);
        assert_eq!(backoff(second, 5), 32 * second);
        assert_eq!(backoff(second, 6), MAX_BACKOFF);
        assert_eq!(backoff(second, u32::MAX), MAX_BACKOFF);
        assert_eq!(
            backoff(Duration::from_secs(120), 1),
            Duration::from_secs(120)
        );
    }
}
