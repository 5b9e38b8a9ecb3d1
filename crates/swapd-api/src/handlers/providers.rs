//! `GET /providers`: each provider's scorecard (docs/market.md, "Scorecards").

use axum::extract::State;
use swapd_types::Success;
use swapd_types::market::Scorecards;

use super::input::only_parameters;
use crate::json::Json;
use crate::{ApiError, AppState, SignedQuery};

/// Provider scorecards.
#[utoipa::path(get, path = "/api/v3/providers", operation_id = "provider_scorecards", tag = "business",
    security(("hmac" = [])),
    description = "Every provider with its availability (the circuit breaker's view) and what its \
        finished swaps showed over the window: success rate, median and 90th-percentile time, \
        delivered against quoted; overall and for its ten busiest pairs. Aggregates over every \
        partner's swaps; `observed` is `null` until a provider has enough outcomes.",
    responses((status = 200, description = "The scorecards", body = inline(Success<Scorecards>))))]
pub(crate) async fn providers(
    State(state): State<AppState>,
    query: SignedQuery,
) -> Result<Json<Success<Scorecards>>, ApiError> {
    only_parameters(&query, &[])?;
    let now_ms = state.clock.now_ms();
    Ok(Json(Success::new(swapd_app::scorecards::scorecards(
        state.app(),
        now_ms,
    ))))
}

/// `GET /providers` takes no parameters.
pub(crate) fn check_providers_query(_: &AppState, query: &SignedQuery) -> Result<(), ApiError> {
    only_parameters(query, &[])
}
