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
    /// How a paid call's input is checked before anything is charged.
    pub input: InputCheck,
}

/// A paid call's input checked as its handler will read it (the handler's own parsing; for
/// market-intel jobs their whole validation), so a malformed request costs nothing. Checks
/// that need the store or the providers' answers still run after the payment.
#[derive(Debug, Clone, Copy)]
pub enum InputCheck {
    /// Free routes, and routes that read only their path.
    Nothing,
    /// The JSON body of a POST.
    Body(fn(&[u8]) -> Result<(), ApiError>),
    /// The query of a GET.
    Query(QueryCheck),
}

const fn route(
    method: Method,
    path: &'static str,
    access: Access,
    needs_access_tokens: bool,
    description: &'static str,
    input: InputCheck,
) -> X402Route {
    X402Route {
        method,
        path,
        access,
        needs_access_tokens,
        description,
        input,
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
        InputCheck::Nothing,
    ),
    route(
        Method::GET,
        "/api/x402/currencies",
        Access::Paid,
        false,
        "Currency catalog",
        InputCheck::Query(market::check_currencies_query),
    ),
    route(
        Method::GET,
        "/api/x402/tokens/popular",
        Access::Paid,
        false,
        "Popular tokens",
        InputCheck::Query(market::check_popular_query),
    ),
    route(
        Method::GET,
        "/api/x402/tokens/search",
        Access::Paid,
        false,
        "Token search",
        InputCheck::Query(market::check_search_query),
    ),
    route(
        Method::GET,
        "/api/x402/tokens/by-address",
        Access::Paid,
        false,
        "Token by address",
        InputCheck::Query(market::check_token_query),
    ),
    route(
        Method::GET,
        "/api/x402/tokens/logo",
        Access::Paid,
        false,
        "Token logo",
        InputCheck::Query(market::check_token_query),
    ),
    route(
        Method::GET,
        "/api/x402/routes",
        Access::Paid,
        false,
        "Route discovery",
        InputCheck::Query(market::check_routes_query),
    ),
    route(
        Method::POST,
        "/api/x402/routes/resolve",
        Access::PaidWallet,
        false,
        "Resolve an offchain route into a createToken",
        InputCheck::Body(parses_as::<swapd_types::market::ResolveInput>),
    ),
    route(
        Method::POST,
        "/api/x402/quotes",
        Access::Paid,
        false,
        "Legacy quote",
        InputCheck::Body(parses_as::<swapd_types::market::QuoteInput>),
    ),
    route(
        Method::POST,
        "/api/x402/onchain/routes/resolve",
        Access::PaidWallet,
        true,
        "Resolve an onchain route into an execution plan",
        InputCheck::Body(parses_as::<swapd_types::onchain::OnchainResolveInput>),
    ),
    route(
        Method::POST,
        "/api/x402/onchain/executions",
        Access::PaidWallet,
        true,
        "Report an onchain execution",
        InputCheck::Body(parses_as::<swapd_types::onchain::ExecutionReportInput>),
    ),
    route(
        Method::GET,
        "/api/x402/onchain/executions/{executionPlanId}",
        Access::WalletRead,
        true,
        "Onchain execution status",
        InputCheck::Nothing,
    ),
    route(
        Method::POST,
        "/api/x402/orders",
        Access::PaidWallet,
        true,
        "Create an order bound to the wallet",
        InputCheck::Body(parses_as::<swapd_types::orders::OrderInput>),
    ),
    route(
        Method::GET,
        "/api/x402/orders/{orderId}",
        Access::WalletRead,
        true,
        "The wallet's order",
        InputCheck::Nothing,
    ),
    route(
        Method::POST,
        "/api/x402/orders/{orderId}/emergency",
        Access::PaidWallet,
        true,
        "Choose in an emergency",
        InputCheck::Body(parses_as::<swapd_types::orders::EmergencyInput>),
    ),
    route(
        Method::POST,
        "/api/x402/orders/{orderId}/refund",
        Access::PaidWallet,
        true,
        "Refund an order",
        InputCheck::Body(parses_as::<swapd_types::orders::RefundInput>),
    ),
    route(
        Method::POST,
        "/api/x402/orders/{orderId}/notifications/email",
        Access::PaidWallet,
        true,
        "Status e-mails",
        InputCheck::Body(parses_as::<swapd_types::orders::EmailInput>),
    ),
    route(
        Method::GET,
        "/api/x402/orders/{orderId}/qr",
        Access::WalletRead,
        true,
        "Deposit QR codes",
        InputCheck::Nothing,
    ),
    route(
        Method::POST,
        "/api/x402/market-intel/jobs",
        Access::PaidWallet,
        false,
        "Queue a market-intel job",
        InputCheck::Body(valid_job),
    ),
    route(
        Method::GET,
        "/api/x402/market-intel/jobs/{jobId}",
        Access::WalletRead,
        false,
        "The wallet's market-intel job",
        InputCheck::Nothing,
    ),
];

fn parses_as<T: serde::de::DeserializeOwned>(bytes: &[u8]) -> Result<(), ApiError> {
    parse_json::<T>(bytes).map(drop)
}

fn valid_job(bytes: &[u8]) -> Result<(), ApiError> {
    let input = parse_json::<swapd_types::market_intel::JobInput>(bytes)?;
    swapd_core::market_intel::validate(&input)
        .map(drop)
        .map_err(|problem| crate::business::market::invalid(problem.field, &problem.problem))
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
        for route in X402_ROUTES.iter().filter(|r| r.access.paid()) {
            match (&route.method, route.input) {
                (&Method::POST, InputCheck::Body(check)) => {
                    assert!(check(b"{\"unknown\": 1}").is_err(), "{}", route.path);
                }
                (&Method::GET, InputCheck::Query(_)) => {}
                _ => panic!("{} {} has no input check", route.method, route.path),
            }
        }
        let job = find(&Method::POST, "/api/x402/market-intel/jobs").unwrap();
        let InputCheck::Body(check) = job.input else {
            panic!("market-intel jobs check their body");
        };
        assert!(check(br#"{"kind":"pair_depth","fromCcy":"BTC","toCcy":"ETH"}"#).is_ok());
        assert!(
            check(br#"{"kind":"pair_depth","fromCcy":"BTC","toCcy":"ETH","steps":99}"#).is_err()
        );
    }
}
