//! `[x402]`: how the pay-per-call API is paid (docs/x402.md).

use serde::{Deserialize, Serialize};

use super::value::{self, Caip2, ChainAddress, HttpUrl, PositiveDecimal, Secret};
use super::{ConfigError, setting, within};
use swapd_core::Mode;
use swapd_x402::Scheme;

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct X402Config {
    /// Every way to pay a call, in the order offered (`[[x402.accepts]]`). Unset: one, from
    /// the single-network keys below, as before this list existed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub accepts: Vec<X402Accept>,
    /// Single-network form: `ledger` (in-process, sandbox default) or `http`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub facilitator: Option<FacilitatorKind>,
    /// Single-network form: base URL of the HTTP facilitator.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "value::optional"
    )]
    pub facilitator_url: Option<HttpUrl>,
    /// How long an HTTP facilitator may take to verify a payment (and answer `/supported`).
    pub verify_timeout_ms: u64,
    /// How long one may take to settle one; past it the outcome is unknown and the same
    /// payment sent again finishes the purchase (docs/x402.md).
    pub settle_timeout_ms: u64,
    /// Single-network form: the seller address payments go to.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "value::optional"
    )]
    pub pay_to: Option<ChainAddress>,
    /// Single-network form: CAIP-2 network of the payment asset (`eip155:8453`).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "value::optional"
    )]
    pub network: Option<Caip2>,
    /// Flat price of one paid call in USD, as a decimal string; the same in every way to pay.
    pub price_usd: PositiveDecimal,
    /// Signs execution access tokens. Live: x402 order and onchain routes stay disabled without it.
    #[serde(default, with = "value::optional")]
    pub access_token_secret: Option<Secret>,
    /// Single-network form: the token payments are made in; unset: USDC of `network`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub asset: Option<X402AssetConfig>,
}

/// One way to pay (`[[x402.accepts]]`, docs/x402.md, "Ways to pay").
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct X402Accept {
    /// CAIP-2 network (`eip155:8453`).
    pub network: Caip2,
    #[serde(default)]
    pub scheme: Scheme,
    /// The token; unset: USDC of `network`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub asset: Option<X402AssetConfig>,
    /// The seller address payments go to (Solana: the owner, not its token account). Live:
    /// required; sandbox: derived from the master key.
    #[serde(default, with = "value::optional")]
    pub pay_to: Option<ChainAddress>,
    /// The HTTP facilitator that verifies and settles this way to pay; unset: the in-process
    /// ledger (sandbox only).
    #[serde(default, with = "value::optional")]
    pub facilitator_url: Option<HttpUrl>,
}

/// Who settles payments: the in-process ledger, or an HTTP facilitator.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FacilitatorKind {
    Ledger,
    Http,
}

/// A USD stablecoin on the payment network: an EIP-3009 token, or an SPL token on Solana.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct X402AssetConfig {
    /// The token contract, or mint; unset: USDC of the network.
    #[serde(default, with = "value::optional")]
    pub address: Option<ChainAddress>,
    /// EVM: its EIP-712 domain name and version, as the contract signs (USDC on Base:
    /// `USD Coin`, `2`).
    #[serde(default, with = "value::optional")]
    pub name: Option<String>,
    #[serde(default, with = "value::optional")]
    pub version: Option<String>,
    #[serde(default = "six")]
    pub decimals: u8,
}

fn six() -> u8 {
    6
}

impl Default for X402Config {
    fn default() -> Self {
        Self {
            accepts: Vec::new(),
            facilitator: None,
            facilitator_url: None,
            verify_timeout_ms: 5_000,
            settle_timeout_ms: 20_000,
            pay_to: None,
            network: None,
            price_usd: "0.05".parse().expect("a price"),
            access_token_secret: None,
            asset: None,
        }
    }
}

impl X402Config {
    /// The ways to pay in `mode`, in order: `accepts` as set, or the one the single-network
    /// keys describe; with none of them, in sandbox mode USDC on Base then on Solana (and `upto`
    /// on Base for market-intel jobs), in live mode USDC on Base.
    pub fn ways_to_pay(&self, mode: Mode) -> Result<Vec<X402Accept>, ConfigError> {
        let single_network_keys = [
            ("x402.network", self.network.is_some()),
            ("x402.pay_to", self.pay_to.is_some()),
            ("x402.asset", self.asset.is_some()),
            ("x402.facilitator", self.facilitator.is_some()),
            ("x402.facilitator_url", self.facilitator_url.is_some()),
        ];
        if !self.accepts.is_empty() {
            if let Some(&(name, _)) = single_network_keys.iter().find(|(_, set)| *set) {
                return Err(setting(
                    name,
                    "x402.accepts replaces the single-network keys (x402.network, pay_to, asset, \
                     facilitator, facilitator_url): set them in each [[x402.accepts]] instead",
                ));
            }
            return Ok(self.accepts.clone());
        }
        if mode == Mode::Sandbox && single_network_keys.iter().all(|(_, set)| !set) {
            return Ok([
                ("eip155:8453", Scheme::Exact),
                (swapd_x402::exact_svm::SOLANA_MAINNET, Scheme::Exact),
                ("eip155:8453", Scheme::Upto),
            ]
            .map(|(network, scheme)| X402Accept {
                network: network.parse().expect("a CAIP-2 id"),
                scheme,
                asset: None,
                pay_to: None,
                facilitator_url: None,
            })
            .to_vec());
        }
        let facilitator_url = match (self.facilitator, &self.facilitator_url) {
            (Some(FacilitatorKind::Http), None) => {
                return Err(setting(
                    "x402.facilitator_url",
                    "x402.facilitator = \"http\" needs x402.facilitator_url",
                ));
            }
            (Some(FacilitatorKind::Http), Some(url)) => Some(url.clone()),
            // The ledger settles: a URL set beside it is not used, as before.
            _ => None,
        };
        Ok(vec![X402Accept {
            network: self
                .network
                .clone()
                .unwrap_or_else(|| "eip155:8453".parse().expect("a CAIP-2 id")),
            scheme: Scheme::Exact,
            asset: self.asset.clone(),
            pay_to: self.pay_to.clone(),
            facilitator_url,
        }])
    }

    /// This section as `config show` prints it: the ways to pay as the list they are.
    pub(super) fn shown(&self, mode: Mode) -> Result<X402Config, ConfigError> {
        Ok(X402Config {
            accepts: self.ways_to_pay(mode)?,
            facilitator: None,
            facilitator_url: None,
            pay_to: None,
            network: None,
            asset: None,
            ..self.clone()
        })
    }

    pub(super) fn validate(&self, mode: Mode) -> Result<(), ConfigError> {
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
        let ways = self.ways_to_pay(mode)?;
        for (index, way) in ways.iter().enumerate() {
            let network = &way.network;
            let solana = network.as_str().starts_with("solana:");
            if !solana && !network.as_str().starts_with("eip155:") {
                return Err(setting(
                    "x402.accepts.network",
                    format!(
                        "{network}: x402 payments are taken on EVM (eip155:…) and Solana (solana:…) networks"
                    ),
                ));
            }
            if let Some(pay_to) = way.pay_to.as_ref().filter(|a| !a.fits(network)) {
                return Err(setting(
                    "x402.pay_to",
                    format!("{pay_to} is not an address of {network}"),
                ));
            }
            if let Some(asset) = &way.asset {
                asset.validate(network)?;
            }
            if way.scheme == Scheme::Upto && solana {
                return Err(setting(
                    "x402.accepts.scheme",
                    format!("{network}: `upto` is taken on EVM networks only (Permit2)"),
                ));
            }
            let same = |other: &X402Accept| {
                other.network == way.network
                    && other.scheme == way.scheme
                    && other.asset.as_ref().and_then(|a| a.address.as_ref())
                        == way.asset.as_ref().and_then(|a| a.address.as_ref())
            };
            if ways[..index].iter().any(same) {
                return Err(setting(
                    "x402.accepts",
                    format!(
                        "{} `{}` is listed twice: each way to pay once",
                        way.network,
                        way.scheme.as_str()
                    ),
                ));
            }
        }
        if !ways.iter().any(|way| way.scheme == Scheme::Exact) {
            return Err(setting(
                "x402.accepts",
                "list an `exact` way to pay: `upto` pays market-intel jobs only",
            ));
        }
        Ok(())
    }

    /// What live mode misses to take real payments: a facilitator and a seller address for
    /// every way to pay.
    pub(super) fn live_requirements(&self) -> Vec<(&'static str, &'static str)> {
        let Ok(ways) = self.ways_to_pay(Mode::Live) else {
            return Vec::new();
        };
        let mut missing = Vec::new();
        let single = self.accepts.is_empty();
        if ways.iter().any(|way| way.facilitator_url.is_none()) {
            missing.push(if single {
                (
                    "x402.facilitator = \"http\" and x402.facilitator_url",
                    "SWAPD_X402__FACILITATOR, SWAPD_X402__FACILITATOR_URL",
                )
            } else {
                (
                    "x402.accepts: facilitator_url of every way to pay",
                    "SWAPD_X402__ACCEPTS",
                )
            });
        }
        if ways.iter().any(|way| way.pay_to.is_none()) {
            missing.push(if single {
                ("x402.pay_to", "SWAPD_X402__PAY_TO")
            } else {
                (
                    "x402.accepts: pay_to of every way to pay",
                    "SWAPD_X402__ACCEPTS",
                )
            });
        }
        missing
    }
}

impl X402AssetConfig {
    fn validate(&self, network: &Caip2) -> Result<(), ConfigError> {
        let domain_given = self.name.is_some() || self.version.is_some();
        let solana = network.as_str().starts_with("solana:");
        match &self.address {
            Some(address) if !address.fits(network) => {
                return Err(setting(
                    "x402.asset.address",
                    format!("{address} is not a token of {network}"),
                ));
            }
            _ if solana && domain_given => {
                return Err(setting(
                    "x402.asset.name",
                    "a Solana token has no EIP-712 domain: set its mint and decimals only",
                ));
            }
            None if domain_given => {
                return Err(setting(
                    "x402.asset.address",
                    "set the token's address with its name and version (or none of them, for USDC)",
                ));
            }
            Some(_) if !solana && (self.name.is_none() || self.version.is_none()) => {
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
