use proptest::prelude::*;

use super::*;
use crate::market::Direction;
use crate::market::provider::{ProviderError, ProviderInfo, ProviderQuote};
use crate::market::routes::{Candidate, Ranking, rank};

fn amount(text: &str) -> Amount {
    Amount::parse(text, 8).unwrap()
}

/// `n` counted outcomes of `provider` for BTC → USDTTRC, `completed` of them completed, each
/// delivering `drift_bps` against its quote in `secs` seconds.
fn samples(provider: &str, n: u32, completed: u32, drift_bps: i32, secs: u32) -> Vec<Sample> {
    (0..n)
        .map(|i| Sample {
            provider: provider.into(),
            from: "BTC",
            to: "USDTTRC",
            completed: i < completed,
            duration_secs: Some(secs),
            delivered_vs_quoted_bps: Some(drift_bps),
            ended_at_ms: i64::from(i),
        })
        .collect()
}

fn quote(to: &str, secs: u32) -> ProviderQuote {
    ProviderQuote {
        from_amount: amount("1"),
        to_amount: amount(to),
        min_output: amount(to),
        rate_type: RateType::Float,
        network_fee: amount("0"),
        fees: vec![],
        min: amount("0.001"),
        max: None,
        estimated_duration_secs: secs,
        valid_for_secs: 60,
        gasless: false,
        rate_lock: None,
        onchain_fees: Vec::new(),
    }
}

fn candidate(id: &'static str, outcome: Result<ProviderQuote, ProviderError>) -> Candidate {
    Candidate {
        provider: ProviderInfo {
            id,
            execution_type: ExecutionType::Offchain,
        },
        outcome,
    }
}

fn ranked(candidates: Vec<Candidate>, sort: RouteSort, observed: &Observed) -> Vec<&'static str> {
    let mut candidates = candidates;
    rank(
        &mut candidates,
        &Ranking {
            direction: Direction::From,
            sort,
            observed,
            from: "BTC",
            to: "USDTTRC",
        },
    );
    candidates.iter().map(|c| c.provider.id).collect()
}

#[test]
fn figures_count_completions_durations_and_the_median_drift() {
    let mut all = samples("atlas", 20, 19, -200, 300);
    all[0].duration_secs = Some(3_000);
    let figures = Figures::of(&all, ObservedScope::Pair);
    assert_eq!(figures.sample_size, 20);
    assert_eq!(figures.success_bps, 9_500);
    assert_eq!(figures.success_rate(), "0.95");
    assert_eq!(figures.p50_secs, Some(300));
    assert_eq!(figures.p90_secs, Some(300));
    assert_eq!(figures.delivered_vs_quoted_bps, Some(-200));
    let view = figures.view();
    assert_eq!(view.success_rate, "0.95");
    assert_eq!(view.scope, ObservedScope::Pair);
}

#[test]
fn a_pair_with_too_few_outcomes_falls_back_to_the_provider_then_to_nothing() {
    let mut all = samples("atlas", 5, 5, 0, 60);
    all.extend(samples("atlas", 20, 10, 0, 60).into_iter().map(|mut s| {
        s.to = "ETH";
        s
    }));
    let observed = Observed::of(&all, 20);
    let btc_usdt = observed.route("atlas", "BTC", "USDTTRC").unwrap();
    assert_eq!(btc_usdt.scope, ObservedScope::Provider);
    assert_eq!(btc_usdt.sample_size, 25);
    let btc_eth = observed.route("atlas", "BTC", "ETH").unwrap();
    assert_eq!(
        (btc_eth.scope, btc_eth.sample_size),
        (ObservedScope::Pair, 20)
    );
    assert!(observed.route("meridian", "BTC", "ETH").is_none());
    assert!(
        Observed::of(&samples("atlas", 19, 19, 0, 60), 20)
            .route("atlas", "BTC", "USDTTRC")
            .is_none()
    );
    assert_eq!(observed.pairs_of("atlas").len(), 1);
    // Every sample ended on the first day of 1970: one day of 25.
    let days = observed.daily("atlas");
    assert_eq!(days.len(), 1);
    assert_eq!((days[0].start_ms, days[0].figures.sample_size), (0, 25));
    assert!(observed.daily("meridian").is_empty());
}

#[test]
fn an_unreliable_desk_ranks_below_a_reliable_one_whose_quote_is_at_most_three_percent_worse() {
    let mut all = samples("shaky", 20, 11, 0, 60);
    all.extend(samples("steady", 20, 19, 0, 60));
    let observed = Observed::of(&all, 20);
    let candidates = || {
        vec![
            candidate("shaky", Ok(quote("103", 60))),
            candidate("steady", Ok(quote("100", 60))),
            candidate("down", Err(ProviderError::Unavailable("timeout".into()))),
        ]
    };
    assert_eq!(
        ranked(candidates(), RouteSort::Best, &observed),
        ["steady", "shaky", "down"]
    );
    assert_eq!(
        ranked(candidates(), RouteSort::Reliable, &observed),
        ["steady", "shaky", "down"]
    );
    // `output` is the quotes' order, as before figures.
    assert_eq!(
        ranked(candidates(), RouteSort::Output, &observed),
        ["shaky", "steady", "down"]
    );
}

#[test]
fn a_desk_that_delivers_under_its_quotes_is_ranked_by_what_it_delivers() {
    let mut all = samples("optimist", 20, 20, -200, 60);
    all.extend(samples("honest", 20, 20, 0, 60));
    let observed = Observed::of(&all, 20);
    // Quotes 1 % better, delivers 2 % under: 100 · 1.01 · 0.98 = 98.98 < 100.
    let candidates = vec![
        candidate("optimist", Ok(quote("101", 60))),
        candidate("honest", Ok(quote("100", 60))),
    ];
    assert_eq!(
        ranked(candidates, RouteSort::Best, &observed),
        ["honest", "optimist"]
    );
    assert_eq!(
        observed
            .route("optimist", "BTC", "USDTTRC")
            .unwrap()
            .expectation()
            .of(amount("101")),
        amount("98.98")
    );
}

#[test]
fn without_figures_a_route_is_ranked_by_its_quote_and_fastest_by_observed_time() {
    let mut all = samples("slow", 20, 20, 0, 2_400);
    all.extend(samples("quick", 20, 20, 0, 120));
    let observed = Observed::of(&all, 20);
    let candidates = || {
        vec![
            candidate("slow", Ok(quote("100", 180))),
            candidate("quick", Ok(quote("99", 900))),
            candidate("new", Ok(quote("100.5", 600))),
        ]
    };
    // `new` has no figures: its quote alone, which is the best.
    assert_eq!(
        ranked(candidates(), RouteSort::Best, &observed),
        ["new", "slow", "quick"]
    );
    // `slow` says 3 minutes and takes 40; `quick` says 15 and takes 2.
    assert_eq!(
        ranked(candidates(), RouteSort::Fastest, &observed),
        ["quick", "new", "slow"]
    );
    // Known rates first.
    assert_eq!(
        ranked(candidates(), RouteSort::Reliable, &observed),
        ["slow", "quick", "new"]
    );
}

#[test]
fn reverse_quotes_rank_by_the_input_that_buys_the_expected_output() {
    let mut all = samples("shaky", 20, 10, 0, 60);
    all.extend(samples("steady", 20, 20, 0, 60));
    let observed = Observed::of(&all, 20);
    let mut cheap = quote("100", 60);
    cheap.from_amount = amount("0.98");
    let mut fair = quote("100", 60);
    fair.from_amount = amount("1");
    let mut candidates = vec![candidate("shaky", Ok(cheap)), candidate("steady", Ok(fair))];
    rank(
        &mut candidates,
        &Ranking {
            direction: Direction::To,
            sort: RouteSort::Best,
            observed: &observed,
            from: "BTC",
            to: "USDTTRC",
        },
    );
    assert_eq!(candidates[0].provider.id, "steady");
}

#[test]
fn an_order_that_expired_without_a_deposit_is_the_users_and_counts_against_nobody() {
    let mut order = crate::offchain::order::tests::new_order(RateType::Float, true);
    order.status = OrderStatus::Expired;
    let outcome = SwapOutcome::of_order(&order).unwrap();
    assert_eq!(outcome.ending, Ending::Expired);
    assert!(!outcome.counted);

    order.status = OrderStatus::Completed;
    order.exchange_started_at_ms = Some(order.updated_at_ms - 90_000);
    order.payout_amount = Some(order.to_amount.mul_div(
        U256::from(99u8),
        U256::from(100u8),
        Rounding::Down,
    ));
    let outcome = SwapOutcome::of_order(&order).unwrap();
    assert!(outcome.counted);
    assert_eq!(outcome.duration_secs, Some(90));
    assert_eq!(outcome.delivered_vs_quoted_bps(), Some(-100));

    // A refund the user asked for is the user's; one the desk decided is the desk's.
    order.status = OrderStatus::Refunded;
    assert!(SwapOutcome::of_order(&order).unwrap().counted);
    order.refund_requested = true;
    assert!(!SwapOutcome::of_order(&order).unwrap().counted);

    order.status = OrderStatus::Exchanging;
    assert!(SwapOutcome::of_order(&order).is_none());
}

proptest! {
    /// Expected outputs never exceed what a perfect provider delivering its quote would, and
    /// the arithmetic is exact: a correction of `bps` and a success rate of `rate` bps give
    /// exactly ⌊quote · (10 000 + bps) · rate / 10^8⌋.
    #[test]
    fn expectations_are_exact(units in 1u64..10_000_000_000, bps in -2_000i32..=2_000, rate in 0u32..=10_000) {
        let figures = Figures {
            sample_size: 20,
            scope: ObservedScope::Pair,
            success_bps: rate,
            p50_secs: None,
            p90_secs: None,
            delivered_vs_quoted_bps: Some(bps),
        };
        let quoted = Amount::from_units(U256::from(units), 8);
        let expected = figures.expectation().of(quoted);
        let exact = U256::from(units) * U256::from((10_000 + bps) as u64) * U256::from(rate)
            / U256::from(100_000_000u64);
        prop_assert_eq!(expected.units(), exact);
        if bps <= 0 {
            prop_assert!(expected <= quoted);
        }
    }

    /// Whatever the figures, ranking is a total order: usable routes come first and equal
    /// inputs rank the same every time.
    #[test]
    fn ranking_keeps_usable_routes_first(rates in proptest::collection::vec(0u32..=20, 3), outputs in proptest::collection::vec(1u32..1_000, 3)) {
        let ids = ["a", "b", "c"];
        let mut all = Vec::new();
        for (id, completed) in ids.iter().zip(&rates) {
            all.extend(samples(id, 20, *completed, 0, 60));
        }
        let observed = Observed::of(&all, 20);
        let candidates = || -> Vec<Candidate> {
            ids.iter()
                .zip(&outputs)
                .map(|(id, out)| candidate(id, Ok(quote(&out.to_string(), 60))))
                .chain([candidate("down", Err(ProviderError::Unavailable("x".into())))])
                .collect()
        };
        for sort in [RouteSort::Best, RouteSort::Output, RouteSort::Fastest, RouteSort::Reliable] {
            let first = ranked(candidates(), sort, &observed);
            prop_assert_eq!(first.last().copied(), Some("down"));
            let mut reversed = candidates();
            reversed.reverse();
            prop_assert_eq!(ranked(reversed, sort, &observed), first);
        }
    }
}
