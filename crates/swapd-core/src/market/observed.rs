//! What providers deliver (docs/market.md, "Observed figures"): one outcome for every order and
//! execution that ends, written with the state change that ends it; the figures made from the
//! outcomes of a window (success rate, durations, delivered against quoted); and the output a
//! user can expect of a route from them, by which routes are ranked.

use std::collections::HashMap;

use alloy_primitives::U256;

use crate::amount::{Amount, Rounding};
use crate::market::currencies::CurrencyDef;
use crate::market::{ExecutionType, RateType};
use crate::offchain::order::{Order, OrderStatus};
use crate::onchain::plan::{ExecutionPlan, ExecutionStatus, Outcome as PlanOutcome};

pub use swapd_types::market::{ObservedScope, RouteSort};

const BPS: u32 = 10_000;

/// How a swap ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, strum::IntoStaticStr, strum::EnumString)]
#[strum(serialize_all = "snake_case")]
pub enum Ending {
    /// What was asked for arrived.
    Completed,
    /// Something else arrived (a bridge's intermediate asset).
    Partial,
    /// The input went back.
    Refunded,
    Failed,
    /// Nothing happened in time: no deposit came, or the plan was never reported.
    Expired,
}

impl Ending {
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

/// One finished order or execution, as the figures count it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SwapOutcome {
    /// The order (`ord_…`) or plan (`ocx_…`) it is the outcome of.
    pub source_id: String,
    pub provider: String,
    pub execution_type: ExecutionType,
    pub from: &'static CurrencyDef,
    pub to: &'static CurrencyDef,
    pub rate_type: RateType,
    /// The swap's size in USD when it was quoted, where one side is a USD stablecoin.
    pub size_usd: Option<Amount>,
    /// The output promised: the expected output, and the guaranteed minimum where there is one.
    pub quoted: Amount,
    pub quoted_min: Option<Amount>,
    /// The output that arrived, as the desk reported it or the chain showed it.
    pub delivered: Option<Amount>,
    pub ending: Ending,
    /// How an emergency on the way ended (the user's choice, or `deadline`), when there was one.
    pub emergency: Option<String>,
    /// Whether it counts against the provider: not when the user caused the ending (no
    /// deposit, a deposit outside the terms, a refund the user asked for, a plan never sent).
    pub counted: bool,
    /// Deposit confirmed → payout sent (offchain), report → done (onchain), for completed swaps.
    pub duration_secs: Option<u32>,
    pub ended_at_ms: i64,
}

impl SwapOutcome {
    /// The outcome of `order` when its status ends it (an expired order's is replaced if a late
    /// deposit reopens it).
    pub fn of_order(order: &Order) -> Option<SwapOutcome> {
        let ending = match order.status {
            OrderStatus::Completed => Ending::Completed,
            OrderStatus::Refunded => Ending::Refunded,
            OrderStatus::Failed => Ending::Failed,
            OrderStatus::Expired => Ending::Expired,
            _ => return None,
        };
        let emergency = order.emergency.as_ref().map(|e| {
            e.choice
                .map_or("deadline", |choice| choice.as_str())
                .to_ascii_lowercase()
        });
        // The user's doing: no deposit, a deposit the terms did not cover (an emergency is
        // only ever about the deposit), or a refund asked for.
        let users = match ending {
            Ending::Expired => true,
            Ending::Refunded => order.emergency.is_some() || order.refund_requested,
            _ => false,
        };
        let delivered = match ending {
            Ending::Completed => order.payout_amount,
            _ => None,
        };
        let duration_secs = match (ending, order.exchange_started_at_ms) {
            (Ending::Completed, Some(started)) => Some(seconds(order.updated_at_ms - started)),
            _ => None,
        };
        Some(SwapOutcome {
            source_id: order.id.to_string(),
            provider: order.provider.clone(),
            execution_type: ExecutionType::Offchain,
            from: order.from,
            to: order.to,
            rate_type: order.rate_type,
            size_usd: usd_size(order.from, order.from_amount, order.to, order.to_amount),
            quoted: order.to_amount,
            quoted_min: (order.rate_type == RateType::Fixed).then_some(order.to_amount),
            delivered,
            ending,
            emergency,
            counted: !users,
            duration_secs,
            ended_at_ms: order.updated_at_ms,
        })
    }

    /// The outcome of `plan` when its status ends it.
    pub fn of_plan(plan: &ExecutionPlan) -> Option<SwapOutcome> {
        let ending = match (plan.status, plan.outcome) {
            (ExecutionStatus::Done, Some(PlanOutcome::Partial)) => Ending::Partial,
            (ExecutionStatus::Done, Some(PlanOutcome::Refunded)) => Ending::Refunded,
            (ExecutionStatus::Done, _) => Ending::Completed,
            (ExecutionStatus::Failed, _) => Ending::Failed,
            (ExecutionStatus::Expired, _) => Ending::Expired,
            _ => return None,
        };
        // A plan never reported, or a transaction the chain never saw, was never sent.
        let never_sent = ending == Ending::Expired
            || matches!(
                plan.substatus.as_deref(),
                Some("not_found" | "tx_not_found")
            );
        let delivered = match ending {
            Ending::Completed => plan
                .received_amount
                .as_deref()
                .and_then(|text| Amount::parse(text, crate::amount::MAX_DECIMALS).ok()),
            _ => None,
        };
        let duration_secs = match (ending, plan.reported_at_ms) {
            (Ending::Completed, Some(reported)) => Some(seconds(plan.updated_at_ms - reported)),
            _ => None,
        };
        Some(SwapOutcome {
            source_id: plan.id.to_string(),
            provider: plan.provider.clone(),
            execution_type: ExecutionType::Onchain,
            from: plan.from,
            to: plan.to,
            rate_type: RateType::Float,
            size_usd: usd_size(plan.from, plan.from_amount, plan.to, plan.expected_output),
            quoted: plan.expected_output,
            quoted_min: Some(plan.min_output),
            delivered,
            ending,
            emergency: None,
            counted: !never_sent,
            duration_secs,
            ended_at_ms: plan.updated_at_ms,
        })
    }

    /// (delivered − quoted) ÷ quoted in basis points, toward zero; for completed swaps whose
    /// delivered amount is known.
    pub fn delivered_vs_quoted_bps(&self) -> Option<i32> {
        let delivered = self
            .delivered
            .filter(|_| self.ending == Ending::Completed)?;
        if self.quoted.is_zero() {
            return None;
        }
        let scale = |a: Amount| {
            a.rescale(crate::amount::MAX_DECIMALS, Rounding::Down)
                .units()
        };
        let (quoted, delivered) = (scale(self.quoted), scale(delivered));
        let bps = |more: U256, less: U256| {
            let ratio = (more - less) * U256::from(BPS) / quoted;
            i32::try_from(ratio.min(U256::from(i32::MAX as u32))).unwrap_or(i32::MAX)
        };
        Some(if delivered >= quoted {
            bps(delivered, quoted)
        } else {
            -bps(quoted, delivered)
        })
    }
}

fn seconds(ms: i64) -> u32 {
    u32::try_from(ms.max(0) / 1000).unwrap_or(u32::MAX)
}

/// The size of a swap in USD: the amount on its USD stablecoin side, if it has one.
fn usd_size(
    from: &CurrencyDef,
    from_amount: Amount,
    to: &CurrencyDef,
    to_amount: Amount,
) -> Option<Amount> {
    let is_usd = |c: &CurrencyDef| matches!(c.price_symbol, "USDT" | "USDC" | "USD");
    if is_usd(from) {
        Some(from_amount)
    } else if is_usd(to) {
        Some(to_amount)
    } else {
        None
    }
}

/// A counted outcome, as the figures read it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sample {
    pub provider: String,
    pub from: &'static str,
    pub to: &'static str,
    pub completed: bool,
    pub duration_secs: Option<u32>,
    pub delivered_vs_quoted_bps: Option<i32>,
    pub ended_at_ms: i64,
}

/// What a set of counted outcomes shows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Figures {
    pub sample_size: u32,
    pub scope: ObservedScope,
    /// Completed ÷ counted, in basis points.
    pub success_bps: u32,
    pub p50_secs: Option<u32>,
    pub p90_secs: Option<u32>,
    /// The median of delivered against quoted over the completed swaps that report it.
    pub delivered_vs_quoted_bps: Option<i32>,
}

impl Figures {
    /// The figures of `samples` (not empty).
    pub fn of<'a>(samples: impl IntoIterator<Item = &'a Sample>, scope: ObservedScope) -> Self {
        let (mut size, mut completed) = (0u32, 0u32);
        let (mut durations, mut drifts) = (Vec::new(), Vec::new());
        for sample in samples {
            size += 1;
            if sample.completed {
                completed += 1;
                durations.extend(sample.duration_secs);
                drifts.extend(sample.delivered_vs_quoted_bps);
            }
        }
        durations.sort_unstable();
        drifts.sort_unstable();
        Figures {
            sample_size: size,
            scope,
            success_bps: (u64::from(completed) * u64::from(BPS) / u64::from(size.max(1))) as u32,
            p50_secs: percentile(&durations, 50),
            p90_secs: percentile(&durations, 90),
            delivered_vs_quoted_bps: percentile(&drifts, 50),
        }
    }

    /// The success rate as the wire shows it: a decimal from `0` to `1` (`0.9512`).
    pub fn success_rate(&self) -> String {
        Amount::from_units(U256::from(self.success_bps), 4).to_string()
    }

    /// What a route of these figures can be expected to deliver of what it quotes, in parts
    /// per 10^8: the delivered-against-quoted correction times the success rate (a refunded
    /// or failed swap delivers none of the asked currency).
    pub fn expectation(&self) -> Expectation {
        let drift = i64::from(BPS) + i64::from(self.delivered_vs_quoted_bps.unwrap_or(0));
        Expectation(drift.max(0) as u64 * u64::from(self.success_bps))
    }

    pub fn view(&self) -> swapd_types::market::Observed {
        swapd_types::market::Observed {
            sample_size: self.sample_size,
            scope: self.scope,
            success_rate: self.success_rate(),
            p50_seconds: self.p50_secs,
            p90_seconds: self.p90_secs,
            delivered_vs_quoted_bps: self.delivered_vs_quoted_bps,
        }
    }
}

/// The nearest-rank percentile `p` of sorted `values`.
fn percentile<T: Copy>(sorted: &[T], p: usize) -> Option<T> {
    if sorted.is_empty() {
        return None;
    }
    let rank = (p * sorted.len()).div_ceil(100).max(1);
    sorted.get(rank - 1).copied()
}

/// The share of a quote a user can expect to receive, in parts per 10^8 (10^8: all of it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Expectation(u64);

impl Expectation {
    pub const FULL: Expectation = Expectation(100_000_000);

    /// `quoted` as expected to arrive.
    pub fn of(self, quoted: Amount) -> Amount {
        quoted.mul_div(U256::from(self.0), U256::from(Self::FULL.0), Rounding::Down)
    }

    /// The input that buys, as expected, what `input` buys as quoted (a reverse quote's cost);
    /// `None` when nothing is expected to arrive.
    pub fn cost_of(self, input: Amount) -> Option<Amount> {
        (self.0 > 0)
            .then(|| input.mul_div(U256::from(Self::FULL.0), U256::from(self.0), Rounding::Up))
    }
}

/// The figures of every provider and pair over a window, as routes are ranked by them.
#[derive(Debug, Clone, Default)]
pub struct Observed {
    /// By provider, then by pair (`from`, `to` codes).
    by_pair: HashMap<String, HashMap<(&'static str, &'static str), Figures>>,
    by_provider: HashMap<String, Figures>,
    /// By provider, each UTC day of the window that has outcomes, oldest first.
    daily: HashMap<String, Vec<Day>>,
    min_samples: u32,
}

/// What one UTC day of a provider's outcomes showed (however few).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Day {
    /// Midnight UTC, Unix milliseconds.
    pub start_ms: i64,
    pub figures: Figures,
}

const DAY_MS: i64 = 86_400_000;

impl Observed {
    /// The figures of `samples` (the counted outcomes of the window); a pair's or a provider's
    /// figures are shown from `min_samples` outcomes on.
    pub fn of(samples: &[Sample], min_samples: u32) -> Self {
        let mut pairs: HashMap<(String, &'static str, &'static str), Vec<&Sample>> = HashMap::new();
        let mut providers: HashMap<String, Vec<&Sample>> = HashMap::new();
        let mut days: HashMap<(String, i64), Vec<&Sample>> = HashMap::new();
        for sample in samples {
            days.entry((
                sample.provider.clone(),
                sample.ended_at_ms.div_euclid(DAY_MS),
            ))
            .or_default()
            .push(sample);
            pairs
                .entry((sample.provider.clone(), sample.from, sample.to))
                .or_default()
                .push(sample);
            providers
                .entry(sample.provider.clone())
                .or_default()
                .push(sample);
        }
        let enough = |n: usize| n >= min_samples.max(1) as usize;
        let mut by_pair: HashMap<String, HashMap<_, _>> = HashMap::new();
        for ((provider, from, to), samples) in pairs {
            if enough(samples.len()) {
                let figures = Figures::of(samples, ObservedScope::Pair);
                by_pair
                    .entry(provider)
                    .or_default()
                    .insert((from, to), figures);
            }
        }
        let mut daily: HashMap<String, Vec<Day>> = HashMap::new();
        for ((provider, day), samples) in days {
            daily.entry(provider).or_default().push(Day {
                start_ms: day * DAY_MS,
                figures: Figures::of(samples, ObservedScope::Provider),
            });
        }
        for series in daily.values_mut() {
            series.sort_by_key(|day| day.start_ms);
        }
        Observed {
            by_pair,
            daily,
            by_provider: providers
                .into_iter()
                .filter(|(_, s)| enough(s.len()))
                .map(|(k, s)| (k, Figures::of(s, ObservedScope::Provider)))
                .collect(),
            min_samples,
        }
    }

    /// The figures a route of `provider` for `from` → `to` is shown with: the pair's when it
    /// has enough outcomes, else the provider's over every pair, else none.
    pub fn route(&self, provider: &str, from: &'static str, to: &'static str) -> Option<&Figures> {
        self.by_pair
            .get(provider)
            .and_then(|pairs| pairs.get(&(from, to)))
            .or_else(|| self.by_provider.get(provider))
    }

    /// A provider's figures over every pair, when it has enough outcomes.
    pub fn provider(&self, provider: &str) -> Option<&Figures> {
        self.by_provider.get(provider)
    }

    /// The pairs of `provider` with enough outcomes, busiest first.
    pub fn pairs_of(&self, provider: &str) -> Vec<(&'static str, &'static str, &Figures)> {
        let mut pairs: Vec<_> = self
            .by_pair
            .get(provider)
            .into_iter()
            .flatten()
            .map(|((from, to), figures)| (*from, *to, figures))
            .collect();
        pairs.sort_by(|a, b| {
            b.2.sample_size
                .cmp(&a.2.sample_size)
                .then(a.0.cmp(b.0))
                .then(a.1.cmp(b.1))
        });
        pairs
    }

    /// `provider`'s days with outcomes, oldest first.
    pub fn daily(&self, provider: &str) -> &[Day] {
        self.daily.get(provider).map_or(&[], Vec::as_slice)
    }

    pub fn min_samples(&self) -> u32 {
        self.min_samples
    }
}

#[cfg(test)]
mod tests;
