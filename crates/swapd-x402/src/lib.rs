//! x402 v2 for swapd's pay-per-call API (`/api/x402`, docs/x402.md): the wire
//! shapes, the `exact` EVM scheme (EIP-3009), the facilitator port with its HTTP client, and
//! Sign-In-With-X proofs. The in-process ledger facilitator, which needs the store, is the
//! server's (`swapd-api`).
//!
//! Without the default `server` feature, only the protocol is built (wire shapes, EIP-3009
//! digests, SIWX texts and checks, the HTTP facilitator): what a client needs, without swapd's
//! domain crate. With it, also the server's pricing.

pub mod exact;
pub mod exact_svm;
pub mod facilitator;
pub mod siwx;
pub mod upto;
pub mod wire;

#[cfg(feature = "server")]
use serde_json::{Map, Value, json};
#[cfg(feature = "server")]
use swapd_core::amount::Amount;

pub use facilitator::{Facilitator, FacilitatorError, HttpFacilitator, Timeouts};
#[cfg(feature = "server")]
use wire::{PaymentRequired, PaymentRequirements, ResourceInfo, X402_VERSION};

/// USDC as the `exact` scheme pays it on a network: (asset, EIP-712 name and version on EVM
/// networks).
pub fn usdc(network: &str) -> Option<(&'static str, Option<(&'static str, &'static str)>)> {
    Some(match network {
        "eip155:8453" => (
            "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913",
            Some(("USD Coin", "2")),
        ),
        "eip155:84532" => (
            "0x036CbD53842c5426634e7929541eC2318f3dCF7e",
            Some(("USDC", "2")),
        ),
        "eip155:1" => (
            "0xA0b86991c6218b36c1d19D4a2e9Eb0cE3606eB48",
            Some(("USD Coin", "2")),
        ),
        "eip155:42161" => (
            "0xaf88d065e77c8cC2239327C5EDb3A432268e5831",
            Some(("USD Coin", "2")),
        ),
        "eip155:137" => (
            "0x3c499c542cEF5E3811e1192ce70d8cC03d5c3359",
            Some(("USD Coin", "2")),
        ),
        exact_svm::SOLANA_MAINNET => ("EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v", None),
        exact_svm::SOLANA_DEVNET => ("4zMMC9srt5Ri5X14GAgXhaHii3GnPAEERYPJgZJDncDU", None),
        _ => return None,
    })
}

/// An x402 payment scheme swapd takes (as configured: `exact`, `upto`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Scheme {
    /// The price, exactly (EIP-3009 on EVM networks, a TransferChecked on Solana).
    #[default]
    Exact,
    /// Up to a maximum, the amount used settled later (EVM, Permit2): offered on metered
    /// calls (market-intel jobs) only.
    Upto,
}

impl Scheme {
    pub fn as_str(self) -> &'static str {
        match self {
            Scheme::Exact => "exact",
            Scheme::Upto => "upto",
        }
    }
}

/// What a call is charged: the flat price of most routes, or a metered job's maximum of
/// `units` prices (exact at the maximum, or `upto` it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Charge {
    Flat,
    Metered { units: u64 },
}

/// Whether `network` is a Solana cluster (CAIP-2 namespace `solana`).
pub fn is_solana(network: &str) -> bool {
    network.starts_with("solana:")
}

/// The token payments are made in: on EVM networks an EIP-3009 token named by its EIP-712
/// domain (`name`, `version`) as its contract signs; on Solana an SPL token's mint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Asset {
    /// The token contract (0x + 40 hex digits) or mint (base58).
    pub address: String,
    /// EVM: the EIP-712 domain's name and version.
    pub domain: Option<(String, String)>,
    pub decimals: u8,
}

impl Asset {
    /// USDC of `network`, when swapd knows it.
    pub fn usdc(network: &str) -> Option<Asset> {
        let (address, domain) = usdc(network)?;
        Some(Asset {
            address: address.into(),
            domain: domain.map(|(name, version)| (name.into(), version.into())),
            decimals: 6,
        })
    }
}

/// The sandbox's merchant address when none is configured: derived from `seed` (a key the
/// master key derives), so it is stable for a data directory and belongs to nobody.
pub fn sandbox_pay_to(seed: [u8; 32]) -> String {
    alloy_primitives::Address::from_slice(&alloy_primitives::keccak256(seed)[12..])
        .to_checksum(None)
}

/// What one paid call costs and where the payment goes, one way to pay.
#[cfg(feature = "server")]
#[derive(Debug, Clone)]
pub struct Pricing {
    /// The price of one call in USD, as configured.
    pub price: String,
    pub scheme: Scheme,
    pub network: String,
    pub asset: String,
    pub decimals: u8,
    pub pay_to: String,
    /// In the asset's atomic units (USDC: 6 decimals), e.g. `50000` for 0.05 USD.
    pub amount: String,
    pub max_timeout_seconds: u64,
    /// The requirements' `extra`: the EIP-712 domain on EVM networks; the facilitator's fee
    /// payer (and the blockhash hint) on Solana.
    pub extra: Map<String, Value>,
}

#[cfg(feature = "server")]
impl Pricing {
    /// USDC on `network`, `price_usd` per call, paid to `pay_to`. `None` for a network whose
    /// USDC swapd does not know, or a price with more than 6 decimals.
    pub fn usdc(network: &str, price_usd: &str, pay_to: &str) -> Option<Pricing> {
        Pricing::new(network, price_usd, pay_to, Asset::usdc(network)?).ok()
    }

    /// `price_usd` per call in `asset` (a USD stablecoin) on `network`, paid to `pay_to`.
    pub fn new(
        network: &str,
        price_usd: &str,
        pay_to: &str,
        asset: Asset,
    ) -> Result<Pricing, String> {
        if asset.decimals > swapd_core::amount::MAX_DECIMALS {
            return Err(format!(
                "a token of {} decimals: at most {} are supported",
                asset.decimals,
                swapd_core::amount::MAX_DECIMALS
            ));
        }
        let amount = Amount::parse(price_usd, asset.decimals)
            .map_err(|e| {
                format!(
                    "the price {price_usd} in a token of {} decimals: {e}",
                    asset.decimals
                )
            })?
            .units()
            .to_string();
        let mut extra = Map::new();
        if let Some((name, version)) = asset.domain {
            extra.insert("name".into(), Value::from(name));
            extra.insert("version".into(), Value::from(version));
        }
        Ok(Pricing {
            price: price_usd.into(),
            scheme: Scheme::Exact,
            network: network.into(),
            asset: asset.address,
            decimals: asset.decimals,
            pay_to: pay_to.into(),
            amount,
            // A Solana payment lives as long as its blockhash (60 to 90 s).
            max_timeout_seconds: if is_solana(network) { 60 } else { 300 },
            extra,
        })
    }

    /// The `upto` scheme instead, through Permit2, for the facilitator at
    /// `facilitator_address` (its `/supported` names it): the payer's permit must name it.
    /// Its authorization lives ten minutes, long enough for a job to run and be settled.
    pub fn upto(self, facilitator_address: &str) -> Self {
        Pricing {
            scheme: Scheme::Upto,
            max_timeout_seconds: 600,
            ..self
        }
        .with_extra("assetTransferMethod", upto::ASSET_TRANSFER_METHOD.into())
        .with_extra("facilitatorAddress", facilitator_address.into())
    }

    /// With `extra.<key>` set (a facilitator's fee payer, a blockhash hint).
    pub fn with_extra(mut self, key: &str, value: Value) -> Self {
        self.extra.insert(key.into(), value);
        self
    }

    /// This way to pay as a route's `accepts` lists it.
    pub fn requirements(&self) -> PaymentRequirements {
        PaymentRequirements {
            scheme: self.scheme.as_str().into(),
            network: self.network.clone(),
            amount: self.amount.clone(),
            asset: self.asset.clone(),
            pay_to: self.pay_to.clone(),
            max_timeout_seconds: self.max_timeout_seconds,
            extra: self.extra.clone(),
        }
    }

    /// The price of `units` calls, in the asset's atomic units.
    pub fn amount_of(&self, units: u64) -> String {
        let one: alloy_primitives::U256 = self.amount.parse().expect("an amount in units");
        (one * alloy_primitives::U256::from(units)).to_string()
    }

    /// What the readiness document says about payment.
    pub fn describe(&self) -> Value {
        json!({
            "scheme": self.scheme.as_str(),
            "network": self.network,
            "asset": self.asset,
            "payTo": self.pay_to,
            "amount": self.amount,
            "maxTimeoutSeconds": self.max_timeout_seconds,
        })
    }
}

/// One way to pay a call: what it costs in one token on one network, and the facilitator that
/// verifies and settles it.
#[cfg(feature = "server")]
#[derive(Clone)]
pub struct PaymentOption {
    pub pricing: Pricing,
    pub facilitator: std::sync::Arc<dyn Facilitator>,
    /// `pricing.requirements()`, made once.
    requirements: PaymentRequirements,
}

#[cfg(feature = "server")]
impl PaymentOption {
    pub fn new(pricing: Pricing, facilitator: std::sync::Arc<dyn Facilitator>) -> Self {
        let requirements = pricing.requirements();
        Self {
            pricing,
            facilitator,
            requirements,
        }
    }

    pub fn requirements(&self) -> &PaymentRequirements {
        &self.requirements
    }
}

/// Every way to pay a call, in the order offered (docs/x402.md, "Ways to pay"): never empty.
#[cfg(feature = "server")]
#[derive(Clone)]
pub struct Accepts(Vec<PaymentOption>);

#[cfg(feature = "server")]
impl Accepts {
    /// `None` when there is no way to pay.
    pub fn new(options: Vec<PaymentOption>) -> Option<Self> {
        (!options.is_empty()).then_some(Self(options))
    }

    pub fn options(&self) -> &[PaymentOption] {
        &self.0
    }

    /// The first way to pay, the one clients that take the first option use.
    pub fn first(&self) -> &PaymentOption {
        &self.0[0]
    }

    /// The ways to pay a call charged `charge`, each with what it asks: for a flat price the
    /// exact ways; for a metered job every way at its maximum (`upto` ways only there).
    pub fn offer(&self, charge: Charge) -> Vec<(&PaymentOption, PaymentRequirements)> {
        let units = match charge {
            Charge::Flat => 1,
            Charge::Metered { units } => units,
        };
        self.0
            .iter()
            .filter(|option| option.pricing.scheme == Scheme::Exact || charge != Charge::Flat)
            .map(|option| {
                let mut requirements = option.requirements.clone();
                if units != 1 {
                    requirements.amount = option.pricing.amount_of(units);
                }
                (option, requirements)
            })
            .collect()
    }

    /// The price of one call in USD, the same in every option.
    pub fn price_usd(&self) -> &str {
        &self.first().pricing.price
    }
}

#[cfg(feature = "server")]
/// A `PAYMENT-REQUIRED` value for `resource_url`: the ways to pay `offered` and the
/// `payment-identifier` extension for a paid call, none for a free wallet-bound read, and
/// the SIWX challenge when given.
pub fn payment_required(
    error: &str,
    resource_url: &str,
    description: &str,
    offered: Option<Vec<PaymentRequirements>>,
    siwx_challenge: Option<Value>,
) -> PaymentRequired {
    let mut extensions = Map::new();
    if let Some(challenge) = siwx_challenge {
        extensions.insert(wire::SIWX_EXTENSION.into(), challenge);
    }
    if offered.is_some() {
        extensions.insert(
            wire::PAYMENT_IDENTIFIER_EXTENSION.into(),
            wire::payment_identifier_declaration(),
        );
    }
    PaymentRequired {
        x402_version: X402_VERSION,
        error: Some(error.into()),
        resource: ResourceInfo {
            url: resource_url.into(),
            description: Some(description.into()),
            mime_type: Some("application/json".into()),
            other: Map::new(),
        },
        accepts: offered.unwrap_or_default(),
        extensions,
    }
}

#[cfg(all(test, feature = "server"))]
mod tests {
    use super::*;

    #[test]
    fn five_cents_in_base_usdc_is_50000_units() {
        let pricing = Pricing::usdc(
            "eip155:8453",
            "0.05",
            "0x70997970C51812dc3A010C7d01b50e0d17dc79C8",
        )
        .unwrap();
        let requirements = pricing.requirements();
        assert_eq!(requirements.amount, "50000");
        assert_eq!(
            requirements.asset,
            "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913"
        );
        assert_eq!(requirements.extra["name"], "USD Coin");
        assert_eq!(requirements.extra["version"], "2");
        assert_eq!(requirements.max_timeout_seconds, 300);
        assert!(Pricing::usdc("eip155:999", "0.05", "0x0").is_none());
        assert!(Pricing::usdc("eip155:8453", "0.0000001", "0x0").is_none());
    }

    /// A facilitator that is never asked.
    struct Unused;

    #[async_trait::async_trait]
    impl Facilitator for Unused {
        fn kind(&self) -> &'static str {
            "unused"
        }
        async fn verify(
            &self,
            _: &wire::PaymentPayload,
            _: &PaymentRequirements,
        ) -> Result<wire::VerifyResponse, FacilitatorError> {
            unreachable!()
        }
        async fn settle(
            &self,
            _: &wire::PaymentPayload,
            _: &PaymentRequirements,
        ) -> Result<wire::SettleResponse, FacilitatorError> {
            unreachable!()
        }
        async fn supported(&self) -> Result<wire::SupportedResponse, FacilitatorError> {
            unreachable!()
        }
    }

    #[test]
    fn every_way_to_pay_is_offered_in_order_at_one_price() {
        const PAY_TO: &str = "0x70997970C51812dc3A010C7d01b50e0d17dc79C8";
        let option = |network| {
            PaymentOption::new(
                Pricing::usdc(network, "0.05", PAY_TO).unwrap(),
                std::sync::Arc::new(Unused),
            )
        };
        assert!(Accepts::new(Vec::new()).is_none());
        let accepts = Accepts::new(vec![option("eip155:8453"), option("eip155:137")]).unwrap();
        let offer = |charge| -> Vec<PaymentRequirements> {
            accepts.offer(charge).into_iter().map(|(_, r)| r).collect()
        };
        let paid = payment_required(
            "payment_required",
            "http://x/y",
            "call",
            Some(offer(Charge::Flat)),
            None,
        );
        let networks: Vec<&str> = paid.accepts.iter().map(|r| r.network.as_str()).collect();
        assert_eq!(networks, ["eip155:8453", "eip155:137"]);
        assert!(paid.accepts.iter().all(|r| r.amount == "50000"));
        assert_eq!(
            paid.extensions[wire::PAYMENT_IDENTIFIER_EXTENSION],
            wire::payment_identifier_declaration()
        );
        assert_eq!(accepts.price_usd(), "0.05");

        // `upto` is offered for metered jobs only, every way at the job's maximum.
        let upto = PaymentOption::new(
            Pricing::usdc("eip155:8453", "0.05", PAY_TO)
                .unwrap()
                .upto("0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC"),
            std::sync::Arc::new(Unused),
        );
        let accepts = Accepts::new(vec![option("eip155:8453"), upto]).unwrap();
        let flat = accepts.offer(Charge::Flat);
        assert_eq!(flat.len(), 1);
        assert_eq!(flat[0].1.scheme, "exact");
        let metered = accepts
            .offer(Charge::Metered { units: 12 })
            .into_iter()
            .map(|(_, r)| (r.scheme, r.amount, r.max_timeout_seconds))
            .collect::<Vec<_>>();
        assert_eq!(
            metered,
            [
                ("exact".to_owned(), "600000".to_owned(), 300),
                ("upto".to_owned(), "600000".to_owned(), 600)
            ]
        );
        let upto = &accepts.offer(Charge::Metered { units: 1 })[1].1;
        assert_eq!(upto.extra["assetTransferMethod"], "permit2");
        assert_eq!(
            upto.extra["facilitatorAddress"],
            "0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC"
        );

        let free_read = payment_required("siwx_required", "http://x/y", "read", None, None);
        assert!(free_read.accepts.is_empty());
        assert!(free_read.extensions.is_empty());
    }
}
