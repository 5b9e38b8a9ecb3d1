//! The Business API route table: for every mounted route, the permission it needs (the spec's
//! endpoint table) and the weight it costs in the weighted hourly quota. The readiness document
//! and the authorization step both read it, so they cannot disagree.

use axum::http::Method;
use serde::Serialize;
use swapd_types::Permission;
use utoipa::ToSchema;

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

pub static BUSINESS_ROUTES: &[RouteSpec] = &[RouteSpec {
    method: Method::GET,
    path: "/api/v3",
    permission: None,
    weight: 1,
}];

pub fn find<'a>(routes: &'a [RouteSpec], method: &Method, path: &str) -> Option<&'a RouteSpec> {
    routes.iter().find(|spec| {
        spec.path == path
            && (spec.method == method || (method == Method::HEAD && spec.method == Method::GET))
    })
}

/// One route as listed by the readiness document.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RouteInfo {
    pub method: String,
    pub path: &'static str,
    /// The API-key permission the route requires; `null` when any valid key may call it.
    pub permission: Option<Permission>,
    /// Units of the weighted hourly quota (`X-RateLimit-Resource: key-weight-hour`) one call costs.
    pub weight: u32,
}

impl From<&RouteSpec> for RouteInfo {
    fn from(spec: &RouteSpec) -> Self {
        Self {
            method: spec.method.to_string(),
            path: spec.path,
            permission: spec.permission,
            weight: spec.weight,
        }
    }
}
