//! A declared Business API route as the gate and the readiness document see it: its method and
//! path, what a key needs to call it, and what a call weighs.

use axum::http::Method;
use swapd_types::Permission;
use swapd_types::readiness::RouteInfo;

/// What a key needs to call a route: a route cannot be declared without saying.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Required {
    /// Any valid, active key.
    AnyKey,
    Permission(Permission),
}

impl From<Permission> for Required {
    fn from(permission: Permission) -> Self {
        Self::Permission(permission)
    }
}

/// A declared route as the gate and the readiness document see it.
#[derive(Debug, Clone)]
pub struct RouteSpec {
    pub method: Method,
    /// The route template as mounted, e.g. `/api/v3/orders/{orderId}`.
    pub path: String,
    pub required: Required,
    /// Units of the weighted hourly quota one call costs.
    pub weight: u32,
}

impl RouteSpec {
    /// The route as the readiness document lists it.
    pub fn info(&self) -> RouteInfo {
        RouteInfo {
            method: self.method.to_string(),
            path: self.path.clone(),
            permission: match self.required {
                Required::AnyKey => None,
                Required::Permission(permission) => Some(permission),
            },
            weight: self.weight,
        }
    }
}
