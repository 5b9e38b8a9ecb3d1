//! Market-intel jobs on `/api/x402` (docs/market-intel.md): a paid POST queues an analysis for
//! the wallet; the worker runs it; a free GET by the same wallet reads it.

use axum::Extension;
use axum::extract::{Path, State};
use axum::response::{IntoResponse, Response};
use swapd_core::market_intel::{JobPayment, JobPaymentState};

use swapd_app::market_intel as jobs;
use swapd_types::Success;
use swapd_types::market_intel::{JobInput, JobView};

use crate::idempotency::{IdempotencyClaim, respond};
use crate::json::Json;
use crate::principal::Caller;
use crate::{ApiError, ApiJson, AppState};

/// Queues a market-intel job.
#[utoipa::path(post, path = "/api/x402/market-intel/jobs", tag = "x402",
    description = "The job belongs to the wallet. Needs `Idempotency-Key`: 202 with the queued job, 200 with the same job (and no \
        second charge) when the key is reused. Costs the kind's maximum (`pair_depth` 12 prices of a \
        call, the others one), paid `exact`, or `upto` it: then only what the job used is settled \
        when it ends, nothing when it fails (docs/market-intel.md). Kinds: `pair_depth` (fromCcy, toCcy, steps), \
        `route_scan` (fromCcy, toCcy, amount, direction), `rate_history` (fromCcy, toCcy, \
        windowSecs, buckets); docs/market-intel.md describes each result.",
    request_body = JobInput,
    responses(
        (status = 202, description = "The queued job", body = inline(Success<JobView>)),
        (status = 400, description = "`validation_failed`: an unknown kind (the message lists the valid ones), a bad field", body = swapd_types::ErrorEnvelope),
        (status = 422, description = "`pair_unsupported`: an unknown currency, or the same one twice", body = swapd_types::ErrorEnvelope),
        (status = 402, description = "`payment_required`, `payment_invalid`, `payment_failed`", body = swapd_types::ErrorEnvelope),
    ))]
pub(crate) async fn create_job(
    State(state): State<AppState>,
    caller: Caller,
    Extension(claim): Extension<IdempotencyClaim>,
    payment: Option<Extension<JobPayment>>,
    ApiJson(input): ApiJson<JobInput>,
) -> Result<Response, ApiError> {
    let payment = payment.map(|Extension(payment)| payment);
    let answer = jobs::queue(state.app(), &caller.owner(), &input, payment, &claim).await?;
    Ok(respond(answer))
}

/// A market-intel job of the wallet.
#[utoipa::path(get, path = "/api/x402/market-intel/jobs/{jobId}", tag = "x402",
    description = "Of the wallet that created the job. `status` \
        moves `queued → running → succeeded | failed`; `result` has the shape of the job's kind. \
        A job paid with `upto` says in `payment` what was settled, and its read carries the \
        settlement's `PAYMENT-RESPONSE` (with `amount`).",
    params(("jobId" = String, Path, description = "`job_…`")),
    responses(
        (status = 200, description = "The job", body = inline(Success<JobView>)),
        (status = 402, description = "`payment_required`: no proof; PAYMENT-REQUIRED holds the SIWX challenge (and asks no payment)", body = swapd_types::ErrorEnvelope),
        (status = 404, description = "`job_not_found`: unknown, or another wallet's", body = swapd_types::ErrorEnvelope),
    ))]
pub(crate) async fn get_job(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let job = jobs::owned(state.app(), &caller.owner(), &id).await?;
    let mut response = Json(Success::new(job.view())).into_response();
    // A job paid with `upto`: its read says what was settled, as a paid answer would.
    if let Some(settled) = job.payment.as_ref().and_then(settled) {
        let value = swapd_x402::wire::encode_header(&settled);
        if let Ok(value) = axum::http::HeaderValue::from_str(&value) {
            response
                .headers_mut()
                .insert(swapd_x402::wire::PAYMENT_RESPONSE, value);
        }
    }
    Ok(response)
}

/// The settlement of a job's `upto` payment, once settled.
fn settled(payment: &JobPayment) -> Option<swapd_x402::wire::SettleResponse> {
    let JobPaymentState::Settled {
        amount,
        transaction,
    } = &payment.state
    else {
        return None;
    };
    Some(swapd_x402::wire::SettleResponse {
        success: true,
        error_reason: None,
        error_message: None,
        payer: Some(payment.payer.clone()),
        transaction: transaction.clone(),
        network: payment.network.clone(),
        amount: Some(amount.clone()),
    })
}
