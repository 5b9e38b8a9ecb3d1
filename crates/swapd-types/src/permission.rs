use std::fmt;

use strum::VariantNames;
use utoipa::openapi::RefOr;
use utoipa::openapi::schema::{ObjectBuilder, Schema, SchemaType, Type};

/// A Business API key permission, named exactly as in the spec.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    strum::IntoStaticStr,
    strum::EnumString,
    strum::Display,
    strum::VariantArray,
    strum::VariantNames,
)]
pub enum Permission {
    #[strum(serialize = "prices:read")]
    PricesRead,
    #[strum(serialize = "orders:create")]
    OrdersCreate,
    #[strum(serialize = "orders:read")]
    OrdersRead,
    #[strum(serialize = "orders:update")]
    OrdersUpdate,
    #[strum(serialize = "notifications:write")]
    NotificationsWrite,
    #[strum(serialize = "webhooks:read")]
    WebhooksRead,
    #[strum(serialize = "webhooks:write")]
    WebhooksWrite,
}

crate::serde_as_str!(Permission);

impl Permission {
    pub fn as_str(self) -> &'static str {
        self.into()
    }

    /// Whether what it allows only reads (`prices:read`, `orders:read`, `webhooks:read`).
    pub fn reads_only(self) -> bool {
        self.as_str().ends_with(":read")
    }

    /// Parses a permission, naming the valid ones when `text` is none of them.
    pub fn parse(text: &str) -> Result<Permission, UnknownPermission> {
        text.parse().map_err(|_| UnknownPermission(text.to_owned()))
    }
}

impl utoipa::PartialSchema for Permission {
    fn schema() -> RefOr<Schema> {
        ObjectBuilder::new()
            .schema_type(SchemaType::Type(Type::String))
            .enum_values(Some(Permission::VARIANTS.iter().copied()))
            .description(Some(
                "A Business API key permission, named exactly as in the spec.",
            ))
            .into()
    }
}

impl utoipa::ToSchema for Permission {}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownPermission(pub String);

impl fmt::Display for UnknownPermission {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "unknown permission `{}` (valid: {})",
            self.0,
            Permission::VARIANTS.join(", ")
        )
    }
}

impl std::error::Error for UnknownPermission {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_through_str_and_serde() {
        for &p in <Permission as strum::VariantArray>::VARIANTS {
            assert_eq!(Permission::parse(p.as_str()).unwrap(), p);
            let json = serde_json::to_string(&p).unwrap();
            assert_eq!(json, format!("\"{}\"", p.as_str()));
        }
        let unknown = Permission::parse("orders:delete").unwrap_err().to_string();
        assert!(
            unknown.contains("valid: prices:read, orders:create"),
            "{unknown}"
        );
    }
}
