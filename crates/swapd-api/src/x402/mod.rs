//! The pay-per-call API (`/api/x402`, docs/x402.md): the same use cases as the Business API,
//! paid per call with x402 v2 payments and bound to wallets proven with Sign-In-With-X. The
//! gate decides, per route of [`routes`], what a request needs; the handlers are the
//! Business API's, run for the wallet's caller scope.

pub mod discovery;
mod doc;
mod gate;
mod job_settler;
mod ledger;
pub(crate) mod readiness;

pub use job_settler::JobSettler;
pub use ledger::LedgerFacilitator;

use std::sync::OnceLock;

use axum::Router;
use axum::http::Method;
use axum::middleware;
use axum::routing::MethodRouter;
use swapd_x402::Accepts;
use utoipa::openapi::path::Paths;
use utoipa::openapi::{RefOr, Schema};
use utoipa_axum::router::UtoipaMethodRouter;
use utoipa_axum::routes;

use crate::handlers::{
    catalog, market_intel, onchain, orders, providers, quotes, routes as route_handlers, tokens,
};
use crate::route_doc::{http_method, single_operation};
use crate::{ApiError, AppState, parse_json};

/// What the x402 surface needs besides the shared state.
pub struct X402 {
    /// Every way to pay a call, each with its facilitator (docs/x402.md, "Ways to pay").
    pub accepts: Accepts,
    /// Ways to pay configured but not offered: no facilitator settles them.
    pub left_out: Vec<swapd_types::readiness::X402LeftOut>,
    /// Our public origin (`https://api.example.com`): resource URLs and SIWX domain and URI.
    pub origin: String,
    /// The chains SIWX proofs may come from (CAIP-2).
    pub siwx_chains: Vec<String>,
    /// Issues and checks the SIWX challenges' nonces without writing them down.
    pub challenges: swapd_core::challenges::Challenges,
    /// Whether order and onchain routes are enabled: live mode needs an operator-set secret
    /// for their execution access tokens.
    pub wallet_routes_enabled: bool,
}

pub use swapd_types::readiness::Access;

/// A declared x402 route as the gate and the readiness document see it.
#[derive(Debug, Clone)]
pub struct X402Route {
    pub method: Method,
    /// The route template as mounted.
    pub path: String,
    pub access: Access,
    /// Orders and onchain executions: disabled in live mode without an access-token secret.
    pub access_tokens: AccessTokens,
    pub description: &'static str,
    /// How a paid call's input is checked before anything is charged.
    pub input: InputCheck,
    /// A wallet-bound read of a resource with a hosted page: its page token (`X-Page-Token`)
    /// proves the owner as a SIWX proof does.
    pub page: Option<Page>,
    /// A metered call (market-intel jobs): the most it may cost, in prices of one call, from
    /// its checked body. It is offered `exact` at that maximum and `upto` it.
    pub metered: Option<fn(&[u8]) -> u64>,
}

/// The resources with hosted pages, whose page tokens open their wallet-bound reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Page {
    /// `{orderId}`: the order page's token.
    Order,
    /// `{executionPlanId}`: the execution page's token.
    Execution,
}

impl Page {
    /// The page a wallet-bound read's path names (by its path parameter), if any.
    fn of(path: &str, access: Access) -> Option<Self> {
        if access != Access::WalletRead {
            return None;
        }
        [
            ("{orderId}", Page::Order),
            ("{executionPlanId}", Page::Execution),
        ]
        .into_iter()
        .find_map(|(parameter, page)| path.contains(parameter).then_some(page))
    }

    /// The path parameter naming the resource.
    pub fn parameter(self) -> &'static str {
        match self {
            Page::Order => "{orderId}",
            Page::Execution => "{executionPlanId}",
        }
    }
}

/// Whether a route hands out or reads onchain execution access tokens (orders and onchain
/// executions), which live mode cannot sign without an operator-set secret.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AccessTokens {
    NotUsed,
    Needed,
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

/// Every route of the spec's x402 table, with its charge and access rule. The Business API's
/// handlers are mounted under `/api/x402` with the same path below it.
fn declare() -> X402Routes {
    use AccessTokens::{Needed, NotUsed};
    use InputCheck::{Body, Nothing, Query};
    X402Routes::default()
        .route(
            routes!(readiness::readiness),
            Access::Free,
            NotUsed,
            "Readiness document",
            Nothing,
        )
        .route(
            routes!(catalog::currencies),
            Access::Paid,
            NotUsed,
            "Currency catalog",
            Query(catalog::check_currencies_query),
        )
        .route(
            routes!(providers::providers),
            Access::Paid,
            NotUsed,
            "Provider scorecards",
            Query(providers::check_providers_query),
        )
        .route(
            routes!(tokens::tokens_popular),
            Access::Paid,
            NotUsed,
            "Popular tokens",
            Query(tokens::check_popular_query),
        )
        .route(
            routes!(tokens::tokens_search),
            Access::Paid,
            NotUsed,
            "Token search",
            Query(tokens::check_search_query),
        )
        .route(
            routes!(tokens::tokens_by_address),
            Access::Paid,
            NotUsed,
            "Token by address",
            Query(tokens::check_token_query),
        )
        .route(
            routes!(tokens::tokens_logo),
            Access::Paid,
            NotUsed,
            "Token logo",
            Query(tokens::check_token_query),
        )
        .route(
            routes!(route_handlers::discover_routes),
            Access::Paid,
            NotUsed,
            "Route discovery",
            Query(route_handlers::check_routes_query),
        )
        .route(
            routes!(route_handlers::resolve),
            Access::PaidWallet,
            NotUsed,
            "Resolve an offchain route into a createToken",
            Body(parses_as::<swapd_types::market::ResolveInput>),
        )
        .route(
            routes!(quotes::quotes),
            Access::Paid,
            NotUsed,
            "Legacy quote",
            Body(parses_as::<swapd_types::market::QuoteInput>),
        )
        .route(
            routes!(onchain::resolve),
            Access::PaidWallet,
            Needed,
            "Resolve an onchain route into an execution plan",
            Body(parses_as::<swapd_types::onchain::OnchainResolveInput>),
        )
        .route(
            routes!(onchain::report),
            Access::PaidWallet,
            Needed,
            "Report an onchain execution",
            Body(parses_as::<swapd_types::onchain::ExecutionReportInput>),
        )
        .route(
            routes!(onchain::status),
            Access::WalletRead,
            Needed,
            "Onchain execution status",
            Nothing,
        )
        .route(
            routes!(orders::create_order),
            Access::PaidWallet,
            Needed,
            "Create an order bound to the wallet",
            Body(parses_as::<swapd_types::orders::OrderInput>),
        )
        .route(
            routes!(orders::get_order),
            Access::WalletRead,
            Needed,
            "The wallet's order",
            Nothing,
        )
        .route(
            routes!(orders::emergency),
            Access::PaidWallet,
            Needed,
            "Choose in an emergency",
            Body(parses_as::<swapd_types::orders::EmergencyInput>),
        )
        .route(
            routes!(orders::refund),
            Access::PaidWallet,
            Needed,
            "Refund an order",
            Body(parses_as::<swapd_types::orders::RefundInput>),
        )
        .route(
            routes!(orders::attach_email),
            Access::PaidWallet,
            Needed,
            "Status e-mails",
            Body(parses_as::<swapd_types::orders::EmailInput>),
        )
        .route(
            routes!(orders::deposit_qr),
            Access::WalletRead,
            Needed,
            "Deposit QR codes",
            Nothing,
        )
        .route(
            routes!(market_intel::create_job),
            Access::PaidWallet,
            NotUsed,
            "Queue a market-intel job",
            Body(valid_job),
        )
        .metered(job_units)
        .route(
            routes!(market_intel::get_job),
            Access::WalletRead,
            NotUsed,
            "The wallet's market-intel job",
            Nothing,
        )
}

fn parses_as<T: serde::de::DeserializeOwned + serde::Serialize>(
    bytes: &[u8],
) -> Result<(), ApiError> {
    parse_json::<T>(bytes).map(drop)
}

/// The most a job's body may cost (docs/market-intel.md, "What a job costs").
fn job_units(bytes: &[u8]) -> u64 {
    parse_json::<swapd_types::market_intel::JobInput>(bytes).map_or(1, |input| {
        swapd_core::market_intel::maximum_units(&input.kind)
    })
}

fn valid_job(bytes: &[u8]) -> Result<(), ApiError> {
    let input = parse_json::<swapd_types::market_intel::JobInput>(bytes)?;
    swapd_app::market_intel::check(&input)?;
    Ok(())
}

pub use crate::handlers::input::QueryCheck;

/// The declared routes, in declaration order.
pub fn routes() -> &'static [X402Route] {
    static ROUTES: OnceLock<Vec<X402Route>> = OnceLock::new();
    ROUTES.get_or_init(|| {
        declare()
            .routes
            .into_iter()
            .map(|(route, _)| route)
            .collect()
    })
}

/// The x402 routes, each behind the gate with its own rule.
pub fn router(state: &AppState) -> Router<AppState> {
    let mut router = Router::new();
    for (route, handler) in declare().routes {
        let path = route.path.clone();
        let gate = gate::RouteGate {
            state: state.clone(),
            route: route.into(),
            asked: Default::default(),
        };
        router = router.route(
            &path,
            handler.route_layer(middleware::from_fn_with_state(gate, gate::gate)),
        );
    }
    router
}

/// The OpenAPI paths of the declared routes, and the schemas they use.
pub fn openapi() -> (Paths, Vec<(String, RefOr<Schema>)>) {
    let declared = declare();
    (declared.paths, declared.schemas)
}

#[derive(Default)]
struct X402Routes {
    routes: Vec<(X402Route, MethodRouter<AppState>)>,
    paths: Paths,
    schemas: Vec<(String, RefOr<Schema>)>,
}

impl X402Routes {
    /// `routes!(handler)`: a Business API handler (its `/api/v3` path is mounted under
    /// `/api/x402`, and its operation says what it costs) or one of this surface's own.
    fn route(
        mut self,
        (schemas, paths, handler): UtoipaMethodRouter<AppState>,
        access: Access,
        access_tokens: AccessTokens,
        description: &'static str,
        input: InputCheck,
    ) -> Self {
        let (path, method, mut operation) = single_operation(paths);
        if method == Method::GET || crate::business::routes::reads_only(&method, &path) {
            mark_read_only(&mut operation);
        }
        let path = match path.strip_prefix(BUSINESS_PREFIX) {
            Some(rest) => format!("{X402_PREFIX}{rest}"),
            None => path,
        };
        let page = Page::of(&path, access);
        if access != Access::Free {
            doc::charge_operation(&mut operation, &method, access, page.is_some());
        }
        crate::route_doc::document_common_errors(&mut operation, &method);
        self.paths
            .add_path_operation(&path, vec![http_method(&method)], operation);
        self.schemas.extend(schemas);
        self.routes.push((
            X402Route {
                method,
                path,
                access,
                access_tokens,
                description,
                input,
                page,
                metered: None,
            },
            handler,
        ));
        self
    }

    /// The route declared last is metered by `units` (see [`X402Route::metered`]).
    fn metered(mut self, units: fn(&[u8]) -> u64) -> Self {
        let (route, _) = self.routes.last_mut().expect("a route declared before");
        route.metered = Some(units);
        self
    }
}

/// `x-read-only: true`: the operation changes nothing (MCP tools are annotated from it).
fn mark_read_only(operation: &mut utoipa::openapi::path::Operation) {
    let marker = utoipa::openapi::extensions::ExtensionsBuilder::new()
        .add("x-read-only", true)
        .build();
    operation
        .extensions
        .get_or_insert_with(Default::default)
        .merge(marker);
}

const BUSINESS_PREFIX: &str = "/api/v3";
const X402_PREFIX: &str = "/api/x402";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_paid_call_checks_its_input_before_the_charge() {
        for route in routes().iter().filter(|r| r.access.paid()) {
            match (&route.method, route.input) {
                (&Method::POST, InputCheck::Body(check)) => {
                    assert!(check(b"{\"unknown\": 1}").is_err(), "{}", route.path);
                }
                (&Method::GET, InputCheck::Query(_)) => {}
                _ => panic!("{} {} has no input check", route.method, route.path),
            }
        }
        let job = routes()
            .iter()
            .find(|r| r.method == Method::POST && r.path == "/api/x402/market-intel/jobs")
            .unwrap();
        let InputCheck::Body(check) = job.input else {
            panic!("market-intel jobs check their body");
        };
        assert!(check(br#"{"kind":"pair_depth","fromCcy":"BTC","toCcy":"ETH"}"#).is_ok());
        assert!(
            check(br#"{"kind":"pair_depth","fromCcy":"BTC","toCcy":"ETH","steps":99}"#).is_err()
        );
    }
}
