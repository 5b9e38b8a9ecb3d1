//! The HTTP surfaces of swapd: `/api/v3` (Business API), `/api/x402` (pay-per-call API) and the
//! operational endpoints (`/healthz`, `/readyz`, `/metrics`). Handlers stay thin: extractors
//! parse and check, handlers call one use case, [`ApiError`] decides what a failure looks like.

use std::sync::Arc;

use swapd_core::{Clock, Mode, Store};

mod error;
mod json;
mod layers;
pub mod openapi;
mod ops;
mod router;

pub use error::ApiError;
pub use json::{ApiJson, MAX_BODY_BYTES, parse_json};
pub use router::router;

/// What every handler may use.
#[derive(Clone)]
pub struct AppState {
    pub store: Arc<dyn Store>,
    pub clock: Arc<dyn Clock>,
    pub mode: Mode,
}
