//! The `payment-identifier` extension (docs/x402.md, "Lost replies"): a payer's id for one paid
//! call, kept with the call's answer and its `PAYMENT-RESPONSE`, so that a call sent again
//! under the same id (after a lost reply, a restart, even with a newly signed payment) gets the
//! first answer without a second settlement.
//!
//! The record is an idempotency record (the same store, lease and retention as Idempotency-Key)
//! in the payer's own scope: another wallet's ids are other records.

use axum::body::{Body, to_bytes};
use axum::http::HeaderValue;
use axum::response::{IntoResponse, Response};
use serde_json::Value;
use swapd_core::idempotency::{Begin, StoredResponse, is_storable};
use swapd_core::signing;
use swapd_types::ErrorCode;
use swapd_x402::siwx::Wallet;
use swapd_x402::wire::{PAYMENT_RESPONSE, PaymentPayload};

use super::Context;
use crate::idempotency::{self, Hold, IdempotencyClaim, ReleaseIfDropped};
use crate::{ApiError, AppState};

/// A paid call claimed under its payment identifier: until [`Identified::finish`] stores its
/// answer, dropping it frees the id for another attempt.
pub(super) struct Identified {
    claim: IdempotencyClaim,
    unfinished: ReleaseIfDropped,
}

/// What the payment's identifier decides before anything is settled.
pub(super) enum Decision {
    /// No identifier: the call goes on as any other.
    Absent,
    /// The id is claimed for this call.
    Claimed(Identified),
    /// The answer instead: the first one again, or why the id cannot be used.
    Answer(Response),
}

/// Claims the payment's identifier for `payer`, for the request of `context` as it is (method,
/// path, query, the body its input check read) paid as `payment` accepts (scheme, network,
/// asset, amount, payTo): the same id with anything else is a conflict.
pub(super) async fn claim(
    context: &Context<'_>,
    payer: &Wallet,
    payment: &PaymentPayload,
) -> Decision {
    let state = context.state;
    let id = match payment.payment_identifier() {
        Ok(Some(id)) => id.to_owned(),
        Ok(None) => return Decision::Absent,
        Err(problem) => {
            return Decision::Answer(
                ApiError::new(ErrorCode::InvalidPaymentPayload, problem).into_response(),
            );
        }
    };
    let accepted = &payment.accepted;
    let paid_as = format!(
        "{}|{}|{}|{}|{}|{}",
        context.path,
        accepted.scheme,
        accepted.network,
        accepted.asset,
        accepted.amount,
        accepted.pay_to
    );
    let query =
        signing::canonical_query(context.query.as_deref().unwrap_or_default()).unwrap_or_default();
    let parsed: Option<Value> = context
        .body
        .get()
        .and_then(|body| serde_json::from_slice(body).ok());
    let fingerprint = swapd_core::idempotency::fingerprint(
        context.route.method.as_str(),
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
    match begun {
        Ok(Begin::Execute { .. }) => {
            let claim = IdempotencyClaim::new(scope, id, Hold::Lease(token));
            let unfinished = ReleaseIfDropped::new(state, &claim);
            Decision::Claimed(Identified { claim, unfinished })
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

/// The first answer as it is stored: its `PAYMENT-RESPONSE` (base64, so without a line break),
/// a line break, then its body's bytes as they were sent.
fn kept(payment_response: &[u8], body: &[u8]) -> Vec<u8> {
    [payment_response, b"\n", body].concat()
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
        let payment_response = parts
            .headers
            .get(PAYMENT_RESPONSE)
            .map(HeaderValue::as_bytes);
        let kept = kept(payment_response.unwrap_or_default(), &body);
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
    let Some(line_end) = opened.body.iter().position(|&b| b == b'\n') else {
        return ApiError::internal("a kept paid answer without its PAYMENT-RESPONSE line")
            .into_response();
    };
    let (payment_response, body) = opened.body.split_at(line_end);
    let mut response = idempotency::replay(StoredResponse {
        status: opened.status,
        body: body[1..].to_vec(),
    });
    if !payment_response.is_empty()
        && let Ok(value) = HeaderValue::from_bytes(payment_response)
    {
        response.headers_mut().insert(PAYMENT_RESPONSE, value);
    }
    response
}
