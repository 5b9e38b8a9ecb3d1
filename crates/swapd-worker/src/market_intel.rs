//! The market-intel job runner: claims queued jobs (and jobs whose worker died) with a lease,
//! runs each under a time bound, and finishes it only while it still holds the lease, so a job
//! never completes twice. The analyses ask the providers through the aggregator and read the
//! recorded rates; the arithmetic is `swapd_core::market_intel`'s.

use std::sync::Arc;
use std::time::Duration;

use swapd_core::amount::Amount;
use swapd_core::market::Market;
use swapd_core::market::currencies::{CurrencyDef, currency};
use swapd_core::market::provider::{ProviderError, QuoteRequest};
use swapd_core::market::routes::{self, Candidate};
use swapd_core::market::{Direction, ExecutionType, RateType, pricing};
use swapd_core::market_intel::{
    self, Job, JobOutcome, JobPayment, JobPaymentState, JobRequest, LEASE_MS, MAX_ATTEMPTS,
    RUN_TIMEOUT_MS, SettleFailure, UptoSettler,
};
use swapd_core::{Clock, Store};
use swapd_types::market_intel::{
    DepthPoint, DepthQuote, JobError, JobResult, PairDepth, RateHistory, RouteScan, ScannedRoute,
};

/// Jobs claimed per pass.
const BATCH: u32 = 2;
/// The most observations a rate history reads.
const MAX_OBSERVATIONS: u32 = 50_000;

pub struct JobRunner {
    store: Arc<dyn Store>,
    market: Arc<dyn Market>,
    clock: Arc<dyn Clock>,
    run_timeout: Duration,
    /// Settles jobs paid with `upto`; without it their payments stay authorized.
    settler: Option<Arc<dyn UptoSettler>>,
}

impl JobRunner {
    pub fn new(store: Arc<dyn Store>, market: Arc<dyn Market>, clock: Arc<dyn Clock>) -> Self {
        Self {
            store,
            market,
            clock,
            run_timeout: Duration::from_millis(RUN_TIMEOUT_MS),
            settler: None,
        }
    }

    /// Settles the jobs paid with `upto` through `settler` when they end.
    pub fn with_settler(mut self, settler: Arc<dyn UptoSettler>) -> Self {
        self.settler = Some(settler);
        self
    }

    /// Bounds each run by `timeout` instead of the default.
    pub fn with_run_timeout(mut self, timeout: Duration) -> Self {
        self.run_timeout = timeout;
        self
    }

    /// Claims and runs jobs until none is waiting. Returns how many were run.
    pub async fn run_due(&self) -> usize {
        let mut ran = 0;
        loop {
            let now_ms = self.clock.now_ms();
            let lease = swapd_core::ids::new_id("lse_");
            let jobs = match self
                .store
                .claim_jobs(now_ms, &lease, now_ms + LEASE_MS, BATCH)
                .await
            {
                Ok(jobs) => jobs,
                Err(error) => {
                    tracing::warn!(%error, "cannot claim market-intel jobs; retrying next pass");
                    return ran;
                }
            };
            if jobs.is_empty() {
                return ran;
            }
            for job in jobs {
                self.run(job, &lease).await;
                ran += 1;
            }
        }
    }

    /// Runs one claimed job and finishes it under `lease`.
    pub async fn run(&self, job: Job, lease: &str) {
        let outcome = if job.attempts > MAX_ATTEMPTS {
            JobOutcome::Failed(error(
                "attempts_exhausted",
                &format!("the job was started {MAX_ATTEMPTS} times and no run finished it"),
            ))
        } else {
            match tokio::time::timeout(self.run_timeout, self.execute(&job.request)).await {
                Ok(Ok(result)) => JobOutcome::Succeeded(result),
                Ok(Err(failure)) => JobOutcome::Failed(failure),
                Err(_) => JobOutcome::Failed(error(
                    "timeout",
                    &format!(
                        "the job ran longer than {} ms",
                        self.run_timeout.as_millis()
                    ),
                )),
            }
        };
        let payment = match self.charge(&job, &outcome).await {
            Ok(payment) => payment,
            Err(failure) => {
                // Nothing recorded: the lease runs out and the job runs again, settling then.
                tracing::warn!(job = %job.id, %failure, "cannot settle the job's payment; it runs again after its lease");
                return;
            }
        };
        match self
            .store
            .finish_job(
                &job.id,
                lease,
                &outcome,
                payment.as_ref(),
                self.clock.now_ms(),
            )
            .await
        {
            Ok(true) => {
                tracing::info!(job = %job.id, kind = job.request.kind(), "market-intel job finished")
            }
            Ok(false) => {
                tracing::warn!(job = %job.id, "the job's lease ran out before it finished; another worker runs it")
            }
            Err(failure) => {
                tracing::warn!(job = %job.id, %failure, "cannot finish a job; its lease runs out and it is run again")
            }
        }
    }

    /// What becomes of a job's `upto` payment as it ends with `outcome`: settled for the units
    /// the job used when it succeeded, released when it failed; `Err` when the facilitator
    /// could not be asked (the job is not finished, so a later run settles it).
    async fn charge(&self, job: &Job, outcome: &JobOutcome) -> Result<Option<JobPayment>, String> {
        let Some(payment) = job.payment.as_ref() else {
            return Ok(None);
        };
        if payment.state != JobPaymentState::Authorized {
            return Ok(Some(payment.clone()));
        }
        let state = match outcome {
            JobOutcome::Failed(_) => JobPaymentState::Released,
            JobOutcome::Succeeded(result) => {
                let Some(settler) = &self.settler else {
                    return Err("no facilitator to settle upto payments".into());
                };
                let amount = payment.amount_of(market_intel::units_used(result));
                match settler.settle(payment, &amount, job.attempts > 1).await {
                    Ok(transaction) => JobPaymentState::Settled {
                        amount,
                        transaction,
                    },
                    Err(SettleFailure::Refused(reason)) => JobPaymentState::Refused { reason },
                    Err(SettleFailure::Unavailable(why)) => return Err(why),
                }
            }
        };
        Ok(Some(JobPayment {
            state,
            ..payment.clone()
        }))
    }

    async fn execute(&self, request: &JobRequest) -> Result<JobResult, JobError> {
        let (from, to) = request.pair();
        let (from, to) = (stored(from)?, stored(to)?);
        match request {
            JobRequest::PairDepth { steps, .. } => self.pair_depth(from, to, *steps).await,
            JobRequest::RouteScan {
                amount, direction, ..
            } => self.route_scan(from, to, amount, *direction).await,
            JobRequest::RateHistory {
                window_secs,
                buckets,
                ..
            } => self.rate_history(from, to, *window_secs, *buckets).await,
        }
    }

    async fn quote(
        &self,
        from: &'static CurrencyDef,
        to: &'static CurrencyDef,
        amount: Amount,
        direction: Direction,
        rate_type: RateType,
    ) -> Vec<Candidate> {
        let request = QuoteRequest::without_wallet(
            from,
            to,
            amount,
            direction,
            rate_type,
            self.clock.now_ms(),
        );
        let mut candidates = self.market.quote_all(&request, &|_| true).await;
        routes::rank(&mut candidates, &routes::Ranking::by_quote(direction));
        candidates
    }

    async fn pair_depth(
        &self,
        from: &'static CurrencyDef,
        to: &'static CurrencyDef,
        steps: u32,
    ) -> Result<JobResult, JobError> {
        let (min, max) = self.pair_limits(from, to).await?;
        let top = max.unwrap_or_else(|| market_intel::open_ended_top(min));
        let amounts = market_intel::ladder(min, top, steps, from.precision);
        let mut ladder = Vec::with_capacity(amounts.len());
        let mut reference: [Option<Amount>; 2] = [None, None];
        for amount in amounts {
            let mut point = DepthPoint {
                amount: amount.to_string(),
                fixed: None,
                float: None,
            };
            for (slot, rate_type) in [RateType::Fixed, RateType::Float].into_iter().enumerate() {
                let candidates = self
                    .quote(from, to, amount, Direction::From, rate_type)
                    .await;
                let best = candidates.iter().find_map(|c| match &c.outcome {
                    Ok(quote) if quote.rate_type == rate_type => Some((c.provider.id, quote)),
                    _ => None,
                });
                let Some((provider, quote)) = best else {
                    continue;
                };
                let rate = pricing::rate(quote.from_amount, quote.to_amount);
                let base = *reference[slot].get_or_insert(rate);
                let depth = DepthQuote {
                    provider: provider.into(),
                    output: quote.to_amount.to_string(),
                    rate: rate.to_string(),
                    price_impact_bps: market_intel::impact_bps(base, rate),
                };
                match rate_type {
                    RateType::Fixed => point.fixed = Some(depth),
                    RateType::Float => point.float = Some(depth),
                }
            }
            ladder.push(point);
        }
        if ladder
            .iter()
            .all(|p| p.fixed.is_none() && p.float.is_none())
        {
            return Err(error(
                "no_quotes",
                &format!("no provider quotes {} → {}", from.code, to.code),
            ));
        }
        Ok(JobResult::PairDepth(PairDepth {
            from_ccy: from.code.into(),
            to_ccy: to.code.into(),
            min: min.to_string(),
            max: max.map(|a| a.to_string()),
            ladder,
        }))
    }

    /// The smallest and largest input any provider takes for this pair: from their quotes of
    /// one probe amount (each quote names its limits) and their out-of-range refusals. No
    /// largest (`None`) when some provider has no maximum.
    async fn pair_limits(
        &self,
        from: &'static CurrencyDef,
        to: &'static CurrencyDef,
    ) -> Result<(Amount, Option<Amount>), JobError> {
        let catalog = self.market.catalog(self.clock.now_ms()).await;
        // The smallest input known, or one whole unit when limits depend on the pair: either
        // way the answers (or out-of-range refusals) carry each provider's limits.
        let probe = catalog
            .listed(from.code)
            .map(|entry| {
                entry.min.unwrap_or_else(|| {
                    Amount::parse("1", from.precision).expect("one unit fits every precision")
                })
            })
            .ok_or_else(|| {
                error(
                    "pair_unsupported",
                    &format!("no provider takes {} now", from.code),
                )
            })?;
        let mut limits: Option<(Amount, Option<Amount>)> = None;
        for rate_type in [RateType::Fixed, RateType::Float] {
            for candidate in self
                .quote(from, to, probe, Direction::From, rate_type)
                .await
            {
                let (min, max) = match candidate.outcome {
                    Ok(quote) => (quote.min, quote.max),
                    Err(ProviderError::OutOfRange { min, max, .. }) => (min, max),
                    Err(_) => continue,
                };
                limits = Some(limits.map_or((min, max), |(low, high)| {
                    (low.min(min), high.zip(max).map(|(a, b)| a.max(b)))
                }));
            }
        }
        limits.ok_or_else(|| {
            error(
                "pair_unsupported",
                &format!("no provider routes {} → {}", from.code, to.code),
            )
        })
    }

    async fn route_scan(
        &self,
        from: &'static CurrencyDef,
        to: &'static CurrencyDef,
        amount: &str,
        direction: Direction,
    ) -> Result<JobResult, JobError> {
        let side = match direction {
            Direction::From => from,
            Direction::To => to,
        };
        let amount = Amount::parse(amount, side.precision)
            .map_err(|_| error("internal_error", "the stored amount is unreadable"))?;
        let candidates = self
            .quote(from, to, amount, direction, RateType::Fixed)
            .await;
        let routes: Vec<ScannedRoute> = candidates.iter().map(scanned_route).collect();
        // Ranked best first: the best and worst available routes bound the spread.
        let compared: Vec<Amount> = candidates
            .iter()
            .filter_map(|c| c.outcome.as_ref().ok())
            .map(|q| match direction {
                Direction::From => q.to_amount,
                Direction::To => q.from_amount,
            })
            .collect();
        let (best, worst) = (compared.first().copied(), compared.last().copied());
        let spread = best.zip(worst).and_then(|(best, worst)| match direction {
            Direction::From => best.checked_sub(worst),
            Direction::To => worst.checked_sub(best),
        });
        let spread_bps = best.zip(worst).map(|(best, worst)| match direction {
            Direction::From => market_intel::impact_bps(best, worst),
            Direction::To => market_intel::impact_bps(worst, best),
        });
        Ok(JobResult::RouteScan(RouteScan {
            from_ccy: from.code.into(),
            to_ccy: to.code.into(),
            amount: amount.to_string(),
            direction,
            routes,
            best: best.map(|a| a.to_string()),
            worst: worst.map(|a| a.to_string()),
            spread: spread.map(|a| a.to_string()),
            spread_bps,
        }))
    }

    async fn rate_history(
        &self,
        from: &'static CurrencyDef,
        to: &'static CurrencyDef,
        window_secs: i64,
        buckets: u32,
    ) -> Result<JobResult, JobError> {
        let until_ms = self.clock.now_ms();
        let since_ms = until_ms - window_secs * 1000;
        let pair = market_intel::rate_pair(from.code, to.code);
        let observations = self
            .store
            .rates(&pair, since_ms, until_ms, MAX_OBSERVATIONS)
            .await
            .map_err(|e| error("internal_error", &e.to_string()))?;
        let rates: Vec<(i64, Amount)> = observations
            .iter()
            .filter_map(|o| Some((o.observed_at_ms, market_intel::parse_rate(&o.rate)?)))
            .collect();
        let stats = market_intel::rate_statistics(&rates, since_ms, until_ms, buckets);
        Ok(JobResult::RateHistory(RateHistory {
            from_ccy: from.code.into(),
            to_ccy: to.code.into(),
            since: since_ms / 1000,
            until: until_ms / 1000,
            count: stats.count,
            first: stats.first,
            last: stats.last,
            min: stats.min,
            max: stats.max,
            mean: stats.mean,
            series: stats.series,
        }))
    }
}

fn execution_type(kind: ExecutionType) -> &'static str {
    match kind {
        ExecutionType::Offchain => "offchain",
        ExecutionType::Onchain => "onchain",
    }
}

fn stored(code: &str) -> Result<&'static CurrencyDef, JobError> {
    currency(code).ok_or_else(|| error("pair_unsupported", &format!("unknown currency {code}")))
}

fn error(code: &str, message: &str) -> JobError {
    JobError {
        code: code.into(),
        message: message.into(),
    }
}

/// One provider's line of a route scan: its quote, or why it has none.
fn scanned_route(candidate: &Candidate) -> ScannedRoute {
    match &candidate.outcome {
        Ok(quote) => ScannedRoute {
            provider: candidate.provider.id.into(),
            execution_type: execution_type(candidate.provider.execution_type).into(),
            available: true,
            unavailable_reason: None,
            from_amount: Some(quote.from_amount.to_string()),
            output: Some(quote.to_amount.to_string()),
            min_output: Some(quote.min_output.to_string()),
            rate: Some(pricing::rate(quote.from_amount, quote.to_amount).to_string()),
            fees: swapd_core::fees::entry::views(&quote.fees),
            estimated_duration_seconds: Some(quote.estimated_duration_secs),
        },
        Err(failure) => ScannedRoute {
            provider: candidate.provider.id.into(),
            execution_type: execution_type(candidate.provider.execution_type).into(),
            available: false,
            unavailable_reason: Some(failure.reason_code().into()),
            from_amount: None,
            output: None,
            min_output: None,
            rate: None,
            fees: Vec::new(),
            estimated_duration_seconds: None,
        },
    }
}
