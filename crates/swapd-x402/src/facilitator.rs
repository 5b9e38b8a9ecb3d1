//! Facilitators verify and settle payments (research/x402.md §1.7, §5). Two implementations:
//! [`LedgerFacilitator`] (the sandbox default: in-process, the full EIP-3009 checks, and a
//! durable ledger of settlements in the store, one per `(payer, nonce)`), and
//! [`HttpFacilitator`] (a facilitator's `/verify`, `/settle` and `/supported` over HTTP; its JSON
//! answers are read whatever the status).

use std::sync::Arc;
use std::time::Duration;

use alloy_primitives::keccak256;
use async_trait::async_trait;
use swapd_core::store::X402Settlement;
use swapd_core::{Clock, Store};

use crate::exact::{self, Invalid};
use crate::wire::{
    FacilitatorRequest, PaymentPayload, PaymentRequirements, SettleResponse, SupportedKind,
    SupportedResponse, VerifyResponse, X402_VERSION,
};

/// The facilitator could not be asked, or answered something unusable: nothing was settled
/// that swapd knows of, and the request is not executed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FacilitatorError {
    #[error("the facilitator did not answer: {0}")]
    Unavailable(String),
    #[error("the facilitator's answer is unusable: {0}")]
    BadAnswer(String),
}

#[async_trait]
pub trait Facilitator: Send + Sync + 'static {
    /// `ledger` or `http`.
    fn kind(&self) -> &'static str;

    async fn verify(
        &self,
        payment: &PaymentPayload,
        requirements: &PaymentRequirements,
    ) -> Result<VerifyResponse, FacilitatorError>;

    async fn settle(
        &self,
        payment: &PaymentPayload,
        requirements: &PaymentRequirements,
    ) -> Result<SettleResponse, FacilitatorError>;

    async fn supported(&self) -> Result<SupportedResponse, FacilitatorError>;
}

/// Refuses a facilitator that cannot settle `network` with `exact`, and a testnet-only one for
/// a mainnet (the message says which).
pub async fn check_supported(facilitator: &dyn Facilitator, network: &str) -> Result<(), String> {
    let supported = facilitator
        .supported()
        .await
        .map_err(|e| format!("cannot read the facilitator's /supported: {e}"))?;
    let serves = |kind: &SupportedKind| {
        kind.x402_version == X402_VERSION && kind.scheme == "exact" && kind.network == network
    };
    if supported.kinds.iter().any(serves) {
        return Ok(());
    }
    let networks: Vec<&str> = supported.kinds.iter().map(|k| k.network.as_str()).collect();
    if !is_testnet(network) && !networks.is_empty() && networks.iter().all(|n| is_testnet(n)) {
        return Err(format!(
            "the facilitator settles only testnets ({}); {network} is a mainnet: configure a mainnet facilitator",
            networks.join(", ")
        ));
    }
    Err(format!(
        "the facilitator does not settle x402 v2 `exact` payments on {network} (it supports: {})",
        if networks.is_empty() {
            "nothing".to_owned()
        } else {
            networks.join(", ")
        }
    ))
}

/// Well-known test networks (CAIP-2).
pub fn is_testnet(network: &str) -> bool {
    const TESTNETS: [&str; 8] = [
        "eip155:84532",
        "eip155:11155111",
        "eip155:421614",
        "eip155:80002",
        "eip155:11155420",
        "eip155:43113",
        "eip155:31337",
        "solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1",
    ];
    TESTNETS.contains(&network)
}

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

/// A facilitator over HTTP.
pub struct HttpFacilitator {
    base: reqwest::Url,
    http: reqwest::Client,
}

impl HttpFacilitator {
    pub fn new(base_url: &str, timeout: Duration) -> Result<Self, String> {
        let mut base = reqwest::Url::parse(base_url).map_err(|e| format!("{base_url}: {e}"))?;
        if !base.path().ends_with('/') {
            let path = format!("{}/", base.path());
            base.set_path(&path);
        }
        let http = reqwest::Client::builder()
            .timeout(timeout)
            .connect_timeout(Duration::from_secs(5))
            .build()
            .map_err(|e| e.to_string())?;
        Ok(Self { base, http })
    }

    fn url(&self, path: &str) -> reqwest::Url {
        self.base.join(path).expect("relative paths join")
    }

    /// Sends and parses the JSON body whatever the status: the reference facilitators answer
    /// `isValid:false` / `success:false` with 200 or 400.
    async fn post<T: serde::de::DeserializeOwned>(
        &self,
        path: &str,
        body: &FacilitatorRequest,
    ) -> Result<T, FacilitatorError> {
        let response = self
            .http
            .post(self.url(path))
            .json(body)
            .send()
            .await
            .map_err(|e| FacilitatorError::Unavailable(e.to_string()))?;
        let status = response.status();
        let bytes = response
            .bytes()
            .await
            .map_err(|e| FacilitatorError::Unavailable(e.to_string()))?;
        serde_json::from_slice(&bytes).map_err(|_| {
            FacilitatorError::BadAnswer(format!(
                "{path} answered {status} with {}",
                String::from_utf8_lossy(&bytes)
                    .chars()
                    .take(200)
                    .collect::<String>()
            ))
        })
    }
}

#[async_trait]
impl Facilitator for HttpFacilitator {
    fn kind(&self) -> &'static str {
        "http"
    }

    async fn verify(
        &self,
        payment: &PaymentPayload,
        requirements: &PaymentRequirements,
    ) -> Result<VerifyResponse, FacilitatorError> {
        self.post("verify", &request(payment, requirements)).await
    }

    async fn settle(
        &self,
        payment: &PaymentPayload,
        requirements: &PaymentRequirements,
    ) -> Result<SettleResponse, FacilitatorError> {
        self.post("settle", &request(payment, requirements)).await
    }

    async fn supported(&self) -> Result<SupportedResponse, FacilitatorError> {
        let response = self
            .http
            .get(self.url("supported"))
            .send()
            .await
            .map_err(|e| FacilitatorError::Unavailable(e.to_string()))?;
        let bytes = response
            .bytes()
            .await
            .map_err(|e| FacilitatorError::Unavailable(e.to_string()))?;
        serde_json::from_slice(&bytes).map_err(|e| FacilitatorError::BadAnswer(e.to_string()))
    }
}

fn request(payment: &PaymentPayload, requirements: &PaymentRequirements) -> FacilitatorRequest {
    FacilitatorRequest {
        x402_version: X402_VERSION,
        payment_payload: payment.clone(),
        payment_requirements: requirements.clone(),
    }
}
