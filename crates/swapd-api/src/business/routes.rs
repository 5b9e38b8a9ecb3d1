//! The Business API route table: for every mounted route, the permission it needs (the spec's
//! endpoint table) and the weight it costs in the weighted hourly quota. The readiness document
//! and the authorization step both read it, so they cannot disagree.

use axum::http::Method;
use swapd_types::Permission;
use swapd_types::readiness::RouteInfo;

#[derive(Debug, Clone)]
pub struct RouteSpec {
    pub method: Method,
    /// The route template exactly as mounted, e.g. `/api/v3/orders/{orderId}`.
    pub path: &'static str,
    /// `None`: any valid key may call it.
    pub permission: Option<Permission>,
    /// Units of the weighted hourly quota one call costs.
    pub weight: u32,
}

const fn route(
    method: Method,
    path: &'static str,
    permission: Option<Permission>,
    weight: u32,
) -> RouteSpec {
    RouteSpec {
        method,
        path,
        permission,
        weight,
    }
}

const PRICES: Option<Permission> = Some(Permission::PricesRead);
const CREATE: Option<Permission> = Some(Permission::OrdersCreate);
const READ: Option<Permission> = Some(Permission::OrdersRead);
const UPDATE: Option<Permission> = Some(Permission::OrdersUpdate);
const HOOKS_READ: Option<Permission> = Some(Permission::WebhooksRead);
const HOOKS_WRITE: Option<Permission> = Some(Permission::WebhooksWrite);

/// Route discovery asks every provider, so it weighs more than a catalog read.
pub static BUSINESS_ROUTES: &[RouteSpec] = &[
    route(Method::GET, "/api/v3", None, 1),
    route(Method::GET, "/api/v3/currencies", PRICES, 1),
    route(Method::GET, "/api/v3/tokens/popular", PRICES, 1),
    route(Method::GET, "/api/v3/tokens/search", PRICES, 1),
    route(Method::GET, "/api/v3/tokens/by-address", PRICES, 1),
    route(Method::GET, "/api/v3/tokens/logo", PRICES, 1),
    route(Method::POST, "/api/v3/quotes", PRICES, 2),
    route(Method::GET, "/api/v3/routes", PRICES, 5),
    route(Method::POST, "/api/v3/routes/resolve", CREATE, 2),
    route(Method::POST, "/api/v3/orders", CREATE, 5),
    route(Method::GET, "/api/v3/orders/{orderId}", READ, 1),
    route(Method::GET, "/api/v3/orders/{orderId}/status", READ, 1),
    route(
        Method::POST,
        "/api/v3/orders/{orderId}/emergency",
        UPDATE,
        2,
    ),
    route(Method::POST, "/api/v3/orders/{orderId}/refund", UPDATE, 2),
    route(Method::GET, "/api/v3/orders/{orderId}/qr", READ, 2),
    route(
        Method::POST,
        "/api/v3/orders/{orderId}/notifications/email",
        Some(Permission::NotificationsWrite),
        1,
    ),
    route(Method::POST, "/api/v3/onchain/routes/resolve", CREATE, 3),
    route(Method::POST, "/api/v3/onchain/executions", CREATE, 2),
    route(
        Method::GET,
        "/api/v3/onchain/executions/{executionPlanId}",
        READ,
        1,
    ),
    route(Method::GET, "/api/v3/webhooks", HOOKS_READ, 1),
    route(Method::POST, "/api/v3/webhooks", HOOKS_WRITE, 2),
    route(
        Method::PATCH,
        "/api/v3/webhooks/{webhookId}",
        HOOKS_WRITE,
        2,
    ),
    route(
        Method::POST,
        "/api/v3/webhooks/{webhookId}/rotate-secret",
        HOOKS_WRITE,
        2,
    ),
    route(
        Method::POST,
        "/api/v3/webhooks/{webhookId}/replay",
        HOOKS_WRITE,
        5,
    ),
    route(
        Method::GET,
        "/api/v3/webhooks/{webhookId}/deliveries",
        HOOKS_READ,
        1,
    ),
    route(Method::POST, "/api/v3/callbacks/test", HOOKS_WRITE, 5),
    route(
        Method::POST,
        "/api/v3/sandbox/orders/{orderId}/deposit",
        CREATE,
        1,
    ),
];

pub fn find<'a>(routes: &'a [RouteSpec], method: &Method, path: &str) -> Option<&'a RouteSpec> {
    routes.iter().find(|spec| {
        spec.path == path
            && (spec.method == method || (method == Method::HEAD && spec.method == Method::GET))
    })
}

/// A route as the readiness document lists it.
pub fn route_info(spec: &RouteSpec) -> RouteInfo {
    RouteInfo {
        method: spec.method.to_string(),
        path: spec.path.to_owned(),
        permission: spec.permission,
        weight: spec.weight,
    }
}
