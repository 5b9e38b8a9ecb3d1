//! The Business API (`/api/v3`): HMAC-signed routes, declared once in [`routes`], behind
//! [`auth::authenticate`], mutations behind [`crate::idempotency::idempotent`].

use axum::extract::State;
use axum::{Extension, Json};
use swapd_types::Success;
use swapd_types::readiness::Readiness;

use crate::AppState;

pub mod auth;
pub mod guards;
pub mod market;
pub mod onchain;
pub mod orders;
pub mod routes;
pub mod sandbox;
pub mod webhooks;

pub use auth::{BusinessPrincipal, Gate};
pub use routes::{BusinessRoutes, Required, RouteSpec, router, routes};

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
    Extension(principal): Extension<BusinessPrincipal>,
) -> Json<Success<Readiness>> {
    Json(Success::new(Readiness {
        service: "swapd".into(),
        api: "business".into(),
        version: "3".into(),
        mode: state.mode.as_str().into(),
        server_time: state.clock.now_secs(),
        api_key: principal.key_id,
        permissions: principal.permissions,
        routes: routes().iter().map(RouteSpec::info).collect(),
    }))
}

/// A JSON answer from bytes already serialized (and, for committed writes, already stored as
/// the idempotent response).
pub(crate) fn json_response(
    status: axum::http::StatusCode,
    body: Vec<u8>,
) -> axum::response::Response {
    use axum::response::IntoResponse;
    (
        status,
        [(axum::http::header::CONTENT_TYPE, "application/json")],
        body,
    )
        .into_response()
}
