//! The Business API (`/api/v3`): every request signed with the key's secret
//! (`docs/authentication.md`).

use std::fmt;

use reqwest::Method;
use serde::Serialize;
use serde_json::Value;
use swapd_types::readiness::Readiness;
use swapd_types::sandbox::{DepositInput, DepositRecorded};
use swapd_types::signing;
use swapd_types::webhooks::{
    DeliveryLog, ReplayInput, ReplayQueued, RotateInput, Rotated, TestCallbackInput,
    TestCallbackResult, Webhook, WebhookCreated, WebhookInput, WebhookList, WebhookPatch,
};

use crate::api::{Call, Surface, encode_segment, idempotency_key_for, to_value};
use crate::orders::OrderView;
use crate::retry::{RetryPolicy, with_retries};
use crate::{Answer, Error, compact_sorted_json, decode, new_nonce, now_secs};

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

/// A signed request about to be sent: everything that goes on the wire.
#[derive(Debug, Clone)]
pub struct SignedRequest {
    pub method: Method,
    /// Path and raw query as sent, e.g. `/api/v3/routes?amount=1&fromCcy=BTC`.
    pub path_and_query: String,
    pub headers: Vec<(&'static str, String)>,
    pub body: Vec<u8>,
}

/// A client of the Business API. Typed calls shared with the x402 surface come from
/// [`crate::SwapApi`]; the Business-only ones (webhooks, the sandbox chain) are methods here.
///
/// ```no_run
/// # async fn demo() -> Result<(), swapd_client::Error> {
/// use swapd_client::webhooks::{TestCallbackInput, WebhookInput};
/// use swapd_client::{BusinessClient, Credentials};
///
/// let client = BusinessClient::new("http://127.0.0.1:8080", Credentials::new("key_…", "sec_…"))?;
/// let created = client
///     .create_webhook(&WebhookInput {
///         url: "https://shop.example/hooks/swapd".into(),
///         events: vec!["order.completed".into(), "order.failed".into()],
///         description: None,
///     })
///     .await?;
/// // Keep created.secret (shown only now) for swapd_client::webhooks::Verifier.
/// let test = client
///     .test_callback(&TestCallbackInput {
///         webhook_id: created.webhook.webhook_id.clone(),
///         event_type: None,
///     })
///     .await?;
/// println!("answered {:?} in {} ms", test.status_code, test.latency_ms);
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct BusinessClient {
    http: reqwest::Client,
    base: url::Url,
    credentials: Credentials,
    retry: RetryPolicy,
}

impl BusinessClient {
    pub fn new(base_url: &str, credentials: Credentials) -> Result<Self, Error> {
        let base = url::Url::parse(base_url).map_err(|e| Error::BaseUrl(e.to_string()))?;
        Ok(Self {
            http: reqwest::Client::new(),
            base,
            credentials,
            retry: RetryPolicy::default(),
        })
    }

    /// Replaces the default retry policy (3 retries of replay-safe calls).
    pub fn with_retry(mut self, retry: RetryPolicy) -> Self {
        self.retry = retry;
        self
    }

    /// `GET /api/v3`: the readiness document (routes, permissions, mode, server time).
    pub async fn readiness(&self) -> Result<Readiness, Error> {
        self.call_typed(Call::get("")).await
    }

    /// Signs and sends one request to `path` (the whole path, `/api/v3/…`). `query` pairs are
    /// encoded and sent in canonical order; a body is serialized as compact JSON with sorted
    /// keys. POST and PATCH get a fresh `Idempotency-Key`, kept across retries.
    pub async fn send<B: Serialize + ?Sized>(
        &self,
        method: Method,
        path: &str,
        query: &[(&str, &str)],
        body: Option<&B>,
    ) -> Result<Answer, Error> {
        let body = body.map(to_value).transpose()?;
        self.send_with_retries(method, path, query, body.as_ref(), &[])
            .await
    }

    async fn send_with_retries(
        &self,
        method: Method,
        path: &str,
        query: &[(&str, &str)],
        body: Option<&Value>,
        headers: &[(&'static str, String)],
    ) -> Result<Answer, Error> {
        let idempotency_key = idempotency_key_for(&method);
        // Reads, and mutations carrying a key, have one effect however often they are sent.
        let replay_safe = matches!(method, Method::GET | Method::HEAD) || idempotency_key.is_some();
        with_retries(&self.retry, replay_safe, || async {
            // A fresh nonce and timestamp each time: the server refuses a replayed signature.
            let mut signed = self.sign(
                method.clone(),
                path,
                query,
                body,
                idempotency_key.as_deref(),
                &new_nonce(),
                now_secs(),
            )?;
            signed.headers.extend(headers.iter().cloned());
            self.execute(signed).await
        })
        .await
    }

    /// `GET /orders/{orderId}/status`: the order (the same view as `GET /orders/{orderId}`).
    pub async fn order_status(&self, order_id: &str) -> Result<OrderView, Error> {
        self.call_typed(Call::get(format!(
            "/orders/{}/status",
            encode_segment(order_id)
        )))
        .await
    }

    /// `GET /webhooks`: the key's subscriptions.
    /// `GET /earnings`: what the key's markups earned in `[since, until)` (epoch seconds; the
    /// server's defaults: the last 30 days).
    pub async fn earnings(
        &self,
        since: Option<i64>,
        until: Option<i64>,
    ) -> Result<crate::earnings::Earnings, Error> {
        self.call_typed(
            Call::get("/earnings")
                .param_opt("since", since.map(|s| s.to_string()))
                .param_opt("until", until.map(|u| u.to_string())),
        )
        .await
    }

    pub async fn webhooks(&self) -> Result<WebhookList, Error> {
        self.call_typed(Call::get("/webhooks")).await
    }

    /// `POST /webhooks`: a subscription, with its signing secret (shown only now).
    pub async fn create_webhook(&self, input: &WebhookInput) -> Result<WebhookCreated, Error> {
        self.call_typed(Call::post("/webhooks", input)?).await
    }

    /// `PATCH /webhooks/{webhookId}`: only the fields given change.
    pub async fn update_webhook(
        &self,
        webhook_id: &str,
        patch: &WebhookPatch,
    ) -> Result<Webhook, Error> {
        self.call_typed(Call::patch(webhook_path(webhook_id, ""), patch)?)
            .await
    }

    /// `POST /webhooks/{webhookId}/rotate-secret`: a new secret; the old one keeps signing
    /// for the grace period asked.
    pub async fn rotate_webhook_secret(
        &self,
        webhook_id: &str,
        input: &RotateInput,
    ) -> Result<Rotated, Error> {
        self.call_typed(Call::post(
            webhook_path(webhook_id, "/rotate-secret"),
            input,
        )?)
        .await
    }

    /// `POST /webhooks/{webhookId}/replay`: one event again, or every event of a window.
    pub async fn replay_webhook(
        &self,
        webhook_id: &str,
        input: &ReplayInput,
    ) -> Result<ReplayQueued, Error> {
        self.call_typed(Call::post(webhook_path(webhook_id, "/replay"), input)?)
            .await
    }

    /// `GET /webhooks/{webhookId}/deliveries`: the newest deliveries and their attempts.
    pub async fn webhook_deliveries(
        &self,
        webhook_id: &str,
        limit: Option<u32>,
    ) -> Result<DeliveryLog, Error> {
        self.call_typed(
            Call::get(webhook_path(webhook_id, "/deliveries"))
                .param_opt("limit", limit.map(|l| l.to_string())),
        )
        .await
    }

    /// `POST /callbacks/test`: one signed test delivery, sent now; its status and latency.
    pub async fn test_callback(
        &self,
        input: &TestCallbackInput,
    ) -> Result<TestCallbackResult, Error> {
        self.call_typed(Call::post("/callbacks/test", input)?).await
    }

    /// `POST /sandbox/orders/{orderId}/deposit` (sandbox mode only): a simulated transfer to
    /// the order's deposit address.
    pub async fn sandbox_deposit(
        &self,
        order_id: &str,
        input: &DepositInput,
    ) -> Result<DepositRecorded, Error> {
        self.call_typed(Call::post(
            format!("/sandbox/orders/{}/deposit", encode_segment(order_id)),
            input,
        )?)
        .await
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

impl Surface for BusinessClient {
    fn prefix(&self) -> &'static str {
        "/api/v3"
    }

    async fn call(&self, call: Call) -> Result<Answer, Error> {
        let path = format!("{}{}", self.prefix(), call.path);
        self.send_with_retries(
            call.method.clone(),
            &path,
            &call.query_refs(),
            call.body.as_ref(),
            &call.headers,
        )
        .await
    }
}

fn webhook_path(webhook_id: &str, rest: &str) -> String {
    format!("/webhooks/{}{rest}", encode_segment(webhook_id))
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
