//! `GET /api/x402`: what this surface offers, what each route costs, and how to pay and prove a
//! wallet. Free.

use axum::Json;
use axum::extract::State;
use serde::Serialize;
use swapd_types::Success;
use utoipa::ToSchema;

use super::{Access, X402_ROUTES};
use crate::AppState;

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct X402Readiness {
    pub service: &'static str,
    /// `"x402"`.
    pub api: &'static str,
    /// The x402 protocol version: 2.
    pub x402_version: u8,
    /// `"sandbox"` or `"live"`.
    pub mode: &'static str,
    pub server_time: i64,
    /// Price of one paid call in USD.
    pub price_usd: String,
    /// How to pay: scheme, network, asset, payTo, amount (atomic units), maxTimeoutSeconds.
    #[schema(value_type = Object)]
    pub payment: serde_json::Value,
    /// `ledger` (sandbox, in-process) or `http`.
    pub facilitator: &'static str,
    /// Sign-In-With-X: the domain proofs are bound to and the chains they may come from.
    #[schema(value_type = Object)]
    pub siwx: serde_json::Value,
    pub routes: Vec<X402RouteInfo>,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct X402RouteInfo {
    pub method: String,
    pub path: &'static str,
    /// `free`, `paid`, `paid_wallet` (paid, acts for the SIWX wallet or the payer) or
    /// `wallet_read` (free, SIWX proof of the owning wallet).
    pub access: Access,
    pub paid: bool,
    /// Whether the route acts for a wallet (SIWX proof, or the payer on paid EVM calls).
    pub wallet_bound: bool,
    /// Disabled: live mode without an operator-set access-token secret.
    pub enabled: bool,
    pub description: &'static str,
}

/// The readiness document.
#[utoipa::path(get, path = "/api/x402", tag = "x402",
    description = "Free. The price, how to pay it, the SIWX chains and domain, and every route with \
        its charge and access rule.",
    responses((status = 200, description = "Readiness document", body = inline(Success<X402Readiness>))))]
pub(crate) async fn readiness(State(state): State<AppState>) -> Json<Success<X402Readiness>> {
    let x402 = &state.x402;
    let audience = swapd_x402::siwx::Audience {
        origin: &x402.origin,
        chains: &x402.siwx_chains,
    };
    Json(Success::new(X402Readiness {
        service: "swapd",
        api: "x402",
        x402_version: swapd_x402::wire::X402_VERSION,
        mode: state.mode.as_str(),
        server_time: state.clock.now_secs(),
        price_usd: x402.pricing.price_usd(),
        payment: x402.pricing.describe(),
        facilitator: x402.facilitator.kind(),
        siwx: serde_json::json!({
            "domain": audience.domain(),
            "origin": x402.origin,
            "chains": x402.siwx_chains,
            "header": swapd_x402::wire::SIGN_IN_WITH_X,
        }),
        routes: X402_ROUTES
            .iter()
            .map(|route| X402RouteInfo {
                method: route.method.to_string(),
                path: route.path,
                access: route.access,
                paid: route.access.paid(),
                wallet_bound: route.access.wallet_bound(),
                enabled: !route.needs_access_tokens || x402.wallet_routes_enabled,
                description: route.description,
            })
            .collect(),
    }))
}
