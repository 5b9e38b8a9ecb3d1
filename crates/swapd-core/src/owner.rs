//! Who owns what swapd keeps for a principal (orders, route quotes, plans, subscriptions, jobs,
//! idempotency keys): an API key, a wallet proven on the x402 API, or a desk's own book in the
//! sandbox. Stored and compared as its scope text (`key:<id>`, `wallet:<address>`,
//! `desk:<provider>`), made here only.

use std::fmt;
use std::str::FromStr;

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Owner {
    /// The API key with this id (`key_…`).
    Key(String),
    /// A wallet, by its address as proven (EVM checksummed, Solana base58).
    Wallet(String),
    /// A desk's own book of an exchange (the sandbox desks).
    Desk(String),
}

impl Owner {
    /// The scope text the store keeps and compares.
    pub fn scope(&self) -> String {
        self.to_string()
    }
}

impl fmt::Display for Owner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Key(id) => write!(f, "key:{id}"),
            Self::Wallet(address) => write!(f, "wallet:{address}"),
            Self::Desk(provider) => write!(f, "desk:{provider}"),
        }
    }
}

/// Text that is not an owner's scope.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("not an owner: expected key:<id>, wallet:<address> or desk:<provider>")]
pub struct NotAnOwner;

impl FromStr for Owner {
    type Err = NotAnOwner;

    fn from_str(scope: &str) -> Result<Self, NotAnOwner> {
        let (kind, rest) = scope.split_once(':').ok_or(NotAnOwner)?;
        if rest.is_empty() {
            return Err(NotAnOwner);
        }
        match kind {
            "key" => Ok(Self::Key(rest.to_owned())),
            "wallet" => Ok(Self::Wallet(rest.to_owned())),
            "desk" => Ok(Self::Desk(rest.to_owned())),
            _ => Err(NotAnOwner),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_owner_reads_back_from_its_scope() {
        for owner in [
            Owner::Key("key_0123".into()),
            Owner::Wallet("0xAbC".into()),
            Owner::Desk("atlas".into()),
        ] {
            assert_eq!(owner.scope().parse::<Owner>(), Ok(owner));
        }
        assert_eq!(Owner::Key("key_1".into()).scope(), "key:key_1");
        for text in ["key_1", "key:", "team:x", ""] {
            assert_eq!(text.parse::<Owner>(), Err(NotAnOwner), "{text}");
        }
    }
}
