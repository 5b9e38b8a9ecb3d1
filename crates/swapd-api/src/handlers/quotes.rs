//! `POST /quotes`, the legacy quote: the best offchain offer (docs/market.md).

use axum::extract::State;
use swapd_core::ids;
use swapd_core::market::pricing;
use swapd_core::market::provider::QuoteRequest;
use swapd_types::Success;
use swapd_types::market::QuoteInput;

use super::input::{check_address, known_provider, pair_currency, parse_amount};
use crate::json::Json;
use crate::principal::Caller;
use crate::{ApiError, ApiJson, AppState};

/// A legacy quote: the best offchain offer.
#[utoipa::path(post, path = "/api/v3/quotes", tag = "business",
    security(("hmac" = [])),
    description = "Legacy: quotes offchain providers only \
        (onchain DEX and bridge routes come from `GET /routes`). `direction: to` quotes the input needed \
        for an exact output.",
    request_body = QuoteInput,
    responses(
        (status = 200, description = "The best offchain quote", body = inline(Success<swapd_types::market::Quote>)),
        (status = 400, description = "`amount_invalid`, `address_invalid`, `validation_failed`", body = swapd_types::ErrorEnvelope),
        (status = 422, description = "`pair_unsupported`, `amount_out_of_range` (the message names min and max)", body = swapd_types::ErrorEnvelope),
        (status = 502, description = "`provider_error`: no provider could quote", body = swapd_types::ErrorEnvelope),
    ))]
pub(crate) async fn quotes(
    State(state): State<AppState>,
    caller: Caller,
    ApiJson(input): ApiJson<QuoteInput>,
) -> Result<Json<Success<swapd_types::market::Quote>>, ApiError> {
    let (from, to) = (
        pair_currency(&input.from_ccy)?,
        pair_currency(&input.to_ccy)?,
    );
    let direction = input.direction.unwrap_or_default();
    let rate_type = input.rate_type.unwrap_or_default();
    let amount = parse_amount(&input.amount, from, to, direction)?;
    if let Some(refund) = &input.refund_address {
        check_address(from, refund, "refundAddress")?;
    }
    let constraints = input.route_constraints.unwrap_or_default();
    for id in constraints
        .providers
        .iter()
        .chain(constraints.exclude_providers.iter())
        .flatten()
    {
        known_provider(&state, id, "routeConstraints")?;
    }
    let now_ms = state.clock.now_ms();
    let app = state.app_for(&caller);
    let request = QuoteRequest {
        fees: app.quote_fees(input.affiliate_code.as_deref()).await?,
        ..QuoteRequest::without_wallet(from, to, amount, direction, rate_type, now_ms)
    };
    let (provider, quote) = swapd_app::quotes::best_offchain_quote(app, &request, |id| {
        constraints
            .providers
            .as_ref()
            .is_none_or(|list| list.iter().any(|p| p == id))
            && !constraints
                .exclude_providers
                .as_ref()
                .is_some_and(|list| list.iter().any(|p| p == id))
    })
    .await?;
    swapd_app::quotes::record_rates(state.app(), &request, [(provider, &quote)]);
    Ok(Json(Success::new(swapd_types::market::Quote {
        quote_id: ids::new_id("qte_"),
        from_ccy: from.code.into(),
        to_ccy: to.code.into(),
        direction,
        rate_type,
        from_amount: quote.from_amount.to_string(),
        to_amount: quote.to_amount.to_string(),
        rate: pricing::rate(quote.from_amount, quote.to_amount).to_string(),
        network_fee: quote.network_fee.to_string(),
        fees: swapd_core::fees::entry::views(&quote.fees),
        min: quote.min.to_string(),
        max: quote.max.map(|a| a.to_string()),
        provider: provider.into(),
        expires_at: (now_ms + i64::from(quote.valid_for_secs) * 1000) / 1000,
        observed: app
            .observed
            .current()
            .route(provider, from.code, to.code)
            .map(|figures| figures.view()),
    })))
}
