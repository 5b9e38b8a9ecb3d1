//! A partner's earnings on `/api/v3` (docs/fees.md, "Earnings"): its markups in the fee
//! ledger, only its key's own.

use axum::extract::State;
use swapd_app::earnings as earnings_app;
use swapd_types::Success;
use swapd_types::earnings::Earnings;

use super::input::{invalid, only_parameters};
use crate::json::Json;
use crate::principal::Caller;
use crate::{ApiError, AppState, SignedQuery};

/// What the key's markups earned.
#[utoipa::path(get, path = "/api/v3/earnings", operation_id = "earnings", tag = "business",
    security(("hmac" = [])),
    description = "What the key's markups earned (docs/fees.md): totals per currency and per \
        UTC day over `[since, until)`, and the fee ledger rows behind them, `expected` when the \
        order was created and `realized` when the provider took them. Unix epoch seconds; \
        default: the last 30 days; at most 366 days, 10 000 rows (`truncated`).",
    params(
        ("since" = Option<i64>, Query, minimum = 0, maximum = 253402300799.0, description = "Start (included), epoch seconds"),
        ("until" = Option<i64>, Query, minimum = 0, maximum = 253402300799.0, description = "End (excluded), epoch seconds; default: the second after now"),
    ),
    responses(
        (status = 200, description = "The earnings", body = inline(Success<Earnings>)),
        (status = 400, description = "`validation_failed`: a bad window", body = swapd_types::ErrorEnvelope),
    ))]
pub(crate) async fn earnings(
    State(state): State<AppState>,
    caller: Caller,
    query: SignedQuery,
) -> Result<Json<Success<Earnings>>, ApiError> {
    let (since, until) = window(&query, state.clock.now_ms() / 1000)?;
    let earned = earnings_app::of(state.app(), &caller.owner(), since, until).await?;
    Ok(Json(Success::new(earned)))
}

/// `since` and `until` of the query, checked.
fn window(query: &SignedQuery, now: i64) -> Result<(i64, i64), ApiError> {
    only_parameters(query, &["since", "until"])?;
    let seconds = |name: &str| -> Result<Option<i64>, ApiError> {
        query
            .scalar(name)?
            .map(|text| {
                text.parse::<i64>()
                    .ok()
                    .filter(|s| (0..=253_402_300_799).contains(s))
                    .ok_or_else(|| invalid(name, "must be Unix epoch seconds"))
            })
            .transpose()
    };
    Ok(earnings_app::window(
        seconds("since")?,
        seconds("until")?,
        now,
    )?)
}
