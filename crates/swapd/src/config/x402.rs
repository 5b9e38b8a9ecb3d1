//! `[x402]`: how the pay-per-call API is paid (docs/x402.md).

use serde::{Deserialize, Serialize};

use super::value::{self, Caip2, EvmAddress, HttpUrl, PositiveDecimal, Secret};
use super::{ConfigError, setting, within};

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct X402Config {
    /// `ledger` (in-process, sandbox default) or `http`.
    pub facilitator: FacilitatorKind,
    /// Base URL of the HTTP facilitator (`/verify`, `/settle`, `/supported`). Live: required.
    #[serde(default, with = "value::optional")]
    pub facilitator_url: Option<HttpUrl>,
    /// How long the HTTP facilitator may take to verify a payment (and answer `/supported`).
    pub verify_timeout_ms: u64,
    /// How long the HTTP facilitator may take to settle one; past it the outcome is unknown
    /// and the same payment sent again finishes the purchase (docs/x402.md).
    pub settle_timeout_ms: u64,
    /// The seller address payments go to. Live: required.
    #[serde(default, with = "value::optional")]
    pub pay_to: Option<EvmAddress>,
    /// CAIP-2 network of the payment asset.
    pub network: Caip2,
    /// Flat price of one paid call in USD, as a decimal string.
    pub price_usd: PositiveDecimal,
    /// Signs execution access tokens. Live: x402 order and onchain routes stay disabled without it.
    #[serde(default, with = "value::optional")]
    pub access_token_secret: Option<Secret>,
    /// The token payments are made in; unset: USDC of `network`.
    pub asset: X402AssetConfig,
}

/// Who settles payments: the in-process ledger, or an HTTP facilitator.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FacilitatorKind {
    Ledger,
    Http,
}

/// An EIP-3009 USD stablecoin on the payment network.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct X402AssetConfig {
    /// The token contract; unset: USDC of `x402.network`.
    #[serde(default, with = "value::optional")]
    pub address: Option<EvmAddress>,
    /// Its EIP-712 domain name and version, as the contract signs (USDC on Base: `USD Coin`, `2`).
    #[serde(default, with = "value::optional")]
    pub name: Option<String>,
    #[serde(default, with = "value::optional")]
    pub version: Option<String>,
    pub decimals: u8,
}

impl Default for X402Config {
    fn default() -> Self {
        Self {
            facilitator: FacilitatorKind::Ledger,
            facilitator_url: None,
            verify_timeout_ms: 5_000,
            settle_timeout_ms: 20_000,
            pay_to: None,
            network: "eip155:8453".parse().expect("a CAIP-2 id"),
            price_usd: "0.05".parse().expect("a price"),
            access_token_secret: None,
            asset: X402AssetConfig {
                address: None,
                name: None,
                version: None,
                decimals: 6,
            },
        }
    }
}

impl X402Config {
    pub(super) fn validate(&self) -> Result<(), ConfigError> {
        for (name, ms) in [
            ("x402.verify_timeout_ms", self.verify_timeout_ms),
            ("x402.settle_timeout_ms", self.settle_timeout_ms),
        ] {
            // Below the hold an attempt has on a purchase, so a slow settlement cannot outlive it.
            within(
                name,
                ms,
                100..=30_000,
                "must be from 100 to 30000 milliseconds",
            )?;
        }
        self.asset.validate()
    }
}

impl X402AssetConfig {
    fn validate(&self) -> Result<(), ConfigError> {
        let domain_given = self.name.is_some() || self.version.is_some();
        match self.address {
            None if domain_given => {
                return Err(setting(
                    "x402.asset.address",
                    "set the token's address with its name and version (or none of them, for USDC)",
                ));
            }
            Some(_) if self.name.is_none() || self.version.is_none() => {
                return Err(setting(
                    "x402.asset.name",
                    "a custom token needs its EIP-712 domain `name` and `version` (x402.asset.name, x402.asset.version)",
                ));
            }
            _ => {}
        }
        within(
            "x402.asset.decimals",
            self.decimals,
            0..=18,
            "must be from 0 to 18",
        )
    }
}
