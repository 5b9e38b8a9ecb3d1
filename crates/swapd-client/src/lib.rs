//! The swapd SDK.
//!
//! [`BusinessClient`] signs every request to the Business API (`/api/v3`) as
//! `docs/authentication.md` describes:
//! - it canonicalizes the query;
//! - it sends the body as compact JSON with sorted keys;
//! - it generates a fresh nonce per request;
//! - it adds an `Idempotency-Key` to every POST and PATCH.
//!
//! ```no_run
//! # async fn demo() -> Result<(), swapd_client::Error> {
//! use swapd_client::{BusinessClient, Credentials};
//!
//! let client = BusinessClient::new(
//!     "http://127.0.0.1:8080",
//!     Credentials::new("key_0123456789abcdef0123456789abcdef", "sec_..."),
//! )?;
//! let readiness = client.readiness().await?;
//! println!("{} routes, server time {}", readiness["routes"].as_array().map_or(0, Vec::len), readiness["serverTime"]);
//! # Ok(())
//! # }
//! ```

use std::fmt;
use std::time::{SystemTime, UNIX_EPOCH};

use rand::RngCore;
use reqwest::header::{CONTENT_TYPE, HeaderMap, HeaderValue, RETRY_AFTER};
use reqwest::{Method, StatusCode};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use swapd_types::onchain::{
    ACCESS_TOKEN_HEADER, ExecutionPlanView, ExecutionReportInput, ExecutionView,
    OnchainResolveInput,
};
use swapd_types::signing;
use swapd_types::{ErrorCode, ErrorEnvelope};

pub mod x402;

/// The wire types of onchain execution, for [`BusinessClient::resolve_onchain`],
/// [`BusinessClient::report_execution`] and [`BusinessClient::execution`].
pub use swapd_types::onchain;

/// An API key and its secret.
#[derive(Clone)]
pub struct Credentials {
    api_key: String,
    api_secret: String,
}

impl Credentials {
    pub fn new(api_key: impl Into<String>, api_secret: impl Into<String>) -> Self {
        Self {
            api_key: api_key.into(),
            api_secret: api_secret.into(),
        }
    }
}

impl fmt::Debug for Credentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Credentials")
            .field("api_key", &self.api_key)
            .field("api_secret", &"<redacted>")
            .finish()
    }
}

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The API answered with its error envelope.
    #[error("{status} {code}: {message}")]
    Api {
        status: u16,
        code: ErrorCode,
        message: String,
        /// `Retry-After` in seconds, when the server sent one.
        retry_after_secs: Option<u64>,
    },
    /// The request could not be sent or the answer not read.
    #[error("transport error: {0}")]
    Transport(#[from] reqwest::Error),
    /// The answer was not what the API promises.
    #[error("unexpected response ({status}): {detail}")]
    Unexpected { status: u16, detail: String },
    #[error("invalid base URL: {0}")]
    BaseUrl(String),
}

impl Error {
    /// The API error code, when the API answered with one.
    pub fn code(&self) -> Option<ErrorCode> {
        match self {
            Error::Api { code, .. } => Some(*code),
            _ => None,
        }
    }
}

/// A signed request about to be sent: everything that goes on the wire.
#[derive(Debug, Clone)]
pub struct SignedRequest {
    pub method: Method,
    /// Path and raw query as sent, e.g. `/api/v3/routes?amount=1&fromCcy=BTC`.
    pub path_and_query: String,
    pub headers: Vec<(&'static str, String)>,
    pub body: Vec<u8>,
}

/// A raw answer: status, headers and the `data` of a success envelope.
#[derive(Debug, Clone)]
pub struct Answer {
    pub status: u16,
    pub headers: HeaderMap,
    pub data: Value,
}

#[derive(Debug, Clone)]
pub struct BusinessClient {
    http: reqwest::Client,
    base: url::Url,
    credentials: Credentials,
}

impl BusinessClient {
    pub fn new(base_url: &str, credentials: Credentials) -> Result<Self, Error> {
        let base = url::Url::parse(base_url).map_err(|e| Error::BaseUrl(e.to_string()))?;
        Ok(Self {
            http: reqwest::Client::new(),
            base,
            credentials,
        })
    }

    /// `GET /api/v3`: the readiness document (routes, permissions, mode, server time).
    pub async fn readiness(&self) -> Result<Value, Error> {
        Ok(self
            .send(Method::GET, "/api/v3", &[], None::<&()>)
            .await?
            .data)
    }

    /// Signs and sends one request. `query` pairs are encoded and sent in canonical order; a
    /// body is serialized as compact JSON with sorted keys. POST and PATCH get a fresh
    /// `Idempotency-Key` unless `idempotency_key` is given through [`Self::sign`].
    pub async fn send<B: Serialize + ?Sized>(
        &self,
        method: Method,
        path: &str,
        query: &[(&str, &str)],
        body: Option<&B>,
    ) -> Result<Answer, Error> {
        let idempotency_key =
            matches!(method, Method::POST | Method::PATCH).then(new_idempotency_key);
        let signed = self.sign(
            method,
            path,
            query,
            body,
            idempotency_key.as_deref(),
            &new_nonce(),
            now_secs(),
        )?;
        self.execute(signed).await
    }

    /// `POST /api/v3/onchain/routes/resolve`: an onchain route card's execution plan, with the
    /// access token that scopes [`Self::report_execution`] and [`Self::execution`] to it.
    pub async fn resolve_onchain(
        &self,
        input: &OnchainResolveInput,
    ) -> Result<ExecutionPlanView, Error> {
        let answer = self
            .send(
                Method::POST,
                "/api/v3/onchain/routes/resolve",
                &[],
                Some(input),
            )
            .await?;
        typed(answer)
    }

    /// `POST /api/v3/onchain/executions`: reports the wallet's transaction hash or signatures.
    pub async fn report_execution(
        &self,
        access_token: &str,
        report: &ExecutionReportInput,
    ) -> Result<ExecutionView, Error> {
        let mut signed = self.sign(
            Method::POST,
            "/api/v3/onchain/executions",
            &[],
            Some(report),
            Some(&new_idempotency_key()),
            &new_nonce(),
            now_secs(),
        )?;
        signed
            .headers
            .push((ACCESS_TOKEN_HEADER, access_token.to_owned()));
        typed(self.execute(signed).await?)
    }

    /// `GET /api/v3/onchain/executions/{executionPlanId}`: where the execution stands.
    pub async fn execution(
        &self,
        execution_plan_id: &str,
        access_token: &str,
    ) -> Result<ExecutionView, Error> {
        let mut signed = self.sign(
            Method::GET,
            &format!("/api/v3/onchain/executions/{execution_plan_id}"),
            &[],
            None::<&()>,
            None,
            &new_nonce(),
            now_secs(),
        )?;
        signed
            .headers
            .push((ACCESS_TOKEN_HEADER, access_token.to_owned()));
        typed(self.execute(signed).await?)
    }

    /// Builds a signed request without sending it (to inspect it, or to send it several times).
    #[allow(clippy::too_many_arguments)]
    pub fn sign<B: Serialize + ?Sized>(
        &self,
        method: Method,
        path: &str,
        query: &[(&str, &str)],
        body: Option<&B>,
        idempotency_key: Option<&str>,
        nonce: &str,
        timestamp: i64,
    ) -> Result<SignedRequest, Error> {
        let raw_query = query
            .iter()
            .map(|(k, v)| {
                format!(
                    "{}={}",
                    signing::encode_component(k),
                    signing::encode_component(v)
                )
            })
            .collect::<Vec<_>>()
            .join("&");
        let canonical = signing::canonical_query(&raw_query).expect("encoded by us");
        let body = match body {
            Some(body) => compact_sorted_json(body)?,
            None => Vec::new(),
        };
        let timestamp = timestamp.to_string();
        let message =
            signing::string_to_sign(method.as_str(), path, &canonical, &timestamp, nonce, &body);
        let signature = signing::sign(self.credentials.api_secret.as_bytes(), &message);
        let mut headers = vec![
            ("X-API-KEY", self.credentials.api_key.clone()),
            ("X-API-TIMESTAMP", timestamp),
            ("X-API-NONCE", nonce.to_owned()),
            ("X-API-SIGN", signature),
        ];
        if !body.is_empty() {
            headers.push(("Content-Type", "application/json".to_owned()));
        }
        if let Some(key) = idempotency_key {
            headers.push(("Idempotency-Key", key.to_owned()));
        }
        let path_and_query = if canonical.is_empty() {
            path.to_owned()
        } else {
            format!("{path}?{canonical}")
        };
        Ok(SignedRequest {
            method,
            path_and_query,
            headers,
            body,
        })
    }

    /// Sends a signed request and unwraps the envelope.
    pub async fn execute(&self, request: SignedRequest) -> Result<Answer, Error> {
        let url = self
            .base
            .join(&request.path_and_query)
            .map_err(|e| Error::BaseUrl(e.to_string()))?;
        let mut builder = self.http.request(request.method, url);
        for (name, value) in &request.headers {
            builder = builder.header(*name, value);
        }
        let response = builder.body(request.body).send().await?;
        let status = response.status();
        let headers = response.headers().clone();
        let bytes = response.bytes().await?;
        decode(status, headers, &bytes)
    }
}

/// The `data` of `answer` as the wire type `T`.
fn typed<T: DeserializeOwned>(answer: Answer) -> Result<T, Error> {
    serde_json::from_value(answer.data).map_err(|e| Error::Unexpected {
        status: answer.status,
        detail: format!("the answer does not have the documented shape: {e}"),
    })
}

pub(crate) fn decode(
    status: StatusCode,
    headers: HeaderMap,
    bytes: &[u8],
) -> Result<Answer, Error> {
    let unexpected = |detail: String| Error::Unexpected {
        status: status.as_u16(),
        detail,
    };
    if status.is_success() {
        let envelope: Value =
            serde_json::from_slice(bytes).map_err(|e| unexpected(e.to_string()))?;
        if envelope["success"] != Value::Bool(true) {
            return Err(unexpected("success envelope without success=true".into()));
        }
        let data = envelope.get("data").cloned().unwrap_or(Value::Null);
        return Ok(Answer {
            status: status.as_u16(),
            headers,
            data,
        });
    }
    let is_json = headers
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json"));
    let envelope: ErrorEnvelope = match is_json.then(|| serde_json::from_slice(bytes)) {
        Some(Ok(envelope)) => envelope,
        _ => {
            return Err(unexpected(
                String::from_utf8_lossy(bytes).chars().take(200).collect(),
            ));
        }
    };
    Err(Error::Api {
        status: status.as_u16(),
        code: envelope.error.code,
        message: envelope.error.message,
        retry_after_secs: headers
            .get(RETRY_AFTER)
            .and_then(|v: &HeaderValue| v.to_str().ok()?.parse().ok()),
    })
}

/// Compact JSON with object keys in ascending order (what the server documents signing over).
pub fn compact_sorted_json<B: Serialize + ?Sized>(body: &B) -> Result<Vec<u8>, Error> {
    // Through `Value`, whose maps are sorted (serde_json without `preserve_order`).
    let value = serde_json::to_value(body).map_err(|e| Error::Unexpected {
        status: 0,
        detail: e.to_string(),
    })?;
    Ok(serde_json::to_vec(&value).expect("a Value always serializes"))
}

/// A fresh nonce: `n-` and 32 random hex digits.
pub fn new_nonce() -> String {
    let mut bytes = [0u8; 16];
    rand::rng().fill_bytes(&mut bytes);
    format!("n-{}", hex::encode(bytes))
}

/// A fresh idempotency key: 32 random hex digits.
pub fn new_idempotency_key() -> String {
    let mut bytes = [0u8; 16];
    rand::rng().fill_bytes(&mut bytes);
    hex::encode(bytes)
}

pub(crate) fn now_secs() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bodies_are_compact_with_sorted_keys() {
        #[derive(Serialize)]
        struct Body {
            zeta: u8,
            alpha: &'static str,
            nested: Value,
        }
        let bytes = compact_sorted_json(&Body {
            zeta: 1,
            alpha: "a b",
            nested: serde_json::json!({"y": 1, "x": [2, 1]}),
        })
        .unwrap();
        assert_eq!(
            bytes,
            br#"{"alpha":"a b","nested":{"x":[2,1],"y":1},"zeta":1}"#
        );
    }

    #[test]
    fn query_values_are_encoded_so_the_server_decodes_them_back() {
        let encoded = signing::encode_component("a b+c&d=e%f/é");
        let decoded = signing::query_pairs(&format!("q={encoded}")).unwrap();
        assert_eq!(decoded, [("q".to_owned(), "a b+c&d=e%f/é".to_owned())]);
    }

    #[test]
    fn signed_requests_carry_the_four_headers_and_the_canonical_query() {
        let client =
            BusinessClient::new("http://127.0.0.1:1", Credentials::new("key_x", "sec_y")).unwrap();
        let signed = client
            .sign(
                Method::GET,
                "/api/v3/routes",
                &[("toCcy", "ETH"), ("fromCcy", "BTC")],
                None::<&()>,
                None,
                "nonce-123",
                1_700_000_000,
            )
            .unwrap();
        assert_eq!(
            signed.path_and_query,
            "/api/v3/routes?fromCcy=BTC&toCcy=ETH"
        );
        let message = signing::string_to_sign(
            "GET",
            "/api/v3/routes",
            "fromCcy=BTC&toCcy=ETH",
            "1700000000",
            "nonce-123",
            b"",
        );
        let expected = signing::sign(b"sec_y", &message);
        assert!(signed.headers.contains(&("X-API-SIGN", expected)));
        assert!(new_nonce().len() >= 8 && signing::is_nonce(&new_nonce()));
    }
}
