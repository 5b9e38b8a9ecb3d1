//! The Business API (`/api/v3`): HMAC-signed routes behind [`auth::authenticate`], mutations
//! behind [`crate::idempotency::idempotent`].

use axum::extract::State;
use axum::routing::{get, patch, post};
use axum::{Extension, Json, Router, middleware};
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
pub use routes::{BUSINESS_ROUTES, RouteSpec, route_info};

/// The signed Business API routes.
pub fn router(state: &AppState) -> Router<AppState> {
    protect(
        Router::new()
            .route("/api/v3", get(readiness))
            .route("/api/v3/currencies", get(market::currencies))
            .route("/api/v3/tokens/popular", get(market::tokens_popular))
            .route("/api/v3/tokens/search", get(market::tokens_search))
            .route("/api/v3/tokens/by-address", get(market::tokens_by_address))
            .route("/api/v3/tokens/logo", get(market::tokens_logo))
            .route("/api/v3/quotes", post(market::quotes))
            .route("/api/v3/routes", get(market::discover_routes))
            .route("/api/v3/routes/resolve", post(market::resolve))
            .route("/api/v3/orders", post(orders::create_order))
            .route("/api/v3/orders/{orderId}", get(orders::get_order))
            .route(
                "/api/v3/orders/{orderId}/status",
                get(orders::get_order_status),
            )
            .route(
                "/api/v3/orders/{orderId}/emergency",
                post(orders::emergency),
            )
            .route("/api/v3/orders/{orderId}/refund", post(orders::refund))
            .route("/api/v3/orders/{orderId}/qr", get(orders::deposit_qr))
            .route(
                "/api/v3/orders/{orderId}/notifications/email",
                post(orders::attach_email),
            )
            .route("/api/v3/onchain/routes/resolve", post(onchain::resolve))
            .route("/api/v3/onchain/executions", post(onchain::report))
            .route(
                "/api/v3/onchain/executions/{executionPlanId}",
                get(onchain::status),
            )
            .route(
                "/api/v3/webhooks",
                get(webhooks::list).post(webhooks::create),
            )
            .route("/api/v3/webhooks/{webhookId}", patch(webhooks::update))
            .route(
                "/api/v3/webhooks/{webhookId}/rotate-secret",
                post(webhooks::rotate),
            )
            .route(
                "/api/v3/webhooks/{webhookId}/replay",
                post(webhooks::replay),
            )
            .route(
                "/api/v3/webhooks/{webhookId}/deliveries",
                get(webhooks::deliveries),
            )
            .route("/api/v3/callbacks/test", post(webhooks::test_callback))
            .route(
                "/api/v3/sandbox/orders/{orderId}/deposit",
                post(sandbox::deposit),
            ),
        state,
        BUSINESS_ROUTES,
    )
}

/// Puts `routes` behind the Business API gate: CORS preflights, then authentication,
/// authorization and rate limits, then idempotency for mutations. `table` must describe every
/// route of `routes`.
pub fn protect(
    routes: Router<AppState>,
    state: &AppState,
    table: &'static [RouteSpec],
) -> Router<AppState> {
    let gate = Gate {
        state: state.clone(),
        routes: table,
    };
    routes
        .route_layer(middleware::from_fn_with_state(
            state.clone(),
            crate::idempotency::idempotent,
        ))
        .route_layer(middleware::from_fn_with_state(gate, auth::authenticate))
        .layer(middleware::from_fn_with_state(
            state.guards.clone(),
            auth::preflight,
        ))
}

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
        routes: BUSINESS_ROUTES.iter().map(route_info).collect(),
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
