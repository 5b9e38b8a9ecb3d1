//! Limits per client address, before any authentication (docs/authentication.md, check 2a):
//! a request rate for every API request, and a tighter budget of failed authentications (401s)
//! after which the address is refused for a while. Both are GCRA: in process (`governor`) on its
//! own, or in Redis when several nodes share it, so that an address's budget is global. They
//! keep floods and signature guessing off the key lookups and the nonce store; the per-key and
//! per-payer limits behind them stay the contract clients see.

use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::http::header::RETRY_AFTER;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use swapd_core::StoreError;
use swapd_types::ErrorCode;

use crate::client_address::client_ip;
use crate::{ApiError, AppState};

pub use crate::limits::{DEFAULT_AUTH_FAILURES_PER_MINUTE, DEFAULT_REQUESTS_PER_SECOND};

/// Marks a 401 the client could not have avoided, which is not counted as a failed
/// authentication of its address: a request signed in the second this node's nonce set (or the
/// shared one in Redis) began again. After a restart, every busy client gets a few of these at
/// once; counting them would block its address for the rest of the minute.
#[derive(Debug, Clone, Copy)]
pub struct NotCounted;

/// The middleware: refuses an address over its limits with 429 `ip_rate_limited` and
/// `Retry-After`, and counts the 401s it gets (but those marked [`NotCounted`]).
pub async fn limit(State(state): State<AppState>, request: Request, next: Next) -> Response {
    let (parts, body) = request.into_parts();
    let Some(ip) = client_ip(&parts, &state.trusted_proxies) else {
        return next.run(Request::from_parts(parts, body)).await;
    };
    match state.ip_limits.admit(ip, state.clock.now_ms()).await {
        Ok(Ok(())) => {}
        Ok(Err(wait)) => {
            let seconds = wait.as_secs_f64().ceil().max(1.0) as u64;
            return ApiError::new(
                ErrorCode::IpRateLimited,
                format!("too many requests from this address; retry after {seconds} s"),
            )
            .with_header(RETRY_AFTER, axum::http::HeaderValue::from(seconds))
            .into_response();
        }
        Err(error) => return unavailable(error),
    }
    let response = next.run(Request::from_parts(parts, body)).await;
    if response.status() == StatusCode::UNAUTHORIZED
        && response.extensions().get::<NotCounted>().is_none()
        && let Err(error) = state.ip_limits.failed(ip, state.clock.now_ms()).await
    {
        tracing::warn!(%error, "a failed authentication could not be counted");
    }
    response
}

fn unavailable(error: StoreError) -> Response {
    tracing::warn!(%error, "the per-address limits are unavailable");
    ApiError::new(
        ErrorCode::ServiceUnavailable,
        "requests cannot be admitted right now; retry shortly",
    )
    .into_response()
}
