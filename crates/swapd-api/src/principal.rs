//! Who is calling. Each surface's gate proves it (an API key's signature, a wallet's SIGN-IN-
//! WITH-X proof or payment) and puts a [`Caller`] on the request; handlers and the idempotency
//! layer read it with the [`Caller`] extractor and never ask which surface they are on.

use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use swapd_core::owner::Owner;
use swapd_types::Permission;
use swapd_x402::siwx::Wallet;

use crate::ApiError;

/// The proven caller of a request.
#[derive(Debug, Clone)]
pub enum Caller {
    /// An API key of the Business API.
    Key(KeyPrincipal),
    /// A wallet on the x402 API: the one a SIGN-IN-WITH-X proof names, or else the payer.
    Wallet(Wallet),
}

/// An authenticated API key.
#[derive(Debug, Clone)]
pub struct KeyPrincipal {
    pub key_id: String,
    pub permissions: Vec<Permission>,
    /// The partner's markup on its quotes (docs/fees.md).
    pub markup: swapd_core::fees::Markup,
}

impl Caller {
    /// The scope of this caller's idempotency keys and owned objects: `key:<id>` or
    /// `wallet:<address>`.
    pub fn scope(&self) -> String {
        self.owner().scope()
    }

    /// The owner of what this caller creates.
    pub fn owner(&self) -> Owner {
        match self {
            Self::Key(key) => Owner::Key(key.key_id.clone()),
            Self::Wallet(wallet) => Owner::Wallet(wallet.address()),
        }
    }

    /// The partner's markup on this caller's quotes: its key's; none for a wallet.
    pub fn markup(&self) -> swapd_core::fees::Markup {
        match self {
            Self::Key(key) => key.markup,
            Self::Wallet(_) => swapd_core::fees::Markup::default(),
        }
    }

    /// The wallet, on the x402 API.
    pub fn wallet(&self) -> Option<&Wallet> {
        match self {
            Self::Key(_) => None,
            Self::Wallet(wallet) => Some(wallet),
        }
    }

    /// The key, on the Business API.
    pub fn key(&self) -> Option<&KeyPrincipal> {
        match self {
            Self::Key(key) => Some(key),
            Self::Wallet(_) => None,
        }
    }
}

impl<S: Send + Sync> FromRequestParts<S> for Caller {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, ApiError> {
        parts.extensions.get::<Caller>().cloned().ok_or_else(|| {
            ApiError::internal(format_args!(
                "{} needs its caller but is mounted without a gate",
                parts.uri.path()
            ))
        })
    }
}
