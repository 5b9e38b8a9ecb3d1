//! Retries against a scripted HTTP server: what is sent again, with which key, and when the
//! client gives up.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use swapd_client::x402::X402Client;
use swapd_client::{BusinessClient, Credentials, ErrorCode, RetryPolicy, SwapApi};
use wiremock::matchers::any;
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

/// One scripted answer: status, an extra header, body.
type Reply = (u16, Option<(&'static str, &'static str)>, &'static str);

/// Answers the `n`-th request with `replies[n]`; the last entry repeats.
struct Script {
    replies: Vec<Reply>,
    served: AtomicUsize,
}

impl Respond for Script {
    fn respond(&self, _: &Request) -> ResponseTemplate {
        let n = self.served.fetch_add(1, Ordering::SeqCst);
        let (status, header, body) = self.replies[n.min(self.replies.len() - 1)];
        let answer = ResponseTemplate::new(status).set_body_raw(body, "application/json");
        match header {
            Some((name, value)) => answer.insert_header(name, value),
            None => answer,
        }
    }
}

async fn scripted(replies: Vec<Reply>) -> MockServer {
    let server = MockServer::start().await;
    Mock::given(any())
        .respond_with(Script {
            replies,
            served: AtomicUsize::new(0),
        })
        .mount(&server)
        .await;
    server
}

async fn seen(server: &MockServer) -> Vec<Request> {
    server.received_requests().await.unwrap()
}

fn header<'r>(request: &'r Request, name: &str) -> Option<&'r str> {
    request.headers.get(name).and_then(|v| v.to_str().ok())
}

const UNAVAILABLE: Reply = (
    503,
    None,
    r#"{"success":false,"error":{"code":"service_unavailable","message":"try again"}}"#,
);
const ORDER_MISSING: Reply = (
    404,
    None,
    r#"{"success":false,"error":{"code":"order_not_found","message":"no such order"}}"#,
);
const REPLAYED: Reply = (
    201,
    None,
    r#"{"success":true,"data":{"webhookId":"whk_1","url":"https://example.com/h","events":["order.completed"],"description":null,"status":"active","disabledReason":null,"previousSecretExpiresAt":null,"createdAt":1,"updatedAt":1,"secret":"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}}"#,
);

fn client(base: &str) -> BusinessClient {
    let fast = RetryPolicy {
        base_delay: Duration::from_millis(10),
        max_delay: Duration::from_millis(40),
        ..RetryPolicy::default()
    };
    BusinessClient::new(base, Credentials::new("key_x", "sec_y"))
        .unwrap()
        .with_retry(fast)
}

fn webhook() -> swapd_client::webhooks::WebhookInput {
    swapd_client::webhooks::WebhookInput {
        url: "https://example.com/h".into(),
        events: vec!["order.completed".into()],
        description: None,
    }
}

#[tokio::test]
async fn a_mutation_is_resent_after_5xx_with_its_key_and_a_fresh_signature() {
    let server = scripted(vec![UNAVAILABLE, UNAVAILABLE, REPLAYED]).await;
    let created = client(&server.uri())
        .create_webhook(&webhook())
        .await
        .unwrap();
    assert_eq!(created.webhook.webhook_id, "whk_1");

    let seen = seen(&server).await;
    assert_eq!(seen.len(), 3);
    let key = header(&seen[0], "idempotency-key").unwrap();
    assert_eq!(key.len(), 32);
    assert!(
        seen.iter()
            .all(|s| header(s, "idempotency-key") == Some(key))
    );
    let mut nonces: Vec<_> = seen
        .iter()
        .map(|s| header(s, "x-api-nonce").unwrap())
        .collect();
    nonces.dedup();
    assert_eq!(nonces.len(), 3, "each attempt is signed anew");
    assert!(seen.iter().all(|s| s.method.as_str() == "POST"
        && s.url.path() == "/api/v3/webhooks"
        && s.url.query().is_none()));
}

#[tokio::test]
async fn a_rate_limit_is_waited_out_as_the_server_asks() {
    let limited = (
        429,
        Some(("retry-after", "1")),
        r#"{"success":false,"error":{"code":"rate_limit_exceeded","message":"slow down"}}"#,
    );
    let server = scripted(vec![limited, ORDER_MISSING]).await;
    let started = std::time::Instant::now();
    let error = client(&server.uri())
        .order("ord_0123456789abcdef0123456789abcdef")
        .await
        .unwrap_err();
    assert_eq!(error.code(), Some(ErrorCode::OrderNotFound));
    assert_eq!(seen(&server).await.len(), 2);
    // The wait is the server's second, not the 10 ms backoff (a lower bound, not a timing test).
    assert!(started.elapsed() >= Duration::from_secs(1));
}

#[tokio::test]
async fn client_errors_are_not_retried_and_retries_run_out() {
    let server = scripted(vec![ORDER_MISSING]).await;
    let error = client(&server.uri())
        .order("ord_0123456789abcdef0123456789abcdef")
        .await
        .unwrap_err();
    assert_eq!(error.code(), Some(ErrorCode::OrderNotFound));
    assert_eq!(seen(&server).await.len(), 1);

    let server = scripted(vec![UNAVAILABLE]).await;
    let error = client(&server.uri()).webhooks().await.unwrap_err();
    assert_eq!(error.code(), Some(ErrorCode::ServiceUnavailable));
    assert_eq!(seen(&server).await.len(), 4, "the first try and 3 retries");

    let server = scripted(vec![UNAVAILABLE]).await;
    let error = client(&server.uri())
        .with_retry(RetryPolicy::none())
        .webhooks()
        .await
        .unwrap_err();
    assert!(matches!(
        error,
        swapd_client::Error::Api { status: 503, .. }
    ));
    assert_eq!(seen(&server).await.len(), 1);
}

#[tokio::test]
async fn the_x402_client_retries_its_requests_identically() {
    let readiness = (200, None, r#"{"success":true,"data":{"surface":"x402"}}"#);
    let server = scripted(vec![UNAVAILABLE, readiness]).await;
    let client = X402Client::new(&server.uri())
        .unwrap()
        .with_retry(RetryPolicy {
            base_delay: Duration::from_millis(10),
            ..RetryPolicy::default()
        });
    let document = client.get("/api/x402", &[]).await.unwrap();
    assert_eq!(document.answer.data["surface"], "x402");
    let seen = seen(&server).await;
    assert_eq!(seen.len(), 2);
    assert!(
        seen.iter()
            .all(|s| s.method.as_str() == "GET" && s.url.path() == "/api/x402")
    );
}
