//! The swapd SDK: typed, async calls to both surfaces of the API.
//!
//! - [`BusinessClient`]: the partner API (`/api/v3`). Every request is signed as
//!   `docs/authentication.md` describes (canonical query, compact sorted JSON body, a fresh nonce).
//! - [`x402::X402Client`]: the pay-per-call API (`/api/x402`). It pays 402s with a local EVM key
//!   (EIP-3009) and answers sign-in challenges with an EVM or Solana wallet (SIWX).
//! - [`SwapApi`]: the typed calls both serve (catalog, routes, orders, onchain executions).
//! - [`webhooks::Verifier`]: checks the Standard Webhooks signature of a delivery.
//!
//! Every POST and PATCH carries a fresh `Idempotency-Key`, kept when the call is retried: a 429
//! is retried after its `Retry-After`, a 5xx or a lost connection with backoff, and only when
//! sending again cannot have a second effect ([`RetryPolicy`]). Errors carry the API's stable
//! code ([`Error::code`]).
//!
//! ```no_run
//! # async fn demo() -> Result<(), swapd_client::Error> {
//! use swapd_client::{BusinessClient, Credentials, SwapApi};
//!
//! let client = BusinessClient::new(
//!     "http://127.0.0.1:8080",
//!     Credentials::new("key_0123456789abcdef0123456789abcdef", "sec_..."),
//! )?;
//! let readiness = client.readiness().await?;
//! println!("{} mode, {} routes for {}", readiness.mode, readiness.routes.len(), readiness.api_key);
//! let catalog = client.currencies().await?;
//! println!("{} currencies", catalog.count);
//! match client.order("ord_0123456789abcdef0123456789abcdef").await {
//!     Err(e) if e.code() == Some(swapd_client::ErrorCode::OrderNotFound) => println!("no such order"),
//!     other => println!("{:?}", other?.status),
//! }
//! # Ok(())
//! # }
//! ```

use std::time::{SystemTime, UNIX_EPOCH};

use rand::RngCore;
use reqwest::StatusCode;
use reqwest::header::{CONTENT_TYPE, HeaderMap, HeaderValue, RETRY_AFTER};
use serde::Serialize;
use serde_json::Value;

mod api;
mod business;
mod retry;
pub mod webhooks;
pub mod x402;

pub use api::{Call, RoutesQuery, Surface, SwapApi};
pub use business::{BusinessClient, Credentials, SignedRequest};
pub use reqwest::Method;
pub use retry::RetryPolicy;
pub use swapd_types::{ErrorCode, ErrorEnvelope};
/// The wire types of the API, as [`SwapApi`] and the clients take and return them.
pub use swapd_types::{earnings, market, market_intel, onchain, orders, readiness, sandbox};

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The API answered with its error envelope.
    #[error("{status} {code}: {message}")]
    Api {
        status: u16,
        code: ErrorCode,
        message: String,
        /// `Retry-After` in seconds, when the server sent one.
        retry_after_secs: Option<u64>,
    },
    /// The request could not be sent or the answer not read.
    #[error("transport error: {0}")]
    Transport(#[from] reqwest::Error),
    /// The answer was not what the API promises.
    #[error("unexpected response ({status}): {detail}")]
    Unexpected { status: u16, detail: String },
    #[error("invalid base URL: {0}")]
    BaseUrl(String),
}

impl Error {
    /// The API error code, when the API answered with one.
    pub fn code(&self) -> Option<ErrorCode> {
        match self {
            Error::Api { code, .. } => Some(*code),
            _ => None,
        }
    }
}

/// A raw answer: status, headers and the `data` of a success envelope.
#[derive(Debug, Clone)]
pub struct Answer {
    pub status: u16,
    pub headers: HeaderMap,
    pub data: Value,
}

pub(crate) fn decode(
    status: StatusCode,
    headers: HeaderMap,
    bytes: &[u8],
) -> Result<Answer, Error> {
    let unexpected = |detail: String| Error::Unexpected {
        status: status.as_u16(),
        detail,
    };
    if status.is_success() {
        let envelope: Value =
            serde_json::from_slice(bytes).map_err(|e| unexpected(e.to_string()))?;
        if envelope["success"] != Value::Bool(true) {
            return Err(unexpected("success envelope without success=true".into()));
        }
        let data = envelope.get("data").cloned().unwrap_or(Value::Null);
        return Ok(Answer {
            status: status.as_u16(),
            headers,
            data,
        });
    }
    let is_json = headers
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json"));
    let envelope: ErrorEnvelope = match is_json.then(|| serde_json::from_slice(bytes)) {
        Some(Ok(envelope)) => envelope,
        _ => {
            return Err(unexpected(
                String::from_utf8_lossy(bytes).chars().take(200).collect(),
            ));
        }
    };
    Err(Error::Api {
        status: status.as_u16(),
        code: envelope.error.code,
        message: envelope.error.message,
        retry_after_secs: headers
            .get(RETRY_AFTER)
            .and_then(|v: &HeaderValue| v.to_str().ok()?.parse().ok()),
    })
}

/// Compact JSON with object keys in ascending order (what the server documents signing over).
pub fn compact_sorted_json<B: Serialize + ?Sized>(body: &B) -> Result<Vec<u8>, Error> {
    // Through `Value`, whose maps are sorted (serde_json without `preserve_order`).
    let value = serde_json::to_value(body).map_err(|e| Error::Unexpected {
        status: 0,
        detail: e.to_string(),
    })?;
    Ok(serde_json::to_vec(&value).expect("a Value always serializes"))
}

/// A fresh nonce: `n-` and 32 random hex digits.
pub fn new_nonce() -> String {
    let mut bytes = [0u8; 16];
    rand::rng().fill_bytes(&mut bytes);
    format!("n-{}", hex::encode(bytes))
}

/// A fresh idempotency key: 32 random hex digits.
pub fn new_idempotency_key() -> String {
    let mut bytes = [0u8; 16];
    rand::rng().fill_bytes(&mut bytes);
    hex::encode(bytes)
}

/// Now, in Unix epoch seconds (what `X-API-TIMESTAMP` carries).
pub fn now_secs() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}
