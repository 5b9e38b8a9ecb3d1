//! `[fees]`: what swapd earns on the swaps it routes, and what partners may add
//! (docs/fees.md).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::value::{self, EvmAddress};
use super::{ConfigError, setting};

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FeesConfig {
    /// The operator's service fee, in bps of each swap's output.
    pub service_bps: u32,
    /// A provider's own service fee in bps, by provider id (for ChangeNOW: the commission set
    /// on the account, which its quotes already hold).
    pub provider_service_bps: BTreeMap<String, u32>,
    /// The most a partner's markup (`swapd keys create --markup-bps`) may be, in bps.
    pub max_markup_bps: u32,
    /// The most the service fee and a markup may take together, in bps.
    pub max_total_bps: u32,
    /// Where the onchain routers that pay the fee to an address pay the operator's.
    pub recipients: FeeRecipientsConfig,
    /// How far a realized fee may be off the expected one, in bps of it, before the
    /// reconciliation flags it (metric and console).
    pub reconcile_tolerance_bps: u32,
    /// How often the reconciliation looks at the ledger, in seconds.
    pub reconcile_interval_secs: u64,
}

/// Where the operator's fee is paid on chain (docs/fees.md, "Recipients"): a router without
/// the recipient it needs leaves the fee out of its quotes.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FeeRecipientsConfig {
    /// An EVM address (0x's `swapFeeRecipient`, Relay's `appFees`).
    #[serde(default, with = "value::optional")]
    pub evm: Option<EvmAddress>,
    /// Solana token accounts by the catalog code of the currency each holds (Jupiter's
    /// `feeAccount`, which must hold the output's mint).
    pub solana: BTreeMap<String, String>,
}

impl Default for FeesConfig {
    fn default() -> Self {
        Self {
            service_bps: 0,
            provider_service_bps: BTreeMap::new(),
            max_markup_bps: 300,
            max_total_bps: 1_000,
            recipients: FeeRecipientsConfig::default(),
            reconcile_tolerance_bps: 100,
            reconcile_interval_secs: 300,
        }
    }
}

impl FeesConfig {
    pub(super) fn validate(&self) -> Result<(), ConfigError> {
        // Below 10 000 bps a quote always leaves the user something.
        if self.max_total_bps >= 10_000 {
            return Err(setting("fees.max_total_bps", "must be below 10000 (100 %)"));
        }
        let services = std::iter::once(("fees.service_bps".to_owned(), self.service_bps)).chain(
            self.provider_service_bps
                .iter()
                .map(|(id, bps)| (format!("fees.provider_service_bps.{id}"), *bps)),
        );
        for (key, bps) in services {
            if bps + self.max_markup_bps > self.max_total_bps {
                return Err(setting(
                    &key,
                    format!(
                        "{bps} bps with the largest markup ({} bps, fees.max_markup_bps) is more \
                         than fees.max_total_bps ({})",
                        self.max_markup_bps, self.max_total_bps
                    ),
                ));
            }
        }
        if self.reconcile_interval_secs == 0 {
            return Err(setting(
                "fees.reconcile_interval_secs",
                "must be at least 1",
            ));
        }
        if self.recipients.evm.is_some_and(|evm| evm.0.is_zero()) {
            return Err(setting("fees.recipients.evm", "is not an EVM address"));
        }
        for (code, account) in &self.recipients.solana {
            let key = format!("fees.recipients.solana.{code}");
            match swapd_core::market::currencies::currency(code) {
                Some(def) if def.network.chain_namespace() == "solana" => {}
                _ => return Err(setting(&key, "names no Solana currency swapd lists")),
            }
            swapd_core::address::Network::Solana
                .validate_address(account)
                .map_err(|_| setting(&key, "is not a Solana account address"))?;
        }
        Ok(())
    }

    pub fn rules(&self) -> swapd_core::fees::FeeRules {
        swapd_core::fees::FeeRules {
            max_markup_bps: self.max_markup_bps,
            reconcile_tolerance_bps: self.reconcile_tolerance_bps,
        }
    }

    /// The operator's part of every quote's fees.
    pub fn policy(&self) -> swapd_core::fees::FeePolicy {
        swapd_core::fees::FeePolicy {
            service_bps: self.service_bps,
            per_provider: self.provider_service_bps.clone(),
            recipients: swapd_core::fees::FeeRecipients {
                evm: self.recipients.evm.map(|evm| evm.0),
                solana: self.recipients.solana.clone(),
                partner_evm: None,
            },
            ..Default::default()
        }
    }
}
