//! Provider scorecards (docs/market.md, "Scorecards"): availability as the circuit breaker sees
//! it, and the observed figures overall and for the busiest pairs. Aggregates over every
//! partner: no order of one partner shows to another.

use swapd_types::market::{PairScore, Scorecard, Scorecards};

use crate::Context;

/// Pairs shown per provider.
pub const BUSIEST_PAIRS: usize = 10;

/// Every provider's scorecard at `now_ms`, in provider order.
pub fn scorecards(app: Context<'_>, now_ms: i64) -> Scorecards {
    let observed = app.observed.current();
    let health = app.market.health(now_ms);
    let providers: Vec<Scorecard> = app
        .market
        .providers()
        .into_iter()
        .map(|info| Scorecard {
            provider: info.id.into(),
            execution_type: info.execution_type,
            availability: health
                .iter()
                .find(|h| h.id == info.id)
                .map_or("up", |h| h.state.into())
                .into(),
            observed: observed.provider(info.id).map(|f| f.view()),
            pairs: observed
                .pairs_of(info.id)
                .into_iter()
                .take(BUSIEST_PAIRS)
                .map(|(from, to, figures)| PairScore {
                    from_ccy: from.into(),
                    to_ccy: to.into(),
                    observed: figures.view(),
                })
                .collect(),
        })
        .collect();
    Scorecards {
        count: providers.len(),
        providers,
        window_days: u32::try_from(app.observed.window_ms / 86_400_000).unwrap_or(u32::MAX),
        min_samples: app.observed.min_samples,
    }
}
