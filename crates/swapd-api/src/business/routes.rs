//! The Business API's routes, each declared once in [`declare`]: the handler brings its path,
//! method and OpenAPI operation (its `#[utoipa::path]`), the declaration adds what a key needs
//! and what a call weighs. The router, the gate's rule for each route, the readiness list and
//! the OpenAPI paths are all derived from it.

use std::sync::{Arc, OnceLock};

use axum::handler::Handler;
use axum::http::Method;
use axum::routing::{MethodFilter, MethodRouter};
use axum::{Router, middleware};
use swapd_types::Permission;
use utoipa::openapi::path::{Operation, Paths};
use utoipa::openapi::{RefOr, Schema};
use utoipa_axum::router::UtoipaMethodRouter;
use utoipa_axum::routes;

use super::auth::{self, Gate};
use super::spec::{Required, RouteSpec};
use crate::AppState;
use crate::handlers::{
    catalog, earnings, onchain, orders, providers, quotes, routes as route_handlers, sandbox,
    tokens, webhooks,
};
use crate::idempotency::ClaimAt;
use crate::route_doc::{
    document_common_errors, document_errors, document_idempotency_key, has_body, single_operation,
};

/// Every route of the spec's Business API table. Route discovery asks every provider, so it
/// weighs more than a catalog read.
fn declare() -> BusinessRoutes {
    use Permission::*;
    BusinessRoutes::default()
        .route(routes!(super::readiness), Required::AnyKey, 1)
        .route(routes!(catalog::currencies), PricesRead, 1)
        .route(routes!(providers::providers), PricesRead, 1)
        .route(routes!(tokens::tokens_popular), PricesRead, 1)
        .route(routes!(tokens::tokens_search), PricesRead, 1)
        .route(routes!(tokens::tokens_by_address), PricesRead, 1)
        .route(routes!(tokens::tokens_logo), PricesRead, 1)
        .route(routes!(quotes::quotes), PricesRead, 2)
        .route(routes!(route_handlers::discover_routes), PricesRead, 5)
        .route(routes!(route_handlers::resolve), OrdersCreate, 2)
        .route(routes!(orders::create_order), OrdersCreate, 5)
        // An exchange opened at a desk is funded by nobody unless its order is stored; a live
        // desk's create is an upstream write, so there the key is held from the start.
        .claimed_at_commit_unless_upstream()
        .route(routes!(orders::get_order), OrdersRead, 1)
        .route(routes!(orders::get_order_status), OrdersRead, 1)
        .route(routes!(orders::emergency), OrdersUpdate, 2)
        .route(routes!(orders::refund), OrdersUpdate, 2)
        .route(routes!(orders::deposit_qr), OrdersRead, 2)
        .route(routes!(orders::attach_email), NotificationsWrite, 1)
        .route(routes!(onchain::resolve), OrdersCreate, 3)
        .route(routes!(onchain::report), OrdersCreate, 2)
        .route(routes!(onchain::status), OrdersRead, 1)
        .route(routes!(earnings::earnings), OrdersRead, 2)
        .route(routes!(webhooks::list), WebhooksRead, 1)
        .route(routes!(webhooks::create), WebhooksWrite, 2)
        .route(routes!(webhooks::update), WebhooksWrite, 2)
        .route(routes!(webhooks::rotate), WebhooksWrite, 2)
        .route(routes!(webhooks::replay), WebhooksWrite, 5)
        .route(routes!(webhooks::deliveries), WebhooksRead, 1)
        .route(routes!(webhooks::test_callback), WebhooksWrite, 5)
        .route(routes!(sandbox::deposit), OrdersCreate, 1)
}

/// The declared routes, in declaration order.
pub fn routes() -> &'static [RouteSpec] {
    static SPECS: OnceLock<Vec<RouteSpec>> = OnceLock::new();
    SPECS.get_or_init(|| declare().routes.into_iter().map(|r| r.spec).collect())
}

/// Whether the route at `method` and `path` needs only a read permission (`POST /quotes` needs
/// `prices:read`: it changes nothing).
pub fn reads_only(method: &Method, path: &str) -> bool {
    routes()
        .iter()
        .find(|r| r.method == *method && r.path == path)
        .is_some_and(|r| matches!(r.required, Required::Permission(p) if p.reads_only()))
}

/// The signed Business API routes behind their gate.
pub fn router(state: &AppState) -> Router<AppState> {
    declare().into_router(state)
}

/// The OpenAPI paths of the declared routes, and the schemas they use.
pub fn openapi() -> (Paths, Vec<(String, RefOr<Schema>)>) {
    let declared = declare();
    (declared.paths, declared.schemas)
}

/// A set of signed routes and what the gate needs to know of each.
#[derive(Default)]
pub struct BusinessRoutes {
    routes: Vec<Declared>,
    paths: Paths,
    schemas: Vec<(String, RefOr<Schema>)>,
}

struct Declared {
    spec: RouteSpec,
    handler: MethodRouter<AppState>,
    claim_at: ClaimAt,
}

impl BusinessRoutes {
    /// A documented route: `routes!(handler)` of a handler with a `#[utoipa::path]`.
    pub fn route(
        mut self,
        (schemas, paths, handler): UtoipaMethodRouter<AppState>,
        required: impl Into<Required>,
        weight: u32,
    ) -> Self {
        let required = required.into();
        let (path, method, mut operation) = single_operation(paths);
        describe(&mut operation, &method, required);
        self.paths.add_path_operation(
            &path,
            vec![crate::route_doc::http_method(&method)],
            operation,
        );
        self.schemas.extend(schemas);
        self.push(method, path, handler, required, weight)
    }

    /// A route without an OpenAPI operation (test routes behind the same gate).
    pub fn undocumented<H, T>(
        self,
        method: Method,
        path: &str,
        handler: H,
        required: impl Into<Required>,
        weight: u32,
    ) -> Self
    where
        H: Handler<T, AppState>,
        T: 'static,
    {
        let filter = MethodFilter::try_from(method.clone()).expect("a routable method");
        let handler = MethodRouter::new().on(filter, handler);
        self.push(method, path.to_owned(), handler, required.into(), weight)
    }

    /// The route declared last takes its `Idempotency-Key` in its own write
    /// ([`ClaimAt::Commit`]).
    pub fn claimed_at_commit(mut self) -> Self {
        if let Some(last) = self.routes.last_mut() {
            last.claim_at = ClaimAt::Commit;
        }
        self
    }

    /// As [`BusinessRoutes::claimed_at_commit`] when the deployment's desks write nothing upstream to open an
    /// exchange (the sandbox's); with live desks it holds the key from the start and runs to
    /// completion ([`ClaimAt::StartToCompletion`]), so a retry never opens a second exchange.
    pub fn claimed_at_commit_unless_upstream(mut self) -> Self {
        if let Some(last) = self.routes.last_mut() {
            last.claim_at = ClaimAt::CommitUnlessUpstream;
        }
        self
    }

    fn push(
        mut self,
        method: Method,
        path: String,
        handler: MethodRouter<AppState>,
        required: Required,
        weight: u32,
    ) -> Self {
        self.routes.push(Declared {
            spec: RouteSpec {
                method,
                path,
                required,
                weight,
            },
            handler,
            claim_at: ClaimAt::default(),
        });
        self
    }

    /// Mounts every route behind the gate: CORS preflights, then authentication,
    /// authorization and rate limits with the route's own rule, then idempotency for
    /// mutations. Methods a path does not have answer 405 with `Allow`, before the gate.
    pub fn into_router(self, state: &AppState) -> Router<AppState> {
        let mut router = Router::new();
        for Declared {
            spec,
            handler,
            claim_at,
        } in self.routes
        {
            let path = spec.path.clone();
            let gate = Gate {
                state: state.clone(),
                route: Arc::new(spec),
            };
            let claim_at = match claim_at {
                ClaimAt::CommitUnlessUpstream if state.market.desks_open_upstream() => {
                    ClaimAt::StartToCompletion
                }
                ClaimAt::CommitUnlessUpstream => ClaimAt::Commit,
                other => other,
            };
            let handler = handler
                .route_layer(middleware::from_fn_with_state(
                    (state.clone(), claim_at),
                    crate::idempotency::idempotent,
                ))
                .route_layer(middleware::from_fn_with_state(gate, auth::authenticate));
            router = router.route(&path, handler);
        }
        router.layer(middleware::from_fn_with_state(
            state.guards.clone(),
            auth::preflight,
        ))
    }
}

/// Opens the operation's description with the rule the declaration set, so it is never
/// restated by hand, and adds what the gate may answer: authentication, the permission, rate
/// limits and quotas, and for mutations their `Idempotency-Key`.
fn describe(operation: &mut Operation, method: &Method, required: Required) {
    use swapd_types::ErrorCode::*;
    document_common_errors(operation, method);
    document_errors(
        operation,
        &[
            AuthHeaderMissing,
            AuthHeaderDuplicated,
            ApiKeyInvalid,
            ApiKeyRevoked,
            SignatureMalformed,
            SignatureInvalid,
            TimestampInvalid,
            TimestampOutOfWindow,
            NonceInvalid,
            NonceReused,
            AuthUnavailable,
            IpNotAllowed,
            OriginNotAllowed,
            ContentEncodingUnsupported,
            RateLimitExceeded,
            QuotaExceeded,
        ],
    );
    if *method == Method::GET {
        document_errors(operation, &[BodyNotAllowed]);
    }
    let needs = if has_body(method) {
        document_idempotency_key(operation);
        "; needs `Idempotency-Key`"
    } else {
        ""
    };
    let Required::Permission(permission) = required else {
        return;
    };
    document_errors(operation, &[PermissionDenied]);
    let own = operation.description.take().unwrap_or_default();
    operation.description = Some(format!("Permission `{permission}`{needs}. {own}"));
}
