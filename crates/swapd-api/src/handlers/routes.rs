//! Route discovery (`GET /routes`) and resolution of an offchain route into a createToken
//! (`POST /routes/resolve`): handlers parse and check input, then ask the aggregator; the
//! answers are mapped into the wire shapes of `swapd_types::market`.

use axum::Extension;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;

use swapd_core::address::Network;
use swapd_core::amount::Amount;
use swapd_core::idempotency::StoredResponse;
use swapd_core::ids;
use swapd_core::market::currencies::CurrencyDef;
use swapd_core::market::routes::{self, RouteFee, RouteQuote};
use swapd_core::market::{Direction, ExecutionType, RateType, pricing};
use swapd_core::provider::{Fee, ProviderError, ProviderQuote, QuoteRequest, Wallet};
use swapd_types::market::{ResolveInput, Resolved, RouteCard, Routes};
use swapd_types::{ErrorCode, Success};

use super::input::{
    check_address, invalid, known_provider, only_parameters, pair_currency, parse_amount, required,
};
use super::quotes::record_rates;
use crate::error::json_response;
use crate::idempotency::{IdempotencyClaim, committed};
use crate::json::Json;
use crate::principal::Caller;
use crate::{ApiError, ApiJson, AppState, SignedQuery};

/// Route discovery.
#[utoipa::path(get, path = "/api/v3/routes", tag = "business",
    security(("hmac" = [])),
    description = "Asks every provider at once (each under its own deadline) \
        and answers with route cards, best first; a provider that fails or is too slow appears as a card \
        with `isAvailable: false` and a reason. Usable cards carry a `routeQuoteId` valid until \
        `expiresAt`. Bridging to another namespace than the signer's needs `recipientAddress`.",
    params(
        ("fromCcy" = String, Query, example = "BTC", description = "Currency code to send"),
        ("toCcy" = String, Query, example = "ETH", description = "Currency code to receive"),
        ("amount" = inline(swapd_types::schema::AmountParam), Query, example = "0.05", description = "Decimal amount of the side `direction` names"),
        ("direction" = inline(Option<swapd_types::market::Direction>), Query, description = "`from` (default) or `to`"),
        ("type" = inline(Option<swapd_types::market::RateType>), Query, description = "`fixed` (default) or `float`, for offchain routes"),
        ("walletAddress" = Option<String>, Query, description = "The signer of onchain routes"),
        ("walletChainNamespace" = Option<String>, Query, pattern = "^(eip155|solana)$", description = "`eip155` or `solana`; inferred from walletAddress"),
        ("recipientAddress" = Option<String>, Query, description = "Destination of onchain routes, checked for toCcy's network"),
        ("provider" = Option<String>, Query, description = "Only this provider (lowercase id)"),
    ),
    responses(
        (status = 200, description = "Route cards", body = inline(Success<Routes>)),
        (status = 400, description = "`amount_invalid`, `address_invalid`, `validation_failed`", body = swapd_types::ErrorEnvelope),
        (status = 422, description = "`pair_unsupported`, `recipient_required`", body = swapd_types::ErrorEnvelope),
    ))]
pub(crate) async fn discover_routes(
    State(state): State<AppState>,
    caller: Caller,
    query: SignedQuery,
) -> Result<Json<Success<Routes>>, ApiError> {
    let owner = caller.scope();
    let RoutesAsk {
        from,
        to,
        amount,
        direction,
        rate_type,
        provider,
        wallet,
        recipient,
    } = routes_query(&state, &query)?;
    let now_ms = state.clock.now_ms();
    let request = QuoteRequest {
        from,
        to,
        amount,
        direction,
        rate_type,
        wallet: wallet.clone(),
        recipient: recipient.clone(),
        now_ms,
    };
    let mut candidates = state
        .market
        .quote_all(&request, &|info| provider.is_none_or(|id| id == info.id))
        .await;
    if wallet.is_some()
        && let Some(Err(error)) = candidates
            .iter()
            .map(|c| &c.outcome)
            .find(|o| matches!(o, Err(ProviderError::RecipientRequired(_))))
    {
        return Err(ApiError::new(
            ErrorCode::RecipientRequired,
            error.to_string(),
        ));
    }
    if provider.is_none() {
        candidates.retain(|c| !matches!(c.outcome, Err(ProviderError::PairUnsupported(_))));
    }
    if candidates.is_empty() {
        return Err(ApiError::new(
            ErrorCode::PairUnsupported,
            format!("no provider routes {} → {}", from.code, to.code),
        ));
    }
    routes::rank(&mut candidates, direction);
    record_rates(
        &state,
        &request,
        candidates
            .iter()
            .filter_map(|c| c.outcome.as_ref().ok().map(|q| (c.provider.id, q))),
    );

    let mut stored = Vec::new();
    let cards = candidates
        .into_iter()
        .map(|candidate| {
            let execution_type = candidate.provider.execution_type;
            let mut card = RouteCard {
                route_quote_id: None,
                execution_type,
                execution_provider: candidate.provider.id.into(),
                wallet_required: execution_type == ExecutionType::Onchain,
                is_available: false,
                unavailable_reason: None,
                unavailable_detail: None,
                from_ccy: from.code.into(),
                to_ccy: to.code.into(),
                from_amount: None,
                expected_output_amount: None,
                min_output_amount: None,
                rate: None,
                rate_type: match execution_type {
                    ExecutionType::Offchain => rate_type,
                    ExecutionType::Onchain => RateType::Float,
                },
                fees: Vec::new(),
                gasless: false,
                estimated_duration_seconds: None,
                expires_at: None,
            };
            match candidate.outcome {
                Ok(quote) => {
                    let record = route_quote(
                        &owner,
                        candidate.provider.id,
                        execution_type,
                        direction,
                        &request,
                        &quote,
                        &wallet,
                        &recipient,
                        now_ms,
                    );
                    card.route_quote_id = Some(record.id.clone());
                    card.is_available = true;
                    card.from_amount = Some(record.from_amount.clone());
                    card.expected_output_amount = Some(record.to_amount.clone());
                    card.min_output_amount = Some(record.min_output.clone());
                    card.rate = Some(record.rate.clone());
                    card.rate_type = quote.rate_type;
                    card.fees = record.fees.iter().map(fee_dto).collect();
                    card.gasless = quote.gasless;
                    card.estimated_duration_seconds = Some(quote.estimated_duration_secs);
                    card.expires_at = Some(record.expires_at_ms / 1000);
                    stored.push(record);
                }
                Err(error) => {
                    card.unavailable_reason = Some(error.reason_code().into());
                    card.unavailable_detail = Some(error.to_string());
                }
            }
            card
        })
        .collect::<Vec<_>>();
    state.store.save_route_quotes(&stored).await?;
    Ok(Json(Success::new(Routes {
        count: cards.len(),
        routes: cards,
    })))
}

#[allow(clippy::too_many_arguments)]
fn route_quote(
    owner: &str,
    provider: &str,
    execution_type: ExecutionType,
    direction: Direction,
    request: &QuoteRequest,
    quote: &ProviderQuote,
    wallet: &Option<Wallet>,
    recipient: &Option<String>,
    now_ms: i64,
) -> RouteQuote {
    RouteQuote {
        id: ids::new_id("rqq_"),
        owner: owner.into(),
        provider: provider.into(),
        execution_type,
        rate_type: quote.rate_type,
        direction,
        from_code: request.from.code.into(),
        to_code: request.to.code.into(),
        from_amount: quote.from_amount.to_string(),
        to_amount: quote.to_amount.to_string(),
        min_output: quote.min_output.to_string(),
        rate: pricing::rate(quote.from_amount, quote.to_amount).to_string(),
        min: quote.min.to_string(),
        max: quote.max.map(|a| a.to_string()),
        fees: quote.fees.iter().map(route_fee).collect(),
        estimated_duration_secs: quote.estimated_duration_secs,
        wallet_address: wallet.as_ref().and_then(|w| w.address.clone()),
        wallet_namespace: wallet.as_ref().map(|w| w.namespace.to_owned()),
        recipient: recipient.clone(),
        gasless: quote.gasless,
        rate_lock: quote.rate_lock.clone(),
        created_at_ms: now_ms,
        expires_at_ms: now_ms + i64::from(quote.valid_for_secs) * 1000,
    }
}

fn route_fee(fee: &Fee) -> RouteFee {
    RouteFee {
        kind: fee.kind.as_str().into(),
        amount: fee.amount.to_string(),
        currency: fee.currency.into(),
    }
}

fn fee_dto(fee: &RouteFee) -> swapd_types::market::Fee {
    swapd_types::market::Fee {
        kind: fee.kind.clone(),
        amount: fee.amount.clone(),
        currency: fee.currency.clone(),
    }
}

/// The signing wallet named by `walletAddress` / `walletChainNamespace`.
fn wallet(query: &SignedQuery) -> Result<Option<Wallet>, ApiError> {
    let namespace = match query.scalar("walletChainNamespace")? {
        None => None,
        Some("eip155") => Some("eip155"),
        Some("solana") => Some("solana"),
        Some(_) => {
            return Err(invalid(
                "walletChainNamespace",
                "must be `eip155` or `solana`",
            ));
        }
    };
    let address = query.scalar("walletAddress")?;
    let namespace = match (namespace, address) {
        (None, None) => return Ok(None),
        (Some(namespace), _) => namespace,
        (None, Some(address)) if address.starts_with("0x") => "eip155",
        (None, Some(_)) => "solana",
    };
    if let Some(address) = address {
        let network = if namespace == "eip155" {
            Network::Ethereum
        } else {
            Network::Solana
        };
        network.validate_address(address).map_err(|e| {
            ApiError::new(
                ErrorCode::AddressInvalid,
                format!("walletAddress: {e} (walletChainNamespace {namespace})"),
            )
        })?;
    }
    Ok(Some(Wallet {
        namespace,
        address: address.map(Into::into),
    }))
}

/// Turns a usable offchain route into a createToken.
#[utoipa::path(post, path = "/api/v3/routes/resolve", operation_id = "resolve_route", tag = "business",
    security(("hmac" = [])),
    description = "Locks the card's terms in a \
        createToken for `POST /orders`: single use, valid 10 minutes, usable only by this key. Onchain \
        cards resolve through `POST /onchain/routes/resolve`.",
    request_body = ResolveInput,
    responses(
        (status = 200, description = "The createToken", body = inline(Success<Resolved>)),
        (status = 404, description = "`route_not_found`: unknown, or received by another key", body = swapd_types::ErrorEnvelope),
        (status = 410, description = "`quote_expired`: the card's expiresAt passed; discover routes again", body = swapd_types::ErrorEnvelope),
        (status = 422, description = "`route_unavailable`: an onchain card", body = swapd_types::ErrorEnvelope),
    ))]
pub(crate) async fn resolve(
    State(state): State<AppState>,
    caller: Caller,
    Extension(claim): Extension<IdempotencyClaim>,
    ApiJson(input): ApiJson<ResolveInput>,
) -> Result<Response, ApiError> {
    let owner = caller.scope();
    let route = owned_route(&state, &owner, &input.route_quote_id).await?;
    let (token, record) = routes::resolve(route, &owner, state.clock.now_ms()).map_err(|e| {
        let code = match e {
            routes::ResolveError::Onchain => ErrorCode::RouteUnavailable,
            routes::ResolveError::Expired => ErrorCode::QuoteExpired,
        };
        ApiError::new(code, e.to_string())
    })?;
    let route = &record.route;
    let resolved = Resolved {
        create_token: token,
        expires_at: record.expires_at_ms / 1000,
        route_quote_id: route.id.clone(),
        from_ccy: route.from_code.clone(),
        to_ccy: route.to_code.clone(),
        from_amount: route.from_amount.clone(),
        to_amount: route.to_amount.clone(),
        rate: route.rate.clone(),
        rate_type: route.rate_type,
        provider: route.provider.clone(),
    };
    let body = serde_json::to_vec(&Success::new(resolved)).map_err(|e| ApiError::internal(&e))?;
    let response = StoredResponse {
        status: 200,
        body: body.clone(),
    };
    state
        .store
        .issue_create_token(&record, claim.finish(&response))
        .await?;
    Ok(committed(json_response(StatusCode::OK, body)))
}

/// The route quote `id` if `owner` received it: 404 `route_not_found` otherwise, the same for a
/// malformed, unknown or foreign id.
pub(crate) async fn owned_route(
    state: &AppState,
    owner: &str,
    id: &str,
) -> Result<RouteQuote, ApiError> {
    let not_found = || {
        ApiError::new(
            ErrorCode::RouteNotFound,
            "no route quote with this routeQuoteId was issued to this key",
        )
    };
    if !swapd_types::ids::is_valid_id(id, "rqq_") {
        return Err(not_found());
    }
    state
        .store
        .route_quote(id, owner)
        .await?
        .ok_or_else(not_found)
}

/// What `GET /routes` asks, read and checked from its query without asking any provider.
struct RoutesAsk<'q> {
    from: &'static CurrencyDef,
    to: &'static CurrencyDef,
    amount: Amount,
    direction: Direction,
    rate_type: RateType,
    provider: Option<&'q str>,
    wallet: Option<Wallet>,
    recipient: Option<String>,
}

fn routes_query<'q>(state: &AppState, query: &'q SignedQuery) -> Result<RoutesAsk<'q>, ApiError> {
    only_parameters(
        query,
        &[
            "fromCcy",
            "toCcy",
            "amount",
            "direction",
            "type",
            "walletAddress",
            "walletChainNamespace",
            "recipientAddress",
            "provider",
        ],
    )?;
    let from = pair_currency(required(query, "fromCcy")?)?;
    let to = pair_currency(required(query, "toCcy")?)?;
    let direction = match query.scalar("direction")? {
        None | Some("from") => Direction::From,
        Some("to") => Direction::To,
        Some(_) => return Err(invalid("direction", "must be `from` or `to`")),
    };
    let rate_type = match query.scalar("type")? {
        None | Some("fixed") => RateType::Fixed,
        Some("float") => RateType::Float,
        Some(_) => return Err(invalid("type", "must be `fixed` or `float`")),
    };
    let amount = parse_amount(required(query, "amount")?, from, to, direction)?;
    let provider = query
        .scalar("provider")?
        .map(|id| known_provider(state, id, "provider"))
        .transpose()?;
    let wallet = wallet(query)?;
    let recipient = query
        .scalar("recipientAddress")?
        .map(|address| check_address(to, address, "recipientAddress").map(|()| address.to_owned()))
        .transpose()?;
    Ok(RoutesAsk {
        from,
        to,
        amount,
        direction,
        rate_type,
        provider,
        wallet,
        recipient,
    })
}

pub(crate) fn check_routes_query(state: &AppState, query: &SignedQuery) -> Result<(), ApiError> {
    routes_query(state, query).map(drop)
}
