//! The in-process ledger facilitator (the sandbox default), one per network.

use std::sync::Arc;

use alloy_primitives::keccak256;
use async_trait::async_trait;
use swapd_core::store::X402Settlement;
use swapd_core::{Clock, Store};

use swapd_x402::Scheme;
use swapd_x402::exact::{self, Invalid};
use swapd_x402::exact_svm::{self, SigningKey};
use swapd_x402::facilitator::{Facilitator, FacilitatorError};
use swapd_x402::upto;
use swapd_x402::wire::{
    PaymentPayload, PaymentRequirements, SettleResponse, SupportedKind, SupportedResponse,
    VerifyResponse, X402_VERSION,
};

/// In-process facilitator for one network: verifies exactly as the reference one does and
/// records each settlement durably, so one payment settles once: on EVM networks one
/// `(payer, nonce)`, on Solana one `(payer, message hash)`, signed by its own fee payer.
pub struct LedgerFacilitator {
    store: Arc<dyn Store>,
    clock: Arc<dyn Clock>,
    network: String,
    solana: Option<SolanaLedger>,
    /// EVM: the address it settles `upto` permits as (their witness names it), when it does.
    upto: Option<alloy_primitives::Address>,
}

/// What the ledger needs on Solana: the fee payer it signs settlements with, and the token's
/// decimals (TransferChecked names them).
struct SolanaLedger {
    fee_payer: SigningKey,
    decimals: u8,
}

/// A payment that passed the checks: who pays, what it is known by, the amount, and the
/// transaction settling it is: on EVM networks `keccak256(payer ‖ nonce)`; on Solana the fee
/// payer's signature (Ed25519 signs deterministically, so it is known before settling).
struct Checked {
    payer: String,
    nonce: String,
    amount: String,
    transaction: String,
}

impl LedgerFacilitator {
    /// The ledger of an EVM network (EIP-3009).
    pub fn new(store: Arc<dyn Store>, clock: Arc<dyn Clock>, network: &str) -> Self {
        Self {
            store,
            clock,
            network: network.to_owned(),
            solana: None,
            upto: None,
        }
    }

    /// Also settles `upto` (Permit2) payments on its EVM network, as `facilitator`.
    pub fn with_upto(mut self, facilitator: alloy_primitives::Address) -> Self {
        self.upto = Some(facilitator);
        self
    }

    /// The ledger of a Solana cluster, paying fees as `fee_payer`, for a token of `decimals`.
    pub fn solana(
        store: Arc<dyn Store>,
        clock: Arc<dyn Clock>,
        network: &str,
        fee_payer: SigningKey,
        decimals: u8,
    ) -> Self {
        Self {
            solana: Some(SolanaLedger {
                fee_payer,
                decimals,
            }),
            ..Self::new(store, clock, network)
        }
    }

    async fn check(
        &self,
        payment: &PaymentPayload,
        requirements: &PaymentRequirements,
    ) -> Result<Result<Checked, String>, FacilitatorError> {
        if requirements.network != self.network {
            return Ok(Err(Invalid::Network.reason()));
        }
        let checked = match &self.solana {
            Some(solana) => exact_svm::verify(payment, requirements, solana.decimals)
                .map(|mut verified| Checked {
                    nonce: verified.transaction.message_hash(),
                    transaction: exact_svm::sign_as_fee_payer(
                        &mut verified.transaction,
                        &solana.fee_payer,
                    ),
                    payer: verified.payer,
                    amount: verified.amount.to_string(),
                })
                .map_err(|invalid| invalid.reason()),
            None if requirements.scheme == Scheme::Upto.as_str() => {
                let now_secs = u64::try_from(self.clock.now_secs()).unwrap_or(0);
                if self.upto.is_none() {
                    return Ok(Err(upto::Invalid::Scheme.reason()));
                }
                upto::verify(payment, requirements, now_secs)
                    .map(|verified| {
                        let mut preimage = verified.payer.to_vec();
                        preimage.extend_from_slice(&verified.nonce.to_be_bytes::<32>());
                        let settles_something = requirements.amount != "0";
                        Checked {
                            payer: verified.payer.to_checksum(None),
                            nonce: upto::payment_key(verified.nonce),
                            amount: requirements.amount.clone(),
                            // Nothing moves for an amount of 0: no transaction.
                            transaction: if settles_something {
                                keccak256(&preimage).to_string()
                            } else {
                                String::new()
                            },
                        }
                    })
                    .map_err(|invalid| invalid.reason())
            }
            None => {
                let now_secs = u64::try_from(self.clock.now_secs()).unwrap_or(0);
                exact::verify(payment, requirements, now_secs)
                    .map(|verified| {
                        let mut preimage = verified.payer.to_vec();
                        preimage.extend_from_slice(verified.nonce.as_slice());
                        Checked {
                            payer: verified.payer.to_checksum(None),
                            nonce: verified.nonce.to_string(),
                            amount: verified.value.to_string(),
                            transaction: keccak256(&preimage).to_string(),
                        }
                    })
                    .map_err(|invalid| invalid.reason())
            }
        };
        let checked = match checked {
            Ok(checked) => checked,
            Err(reason) => return Ok(Err(reason)),
        };
        let used = self
            .store
            .x402_settlement(&checked.payer, &checked.nonce)
            .await
            .map_err(|e| FacilitatorError::Unavailable(e.to_string()))?;
        Ok(match used {
            Some(_) => Err(self.used_reason(requirements)),
            None => Ok(checked),
        })
    }

    /// What a payment settled before is refused as.
    fn used_reason(&self, requirements: &PaymentRequirements) -> String {
        match self.solana {
            Some(_) => exact_svm::Invalid::Duplicate.reason(),
            None if requirements.scheme == Scheme::Upto.as_str() => {
                upto::Invalid::NonceUsed.reason()
            }
            None => Invalid::NonceUsed.reason(),
        }
    }
}

#[async_trait]
impl Facilitator for LedgerFacilitator {
    fn kind(&self) -> &'static str {
        "ledger"
    }

    async fn verify(
        &self,
        payment: &PaymentPayload,
        requirements: &PaymentRequirements,
    ) -> Result<VerifyResponse, FacilitatorError> {
        Ok(match self.check(payment, requirements).await? {
            Ok(checked) => VerifyResponse {
                is_valid: true,
                invalid_reason: None,
                invalid_message: None,
                payer: Some(checked.payer),
            },
            Err(reason) => VerifyResponse {
                is_valid: false,
                invalid_reason: Some(reason),
                invalid_message: None,
                payer: None,
            },
        })
    }

    async fn settle(
        &self,
        payment: &PaymentPayload,
        requirements: &PaymentRequirements,
    ) -> Result<SettleResponse, FacilitatorError> {
        let failed = |reason: String, payer: Option<String>| SettleResponse {
            success: false,
            error_reason: Some(reason),
            error_message: None,
            payer,
            transaction: String::new(),
            network: self.network.clone(),
            amount: None,
        };
        let checked = match self.check(payment, requirements).await? {
            Ok(checked) => checked,
            Err(reason) => return Ok(failed(reason, None)),
        };
        let settlement = X402Settlement {
            payer: checked.payer.clone(),
            nonce: checked.nonce,
            amount: checked.amount,
            pay_to: requirements.pay_to.clone(),
            asset: requirements.asset.clone(),
            network: requirements.network.clone(),
            transaction: checked.transaction,
            settled_at_ms: self.clock.now_ms(),
        };
        let recorded = self
            .store
            .record_x402_settlement(&settlement)
            .await
            .map_err(|e| FacilitatorError::Unavailable(e.to_string()))?;
        if !recorded {
            // A concurrent settle of the same payment won.
            return Ok(failed(self.used_reason(requirements), Some(checked.payer)));
        }
        Ok(SettleResponse {
            success: true,
            error_reason: None,
            error_message: None,
            payer: Some(checked.payer),
            transaction: settlement.transaction,
            network: settlement.network,
            amount: (requirements.scheme == Scheme::Upto.as_str()).then_some(settlement.amount),
        })
    }

    async fn supported(&self) -> Result<SupportedResponse, FacilitatorError> {
        let mut extra = serde_json::Map::new();
        if let Some(solana) = &self.solana {
            let fee_payer = exact_svm::base58(solana.fee_payer.verifying_key().as_bytes());
            extra.insert("feePayer".into(), fee_payer.into());
        }
        let mut kinds = vec![SupportedKind {
            x402_version: X402_VERSION,
            scheme: Scheme::Exact.as_str().into(),
            network: self.network.clone(),
            extra,
        }];
        if let Some(facilitator) = self.upto {
            let mut extra = serde_json::Map::new();
            extra.insert(
                "facilitatorAddress".into(),
                facilitator.to_checksum(None).into(),
            );
            kinds.push(SupportedKind {
                x402_version: X402_VERSION,
                scheme: Scheme::Upto.as_str().into(),
                network: self.network.clone(),
                extra,
            });
        }
        Ok(SupportedResponse {
            kinds,
            extensions: Vec::new(),
            signers: Default::default(),
        })
    }
}
