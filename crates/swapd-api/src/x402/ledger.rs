//! The in-process ledger facilitator (the sandbox default).

use std::sync::Arc;

use alloy_primitives::keccak256;
use async_trait::async_trait;
use swapd_core::store::X402Settlement;
use swapd_core::{Clock, Store};

use swapd_x402::exact::{self, Invalid};
use swapd_x402::facilitator::{Facilitator, FacilitatorError};
use swapd_x402::wire::{
    PaymentPayload, PaymentRequirements, SettleResponse, SupportedKind, SupportedResponse,
    VerifyResponse, X402_VERSION,
};

/// In-process facilitator: verifies exactly as the reference one does and records each
/// settlement durably, so one `(payer, nonce)` settles once.
pub struct LedgerFacilitator {
    store: Arc<dyn Store>,
    clock: Arc<dyn Clock>,
    network: String,
}

impl LedgerFacilitator {
    pub fn new(store: Arc<dyn Store>, clock: Arc<dyn Clock>, network: &str) -> Self {
        Self {
            store,
            clock,
            network: network.to_owned(),
        }
    }

    async fn check(
        &self,
        payment: &PaymentPayload,
        requirements: &PaymentRequirements,
    ) -> Result<Result<exact::VerifiedPayment, Invalid>, FacilitatorError> {
        if requirements.network != self.network {
            return Ok(Err(Invalid::Network));
        }
        let now_secs = u64::try_from(self.clock.now_secs()).unwrap_or(0);
        let verified = match exact::verify(payment, requirements, now_secs) {
            Ok(verified) => verified,
            Err(invalid) => return Ok(Err(invalid)),
        };
        let used = self
            .store
            .x402_settlement(
                &verified.payer.to_checksum(None),
                &verified.nonce.to_string(),
            )
            .await
            .map_err(|e| FacilitatorError::Unavailable(e.to_string()))?;
        Ok(if used.is_some() {
            Err(Invalid::NonceUsed)
        } else {
            Ok(verified)
        })
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
            Ok(verified) => VerifyResponse {
                is_valid: true,
                invalid_reason: None,
                invalid_message: None,
                payer: Some(verified.payer.to_checksum(None)),
            },
            Err(invalid) => VerifyResponse {
                is_valid: false,
                invalid_reason: Some(invalid.reason()),
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
        };
        let verified = match self.check(payment, requirements).await? {
            Ok(verified) => verified,
            Err(invalid) => return Ok(failed(invalid.reason(), None)),
        };
        let payer = verified.payer.to_checksum(None);
        let mut preimage = verified.payer.to_vec();
        preimage.extend_from_slice(verified.nonce.as_slice());
        let settlement = X402Settlement {
            payer: payer.clone(),
            nonce: verified.nonce.to_string(),
            amount: verified.value.to_string(),
            pay_to: requirements.pay_to.clone(),
            asset: requirements.asset.clone(),
            network: requirements.network.clone(),
            transaction: keccak256(&preimage).to_string(),
            settled_at_ms: self.clock.now_ms(),
        };
        let recorded = self
            .store
            .record_x402_settlement(&settlement)
            .await
            .map_err(|e| FacilitatorError::Unavailable(e.to_string()))?;
        if !recorded {
            // A concurrent settle of the same authorization won.
            return Ok(failed(Invalid::NonceUsed.reason(), Some(payer)));
        }
        Ok(SettleResponse {
            success: true,
            error_reason: None,
            error_message: None,
            payer: Some(payer),
            transaction: settlement.transaction,
            network: settlement.network,
        })
    }

    async fn supported(&self) -> Result<SupportedResponse, FacilitatorError> {
        Ok(SupportedResponse {
            kinds: vec![SupportedKind {
                x402_version: X402_VERSION,
                scheme: "exact".into(),
                network: self.network.clone(),
            }],
            extensions: Vec::new(),
            signers: Default::default(),
        })
    }
}
