//! The sandbox chain's control: `POST /api/v3/sandbox/orders/{orderId}/deposit` simulates a
//! transfer to an order's deposit address. Sandbox mode only: in live mode the route answers
//! 404 as if it did not exist.

use axum::Extension;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::Response;
use swapd_core::Mode;
use swapd_core::amount::Amount;
use swapd_core::market::currencies::currency;
use swapd_core::store::SandboxDeposit;
use swapd_types::ErrorCode;
use swapd_types::sandbox::{DepositInput, DepositRecorded};

use super::input::invalid;
use super::orders::owned_order;
use crate::idempotency::{IdempotencyClaim, Prepared};
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
    if state.mode != Mode::Sandbox {
        return Err(ApiError::new(ErrorCode::NotFound, "no such route"));
    }
    simulate_deposit(&state, &caller.scope(), &id, input, Some(&claim)).await
}

/// A simulated deposit to `owner`'s order `id`, for the API (with the request's idempotency
/// claim) and the hosted order page's sandbox button. Sandbox mode only: the caller checks.
pub(crate) async fn simulate_deposit(
    state: &AppState,
    owner: &str,
    id: &str,
    input: DepositInput,
    claim: Option<&IdempotencyClaim>,
) -> Result<Response, ApiError> {
    let order = owned_order(state, owner, id).await?;
    let from = currency(&order.from_code).ok_or_else(|| {
        ApiError::internal(format_args!(
            "stored currency {} is unknown",
            order.from_code
        ))
    })?;
    let amount = Amount::parse(&input.amount, from.precision).map_err(|e| {
        ApiError::new(
            ErrorCode::AmountInvalid,
            format!(
                "amount: {e} ({} has {} fraction digits)",
                from.code, from.precision
            ),
        )
    })?;
    if amount.is_zero() {
        return Err(ApiError::new(
            ErrorCode::AmountInvalid,
            "amount must be greater than zero",
        ));
    }
    let confirmations = input.confirmations.unwrap_or(0);
    if confirmations > 1_000 {
        return Err(invalid("confirmations", "at most 1000"));
    }
    let recorded = SandboxDeposit {
        tx_id: swapd_core::ids::new_tx_id(),
        address: order.deposit_address,
        tag: order.deposit_tag,
        amount: amount.to_string(),
        confirmations,
        seen_at_ms: state.clock.now_ms(),
    };
    let answer = Prepared::new(
        StatusCode::ACCEPTED,
        &DepositRecorded {
            tx_id: recorded.tx_id.clone(),
            address: recorded.address.clone(),
            tag: recorded.tag.clone(),
            amount: recorded.amount.clone(),
            confirmations,
        },
    )?;
    state
        .store
        .sandbox_record_deposit(&recorded, claim.map(|claim| answer.finish(claim)))
        .await?;
    wake(state, owner, id, recorded.seen_at_ms).await?;
    Ok(answer.into_response())
}

/// Makes the engine look at the order now (a finished order too: a deposit after the first is
/// sent back). Retried when the engine writes the order meanwhile, which wakes it anyway.
async fn wake(state: &AppState, owner: &str, id: &str, now_ms: i64) -> Result<(), ApiError> {
    for _ in 0..3 {
        let order = owned_order(state, owner, id).await?;
        let Some(due) = swapd_core::lifecycle::wake(&order, now_ms) else {
            return Ok(());
        };
        if state.store.update_order(&due, &[], None).await? {
            return Ok(());
        }
    }
    Ok(())
}
