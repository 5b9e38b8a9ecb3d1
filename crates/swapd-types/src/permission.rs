use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// A Business API key permission, named exactly as in the spec.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, ToSchema,
)]
pub enum Permission {
    #[serde(rename = "prices:read")]
    PricesRead,
    #[serde(rename = "orders:create")]
    OrdersCreate,
    #[serde(rename = "orders:read")]
    OrdersRead,
    #[serde(rename = "orders:update")]
    OrdersUpdate,
    #[serde(rename = "notifications:write")]
    NotificationsWrite,
    #[serde(rename = "webhooks:read")]
    WebhooksRead,
    #[serde(rename = "webhooks:write")]
    WebhooksWrite,
}

impl Permission {
    pub const ALL: [Permission; 7] = [
        Permission::PricesRead,
        Permission::OrdersCreate,
        Permission::OrdersRead,
        Permission::OrdersUpdate,
        Permission::NotificationsWrite,
        Permission::WebhooksRead,
        Permission::WebhooksWrite,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Permission::PricesRead => "prices:read",
            Permission::OrdersCreate => "orders:create",
            Permission::OrdersRead => "orders:read",
            Permission::OrdersUpdate => "orders:update",
            Permission::NotificationsWrite => "notifications:write",
            Permission::WebhooksRead => "webhooks:read",
            Permission::WebhooksWrite => "webhooks:write",
        }
    }
}

impl fmt::Display for Permission {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.as_str())
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownPermission(pub String);

impl fmt::Display for UnknownPermission {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let valid: Vec<&str> = Permission::ALL.iter().map(|p| p.as_str()).collect();
        write!(
            f,
            "unknown permission `{}` (valid: {})",
            self.0,
            valid.join(", ")
        )
    }
}

impl std::error::Error for UnknownPermission {}

impl FromStr for Permission {
    type Err = UnknownPermission;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Permission::ALL
            .into_iter()
            .find(|p| p.as_str() == s)
            .ok_or_else(|| UnknownPermission(s.to_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_through_str_and_serde() {
        for p in Permission::ALL {
            assert_eq!(p.as_str().parse::<Permission>().unwrap(), p);
            let json = serde_json::to_string(&p).unwrap();
            assert_eq!(json, format!("\"{}\"", p.as_str()));
        }
        assert!("orders:delete".parse::<Permission>().is_err());
    }
}
