//! The sandbox chain's control: `POST /api/v3/sandbox/orders/{orderId}/deposit` simulates a
//! transfer to an order's deposit address. Sandbox mode only: in live mode the route answers
//! 404 as if it did not exist.

use axum::Extension;
use axum::extract::{Path, State};
use axum::response::Response;
use swapd_types::ErrorCode;
use swapd_types::sandbox::{DepositInput, DepositRecorded};

use crate::idempotency::{IdempotencyClaim, respond};
use crate::principal::Caller;
use crate::{ApiError, ApiJson, AppState};

/// Simulates a deposit to an order's address (sandbox only).
#[utoipa::path(post, path = "/api/v3/sandbox/orders/{orderId}/deposit", operation_id = "simulate_deposit", tag = "business",
    security(("hmac" = [])),
    description = "Sandbox mode only (404 in live). \
        Records a transfer of `amount` to the order's deposit address; the order then advances by itself \
        as confirmations accrue. Several deposits to one order are allowed.",
    params(("orderId" = String, Path, description = "`ord_…`")),
    request_body = DepositInput,
    responses(
        (status = 202, description = "The deposit is on the sandbox chain", body = inline(swapd_types::Success<DepositRecorded>)),
        (status = 400, description = "`amount_invalid`", body = swapd_types::ErrorEnvelope),
        (status = 404, description = "`order_not_found`, or `not_found` in live mode", body = swapd_types::ErrorEnvelope),
    ))]
pub(crate) async fn deposit(
    State(state): State<AppState>,
    caller: Caller,
    Extension(claim): Extension<IdempotencyClaim>,
    Path(id): Path<String>,
    ApiJson(input): ApiJson<DepositInput>,
) -> Result<Response, ApiError> {
    if !swapd_app::sandbox::available(state.app()) {
        return Err(ApiError::new(ErrorCode::NotFound, "no such route"));
    }
    let answer =
        swapd_app::sandbox::deposit(state.app(), &caller.owner(), &id, input, Some(&claim)).await?;
    Ok(respond(answer))
}
