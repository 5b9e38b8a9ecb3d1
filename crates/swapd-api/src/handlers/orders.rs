//! Offchain orders (docs/orders.md): creation from a createToken or a full input,
//! and reads by their owner. The lifecycle after creation belongs to the worker.

use axum::Extension;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

use swapd_core::amount::Amount;
use swapd_core::desk::{DeskError, Destination, ExchangeRequest, token_context};
use swapd_core::idempotency::StoredResponse;
use swapd_core::ids;
use swapd_core::lifecycle::{self, ChoiceError, OpenOrder};
use swapd_core::market::ExecutionType;
use swapd_core::market::currencies::{CurrencyDef, currency};
use swapd_core::market::routes::{self, RedeemError};
use swapd_core::orders::{Choice, EventType, Order, OrderStatus};
use swapd_core::provider::QuoteRequest;
use swapd_types::orders::{OrderInput, OrderView};
use swapd_types::{ErrorCode, Success};

use super::input::{check_address, invalid, pair_currency, parse_amount};
use super::quotes::best_offchain_quote;
use crate::error::json_response;
use crate::idempotency::{IdempotencyClaim, committed};
use crate::json::Json;
use crate::principal::Caller;
use crate::{ApiError, ApiJson, AppState};

/// The terms an order is made on.
struct Terms {
    from: &'static CurrencyDef,
    to: &'static CurrencyDef,
    provider: String,
    rate_type: swapd_core::market::RateType,
    direction: swapd_core::market::Direction,
    from_amount: Amount,
    to_amount: Amount,
    min: String,
    max: Option<String>,
    /// The desk's handle on the fixed rate quoted.
    rate_lock: Option<String>,
    create_token_hash: Option<String>,
}

/// Creates an order.
#[utoipa::path(post, path = "/api/v3/orders", tag = "business",
    security(("hmac" = [])),
    description = "With a `createToken` the order \
        takes the resolved route's terms (a fixed rate stays locked); otherwise the best offchain \
        offer for `fromCcy`, `toCcy`, `amount`, `direction`, `type` is taken. 201 for a new order, 200 \
        with `Idempotent-Replayed: true` when the same key is reused. `quoteId` is not accepted.",
    request_body = OrderInput,
    responses(
        (status = 201, description = "The new order, awaiting its deposit", body = inline(Success<OrderView>)),
        (status = 400, description = "`validation_failed`, `amount_invalid`, `address_invalid`, `tag_required`", body = swapd_types::ErrorEnvelope),
        (status = 404, description = "`not_found`: unknown createToken, or another key's", body = swapd_types::ErrorEnvelope),
        (status = 409, description = "`create_token_used`", body = swapd_types::ErrorEnvelope),
        (status = 410, description = "`create_token_expired`", body = swapd_types::ErrorEnvelope),
        (status = 422, description = "`pair_unsupported`, `amount_out_of_range`", body = swapd_types::ErrorEnvelope),
        (status = 502, description = "`provider_error`", body = swapd_types::ErrorEnvelope),
    ))]
pub(crate) async fn create_order(
    State(state): State<AppState>,
    caller: Caller,
    Extension(claim): Extension<IdempotencyClaim>,
    ApiJson(input): ApiJson<OrderInput>,
) -> Result<Response, ApiError> {
    let owner = caller.scope();
    let now_ms = state.clock.now_ms();
    let terms = match &input.create_token {
        Some(token) => token_terms(&state, &owner, &input, token, now_ms).await?,
        None => quoted_terms(&state, &input, now_ms).await?,
    };
    let (from, to) = (terms.from, terms.to);
    check_address(to, &input.to_address, "toAddress")?;
    check_tag(to, input.tag.as_deref(), "tag")?;
    if to.tag_required() && input.tag.is_none() {
        return Err(ApiError::new(
            ErrorCode::TagRequired,
            format!(
                "{} payouts need a {} in `tag`; without it the funds cannot be credited",
                to.code,
                to.network.tag_name().unwrap_or("tag")
            ),
        ));
    }
    if let Some(refund) = &input.refund_address {
        check_address(from, refund, "refundAddress")?;
    }
    check_tag(from, input.refund_tag.as_deref(), "refundTag")?;
    if input.refund_tag.is_some() && input.refund_address.is_none() {
        return Err(invalid("refundTag", "needs refundAddress"));
    }
    if let Some(email) = &input.email {
        check_email(email)?;
    }
    if let Some(code) = &input.affiliate_code {
        let well_formed = (1..=64).contains(&code.len())
            && code
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
        if !well_formed {
            return Err(invalid(
                "affiliateCode",
                "1 to 64 letters, digits, `_` or `-`",
            ));
        }
    }

    let order_id = ids::new_id("ord_");
    let desk = state
        .market
        .desk(&terms.provider)
        .ok_or_else(|| ApiError::new(ErrorCode::ProviderError, "the route's provider is gone"))?;
    let deposit_deadline_ms = now_ms + state.order_lifetimes.for_rate(terms.rate_type);
    let request = ExchangeRequest {
        reference: order_id.clone(),
        from,
        to,
        rate_type: terms.rate_type,
        from_amount: terms.from_amount,
        to_amount: terms.to_amount,
        rate_lock: terms.rate_lock.clone(),
        payout: Destination {
            address: input.to_address.clone(),
            tag: input.tag.clone(),
        },
        refund: input.refund_address.clone().map(|address| Destination {
            address,
            tag: input.refund_tag.clone(),
        }),
        deposit_deadline_ms,
        now_ms,
    };
    let mut exchange = tokio::time::timeout(swapd_core::desk::CALL_DEADLINE, desk.open(&request))
        .await
        .map_err(|_| DeskError::Unavailable {
            detail: "no answer in time".into(),
        })
        .and_then(|opened| opened)
        .map_err(|error| open_error(&terms.provider, &error))?;
    exchange.access_token = exchange.access_token.map(|token| {
        state
            .master_key
            .seal(token.as_bytes(), &token_context(&order_id))
    });

    let page_url = crate::order_page::new_link(
        state.public_url(),
        crate::order_page::Page::Order,
        &order_id,
    );
    let (order, events) = lifecycle::open(OpenOrder {
        id: order_id,
        owner,
        from,
        to,
        rate_type: terms.rate_type,
        direction: terms.direction,
        from_amount: terms.from_amount,
        to_amount: terms.to_amount,
        min: terms.min,
        max: terms.max,
        provider: terms.provider,
        exchange,
        to_address: input.to_address,
        to_tag: input.tag,
        refund_address: input.refund_address,
        refund_tag: input.refund_tag,
        email: input.email,
        affiliate_code: input.affiliate_code,
        create_token_hash: terms.create_token_hash.clone(),
        page_url: Some(page_url),
        lifetimes: state.order_lifetimes,
        now_ms,
    });

    let body =
        serde_json::to_vec(&Success::new(order.view())).map_err(|e| ApiError::internal(&e))?;
    let response = StoredResponse {
        status: 201,
        body: body.clone(),
    };
    let finish = claim.finish(&response);
    state
        .store
        .create_order(&order, &events, terms.create_token_hash.as_deref(), finish)
        .await?
        .map_err(redeem_error)?;
    Ok(committed(json_response(StatusCode::CREATED, body)))
}

async fn token_terms(
    state: &AppState,
    owner: &str,
    input: &OrderInput,
    token: &str,
    now_ms: i64,
) -> Result<Terms, ApiError> {
    let fixed_by_token = [
        ("fromCcy", input.from_ccy.is_some()),
        ("toCcy", input.to_ccy.is_some()),
        ("amount", input.amount.is_some()),
        ("direction", input.direction.is_some()),
        ("type", input.rate_type.is_some()),
    ];
    if let Some((field, _)) = fixed_by_token.iter().find(|(_, given)| *given) {
        return Err(invalid(field, "leave it out: the createToken fixes it"));
    }
    if !routes::is_create_token(token) {
        return Err(redeem_error(RedeemError::NotFound));
    }
    let hash = routes::hash_create_token(token);
    let record = state
        .store
        .create_token(&hash, owner)
        .await?
        .ok_or_else(|| redeem_error(RedeemError::NotFound))?;
    if record.used_at_ms.is_some() {
        return Err(redeem_error(RedeemError::Used));
    }
    if now_ms >= record.expires_at_ms {
        return Err(redeem_error(RedeemError::Expired));
    }
    let route = record.route;
    if route.execution_type != ExecutionType::Offchain {
        return Err(ApiError::new(
            ErrorCode::RouteUnavailable,
            "onchain routes are executed with POST /onchain/routes/resolve",
        ));
    }
    let stored = |code: &str| {
        currency(code)
            .ok_or_else(|| ApiError::internal(format_args!("stored currency {code} is unknown")))
    };
    let (from, to) = (stored(&route.from_code)?, stored(&route.to_code)?);
    let amount = |text: &str, def: &CurrencyDef| {
        Amount::parse(text, def.precision).map_err(|e| ApiError::internal(&e))
    };
    Ok(Terms {
        from,
        to,
        provider: route.provider,
        rate_type: route.rate_type,
        direction: route.direction,
        from_amount: amount(&route.from_amount, from)?,
        to_amount: amount(&route.to_amount, to)?,
        min: route.min,
        max: route.max,
        rate_lock: route.rate_lock,
        create_token_hash: Some(hash),
    })
}

async fn quoted_terms(
    state: &AppState,
    input: &OrderInput,
    now_ms: i64,
) -> Result<Terms, ApiError> {
    let missing = |field: &str| invalid(field, "is required without a createToken");
    let from = pair_currency(
        input
            .from_ccy
            .as_deref()
            .ok_or_else(|| missing("fromCcy"))?,
    )?;
    let to = pair_currency(input.to_ccy.as_deref().ok_or_else(|| missing("toCcy"))?)?;
    let direction = input.direction.unwrap_or_default();
    let rate_type = input.rate_type.unwrap_or_default();
    let amount = parse_amount(
        input.amount.as_deref().ok_or_else(|| missing("amount"))?,
        from,
        to,
        direction,
    )?;
    let request = QuoteRequest::without_wallet(from, to, amount, direction, rate_type, now_ms);
    let (provider, quote) = best_offchain_quote(state, &request, |_| true).await?;
    Ok(Terms {
        from,
        to,
        provider: provider.into(),
        rate_type,
        direction,
        from_amount: quote.from_amount,
        to_amount: quote.to_amount,
        min: quote.min.to_string(),
        max: quote.max.map(|a| a.to_string()),
        rate_lock: quote.rate_lock,
        create_token_hash: None,
    })
}

fn redeem_error(error: RedeemError) -> ApiError {
    let code = match error {
        RedeemError::NotFound => ErrorCode::NotFound,
        RedeemError::Used => ErrorCode::CreateTokenUsed,
        RedeemError::Expired => ErrorCode::CreateTokenExpired,
    };
    ApiError::new(code, error.to_string())
}

fn check_tag(currency: &CurrencyDef, tag: Option<&str>, field: &str) -> Result<(), ApiError> {
    currency
        .network
        .validate_tag(tag)
        .map_err(|e| invalid(field, &e.to_string()))
}

fn check_email(email: &str) -> Result<(), ApiError> {
    if swapd_types::orders::is_email_address(email) && swapd_core::notify::can_send_to(email) {
        Ok(())
    } else {
        Err(invalid("email", "is not an e-mail address"))
    }
}

fn order_not_found() -> ApiError {
    ApiError::new(
        ErrorCode::OrderNotFound,
        "no order with this id belongs to this key",
    )
}

/// Loads an order of the caller: 404 for unknown ids and other principals' orders alike.
pub(crate) async fn owned_order(
    state: &AppState,
    owner: &str,
    id: &str,
) -> Result<Order, ApiError> {
    if !swapd_types::ids::is_valid_id(id, "ord_") {
        return Err(order_not_found());
    }
    state
        .store
        .order(id, owner)
        .await?
        .ok_or_else(order_not_found)
}

/// Reads an order.
#[utoipa::path(get, path = "/api/v3/orders/{orderId}", tag = "business",
    security(("hmac" = [])),
    description = "Only the key that created the order can read it; any other key \
        gets the same 404 as for an unknown id.",
    params(("orderId" = String, Path, description = "`ord_…`")),
    responses(
        (status = 200, description = "The order", body = inline(Success<OrderView>)),
        (status = 404, description = "`order_not_found`", body = swapd_types::ErrorEnvelope),
    ))]
pub(crate) async fn get_order(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Json<Success<OrderView>>, ApiError> {
    let owner = caller.scope();
    let order = owned_order(&state, &owner, &id).await?;
    Ok(Json(Success::new(order.view())))
}

/// Reads an order's status (the same view as the order).
#[utoipa::path(get, path = "/api/v3/orders/{orderId}/status", tag = "business",
    security(("hmac" = [])),
    description = "The same payload as `GET /orders/{orderId}`.",
    params(("orderId" = String, Path, description = "`ord_…`")),
    responses(
        (status = 200, description = "The order", body = inline(Success<OrderView>)),
        (status = 404, description = "`order_not_found`", body = swapd_types::ErrorEnvelope),
    ))]
pub(crate) async fn get_order_status(
    state: State<AppState>,
    caller: Caller,
    id: Path<String>,
) -> Result<Json<Success<OrderView>>, ApiError> {
    get_order(state, caller, id).await
}

/// Checks a refund destination given in a request body against the order's input network.
fn refund_destination(
    order: &Order,
    address: Option<String>,
    tag: Option<String>,
) -> Result<Option<(String, Option<String>)>, ApiError> {
    let from = currency(&order.from_code).ok_or_else(|| {
        ApiError::internal(format_args!(
            "stored currency {} is unknown",
            order.from_code
        ))
    })?;
    match address {
        Some(address) => {
            check_address(from, &address, "refundAddress")?;
            check_tag(from, tag.as_deref(), "refundTag")?;
            Ok(Some((address, tag)))
        }
        None if tag.is_some() => Err(invalid("refundTag", "needs refundAddress")),
        None => Ok(None),
    }
}

/// Why a desk did not open an exchange, in swapd's codes: never the desk's own words.
fn open_error(provider: &str, error: &DeskError) -> ApiError {
    tracing::warn!(provider, %error, "the desk did not open an exchange");
    match error {
        DeskError::PairUnsupported => ApiError::new(
            ErrorCode::PairUnsupported,
            format!("{provider} does not trade this pair now"),
        ),
        DeskError::OutOfRange { min, max } => {
            let bound = |b: &Option<Amount>| b.map_or_else(|| "-".to_owned(), |a| a.to_string());
            ApiError::new(
                ErrorCode::AmountOutOfRange,
                format!(
                    "{provider} takes between {} and {} of the input now",
                    bound(min),
                    bound(max)
                ),
            )
        }
        DeskError::AddressRefused => ApiError::new(
            ErrorCode::AddressInvalid,
            format!("{provider} refused the payout or refund address"),
        ),
        // Briefly out of reach: no order was created, and the same request may work soon.
        DeskError::Unavailable { .. } => unavailable(provider),
        DeskError::RateLimited { retry_after } => match retry_after {
            Some(wait) => unavailable(provider).with_header(
                axum::http::header::RETRY_AFTER,
                axum::http::HeaderValue::from(wait.as_secs().max(1)),
            ),
            None => unavailable(provider),
        },
        _ => ApiError::new(
            ErrorCode::ProviderError,
            format!("{provider} refused to open the exchange"),
        ),
    }
}

fn unavailable(provider: &str) -> ApiError {
    ApiError::new(
        ErrorCode::ServiceUnavailable,
        format!(
            "{provider} is not answering now; no order was created; retry with the same Idempotency-Key"
        ),
    )
}

/// Refuses a decision the order's desk cannot carry out through its API, before anything
/// changes.
fn check_desk_action(state: &AppState, order: &Order, choose: bool) -> Result<(), ApiError> {
    let actions = state
        .market
        .desk(&order.provider)
        .map(|desk| desk.actions())
        .unwrap_or_default();
    let (can, what) = if choose {
        (actions.choose, "answers to an emergency")
    } else {
        (actions.refund, "refunds outside an emergency")
    };
    if can {
        Ok(())
    } else {
        Err(ApiError::new(
            ErrorCode::DeskActionUnsupported,
            format!(
                "{} takes no {what} through its API; contact its support with the order's deposit transaction",
                order.provider
            ),
        ))
    }
}

fn choice_error(error: ChoiceError) -> ApiError {
    if let ChoiceError::RefundAddressMissing = error {
        // A rule on the order's state: the body must give what the order lacks.
        return ApiError::new(ErrorCode::ValidationFailed, error.to_string()).with_details(vec![
            swapd_types::FieldProblem {
                field: "refundAddress".into(),
                problem: "is required: the order was created without one".into(),
            },
        ]);
    }
    let code = match error {
        ChoiceError::NotInEmergency(_) | ChoiceError::AlreadyChosen(_) => {
            ErrorCode::OrderStateConflict
        }
        ChoiceError::NotAllowed { .. } => ErrorCode::ChoiceNotAllowed,
        ChoiceError::RefundAddressMissing => unreachable!("answered above"),
        ChoiceError::NotRefundable(_) => ErrorCode::OrderNotRefundable,
    };
    ApiError::new(code, error.to_string())
}

/// How often a user-driven change is re-read and re-applied when the engine wrote the order
/// between our read and our write.
const CHANGE_ATTEMPTS: usize = 3;

/// Applies a user-driven change (`decide` turns the current order into the changed one and its
/// event, or `None` for no change) with a compare-and-set, its outbox event and the request's
/// idempotency record in one transaction, re-reading the order when the engine moved it
/// meanwhile.
async fn apply_change(
    state: &AppState,
    owner: &str,
    id: &str,
    claim: Option<&IdempotencyClaim>,
    decide: impl Fn(&Order) -> Result<Option<(Order, EventType)>, ApiError>,
) -> Result<Response, ApiError> {
    for _ in 0..CHANGE_ATTEMPTS {
        let current = owned_order(state, owner, id).await?;
        let Some((mut updated, event)) = decide(&current)? else {
            // Nothing changes: the answer is stored as any other by the idempotency layer.
            return Ok(Json(Success::new(current.view())).into_response());
        };
        let recorded = updated.record_event(event, Some(current.status));
        let body = serde_json::to_vec(&Success::new(updated.view()))
            .map_err(|e| ApiError::internal(&e))?;
        let response = StoredResponse {
            status: 200,
            body: body.clone(),
        };
        if state
            .store
            .update_order(
                &updated,
                &[recorded],
                claim.map(|claim| claim.finish(&response)),
            )
            .await?
        {
            return Ok(committed(json_response(StatusCode::OK, body)));
        }
    }
    Err(ApiError::new(
        ErrorCode::OrderStateConflict,
        "the order keeps changing; read it and try again",
    ))
}

/// Answers an emergency.
#[utoipa::path(post, path = "/api/v3/orders/{orderId}/emergency", tag = "business",
    security(("hmac" = [])),
    description = "EXCHANGE continues at the current \
        market rate for the amount received; REFUND sends the deposit back to `refundAddress` (or the one \
        given at creation). Repeating the choice already made answers the order unchanged.",
    params(("orderId" = String, Path, description = "`ord_…`")),
    request_body = swapd_types::orders::EmergencyInput,
    responses(
        (status = 200, description = "The order after the choice", body = inline(Success<OrderView>)),
        (status = 400, description = "`validation_failed` (REFUND without any refund address), `address_invalid`", body = swapd_types::ErrorEnvelope),
        (status = 404, description = "`order_not_found`", body = swapd_types::ErrorEnvelope),
        (status = 409, description = "`choice_not_allowed`, `order_state_conflict`, `desk_action_unsupported` (the order's desk takes no answer through its API)", body = swapd_types::ErrorEnvelope),
    ))]
pub(crate) async fn emergency(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    Extension(claim): Extension<IdempotencyClaim>,
    ApiJson(input): ApiJson<swapd_types::orders::EmergencyInput>,
) -> Result<Response, ApiError> {
    answer_emergency(&state, &caller.scope(), &id, Some(&claim), input).await
}

/// The emergency answer of `owner`'s order `id`, for the API (with the request's idempotency
/// claim) and the hosted order page (without: a repeated choice changes nothing anyway).
pub(crate) async fn answer_emergency(
    state: &AppState,
    owner: &str,
    id: &str,
    claim: Option<&IdempotencyClaim>,
    input: swapd_types::orders::EmergencyInput,
) -> Result<Response, ApiError> {
    let choice = match input.choice {
        swapd_types::orders::EmergencyChoice::Exchange => Choice::Exchange,
        swapd_types::orders::EmergencyChoice::Refund => Choice::Refund,
    };
    let now_ms = state.clock.now_ms();
    apply_change(state, owner, id, claim, |order| {
        let refund = refund_destination(
            order,
            input.refund_address.clone(),
            input.refund_tag.clone(),
        )?;
        let changed = lifecycle::choose(order, choice, refund, now_ms).map_err(choice_error)?;
        if changed.is_some() {
            check_desk_action(state, order, true)?;
        }
        Ok(changed)
    })
    .await
}

/// Asks for a refund of a deposit that was not exchanged.
#[utoipa::path(post, path = "/api/v3/orders/{orderId}/refund", tag = "business",
    security(("hmac" = [])),
    description = "For an order holding a deposit that \
        was not exchanged (confirming, or in an emergency without a choice): the deposit goes back to \
        `refundAddress` (or the one given at creation). Any other order: 409 `order_not_refundable`.",
    params(("orderId" = String, Path, description = "`ord_…`")),
    request_body = swapd_types::orders::RefundInput,
    responses(
        (status = 200, description = "The order, refunding", body = inline(Success<OrderView>)),
        (status = 400, description = "`validation_failed`, `address_invalid`", body = swapd_types::ErrorEnvelope),
        (status = 404, description = "`order_not_found`", body = swapd_types::ErrorEnvelope),
        (status = 409, description = "`order_not_refundable`, `desk_action_unsupported` (the order's desk takes no refund through its API)", body = swapd_types::ErrorEnvelope),
    ))]
pub(crate) async fn refund(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    Extension(claim): Extension<IdempotencyClaim>,
    ApiJson(input): ApiJson<swapd_types::orders::RefundInput>,
) -> Result<Response, ApiError> {
    let owner = caller.scope();
    let now_ms = state.clock.now_ms();
    apply_change(&state, &owner, &id, Some(&claim), |order| {
        let refund = refund_destination(
            order,
            input.refund_address.clone(),
            input.refund_tag.clone(),
        )?;
        let changed = lifecycle::request_refund(order, refund, now_ms).map_err(choice_error)?;
        check_desk_action(&state, order, order.status == OrderStatus::Emergency)?;
        Ok(Some(changed))
    })
    .await
}

/// Deposit QR codes.
#[utoipa::path(get, path = "/api/v3/orders/{orderId}/qr", tag = "business",
    security(("hmac" = [])),
    description = "Two QR codes of the deposit's wallet URI (BIP-21, EIP-681, \
        Solana Pay, `tron:`, `xrpl:` with the destination tag): the address alone, and with the amount to \
        send (`checked`). Each as PNG and SVG data URIs.",
    params(("orderId" = String, Path, description = "`ord_…`")),
    responses(
        (status = 200, description = "QR codes", body = inline(Success<swapd_types::orders::DepositQr>)),
        (status = 404, description = "`order_not_found`", body = swapd_types::ErrorEnvelope),
    ))]
pub(crate) async fn deposit_qr(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Json<Success<swapd_types::orders::DepositQr>>, ApiError> {
    let owner = caller.scope();
    let order = owned_order(&state, &owner, &id).await?;
    let from = currency(&order.from_code).ok_or_else(|| {
        ApiError::internal(format_args!(
            "stored currency {} is unknown",
            order.from_code
        ))
    })?;
    let amount =
        Amount::parse(&order.from_amount, from.precision).map_err(|e| ApiError::internal(&e))?;
    let tag = order.deposit_tag.as_deref();
    let variants = [
        ("Address", "address", None, false),
        ("With amount", "amount", Some(amount), true),
    ];
    let qr = variants
        .into_iter()
        .map(|(title, kind, amount, checked)| {
            let payload =
                swapd_core::payment_uri::wallet_uri(from, &order.deposit_address, tag, amount);
            let (image, svg) = crate::qr::images(&payload)
                .ok_or_else(|| ApiError::internal("a deposit URI does not fit in a QR code"))?;
            Ok(swapd_types::orders::QrImage {
                title: title.into(),
                kind: kind.into(),
                payload,
                image,
                svg,
                checked,
            })
        })
        .collect::<Result<Vec<_>, ApiError>>()?;
    Ok(Json(Success::new(swapd_types::orders::DepositQr { qr })))
}

/// Attaches an e-mail address for status e-mails.
#[utoipa::path(post, path = "/api/v3/orders/{orderId}/notifications/email", tag = "business",
    security(("hmac" = [])),
    description = "Every later status change of \
        the order is e-mailed to `email` (SMTP in live mode, `.eml` files under the data directory in \
        sandbox mode). Attaching the address already attached changes nothing; another one replaces it.",
    params(("orderId" = String, Path, description = "`ord_…`")),
    request_body = swapd_types::orders::EmailInput,
    responses(
        (status = 200, description = "The order (`emailAttached: true`)", body = inline(Success<OrderView>)),
        (status = 400, description = "`validation_failed`: not an e-mail address", body = swapd_types::ErrorEnvelope),
        (status = 404, description = "`order_not_found`", body = swapd_types::ErrorEnvelope),
    ))]
pub(crate) async fn attach_email(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    Extension(claim): Extension<IdempotencyClaim>,
    ApiJson(input): ApiJson<swapd_types::orders::EmailInput>,
) -> Result<Response, ApiError> {
    let owner = caller.scope();
    check_email(&input.email)?;
    let now_ms = state.clock.now_ms();
    apply_change(&state, &owner, &id, Some(&claim), |order| {
        Ok(lifecycle::attach_email(order, &input.email, now_ms))
    })
    .await
}
