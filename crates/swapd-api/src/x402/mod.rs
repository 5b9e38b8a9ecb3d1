//! The pay-per-call API (`/api/x402`, DESIGN.md §8): the same use cases as the Business API,
//! paid per call with x402 v2 payments and bound to wallets proven with Sign-In-With-X. The
//! gate decides, per route of [`X402_ROUTES`], what a request needs; the handlers are the
//! Business API's, run for the wallet's caller scope.

mod gate;
pub(crate) mod market_intel;
pub(crate) mod readiness;

use std::sync::Arc;

use axum::Router;
use axum::http::Method;
use axum::middleware;
use axum::routing::{get, post};
use swapd_x402::{Facilitator, Pricing};

pub use gate::WalletPrincipal;

use crate::business::{market, onchain, orders};
use crate::{ApiError, AppState, parse_json};

/// What the x402 surface needs besides the shared state.
pub struct X402 {
    pub pricing: Pricing,
    pub facilitator: Arc<dyn Facilitator>,
    /// Our public origin (`https://api.example.com`): resource URLs and SIWX domain and URI.
    pub origin: String,
    /// The chains SIWX proofs may come from (CAIP-2).
    pub siwx_chains: Vec<String>,
    /// Whether order and onchain routes are enabled: live mode needs an operator-set secret
    /// for their execution access tokens.
    pub wallet_routes_enabled: bool,
}

pub use swapd_types::readiness::Access;

#[derive(Debug, Clone)]
pub struct X402Route {
    pub method: Method,
    /// The route template as mounted.
    pub path: &'static str,
    pub access: Access,
    /// Orders and onchain executions: disabled in live mode without an access-token secret.
    pub needs_access_tokens: bool,
    pub description: &'static str,
}

const fn route(
    method: Method,
    path: &'static str,
    access: Access,
    needs_access_tokens: bool,
    description: &'static str,
) -> X402Route {
    X402Route {
        method,
        path,
        access,
        needs_access_tokens,
        description,
    }
}

/// Every route of the spec's x402 table, with its charge and access rule.
pub static X402_ROUTES: &[X402Route] = &[
    route(
        Method::GET,
        "/api/x402",
        Access::Free,
        false,
        "Readiness document",
    ),
    route(
        Method::GET,
        "/api/x402/currencies",
        Access::Paid,
        false,
        "Currency catalog",
    ),
    route(
        Method::GET,
        "/api/x402/tokens/popular",
        Access::Paid,
        false,
        "Popular tokens",
    ),
    route(
        Method::GET,
        "/api/x402/tokens/search",
        Access::Paid,
        false,
        "Token search",
    ),
    route(
        Method::GET,
        "/api/x402/tokens/by-address",
        Access::Paid,
        false,
        "Token by address",
    ),
    route(
        Method::GET,
        "/api/x402/tokens/logo",
        Access::Paid,
        false,
        "Token logo",
    ),
    route(
        Method::GET,
        "/api/x402/routes",
        Access::Paid,
        false,
        "Route discovery",
    ),
    route(
        Method::POST,
        "/api/x402/routes/resolve",
        Access::PaidWallet,
        false,
        "Resolve an offchain route into a createToken",
    ),
    route(
        Method::POST,
        "/api/x402/quotes",
        Access::Paid,
        false,
        "Legacy quote",
    ),
    route(
        Method::POST,
        "/api/x402/onchain/routes/resolve",
        Access::PaidWallet,
        true,
        "Resolve an onchain route into an execution plan",
    ),
    route(
        Method::POST,
        "/api/x402/onchain/executions",
        Access::PaidWallet,
        true,
        "Report an onchain execution",
    ),
    route(
        Method::GET,
        "/api/x402/onchain/executions/{executionPlanId}",
        Access::WalletRead,
        true,
        "Onchain execution status",
    ),
    route(
        Method::POST,
        "/api/x402/orders",
        Access::PaidWallet,
        true,
        "Create an order bound to the wallet",
    ),
    route(
        Method::GET,
        "/api/x402/orders/{orderId}",
        Access::WalletRead,
        true,
        "The wallet's order",
    ),
    route(
        Method::POST,
        "/api/x402/orders/{orderId}/emergency",
        Access::PaidWallet,
        true,
        "Choose in an emergency",
    ),
    route(
        Method::POST,
        "/api/x402/orders/{orderId}/refund",
        Access::PaidWallet,
        true,
        "Refund an order",
    ),
    route(
        Method::POST,
        "/api/x402/orders/{orderId}/notifications/email",
        Access::PaidWallet,
        true,
        "Status e-mails",
    ),
    route(
        Method::GET,
        "/api/x402/orders/{orderId}/qr",
        Access::WalletRead,
        true,
        "Deposit QR codes",
    ),
    route(
        Method::POST,
        "/api/x402/market-intel/jobs",
        Access::PaidWallet,
        false,
        "Queue a market-intel job",
    ),
    route(
        Method::GET,
        "/api/x402/market-intel/jobs/{jobId}",
        Access::WalletRead,
        false,
        "The wallet's market-intel job",
    ),
];

/// Checks a request body as the route's handler will read it.
pub type BodyCheck = fn(&[u8]) -> Result<(), ApiError>;

fn parses_as<T: serde::de::DeserializeOwned>(bytes: &[u8]) -> Result<(), ApiError> {
    parse_json::<T>(bytes).map(drop)
}

fn valid_job(bytes: &[u8]) -> Result<(), ApiError> {
    let input = parse_json::<swapd_types::market_intel::JobInput>(bytes)?;
    swapd_core::market_intel::validate(&input)
        .map(drop)
        .map_err(|problem| crate::business::market::invalid(problem.field, &problem.problem))
}

impl X402Route {
    /// How the body of a paid POST is checked before anything is charged: the handler's own
    /// parsing (and, for market-intel jobs, their validation), so a malformed request costs
    /// nothing. Checks that need the store or the providers still run after the payment.
    pub fn body_check(&self) -> Option<BodyCheck> {
        use swapd_types::{market, onchain, orders};
        if self.method != Method::POST {
            return None;
        }
        Some(match self.path {
            "/api/x402/routes/resolve" => parses_as::<market::ResolveInput>,
            "/api/x402/quotes" => parses_as::<market::QuoteInput>,
            "/api/x402/onchain/routes/resolve" => parses_as::<onchain::OnchainResolveInput>,
            "/api/x402/onchain/executions" => parses_as::<onchain::ExecutionReportInput>,
            "/api/x402/orders" => parses_as::<orders::OrderInput>,
            "/api/x402/orders/{orderId}/emergency" => parses_as::<orders::EmergencyInput>,
            "/api/x402/orders/{orderId}/refund" => parses_as::<orders::RefundInput>,
            "/api/x402/orders/{orderId}/notifications/email" => parses_as::<orders::EmailInput>,
            "/api/x402/market-intel/jobs" => valid_job,
            _ => return None,
        })
    }
}

impl X402Route {
    /// How the query of a paid GET is checked before anything is charged: as its handler reads
    /// it (known parameters, required ones, currencies, amounts, addresses), without asking any
    /// provider.
    pub fn query_check(&self) -> Option<QueryCheck> {
        if self.method != Method::GET || !self.access.paid() {
            return None;
        }
        crate::business::market::query_check(self.path.strip_prefix("/api/x402")?)
    }
}

pub use crate::business::market::QueryCheck;

pub fn find(method: &Method, path: &str) -> Option<&'static X402Route> {
    X402_ROUTES.iter().find(|route| {
        route.path == path
            && (route.method == method || (method == Method::HEAD && route.method == Method::GET))
    })
}

/// The x402 routes behind the gate.
pub fn router(state: &AppState) -> Router<AppState> {
    Router::new()
        .route("/api/x402", get(readiness::readiness))
        .route("/api/x402/currencies", get(market::currencies))
        .route("/api/x402/tokens/popular", get(market::tokens_popular))
        .route("/api/x402/tokens/search", get(market::tokens_search))
        .route(
            "/api/x402/tokens/by-address",
            get(market::tokens_by_address),
        )
        .route("/api/x402/tokens/logo", get(market::tokens_logo))
        .route("/api/x402/routes", get(market::discover_routes))
        .route("/api/x402/routes/resolve", post(market::resolve))
        .route("/api/x402/quotes", post(market::quotes))
        .route("/api/x402/onchain/routes/resolve", post(onchain::resolve))
        .route("/api/x402/onchain/executions", post(onchain::report))
        .route(
            "/api/x402/onchain/executions/{executionPlanId}",
            get(onchain::status),
        )
        .route("/api/x402/orders", post(orders::create_order))
        .route("/api/x402/orders/{orderId}", get(orders::get_order))
        .route(
            "/api/x402/orders/{orderId}/emergency",
            post(orders::emergency),
        )
        .route("/api/x402/orders/{orderId}/refund", post(orders::refund))
        .route(
            "/api/x402/orders/{orderId}/notifications/email",
            post(orders::attach_email),
        )
        .route("/api/x402/orders/{orderId}/qr", get(orders::deposit_qr))
        .route(
            "/api/x402/market-intel/jobs",
            post(market_intel::create_job),
        )
        .route(
            "/api/x402/market-intel/jobs/{jobId}",
            get(market_intel::get_job),
        )
        .route_layer(middleware::from_fn_with_state(state.clone(), gate::gate))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_paid_call_checks_its_input_before_the_charge() {
        for route in X402_ROUTES.iter().filter(|r| r.method == Method::POST) {
            let check = route
                .body_check()
                .unwrap_or_else(|| panic!("{} has no body check", route.path));
            assert!(check(b"{\"unknown\": 1}").is_err(), "{}", route.path);
        }
        for route in X402_ROUTES
            .iter()
            .filter(|r| r.method == Method::GET && r.access.paid())
        {
            assert!(
                route.query_check().is_some(),
                "{} has no query check",
                route.path
            );
        }
        let job = find(&Method::POST, "/api/x402/market-intel/jobs").unwrap();
        let check = job.body_check().unwrap();
        assert!(check(br#"{"kind":"pair_depth","fromCcy":"BTC","toCcy":"ETH"}"#).is_ok());
        assert!(
            check(br#"{"kind":"pair_depth","fromCcy":"BTC","toCcy":"ETH","steps":99}"#).is_err()
        );
    }
}
