//! A partner's earnings on `/api/v3` (docs/fees.md, "Earnings"): its markups in the fee
//! ledger, only its key's own.

use axum::extract::State;
use swapd_app::earnings::{self as earnings_app, MAX_WINDOW_SECS};
use swapd_types::Success;
use swapd_types::earnings::Earnings;

use super::input::invalid;
use crate::json::Json;
use crate::principal::Caller;
use crate::{ApiError, AppState, SignedQuery};

/// The window an answer covers when none is given: the last 30 days.
const DEFAULT_WINDOW_SECS: i64 = 30 * 86_400;

/// What the key's markups earned.
#[utoipa::path(get, path = "/api/v3/earnings", operation_id = "earnings", tag = "business",
    security(("hmac" = [])),
    description = "What the key's markups earned (docs/fees.md): totals per currency and per \
        UTC day over `[since, until)`, and the fee ledger rows behind them, `expected` when the \
        order was created and `realized` when the provider took them. Unix epoch seconds; \
        default: the last 30 days; at most 366 days, 10 000 rows (`truncated`).",
    params(
        ("since" = Option<i64>, Query, description = "Start (included), epoch seconds"),
        ("until" = Option<i64>, Query, description = "End (excluded), epoch seconds; default: the second after now"),
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
    if let Some((name, _)) = query
        .0
        .iter()
        .find(|(name, _)| name != "since" && name != "until")
    {
        return Err(invalid(
            name,
            "unknown parameter; this route takes since and until",
        ));
    }
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
    // The window's end is excluded: by default it is the second after now, so what was just
    // learnt is in.
    let until = seconds("until")?.unwrap_or(now + 1);
    let since = seconds("since")?.unwrap_or(until - DEFAULT_WINDOW_SECS);
    if since >= until {
        return Err(invalid("since", "must be before until"));
    }
    if until - since > MAX_WINDOW_SECS {
        return Err(invalid("since", "the window is at most 366 days"));
    }
    Ok((since, until))
}
