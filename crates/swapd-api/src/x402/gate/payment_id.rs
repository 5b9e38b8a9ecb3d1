//! The `payment-identifier` extension (docs/x402.md, "Lost replies"): a payer's id for one paid
//! call, kept with the call's answer and its `PAYMENT-RESPONSE`, so that a call sent again
//! under the same id (after a lost reply, a restart, even with a newly signed payment) gets the
//! first answer without a second settlement.
//!
//! The record is an idempotency record (the same store, lease and retention as Idempotency-Key)
//! in the payer's own scope: another wallet's ids are other records.

use axum::body::{Body, to_bytes};
use axum::extract::Request;
use axum::http::HeaderValue;
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use swapd_core::idempotency::{Begin, StoredResponse, is_storable};
use swapd_core::signing;
use swapd_types::ErrorCode;
use swapd_x402::siwx::Wallet;
use swapd_x402::wire::{PAYMENT_RESPONSE, PaymentPayload};

use crate::idempotency::{self, Hold, IdempotencyClaim, ReleaseIfDropped};
use crate::{ApiError, AppState, MAX_BODY_BYTES};

/// A paid call claimed under its payment identifier: until [`Identified::finish`] stores its
/// answer, dropping it frees the id for another attempt.
pub(super) struct Identified {
    claim: IdempotencyClaim,
    unfinished: ReleaseIfDropped,
}

/// What the payment's identifier decides before anything is settled.
pub(super) enum Decision {
    /// No identifier: the call goes on as any other.
    Absent(Request),
    /// The id is claimed for this call.
    Claimed(Request, Identified),
    /// The answer instead: the first one again, or why the id cannot be used.
    Answer(Response),
}

/// Claims the payment's identifier for `payer`, for this request as it is (method, path, query,
/// body) paid as `payment` accepts (scheme, network, asset, amount, payTo): the same id with
/// anything else is a conflict.
pub(super) async fn claim(
    state: &AppState,
    payer: &Wallet,
    payment: &PaymentPayload,
    request: Request,
) -> Decision {
    let id = match payment.payment_identifier() {
        Ok(Some(id)) => id.to_owned(),
        Ok(None) => return Decision::Absent(request),
        Err(problem) => {
            return Decision::Answer(
                ApiError::new(ErrorCode::InvalidPaymentPayload, problem).into_response(),
            );
        }
    };
    let (parts, body) = request.into_parts();
    let Ok(body) = to_bytes(body, MAX_BODY_BYTES).await else {
        return Decision::Answer(crate::json::too_large().into_response());
    };
    let accepted = &payment.accepted;
    let paid_as = format!(
        "{}|{}|{}|{}|{}|{}",
        parts.uri.path(),
        accepted.scheme,
        accepted.network,
        accepted.asset,
        accepted.amount,
        accepted.pay_to
    );
    let query = signing::canonical_query(parts.uri.query().unwrap_or_default()).unwrap_or_default();
    let parsed: Option<Value> = serde_json::from_slice(&body).ok();
    let fingerprint = swapd_core::idempotency::fingerprint(
        parts.method.as_str(),
        &paid_as,
        &query,
        parsed.as_ref(),
    );
    let scope = scope_of(payer);
    let token = swapd_core::ids::new_id("lease_");
    let now = state.clock.now_ms();
    let begun = state
        .store
        .begin_idempotent(&scope, &id, &fingerprint, &token, &state.node_id, now)
        .await;
    let request = Request::from_parts(parts, Body::from(body));
    match begun {
        Ok(Begin::Execute { .. }) => {
            let claim = IdempotencyClaim::new(scope, id, Hold::Lease(token));
            let unfinished = ReleaseIfDropped::new(state, &claim);
            Decision::Claimed(request, Identified { claim, unfinished })
        }
        Ok(Begin::Replay(stored)) => Decision::Answer(first_answer(state, &scope, &id, stored)),
        Ok(Begin::InFlight { retry_after_secs }) => Decision::Answer(
            ApiError::new(
                ErrorCode::PaymentInProgress,
                "a call with this payment identifier is being settled or served; retry shortly",
            )
            .with_header(
                axum::http::header::RETRY_AFTER,
                HeaderValue::from(retry_after_secs),
            )
            .into_response(),
        ),
        Ok(Begin::Mismatch) => Decision::Answer(
            ApiError::new(
                ErrorCode::PaymentIdentifierConflict,
                "this payment identifier was used for another request or payment; use a new one",
            )
            .into_response(),
        ),
        Err(error) => Decision::Answer(ApiError::from(error).into_response()),
    }
}

/// Ids are the payer's own.
fn scope_of(payer: &Wallet) -> String {
    format!("payment-identifier|{}", payer.scope())
}

/// The first answer as it is stored: its body and its `PAYMENT-RESPONSE`.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Kept {
    payment_response: Option<String>,
    body: String,
}

impl Identified {
    /// Keeps `response`, a paid call's answer, as the id's first answer when it is worth
    /// keeping (not a 5xx: the call stays owed to its payment), and frees the id otherwise.
    pub(super) async fn finish(self, state: &AppState, response: Response) -> Response {
        let Identified { claim, unfinished } = self;
        unfinished.disarm();
        let status = response.status().as_u16();
        if !is_storable(status) {
            idempotency::release(state, &claim).await;
            return response;
        }
        let (parts, body) = response.into_parts();
        let body = match to_bytes(body, usize::MAX).await {
            Ok(body) => body,
            Err(error) => return ApiError::internal(&error).into_response(),
        };
        let kept = Kept {
            payment_response: parts
                .headers
                .get(PAYMENT_RESPONSE)
                .and_then(|value| value.to_str().ok())
                .map(str::to_owned),
            body: String::from_utf8_lossy(&body).into_owned(),
        };
        let kept = serde_json::to_vec(&kept).expect("an answer serializes");
        // Sealed: a paid answer may carry an access token.
        let stored = claim.sealed(&state.master_key, status, &kept);
        match state.store.finish_idempotent(claim.finish(&stored)).await {
            Ok(true) => {}
            Ok(false) => {
                tracing::warn!("payment identifier's lease lost before its answer was kept")
            }
            Err(error) => tracing::error!(%error, "cannot keep a payment identifier's answer"),
        }
        Response::from_parts(parts, Body::from(body))
    }
}

/// The first answer again, as an idempotent replay, with its `PAYMENT-RESPONSE`.
fn first_answer(state: &AppState, scope: &str, id: &str, stored: StoredResponse) -> Response {
    let opened = match idempotency::opened(&state.master_key, scope, id, stored) {
        Ok(opened) => opened,
        Err(error) => return error.into_response(),
    };
    let kept: Kept = match serde_json::from_slice(&opened.body) {
        Ok(kept) => kept,
        Err(error) => {
            return ApiError::internal(format_args!("a kept paid answer: {error}")).into_response();
        }
    };
    let mut response = idempotency::replay(StoredResponse {
        status: opened.status,
        body: kept.body.into_bytes(),
    });
    if let Some(value) = kept
        .payment_response
        .and_then(|value| HeaderValue::from_str(&value).ok())
    {
        response.headers_mut().insert(PAYMENT_RESPONSE, value);
    }
    response
}
