//! Unguessable prefixed identifiers: a prefix followed by 32 lowercase hex digits of random bits,
//! and a type per kind of object, so an order's id is never taken for a plan's.

use std::fmt;

use rand::RngCore;
pub use swapd_types::ids::is_valid_id;

/// `prefix` + 32 lowercase hex characters (128 random bits from the OS-seeded CSPRNG).
pub fn new_id(prefix: &str) -> String {
    let mut bytes = [0u8; 16];
    rand::rng().fill_bytes(&mut bytes);
    format!("{prefix}{}", hex::encode(bytes))
}

/// A transaction id in the common 64-hex-digit form (256 random bits), for the sandbox chain.
pub fn new_tx_id() -> String {
    format!("{}{}", new_id(""), new_id(""))
}

/// Stored text that is not an id of the kind asked for (it lacks the kind's prefix).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{text}` is not an id starting with {prefix}")]
pub struct NotAnId {
    pub prefix: &'static str,
    pub text: String,
}

macro_rules! prefixed_id {
    ($(#[$doc:meta])* $name:ident = $prefix:literal) => {
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub struct $name(String);

        impl $name {
            pub const PREFIX: &'static str = $prefix;

            /// A new, unguessable id.
            pub fn generate() -> Self {
                Self(new_id($prefix))
            }

            /// `text` when it is such an id on the wire: the prefix and 32 lowercase hex digits.
            /// Anything else names no object (a caller answers "not found").
            pub fn parse(text: &str) -> Option<Self> {
                is_valid_id(text, $prefix).then(|| Self(text.to_owned()))
            }

            /// An id as the store keeps it: it starts with the prefix.
            pub fn stored(text: String) -> Result<Self, NotAnId> {
                if text.starts_with($prefix) {
                    Ok(Self(text))
                } else {
                    Err(NotAnId { prefix: $prefix, text })
                }
            }

            pub fn as_str(&self) -> &str {
                &self.0
            }

            pub fn into_string(self) -> String {
                self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        /// As [`stored`](Self::stored): what tests and stored text use.
        impl std::str::FromStr for $name {
            type Err = NotAnId;

            fn from_str(text: &str) -> Result<Self, NotAnId> {
                Self::stored(text.to_owned())
            }
        }

        impl PartialEq<str> for $name {
            fn eq(&self, other: &str) -> bool {
                self.0 == other
            }
        }

        impl PartialEq<&str> for $name {
            fn eq(&self, other: &&str) -> bool {
                self.0 == *other
            }
        }

        impl AsRef<str> for $name {
            fn as_ref(&self) -> &str {
                &self.0
            }
        }
    };
}

prefixed_id!(
    /// An offchain order (`ord_…`).
    OrderId = "ord_"
);
prefixed_id!(
    /// An outbox event about an order (`evt_…`): a webhook's `webhook-id`.
    EventId = "evt_"
);
prefixed_id!(
    /// A route card's stored quote (`rqq_…`).
    RouteQuoteId = "rqq_"
);
prefixed_id!(
    /// An onchain execution plan (`ocx_…`).
    PlanId = "ocx_"
);
prefixed_id!(
    /// A webhook subscription (`whk_…`).
    WebhookId = "whk_"
);
prefixed_id!(
    /// A market-intel job (`job_…`).
    JobId = "job_"
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_have_the_prefix_and_32_hex_digits_and_differ() {
        let a = new_id("ord_");
        let b = new_id("ord_");
        assert!(is_valid_id(&a, "ord_"), "{a}");
        assert_ne!(a, b);
        assert!(!is_valid_id(&a, "whk_"));
        assert!(!is_valid_id("ord_ABCDEF", "ord_"));
        assert!(!is_valid_id(&a.to_uppercase(), "ord_"));
    }

    #[test]
    fn typed_ids_parse_their_own_kind_only() {
        let order = OrderId::generate();
        assert_eq!(OrderId::parse(order.as_str()), Some(order.clone()));
        assert_eq!(PlanId::parse(order.as_str()), None);
        assert_eq!(OrderId::parse("ord_short"), None, "not a wire id");
        assert!(
            OrderId::stored("ord_short".into()).is_ok(),
            "but a stored one"
        );
        assert!(PlanId::stored(order.into_string()).is_err());
    }
}
