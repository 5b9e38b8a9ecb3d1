//! Facilitators verify and settle payments (docs/x402.md, "Facilitators"). Two implementations:
//! `LedgerFacilitator` (`ledger.rs`, the sandbox default: in-process, the full EIP-3009 checks,
//! and a durable ledger of settlements in the store, one per `(payer, nonce)`), and
//! [`HttpFacilitator`] (a facilitator's `/verify`, `/settle` and `/supported` over HTTP; its JSON
//! answers are read whatever the status).

use std::time::Duration;
use tracing::Instrument;

use async_trait::async_trait;

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

/// What a facilitator says of settling `scheme` on `network` (its kind, with the `extra` a
/// requirement needs of it); refuses one that cannot, and names a testnet-only one for a
/// mainnet.
pub async fn check_supported(
    facilitator: &dyn Facilitator,
    scheme: &str,
    network: &str,
) -> Result<SupportedKind, String> {
    let supported = facilitator
        .supported()
        .await
        .map_err(|e| format!("cannot read the facilitator's /supported: {e}"))?;
    let serves = |kind: &SupportedKind| {
        kind.x402_version == X402_VERSION && kind.scheme == scheme && kind.network == network
    };
    if let Some(kind) = supported.kinds.iter().find(|kind| serves(kind)) {
        return Ok(kind.clone());
    }
    let networks: Vec<&str> = supported.kinds.iter().map(|k| k.network.as_str()).collect();
    if !is_testnet(network) && !networks.is_empty() && networks.iter().all(|n| is_testnet(n)) {
        return Err(format!(
            "the facilitator settles only testnets ({}); {network} is a mainnet: configure a mainnet facilitator",
            networks.join(", ")
        ));
    }
    Err(format!(
        "the facilitator does not settle x402 v2 `{scheme}` payments on {network} (it supports: {})",
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

/// How long each facilitator call may take.
#[derive(Debug, Clone, Copy)]
pub struct Timeouts {
    /// `/verify` and `/supported`.
    pub verify: Duration,
    /// `/settle`: a transaction is sent and waited for.
    pub settle: Duration,
}

impl Timeouts {
    /// The same limit for every call.
    pub fn all(limit: Duration) -> Self {
        Self {
            verify: limit,
            settle: limit,
        }
    }
}

/// A facilitator over HTTP.
pub struct HttpFacilitator {
    base: reqwest::Url,
    http: reqwest::Client,
    timeouts: Timeouts,
}

impl HttpFacilitator {
    pub fn new(base_url: &str, timeouts: Timeouts) -> Result<Self, String> {
        let mut base = reqwest::Url::parse(base_url).map_err(|e| format!("{base_url}: {e}"))?;
        if !base.path().ends_with('/') {
            let path = format!("{}/", base.path());
            base.set_path(&path);
        }
        let http = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(5))
            .build()
            .map_err(|e| e.to_string())?;
        Ok(Self {
            base,
            http,
            timeouts,
        })
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
        timeout: Duration,
    ) -> Result<T, FacilitatorError> {
        let failed = |e| unavailable(path, timeout, e);
        let span = tracing::info_span!("x402.facilitator", call = path, otel.kind = "client");
        let post = self.http.post(self.url(path)).timeout(timeout).json(body);
        #[cfg(feature = "server")]
        let post = {
            let _entered = span.enter();
            post.headers(swapd_http::trace::headers())
        };
        let response = post.send().instrument(span).await.map_err(failed)?;
        let status = response.status();
        let bytes = response.bytes().await.map_err(failed)?;
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
        self.post(
            "verify",
            &request(payment, requirements),
            self.timeouts.verify,
        )
        .await
    }

    async fn settle(
        &self,
        payment: &PaymentPayload,
        requirements: &PaymentRequirements,
    ) -> Result<SettleResponse, FacilitatorError> {
        self.post(
            "settle",
            &request(payment, requirements),
            self.timeouts.settle,
        )
        .await
    }

    async fn supported(&self) -> Result<SupportedResponse, FacilitatorError> {
        let timeout = self.timeouts.verify;
        let failed = |e| unavailable("supported", timeout, e);
        let response = self
            .http
            .get(self.url("supported"))
            .timeout(timeout)
            .send()
            .await
            .map_err(failed)?;
        let bytes = response.bytes().await.map_err(failed)?;
        serde_json::from_slice(&bytes).map_err(|e| FacilitatorError::BadAnswer(e.to_string()))
    }
}

/// What went wrong with a call, said plainly: timed out, no connection, or the transfer failed.
fn unavailable(path: &str, timeout: Duration, error: reqwest::Error) -> FacilitatorError {
    FacilitatorError::Unavailable(if error.is_timeout() {
        format!("/{path} timed out after {} ms", timeout.as_millis())
    } else if error.is_connect() {
        format!("/{path}: cannot connect to the facilitator")
    } else {
        format!("/{path}: the exchange with the facilitator failed")
    })
}

fn request(payment: &PaymentPayload, requirements: &PaymentRequirements) -> FacilitatorRequest {
    FacilitatorRequest {
        x402_version: X402_VERSION,
        payment_payload: payment.clone(),
        payment_requirements: requirements.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A facilitator that accepts connections and never answers.
    fn silent() -> String {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/", listener.local_addr().unwrap());
        std::thread::spawn(move || {
            let held: Vec<_> = listener.incoming().take(4).collect();
            std::thread::sleep(Duration::from_secs(10));
            drop(held);
        });
        url
    }

    #[tokio::test]
    async fn each_call_has_its_own_limit_and_a_timeout_says_so() {
        let facilitator = HttpFacilitator::new(
            &silent(),
            Timeouts {
                verify: Duration::from_millis(100),
                settle: Duration::from_millis(300),
            },
        )
        .unwrap();
        let error = facilitator.supported().await.unwrap_err();
        assert_eq!(
            error,
            FacilitatorError::Unavailable("/supported timed out after 100 ms".into())
        );
        let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/", closed.local_addr().unwrap());
        drop(closed);
        let unreachable = HttpFacilitator::new(&url, Timeouts::all(Duration::from_secs(1)))
            .unwrap()
            .supported()
            .await
            .unwrap_err();
        assert_eq!(
            unreachable,
            FacilitatorError::Unavailable("/supported: cannot connect to the facilitator".into())
        );
    }
}
