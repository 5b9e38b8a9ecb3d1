//! The x402 API (`/api/x402`) from Rust: [`X402Client`] follows the 402 flow itself. A paid
//! route's 402 is answered with an EIP-3009 payment signed by the configured payer key (alloy's
//! local signer); a wallet-bound route's challenge with a Sign-In-With-X proof by the configured
//! wallet (EVM: EIP-191 over the EIP-4361 text; Solana: ed25519 over the CAIP-122 text). The
//! retry is the identical request (method, path, query, body, Idempotency-Key) plus the headers.
//!
//! ```no_run
//! # async fn demo() -> Result<(), swapd_client::Error> {
//! use swapd_client::x402::{SolanaKey, Wallet, X402Client};
//!
//! let payer = "0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80".parse().unwrap();
//! let client = X402Client::new("http://127.0.0.1:8080")?.paying_with(payer);
//! let catalog = client.get("/api/x402/currencies", &[]).await?; // 402, paid, retried: 200
//! assert!(catalog.settlement.is_some());
//! // Wallet-bound reads: a proof instead of a payment.
//! let wallet = Wallet::Solana(SolanaKey::from_bytes(&[7; 32]));
//! let reader = X402Client::new("http://127.0.0.1:8080")?.signed_in_as(wallet);
//! let order = reader.get("/api/x402/orders/ord_0123456789abcdef0123456789abcdef", &[]).await;
//! # Ok(())
//! # }
//! ```

use alloy_primitives::Address;
pub use alloy_primitives::U256;
use alloy_signer::SignerSync;
/// An EVM private key (payer or wallet): `"0x…".parse()` or `PrivateKeySigner::random()`.
pub use alloy_signer_local::PrivateKeySigner;
use ed25519_dalek::Signer;
/// A Solana key: `SolanaKey::from_bytes(&seed)`.
pub use ed25519_dalek::SigningKey as SolanaKey;
use reqwest::Method;
use reqwest::header::HeaderMap;
use serde::Serialize;
use serde_json::Value;
use swapd_x402::exact::TransferWithAuthorization;
use swapd_x402::siwx::SiwxPayload;
/// A route's payment requirements, as `PAYMENT-REQUIRED` carries them.
pub use swapd_x402::wire::PaymentRequired;
/// One way to pay a route.
pub use swapd_x402::wire::PaymentRequirements;
/// A settlement, as `PAYMENT-RESPONSE` carries it.
pub use swapd_x402::wire::SettleResponse;
use swapd_x402::wire::{
    self, Eip3009Authorization, ExactEvmPayload, PAYMENT_REQUIRED, PAYMENT_RESPONSE,
    PAYMENT_SIGNATURE, PaymentPayload, SIGN_IN_WITH_X, SIWX_EXTENSION,
};

use crate::api::{Call, Surface, encode_segment, idempotency_key_for, to_value};
use crate::market_intel::{JobInput, JobView};
use crate::readiness::X402Readiness;
use crate::retry::{RetryPolicy, with_retries};
use crate::{Answer, Error, compact_sorted_json, new_idempotency_key, now_secs};

/// One request as sent (each attempt sends it identically).
struct Request<'a> {
    method: Method,
    url: url::Url,
    body: Option<Vec<u8>>,
    idempotency_key: Option<&'a str>,
    replay_safe: bool,
}

/// Statuses worth another identical attempt (when the policy allows it for the request).
fn retryable_status(status: reqwest::StatusCode) -> bool {
    matches!(status.as_u16(), 409 | 429 | 500 | 502 | 503 | 504)
}

/// A wallet that signs in.
pub enum Wallet {
    Evm(PrivateKeySigner),
    Solana(SolanaKey),
}

impl Wallet {
    /// The address the API knows the wallet by (EIP-55, or base58).
    pub fn address(&self) -> String {
        match self {
            Wallet::Evm(signer) => signer.address().to_checksum(None),
            Wallet::Solana(key) => bs58::encode(key.verifying_key().to_bytes()).into_string(),
        }
    }
}

/// An answer of the x402 API.
#[derive(Debug, Clone)]
pub struct PaidAnswer {
    pub answer: Answer,
    /// The settlement, when the call was paid now (not for free reads or idempotent replays).
    pub settlement: Option<SettleResponse>,
}

/// A client of the x402 API that pays and signs in by itself.
pub struct X402Client {
    http: reqwest::Client,
    base: url::Url,
    payer: Option<PrivateKeySigner>,
    wallet: Option<Wallet>,
    /// The most one call may cost, in the asset's atomic units (USDC: 1 000 000 = 1 USD).
    max_amount: U256,
    retry: RetryPolicy,
}

impl X402Client {
    pub fn new(base_url: &str) -> Result<Self, Error> {
        let base = url::Url::parse(base_url).map_err(|e| Error::BaseUrl(e.to_string()))?;
        Ok(Self {
            http: reqwest::Client::new(),
            base,
            payer: None,
            wallet: None,
            max_amount: U256::from(1_000_000u64),
            retry: RetryPolicy::default(),
        })
    }

    /// Pays 402s with this key (EIP-3009 `transferWithAuthorization` of the asked asset).
    pub fn paying_with(mut self, payer: PrivateKeySigner) -> Self {
        self.payer = Some(payer);
        self
    }

    /// Answers SIWX challenges as this wallet. Without one, paid wallet-bound calls act for the
    /// payer.
    pub fn signed_in_as(mut self, wallet: Wallet) -> Self {
        self.wallet = Some(wallet);
        self
    }

    /// Refuses payments above `amount` atomic units (default: 1 USDC).
    pub fn with_max_amount(mut self, amount: U256) -> Self {
        self.max_amount = amount;
        self
    }

    /// Replaces the default retry policy (3 retries of replay-safe calls).
    pub fn with_retry(mut self, retry: RetryPolicy) -> Self {
        self.retry = retry;
        self
    }

    /// `GET /api/x402`: the readiness document (free): routes, prices, networks, the facilitator.
    pub async fn readiness(&self) -> Result<X402Readiness, Error> {
        self.call_typed(Call::get("")).await
    }

    /// `POST /api/x402/market-intel/jobs` (paid): queues a `pair_depth`, `route_scan` or
    /// `rate_history` job for the signed-in wallet (or the payer).
    pub async fn create_market_job(&self, input: &JobInput) -> Result<JobView, Error> {
        self.call_typed(Call::post("/market-intel/jobs", input)?)
            .await
    }

    /// `GET /api/x402/market-intel/jobs/{jobId}` (free for the wallet that queued it).
    pub async fn market_job(&self, job_id: &str) -> Result<JobView, Error> {
        self.call_typed(Call::get(format!(
            "/market-intel/jobs/{}",
            encode_segment(job_id)
        )))
        .await
    }

    /// [`Surface::call`] with the settlement: what a typed call cost, when it was paid now.
    pub async fn call_paid(&self, call: Call) -> Result<PaidAnswer, Error> {
        let path = format!("{}{}", self.prefix(), call.path);
        let key = idempotency_key_for(&call.method);
        self.send_value(
            call.method.clone(),
            &path,
            &call.query_refs(),
            call.body.as_ref(),
            key.as_deref(),
            &call.headers,
        )
        .await
    }

    pub async fn get(&self, path: &str, query: &[(&str, &str)]) -> Result<PaidAnswer, Error> {
        self.send(Method::GET, path, query, None::<&()>, None).await
    }

    /// A POST with a fresh Idempotency-Key (kept across the paid retry).
    pub async fn post<B: Serialize + ?Sized>(
        &self,
        path: &str,
        body: &B,
    ) -> Result<PaidAnswer, Error> {
        let key = new_idempotency_key();
        self.send(Method::POST, path, &[], Some(body), Some(&key))
            .await
    }

    /// Sends a request; on 402 (or a refused proof with a new challenge), pays and/or signs in
    /// as the route asks and sends the identical request again, once. Each of the two is
    /// retried as [`RetryPolicy`] allows, identically: a retried paid request carries the same
    /// payment, so it is settled at most once.
    pub async fn send<B: Serialize + ?Sized>(
        &self,
        method: Method,
        path: &str,
        query: &[(&str, &str)],
        body: Option<&B>,
        idempotency_key: Option<&str>,
    ) -> Result<PaidAnswer, Error> {
        let body = body.map(to_value).transpose()?;
        self.send_value(method, path, query, body.as_ref(), idempotency_key, &[])
            .await
    }

    async fn send_value(
        &self,
        method: Method,
        path: &str,
        query: &[(&str, &str)],
        body: Option<&Value>,
        idempotency_key: Option<&str>,
        extra_headers: &[(&'static str, String)],
    ) -> Result<PaidAnswer, Error> {
        let mut url = self
            .base
            .join(path)
            .map_err(|e| Error::BaseUrl(e.to_string()))?;
        if !query.is_empty() {
            url.query_pairs_mut().extend_pairs(query);
        }
        let body = body.map(compact_sorted_json).transpose()?;
        let request = Request {
            replay_safe: matches!(method, Method::GET | Method::HEAD) || idempotency_key.is_some(),
            method,
            url,
            body,
            idempotency_key,
        };
        let first = self.attempt(&request, extra_headers).await?;
        let Some(required) = challenge(first.status(), first.headers()) else {
            return finish(first).await;
        };
        let mut headers = extra_headers.to_vec();
        if let Some(wallet) = &self.wallet
            && required.extensions.contains_key(SIWX_EXTENSION)
        {
            headers.push((
                SIGN_IN_WITH_X,
                prove(wallet, &required, request.url.as_str())?,
            ));
        }
        if !required.accepts.is_empty() {
            headers.push((PAYMENT_SIGNATURE, self.payment_for(&required)?));
        }
        if headers.len() == extra_headers.len() {
            return finish(first).await;
        }
        let second = self.attempt(&request, &headers).await?;
        finish(second).await
    }

    /// Sends `request` with `headers`, again after a failure the retry policy allows. A 402 or
    /// 401 is an answer here (the caller pays or proves), not a failure.
    async fn attempt(
        &self,
        request: &Request<'_>,
        headers: &[(&'static str, String)],
    ) -> Result<reqwest::Response, Error> {
        with_retries(&self.retry, request.replay_safe, || async {
            let mut builder = self
                .http
                .request(request.method.clone(), request.url.clone());
            if let Some(body) = &request.body {
                builder = builder
                    .header("content-type", "application/json")
                    .body(body.clone());
            }
            if let Some(key) = request.idempotency_key {
                builder = builder.header("Idempotency-Key", key);
            }
            for (name, value) in headers {
                builder = builder.header(*name, value);
            }
            let response = builder.send().await?;
            if !retryable_status(response.status()) {
                return Ok(response);
            }
            let status = response.status();
            let headers = response.headers().clone();
            let bytes = response.bytes().await?;
            // Never a success: decode gives the API's error.
            Err(match crate::decode(status, headers, &bytes) {
                Err(error) => error,
                Ok(answer) => Error::Unexpected {
                    status: answer.status,
                    detail: "a success with an error status".into(),
                },
            })
        })
        .await
    }

    /// A `SIGN-IN-WITH-X` value answering the challenge in `required` (a route's
    /// `PAYMENT-REQUIRED`, decoded) as the signed-in wallet, for the request to `url`; `None`
    /// without a wallet or a challenge.
    pub fn proof_for(
        &self,
        required: &PaymentRequired,
        url: &str,
    ) -> Result<Option<String>, Error> {
        match &self.wallet {
            Some(wallet) if required.extensions.contains_key(SIWX_EXTENSION) => {
                prove(wallet, required, url).map(Some)
            }
            _ => Ok(None),
        }
    }

    /// A `PAYMENT-SIGNATURE` value for one call: an EIP-3009 authorization for exactly what
    /// `required` (a route's `PAYMENT-REQUIRED`, decoded) asks, with a fresh nonce, signed by
    /// the payer key. A client that knows a route's requirements can send it with the first
    /// request and skip the 402.
    pub fn payment_for(&self, required: &PaymentRequired) -> Result<String, Error> {
        let refuse = |detail: String| Error::Unexpected {
            status: 402,
            detail,
        };
        let payer = self.payer.as_ref().ok_or_else(|| {
            refuse("this call must be paid: give the client a payer key (paying_with)".into())
        })?;
        let accepted = offer(required)
            .ok_or_else(|| refuse("no `exact` EVM payment is offered".into()))?
            .clone();
        let value = U256::from_str_radix(&accepted.amount, 10)
            .map_err(|_| refuse(format!("unreadable amount {}", accepted.amount)))?;
        if value > self.max_amount {
            return Err(refuse(format!(
                "the call costs {value} units, more than the {} this client may pay",
                self.max_amount
            )));
        }
        let to: Address = accepted
            .pay_to
            .parse()
            .map_err(|_| refuse("unreadable payTo".into()))?;
        let nonce: [u8; 32] = rand::random();
        let valid_before = U256::from(now_secs() as u64 + accepted.max_timeout_seconds);
        let authorization = TransferWithAuthorization {
            from: payer.address(),
            to,
            value,
            validAfter: U256::ZERO,
            validBefore: valid_before,
            nonce: nonce.into(),
        };
        let domain = swapd_x402::exact::domain(&accepted)
            .map_err(|e| refuse(format!("cannot build the EIP-712 domain: {e}")))?;
        let signature = payer
            .sign_typed_data_sync(&authorization, &domain)
            .map_err(|e| refuse(format!("signing failed: {e}")))?;
        let payment = PaymentPayload {
            x402_version: wire::X402_VERSION,
            resource: Some(required.resource.clone()),
            accepted,
            payload: serde_json::to_value(ExactEvmPayload {
                signature: format!("0x{}", hex::encode(signature.as_bytes())),
                authorization: Eip3009Authorization {
                    from: payer.address().to_checksum(None),
                    to: to.to_checksum(None),
                    value: value.to_string(),
                    valid_after: "0".into(),
                    valid_before: valid_before.to_string(),
                    nonce: format!("0x{}", hex::encode(nonce)),
                },
            })
            .map_err(|e| refuse(e.to_string()))?,
            extensions: Default::default(),
        };
        Ok(wire::encode_header(&payment))
    }
}

/// The payment option this client pays: `exact` on an EVM network.
pub fn offer(required: &PaymentRequired) -> Option<&PaymentRequirements> {
    required
        .accepts
        .iter()
        .find(|a| a.scheme == "exact" && a.network.starts_with("eip155:"))
}

/// The requirements a `PAYMENT-REQUIRED` header value carries; `None` if it is not one.
pub fn payment_required(value: &str) -> Option<PaymentRequired> {
    wire::decode_header(value).ok()
}

/// The `PAYMENT-REQUIRED` of a 402, or of a 401 that refused a proof with a new challenge.
fn challenge(status: reqwest::StatusCode, headers: &HeaderMap) -> Option<PaymentRequired> {
    if status.as_u16() != 402 && status.as_u16() != 401 {
        return None;
    }
    payment_required(headers.get(PAYMENT_REQUIRED)?.to_str().ok()?)
}

/// A SIWX proof by `wallet` for the challenge in `required`.
fn prove(wallet: &Wallet, required: &PaymentRequired, url: &str) -> Result<String, Error> {
    let refuse = |detail: &str| Error::Unexpected {
        status: 402,
        detail: detail.into(),
    };
    let extension = &required.extensions[SIWX_EXTENSION];
    let info = &extension["info"];
    let (kind, namespace) = match wallet {
        Wallet::Evm(_) => ("eip191", "eip155:"),
        Wallet::Solana(_) => ("ed25519", "solana:"),
    };
    let chain = extension["supportedChains"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|c| {
            c["type"] == kind
                && c["chainId"]
                    .as_str()
                    .is_some_and(|id| id.starts_with(namespace))
        })
        .and_then(|c| c["chainId"].as_str())
        .ok_or_else(|| refuse("the challenge offers no chain for this wallet"))?;
    // Sign only a challenge bound to the server we asked (the reference client's rule).
    let asked = url::Url::parse(url).map_err(|_| refuse("bad URL"))?;
    let host = match asked.port() {
        Some(port) => format!("{}:{port}", asked.host_str().unwrap_or_default()),
        None => asked.host_str().unwrap_or_default().to_owned(),
    };
    let text = |key: &str| info[key].as_str().map(str::to_owned);
    if text("domain").as_deref() != Some(host.as_str())
        || text("uri")
            .and_then(|u| url::Url::parse(&u).ok())
            .is_none_or(|u| u.origin() != asked.origin())
    {
        return Err(refuse(
            "the SIWX challenge is not bound to this server; not signing it",
        ));
    }
    let mut payload = SiwxPayload {
        domain: text("domain").unwrap_or_default(),
        address: wallet.address(),
        statement: text("statement"),
        uri: text("uri").unwrap_or_default(),
        version: text("version").unwrap_or_else(|| "1".into()),
        chain_id: chain.to_owned(),
        kind: kind.into(),
        nonce: text("nonce").ok_or_else(|| refuse("the challenge has no nonce"))?,
        issued_at: text("issuedAt").ok_or_else(|| refuse("the challenge has no issuedAt"))?,
        expiration_time: text("expirationTime"),
        not_before: text("notBefore"),
        request_id: text("requestId"),
        resources: info["resources"].as_array().map(|r| {
            r.iter()
                .filter_map(|v| v.as_str().map(str::to_owned))
                .collect()
        }),
        signature_scheme: None,
        signature: String::new(),
    };
    let message = swapd_x402::siwx::message(&payload).map_err(|e| refuse(&e.to_string()))?;
    payload.signature = match wallet {
        Wallet::Evm(signer) => {
            let signature = signer
                .sign_message_sync(message.as_bytes())
                .map_err(|e| refuse(&e.to_string()))?;
            format!("0x{}", hex::encode(signature.as_bytes()))
        }
        Wallet::Solana(key) => bs58::encode(key.sign(message.as_bytes()).to_bytes()).into_string(),
    };
    Ok(wire::encode_header(&payload))
}

async fn finish(response: reqwest::Response) -> Result<PaidAnswer, Error> {
    let settlement = response
        .headers()
        .get(PAYMENT_RESPONSE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| wire::decode_header::<SettleResponse>(v).ok());
    let status = response.status();
    let headers = response.headers().clone();
    let bytes = response.bytes().await?;
    let answer = crate::decode(status, headers, &bytes)?;
    Ok(PaidAnswer { answer, settlement })
}

/// `data` of an answer as JSON (a convenience for scripts).
pub fn data(answer: &PaidAnswer) -> &Value {
    &answer.answer.data
}

impl Surface for X402Client {
    fn prefix(&self) -> &'static str {
        "/api/x402"
    }

    async fn call(&self, call: Call) -> Result<Answer, Error> {
        Ok(self.call_paid(call).await?.answer)
    }
}
