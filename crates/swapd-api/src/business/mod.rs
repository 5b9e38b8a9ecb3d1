//! The Business API (`/api/v3`): HMAC-signed routes, declared once in [`routes`], behind
//! [`auth::authenticate`], mutations behind [`crate::idempotency::idempotent`].

use std::sync::LazyLock;

use axum::extract::State;
use serde_json::value::RawValue;
use swapd_types::Success;
use swapd_types::readiness::Readiness;

use crate::json::Json;
use crate::principal::Caller;
use crate::{ApiError, AppState};

pub mod auth;
pub mod guards;
pub mod routes;
mod spec;

pub use auth::Gate;
pub use guards::Guards;
pub use routes::{BusinessRoutes, router, routes};
pub use spec::{Required, RouteSpec};

/// The readiness document: what this server offers and what the calling key may use.
#[utoipa::path(get, path = "/api/v3", tag = "business",
    security(("hmac" = [])),
    responses(
        (status = 200, description = "Readiness document", body = inline(Success<Readiness>)),
        (status = 401, description = "Missing or invalid signature headers", body = swapd_types::ErrorEnvelope),
        (status = 429, description = "Rate limit exceeded", body = swapd_types::ErrorEnvelope),
    ))]
pub(crate) async fn readiness(
    State(state): State<AppState>,
    caller: Caller,
) -> Result<Json<Success<Readiness<&'static RawValue>>>, ApiError> {
    let Some(principal) = caller.key() else {
        return Err(ApiError::internal(
            "the Business API readiness is mounted behind another gate",
        ));
    };
    Ok(Json(Success::new(Readiness {
        service: "swapd".into(),
        api: "business".into(),
        version: "3".into(),
        mode: state.mode.as_str().into(),
        server_time: state.clock.now_secs(),
        api_key: principal.key_id.clone(),
        permissions: principal.permissions.clone(),
        routes: &ROUTE_LIST,
    })))
}

/// The readiness document's route list, serialized once: the same for every request, and most
/// of the document's bytes (docs/benchmarks-history.md, "Business API authentication").
static ROUTE_LIST: LazyLock<Box<RawValue>> = LazyLock::new(|| {
    let list: Vec<_> = routes().iter().map(RouteSpec::info).collect();
    serde_json::value::to_raw_value(&list).expect("route infos serialize")
});
