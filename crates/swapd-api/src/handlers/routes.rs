//! Route discovery (`GET /routes`) and resolution of an offchain route into a createToken
//! (`POST /routes/resolve`): handlers parse and check input, then ask the aggregator; the
//! answers are mapped into the wire shapes of `swapd_types::market`.

use axum::Extension;
use axum::extract::State;
use axum::response::Response;

use strum::VariantArray;
use swapd_app::routes::{self as routes_app, RoutesAsk};
use swapd_core::address::Network;
use swapd_core::market::provider::Wallet;
use swapd_core::market::{Direction, RateType};
use swapd_types::market::{ResolveInput, Resolved, RouteSort, Routes};
use swapd_types::{ErrorCode, Success};

use super::input::{
    check_address, invalid, known_provider, only_parameters, pair_currency, parse_amount, required,
};
use crate::idempotency::{IdempotencyClaim, respond};
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
        ("affiliateCode" = Option<String>, Query, pattern = "^[A-Za-z0-9_-]{1,64}$", description = "An affiliate's code: its share of the service fee is in the routes, and the orders made from them take the code (docs/fees.md)"),
        ("sort" = inline(Option<swapd_types::market::RouteSort>), Query, description = "`best` (default: the output you can expect from what each provider delivered), `output` (the quoted output), `fastest` or `reliable` (docs/market.md, \"Ranking\")"),
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
    let ask = routes_query(&state, &query)?;
    let sort = ask.sort;
    let routes = routes_app::discover(state.app_for(&caller), &caller.owner(), ask).await?;
    Ok(Json(Success::new(Routes {
        count: routes.len(),
        routes,
        sort,
    })))
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
    let answer =
        routes_app::resolve(state.app(), &caller.owner(), &input.route_quote_id, &claim).await?;
    Ok(respond(answer))
}

/// What `GET /routes` asks, read and checked from its query without asking any provider.
fn routes_query(state: &AppState, query: &SignedQuery) -> Result<RoutesAsk, ApiError> {
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
            "affiliateCode",
            "sort",
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
        .map(|id| known_provider(state, id, "provider").map(str::to_owned))
        .transpose()?;
    let wallet = wallet(query)?;
    let recipient = query
        .scalar("recipientAddress")?
        .map(|address| check_address(to, address, "recipientAddress").map(|()| address.to_owned()))
        .transpose()?;
    let affiliate_code = query.scalar("affiliateCode")?.map(str::to_owned);
    let sort = match query.scalar("sort")? {
        None => RouteSort::default(),
        Some(text) => text.parse().map_err(|_| {
            let allowed: Vec<String> = RouteSort::VARIANTS
                .iter()
                .map(|sort| format!("`{}`", sort.as_str()))
                .collect();
            invalid("sort", &format!("must be one of {}", allowed.join(", ")))
        })?,
    };
    Ok(RoutesAsk {
        from,
        to,
        amount,
        direction,
        rate_type,
        provider,
        wallet,
        recipient,
        affiliate_code,
        sort,
    })
}

pub(crate) fn check_routes_query(state: &AppState, query: &SignedQuery) -> Result<(), ApiError> {
    routes_query(state, query).map(drop)
}
