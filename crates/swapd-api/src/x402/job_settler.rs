//! Settles what a market-intel job paid with `upto` used, when the job ends
//! (docs/market-intel.md, "Paying for what a job used"): the facilitator of the payment's
//! network takes the amount under the authorization the gate verified.

use async_trait::async_trait;
use swapd_core::market_intel::{JobPayment, SettleFailure, UptoSettler};
use swapd_x402::wire::{PaymentPayload, PaymentRequirements};
use swapd_x402::{PaymentOption, Scheme};

use super::gate::decide::{self, Settlement};

/// The `upto` ways to pay, each with its facilitator.
pub struct JobSettler {
    options: Vec<PaymentOption>,
}

impl JobSettler {
    /// Settles through `options`' `upto` ways (the others are not used).
    pub fn new(options: &[PaymentOption]) -> Self {
        Self {
            options: options
                .iter()
                .filter(|option| option.pricing.scheme == Scheme::Upto)
                .cloned()
                .collect(),
        }
    }
}

#[async_trait]
impl UptoSettler for JobSettler {
    async fn settle(
        &self,
        payment: &JobPayment,
        amount: &str,
        again: bool,
    ) -> Result<String, SettleFailure> {
        let Some(option) = self
            .options
            .iter()
            .find(|option| option.pricing.network == payment.network)
        else {
            return Err(SettleFailure::Unavailable(format!(
                "no upto facilitator for {}",
                payment.network
            )));
        };
        let stored = |what: &str| SettleFailure::Refused(format!("invalid_stored_{what}"));
        let signed: PaymentPayload =
            serde_json::from_value(payment.payment.clone()).map_err(|_| stored("payment"))?;
        let mut requirements: PaymentRequirements =
            serde_json::from_value(payment.requirements.clone())
                .map_err(|_| stored("requirements"))?;
        requirements.amount = amount.to_owned();
        let answer = option
            .facilitator
            .settle(&signed, &requirements)
            .await
            .map_err(|error| SettleFailure::Unavailable(error.to_string()))?;
        match decide::settlement(answer, again) {
            Settlement::Settled(settled) => {
                tracing::info!(payer = %payment.payer, network = %payment.network, amount, transaction = %settled.transaction, "x402 upto payment settled");
                Ok(settled.transaction)
            }
            Settlement::Refused(refused) => Err(SettleFailure::Refused(
                refused.error_reason.unwrap_or_default(),
            )),
        }
    }
}
