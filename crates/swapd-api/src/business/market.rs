//! Market data and routing on `/api/v3` (DESIGN.md §4): the catalog, tokens, legacy quotes,
//! route discovery and resolution into createTokens. Handlers parse and check input, then ask
//! the aggregator; the answers are mapped into the wire shapes of `swapd_types::market`.

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use base64::Engine;
use sha2::{Digest, Sha256};
use swapd_core::address::Network;
use swapd_core::amount::Amount;
use swapd_core::idempotency::StoredResponse;
use swapd_core::ids;
use swapd_core::market::catalog::{CatalogEntry, SCHEMA_VERSION};
use swapd_core::market::currencies::{CurrencyDef, currency};
use swapd_core::market::routes::{
    self, CREATE_TOKEN_TTL_MS, Candidate, CreateTokenRecord, RouteFee, RouteQuote,
};
use swapd_core::market::tokens::{self, TokenDef};
use swapd_core::market::{Direction, ExecutionType, RateType, pricing};
use swapd_core::provider::{Fee, ProviderError, ProviderQuote, QuoteRequest, Wallet};
use swapd_types::market::{
    Catalog, Currency, QuoteInput, ResolveInput, Resolved, RouteCard, Routes, Token, TokenList,
    TokenLogo,
};
use swapd_types::{ErrorCode, Success};

use crate::idempotency::{CallerScope, IdempotencyClaim, committed};
use crate::{ApiError, ApiJson, AppState, SignedQuery};

const MAX_SEARCH_RESULTS: usize = 100;
const DEFAULT_SEARCH_RESULTS: usize = 20;
const MAX_QUERY_TEXT: usize = 64;

/// The currency catalog.
#[utoipa::path(get, path = "/api/v3/currencies", tag = "business",
    security(("hmac" = [])),
    description = "Every currency some provider trades now, with limits. \
        When a provider cannot be refreshed its last good answer is served (`degraded`, `reason`, \
        `source: cache`); before any provider has answered, the shipped catalog (`source: snapshot`).",
    responses((status = 200, description = "The catalog", body = inline(Success<Catalog>))))]
pub(crate) async fn currencies(
    State(state): State<AppState>,
    query: SignedQuery,
) -> Result<Json<Success<Catalog>>, ApiError> {
    currencies_query(&query)?;
    let view = state.market.catalog(state.clock.now_ms()).await;
    let currencies: Vec<Currency> = view.currencies.iter().map(currency_dto).collect();
    Ok(Json(Success::new(Catalog {
        schema_version: SCHEMA_VERSION,
        count: currencies.len(),
        currencies,
        degraded: view.degraded,
        reason: view.reason,
        source: view.source.as_str().to_owned(),
    })))
}

fn currency_dto(entry: &CatalogEntry) -> Currency {
    let def = entry.currency;
    Currency {
        code: def.code.into(),
        symbol: def.symbol.into(),
        name: def.name.into(),
        network: def.network.code().into(),
        chain_namespace: def.network.chain_namespace().into(),
        chain_id: def.network.evm_chain_id(),
        decimals: def.decimals,
        precision: def.precision,
        contract_address: def.contract.map(Into::into),
        tag_name: def.network.tag_name().map(Into::into),
        tag_required: def.tag_required(),
        send: entry.send,
        receive: entry.receive,
        min: entry.min.to_string(),
        max: entry.max.to_string(),
    }
}

/// Popular tokens.
#[utoipa::path(get, path = "/api/v3/tokens/popular", tag = "business",
    security(("hmac" = [])),
    description = "Optional `chain`: a network code (`BASE`), an EVM chain id \
        (`8453`), a CAIP-2 id (`eip155:8453`) or `solana`.",
    params(("chain" = Option<String>, Query, description = "Only this chain")),
    responses((status = 200, description = "Tokens", body = inline(Success<TokenList>))))]
pub(crate) async fn tokens_popular(
    query: SignedQuery,
) -> Result<Json<Success<TokenList>>, ApiError> {
    let chain = popular_query(&query)?;
    Ok(token_list(tokens::popular(chain).collect()))
}

/// Token search by symbol or name.
#[utoipa::path(get, path = "/api/v3/tokens/search", tag = "business",
    security(("hmac" = [])),
    description = "Case-insensitive match of `q` in symbols and names: exact \
        symbols first, then symbol prefixes, then the rest.",
    params(
        ("q" = String, Query, description = "1 to 64 characters"),
        ("chain" = Option<String>, Query, description = "Only this chain"),
        ("limit" = Option<u32>, Query, description = "1 to 100, default 20"),
    ),
    responses((status = 200, description = "Tokens", body = inline(Success<TokenList>))))]
pub(crate) async fn tokens_search(
    query: SignedQuery,
) -> Result<Json<Success<TokenList>>, ApiError> {
    let (q, chain, limit) = search_query(&query)?;
    Ok(token_list(tokens::search(q, chain, limit)))
}

/// A token by its contract address or mint.
#[utoipa::path(get, path = "/api/v3/tokens/by-address", tag = "business",
    security(("hmac" = [])),
    description = "EVM addresses match in any letter case; Solana mints exactly.",
    params(
        ("chain" = String, Query, description = "Chain of the token"),
        ("address" = String, Query, description = "Contract address or mint"),
    ),
    responses(
        (status = 200, description = "The token", body = inline(Success<Token>)),
        (status = 400, description = "`address_invalid`", body = swapd_types::ErrorEnvelope),
        (status = 404, description = "`not_found`: no such token in the list", body = swapd_types::ErrorEnvelope),
    ))]
pub(crate) async fn tokens_by_address(
    query: SignedQuery,
) -> Result<Json<Success<Token>>, ApiError> {
    let (chain, address) = token_query(&query)?;
    tokens::by_address(chain, address)
        .map(|token| Json(Success::new(token_dto(token))))
        .ok_or_else(|| {
            ApiError::new(
                ErrorCode::NotFound,
                format!("no token with address `{address}` on {chain} is listed"),
            )
        })
}

/// A token's logo as a data URI.
#[utoipa::path(get, path = "/api/v3/tokens/logo", tag = "business",
    security(("hmac" = [])),
    description = "No logos are shipped: the image is generated \
        deterministically from the chain and address (`generated: true`), for listed and unlisted tokens alike.",
    params(
        ("chain" = String, Query, description = "Chain of the token"),
        ("address" = String, Query, description = "Contract address or mint"),
    ),
    responses(
        (status = 200, description = "The logo", body = inline(Success<TokenLogo>)),
        (status = 400, description = "`address_invalid`", body = swapd_types::ErrorEnvelope),
    ))]
pub(crate) async fn tokens_logo(query: SignedQuery) -> Result<Json<Success<TokenLogo>>, ApiError> {
    let (chain, address) = token_query(&query)?;
    let token = tokens::by_address(chain, address);
    let address = token.map_or(address, |t| t.address);
    let symbol = token.map_or_else(
        || address.trim_start_matches("0x").chars().take(4).collect(),
        |t| t.symbol.to_owned(),
    );
    let image = generated_logo(chain, address, &symbol);
    Ok(Json(Success::new(TokenLogo {
        chain: chain.code().into(),
        address: address.into(),
        symbol,
        image,
        generated: true,
    })))
}

/// A round badge in a colour derived from the address, with the symbol on it.
fn generated_logo(chain: Network, address: &str, symbol: &str) -> String {
    let key = if chain.evm_chain_id().is_some() {
        address.to_ascii_lowercase()
    } else {
        address.to_owned()
    };
    let digest = Sha256::digest(format!("{}:{key}", chain.code()));
    let hue = u16::from_be_bytes([digest[0], digest[1]]) % 360;
    let label: String = symbol
        .chars()
        .filter(char::is_ascii_alphanumeric)
        .take(5)
        .collect();
    let svg = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"64\" height=\"64\" viewBox=\"0 0 64 64\">\
         <circle cx=\"32\" cy=\"32\" r=\"32\" fill=\"hsl({hue},55%,45%)\"/>\
         <text x=\"32\" y=\"38\" font-family=\"sans-serif\" font-size=\"15\" font-weight=\"bold\" \
         fill=\"#fff\" text-anchor=\"middle\">{label}</text></svg>"
    );
    format!(
        "data:image/svg+xml;base64,{}",
        base64::engine::general_purpose::STANDARD.encode(svg)
    )
}

fn token_list(list: Vec<&'static TokenDef>) -> Json<Success<TokenList>> {
    let tokens: Vec<Token> = list.into_iter().map(token_dto).collect();
    Json(Success::new(TokenList {
        count: tokens.len(),
        tokens,
    }))
}

fn token_dto(token: &TokenDef) -> Token {
    Token {
        symbol: token.symbol.into(),
        name: token.name.into(),
        chain: token.chain.code().into(),
        chain_namespace: token.chain.chain_namespace().into(),
        chain_id: token.chain.evm_chain_id(),
        address: token.address.into(),
        decimals: token.decimals,
        native: token.is_native(),
        currency_code: token.currency.map(Into::into),
    }
}

fn optional_chain(query: &SignedQuery) -> Result<Option<Network>, ApiError> {
    query.scalar("chain")?.map(parse_chain).transpose()
}

fn parse_chain(text: &str) -> Result<Network, ApiError> {
    tokens::parse_chain(text).ok_or_else(|| {
        invalid(
            "chain",
            "unknown chain: use ETH, BASE, ARBITRUM, BSC, POLYGON or SOL (or an EVM chain id, eip155:<id>, solana)",
        )
    })
}

fn chain_and_address(query: &SignedQuery) -> Result<(Network, &str), ApiError> {
    let chain = parse_chain(required(query, "chain")?)?;
    let address = required(query, "address")?;
    // Lookups ignore EVM letter case, so a wrong checksum is not an error here.
    let checked = if chain.evm_chain_id().is_some() {
        address.to_ascii_lowercase()
    } else {
        address.to_owned()
    };
    chain
        .validate_address(&checked)
        .map_err(|e| ApiError::new(ErrorCode::AddressInvalid, e.to_string()))?;
    Ok((chain, address))
}

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
    let request = QuoteRequest {
        from,
        to,
        amount,
        direction,
        rate_type,
        wallet: None,
        recipient: None,
        now_ms,
    };
    let (provider, quote) = best_offchain_quote(&state, &request, |id| {
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
    record_rates(&state, &request, [(provider, &quote)]);
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
        min: quote.min.to_string(),
        max: quote.max.to_string(),
        provider: provider.into(),
        expires_at: (now_ms + i64::from(quote.valid_for_secs) * 1000) / 1000,
    })))
}

/// Files the rates just served (for `rate_history` jobs), in the background: serving never
/// waits for it, and a failure to file loses only a statistic.
fn record_rates<'a>(
    state: &AppState,
    request: &QuoteRequest,
    served: impl IntoIterator<Item = (&'a str, &'a ProviderQuote)>,
) {
    let pair = swapd_core::market_intel::rate_pair(request.from.code, request.to.code);
    let observations: Vec<swapd_core::store::RateObservation> = served
        .into_iter()
        .map(|(provider, quote)| swapd_core::store::RateObservation {
            pair: pair.clone(),
            observed_at_ms: request.now_ms,
            rate: pricing::rate(quote.from_amount, quote.to_amount).to_string(),
            provider: provider.to_owned(),
        })
        .collect();
    if observations.is_empty() {
        return;
    }
    let store = state.store.clone();
    tokio::spawn(async move {
        if let Err(error) = store.record_rates(&observations).await {
            tracing::warn!(%error, "cannot record served rates");
        }
    });
}

/// The best answer of the offchain providers `allowed` keeps, or why there is none.
pub(crate) async fn best_offchain_quote(
    state: &AppState,
    request: &QuoteRequest,
    allowed: impl Fn(&str) -> bool,
) -> Result<(&'static str, ProviderQuote), ApiError> {
    let mut candidates = state
        .market
        .quote_all(request, |info| {
            info.execution_type == ExecutionType::Offchain && allowed(info.id)
        })
        .await;
    routes::rank(&mut candidates, request.direction);
    let best = candidates
        .iter()
        .find_map(|c| c.outcome.as_ref().ok().map(|q| (c.provider.id, q.clone())));
    best.ok_or_else(|| no_quote(&candidates, request.from, request.to))
}

/// Why no provider could quote: out of range (with the widest limits) over unsupported over
/// unavailable.
fn no_quote(candidates: &[Candidate], from: &CurrencyDef, to: &CurrencyDef) -> ApiError {
    let ranges = candidates.iter().filter_map(|c| match &c.outcome {
        Err(ProviderError::OutOfRange { min, max, .. }) => Some((*min, *max)),
        _ => None,
    });
    if let Some((min, max)) = ranges.reduce(|(a, b), (c, d)| (a.min(c), b.max(d))) {
        return ApiError::new(
            ErrorCode::AmountOutOfRange,
            format!("amount must be between {min} and {max} {}", from.code),
        );
    }
    let unavailable: Vec<String> = candidates
        .iter()
        .filter_map(|c| match &c.outcome {
            Err(error @ ProviderError::Unavailable(_)) => {
                Some(format!("{}: {error}", c.provider.id))
            }
            _ => None,
        })
        .collect();
    if !unavailable.is_empty() {
        return ApiError::new(
            ErrorCode::ProviderError,
            format!(
                "no provider could quote {} → {} now ({}); retry shortly",
                from.code,
                to.code,
                unavailable.join("; ")
            ),
        );
    }
    let onchain = from.onchain_namespace().is_some() && to.onchain_namespace().is_some();
    ApiError::new(
        ErrorCode::PairUnsupported,
        if onchain {
            format!(
                "no offchain provider trades {} → {}; onchain DEX and bridge routes are offered by GET /routes",
                from.code, to.code
            )
        } else {
            format!("no provider trades {} → {}", from.code, to.code)
        },
    )
}

/// Route discovery.
#[utoipa::path(get, path = "/api/v3/routes", tag = "business",
    security(("hmac" = [])),
    description = "Asks every provider at once (each under its own deadline) \
        and answers with route cards, best first; a provider that fails or is too slow appears as a card \
        with `isAvailable: false` and a reason. Usable cards carry a `routeQuoteId` valid until \
        `expiresAt`. Bridging to another namespace than the signer's needs `recipientAddress`.",
    params(
        ("fromCcy" = String, Query, description = "Currency code to send"),
        ("toCcy" = String, Query, description = "Currency code to receive"),
        ("amount" = String, Query, description = "Decimal amount of the side `direction` names"),
        ("direction" = Option<String>, Query, description = "`from` (default) or `to`"),
        ("type" = Option<String>, Query, description = "`fixed` (default) or `float`, for offchain routes"),
        ("walletAddress" = Option<String>, Query, description = "The signer of onchain routes"),
        ("walletChainNamespace" = Option<String>, Query, description = "`eip155` or `solana`; inferred from walletAddress"),
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
    Extension(CallerScope(owner)): Extension<CallerScope>,
    query: SignedQuery,
) -> Result<Json<Success<Routes>>, ApiError> {
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
        .quote_all(&request, |info| provider.is_none_or(|id| id == info.id))
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
        max: quote.max.to_string(),
        fees: quote.fees.iter().map(route_fee).collect(),
        estimated_duration_secs: quote.estimated_duration_secs,
        wallet_address: wallet.as_ref().and_then(|w| w.address.clone()),
        wallet_namespace: wallet.as_ref().map(|w| w.namespace.to_owned()),
        recipient: recipient.clone(),
        gasless: quote.gasless,
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
#[utoipa::path(post, path = "/api/v3/routes/resolve", tag = "business",
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
    Extension(CallerScope(owner)): Extension<CallerScope>,
    Extension(claim): Extension<IdempotencyClaim>,
    ApiJson(input): ApiJson<ResolveInput>,
) -> Result<Response, ApiError> {
    let route = owned_route(&state, &owner, &input.route_quote_id).await?;
    if route.execution_type == ExecutionType::Onchain {
        return Err(ApiError::new(
            ErrorCode::RouteUnavailable,
            "this is an onchain route: resolve it with POST /onchain/routes/resolve",
        ));
    }
    let now_ms = state.clock.now_ms();
    if route.is_expired(now_ms) {
        return Err(ApiError::new(
            ErrorCode::QuoteExpired,
            "this route quote expired; call GET /routes again",
        ));
    }
    let token = routes::new_create_token();
    let expires_at_ms = now_ms + CREATE_TOKEN_TTL_MS;
    let resolved = Resolved {
        create_token: token.clone(),
        expires_at: expires_at_ms / 1000,
        route_quote_id: route.id.clone(),
        from_ccy: route.from_code.clone(),
        to_ccy: route.to_code.clone(),
        from_amount: route.from_amount.clone(),
        to_amount: route.to_amount.clone(),
        rate: route.rate.clone(),
        rate_type: route.rate_type,
        provider: route.provider.clone(),
    };
    let body = serde_json::to_vec(&Success::new(resolved))
        .map_err(|_| ApiError::new(ErrorCode::InternalError, "internal error"))?;
    let response = StoredResponse {
        status: 200,
        body: body.clone(),
    };
    let record = CreateTokenRecord {
        token_hash: routes::hash_create_token(&token),
        owner: owner.clone(),
        route,
        created_at_ms: now_ms,
        expires_at_ms,
        used_at_ms: None,
    };
    state
        .store
        .issue_create_token(&record, claim.finish(&response))
        .await?;
    Ok(committed(
        (
            StatusCode::OK,
            [(axum::http::header::CONTENT_TYPE, "application/json")],
            body,
        )
            .into_response(),
    ))
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

/// `GET /currencies` takes no parameters.
fn currencies_query(query: &SignedQuery) -> Result<(), ApiError> {
    only_parameters(query, &[])
}

fn popular_query(query: &SignedQuery) -> Result<Option<Network>, ApiError> {
    only_parameters(query, &["chain"])?;
    optional_chain(query)
}

fn search_query(query: &SignedQuery) -> Result<(&str, Option<Network>, usize), ApiError> {
    only_parameters(query, &["q", "chain", "limit"])?;
    let q = required(query, "q")?;
    if q.trim().is_empty() || q.chars().count() > MAX_QUERY_TEXT {
        return Err(invalid("q", "must be 1 to 64 characters"));
    }
    let chain = optional_chain(query)?;
    let limit = match query.scalar("limit")? {
        None => DEFAULT_SEARCH_RESULTS,
        Some(text) => text
            .parse::<usize>()
            .ok()
            .filter(|n| (1..=MAX_SEARCH_RESULTS).contains(n))
            .ok_or_else(|| invalid("limit", "must be an integer from 1 to 100"))?,
    };
    Ok((q, chain, limit))
}

/// `chain` and `address` (token lookups and logos).
fn token_query(query: &SignedQuery) -> Result<(Network, &str), ApiError> {
    only_parameters(query, &["chain", "address"])?;
    chain_and_address(query)
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

/// Checks a request's query as the route's handler will read it.
pub type QueryCheck = fn(&AppState, &SignedQuery) -> Result<(), ApiError>;

// The queries of the paid GETs, checked as their handlers read them, so the x402 gate can
// refuse them before any charge.

pub(crate) fn check_currencies_query(_: &AppState, query: &SignedQuery) -> Result<(), ApiError> {
    currencies_query(query)
}

pub(crate) fn check_popular_query(_: &AppState, query: &SignedQuery) -> Result<(), ApiError> {
    popular_query(query).map(drop)
}

pub(crate) fn check_search_query(_: &AppState, query: &SignedQuery) -> Result<(), ApiError> {
    search_query(query).map(drop)
}

pub(crate) fn check_token_query(_: &AppState, query: &SignedQuery) -> Result<(), ApiError> {
    token_query(query).map(drop)
}

pub(crate) fn check_routes_query(state: &AppState, query: &SignedQuery) -> Result<(), ApiError> {
    routes_query(state, query).map(drop)
}

pub(crate) fn pair_currency(code: &str) -> Result<&'static CurrencyDef, ApiError> {
    currency(code).ok_or_else(|| {
        ApiError::new(
            ErrorCode::PairUnsupported,
            format!(
                "unknown currency `{}`; GET /currencies lists the codes",
                code.chars().take(32).collect::<String>()
            ),
        )
    })
}

/// The amount of the side `direction` names, at that currency's precision; positive.
pub(crate) fn parse_amount(
    text: &str,
    from: &CurrencyDef,
    to: &CurrencyDef,
    direction: Direction,
) -> Result<Amount, ApiError> {
    let side = match direction {
        Direction::From => from,
        Direction::To => to,
    };
    let amount = Amount::parse(text, side.precision).map_err(|e| {
        ApiError::new(
            ErrorCode::AmountInvalid,
            format!(
                "amount: {e} ({} has {} fraction digits)",
                side.code, side.precision
            ),
        )
    })?;
    if amount.is_zero() {
        return Err(ApiError::new(
            ErrorCode::AmountInvalid,
            "amount must be greater than zero",
        ));
    }
    Ok(amount)
}

pub(crate) fn check_address(
    currency: &CurrencyDef,
    address: &str,
    field: &str,
) -> Result<(), ApiError> {
    currency
        .network
        .validate_address(address)
        .map_err(|e| ApiError::new(ErrorCode::AddressInvalid, format!("{field}: {e}")))
}

fn known_provider<'a>(state: &AppState, id: &'a str, field: &str) -> Result<&'a str, ApiError> {
    if state.market.providers().any(|info| info.id == id) {
        return Ok(id);
    }
    let known: Vec<&str> = state.market.providers().map(|info| info.id).collect();
    Err(invalid(
        field,
        &format!("unknown provider `{id}`; known: {}", known.join(", ")),
    ))
}

pub(crate) fn required<'a>(query: &'a SignedQuery, name: &str) -> Result<&'a str, ApiError> {
    query
        .scalar(name)?
        .ok_or_else(|| invalid(name, "is required"))
}

/// Refuses parameters the route does not know, so a misspelt filter is not silently ignored.
fn only_parameters(query: &SignedQuery, known: &[&str]) -> Result<(), ApiError> {
    match query
        .0
        .iter()
        .find(|(name, _)| !known.contains(&name.as_str()))
    {
        None => Ok(()),
        Some((name, _)) => Err(invalid(
            name,
            &if known.is_empty() {
                "this route takes no query parameters".to_owned()
            } else {
                format!("unknown parameter; this route takes {}", known.join(", "))
            },
        )),
    }
}

pub(crate) fn invalid(field: &str, problem: &str) -> ApiError {
    let field: String = field.chars().take(64).collect();
    ApiError::new(ErrorCode::ValidationFailed, format!("{field}: {problem}")).with_details(vec![
        swapd_types::FieldProblem {
            field,
            problem: problem.to_owned(),
        },
    ])
}
