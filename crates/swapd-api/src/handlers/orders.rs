//! Offchain orders (docs/orders.md): creation from a createToken or a full input,
//! and reads by their owner. The lifecycle after creation belongs to the worker.

use axum::Extension;
use axum::extract::{Path, State};
use axum::response::Response;

use swapd_app::orders::{self, RefundTo};
use swapd_core::offchain::order::Choice;
use swapd_types::Success;
use swapd_types::orders::{OrderInput, OrderView};

use crate::idempotency::{IdempotencyClaim, respond};
use crate::json::Json;
use crate::principal::Caller;
use crate::{ApiError, ApiJson, AppState};

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
    let (_, answer) =
        orders::create(state.app_for(&caller), &caller.owner(), input, &claim).await?;
    Ok(respond(answer))
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
    let order = orders::owned(state.app(), &caller.owner(), &id).await?;
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
    let choice = match input.choice {
        swapd_types::orders::EmergencyChoice::Exchange => Choice::Exchange,
        swapd_types::orders::EmergencyChoice::Refund => Choice::Refund,
    };
    let refund_to = RefundTo {
        address: input.refund_address,
        tag: input.refund_tag,
    };
    let answer = orders::answer_emergency(
        state.app(),
        &caller.owner(),
        &id,
        choice,
        refund_to,
        Some(&claim),
    )
    .await?;
    Ok(respond(answer))
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
    let refund_to = RefundTo {
        address: input.refund_address,
        tag: input.refund_tag,
    };
    let answer = orders::refund(state.app(), &caller.owner(), &id, refund_to, Some(&claim)).await?;
    Ok(respond(answer))
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
    let order = orders::owned(state.app(), &caller.owner(), &id).await?;
    let (from, amount) = (order.from, order.from_amount);
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
    let answer = orders::attach_email(
        state.app(),
        &caller.owner(),
        &id,
        &input.email,
        Some(&claim),
    )
    .await?;
    Ok(respond(answer))
}
