//! `GET /api/x402`: what this surface offers, what each route costs, and how to pay and prove a
//! wallet. Free.

use axum::extract::State;
use swapd_types::Success;
use swapd_types::readiness::{X402Readiness, X402RouteInfo};

use super::{AccessTokens, routes};
use crate::AppState;
use crate::json::Json;

/// The readiness document.
#[utoipa::path(get, path = "/api/x402", tag = "x402",
    description = "Free. The price, every way to pay it (and what was left out), the SIWX chains and domain, and every route with \
        its charge and access rule.",
    responses((status = 200, description = "Readiness document", body = inline(Success<X402Readiness>))))]
pub(crate) async fn readiness(State(state): State<AppState>) -> Json<Success<X402Readiness>> {
    let x402 = &state.x402;
    let audience = swapd_x402::siwx::Audience {
        origin: &x402.origin,
        chains: &x402.siwx_chains,
    };
    Json(Success::new(X402Readiness {
        service: "swapd".into(),
        api: "x402".into(),
        x402_version: swapd_x402::wire::X402_VERSION,
        mode: state.mode.as_str().into(),
        server_time: state.clock.now_secs(),
        price_usd: x402.accepts.price_usd().into(),
        payment: x402.accepts.first().pricing.describe(),
        facilitator: x402.accepts.first().facilitator.kind().into(),
        accepts: x402
            .accepts
            .options()
            .iter()
            .map(|option| {
                let mut described = option.pricing.describe();
                described["facilitator"] = option.facilitator.kind().into();
                described
            })
            .collect(),
        left_out: x402.left_out.clone(),
        siwx: serde_json::json!({
            "domain": audience.domain(),
            "origin": x402.origin,
            "chains": x402.siwx_chains,
            "header": swapd_x402::wire::SIGN_IN_WITH_X,
        }),
        routes: routes()
            .iter()
            .map(|route| X402RouteInfo {
                method: route.method.to_string(),
                path: route.path.clone(),
                access: route.access,
                paid: route.access.paid(),
                wallet_bound: route.access.wallet_bound(),
                enabled: route.access_tokens == AccessTokens::NotUsed || x402.wallet_routes_enabled,
                description: route.description.to_owned(),
            })
            .collect(),
    }))
}
