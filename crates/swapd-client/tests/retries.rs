//! Retries against a scripted HTTP server: what is sent again, with which key, and when the
//! client gives up.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use swapd_client::x402::X402Client;
use swapd_client::{BusinessClient, Credentials, ErrorCode, RetryPolicy, SwapApi};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// One request as the server saw it: its request line and headers (lowercased names).
#[derive(Debug, Clone)]
struct Seen {
    line: String,
    headers: Vec<(String, String)>,
}

impl Seen {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// Answers the `n`-th request with `script[n]` (status, extra headers, body); the last entry
/// repeats.
async fn scripted(
    script: Vec<(u16, &'static str, &'static str)>,
) -> (String, Arc<Mutex<Vec<Seen>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    tokio::spawn(async move {
        loop {
            let (mut socket, _) = listener.accept().await.unwrap();
            let mut buffer = Vec::new();
            let mut chunk = [0u8; 4096];
            let head_end = loop {
                let n = socket.read(&mut chunk).await.unwrap();
                if n == 0 {
                    break None;
                }
                buffer.extend_from_slice(&chunk[..n]);
                if let Some(at) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
                    break Some(at);
                }
            };
            let Some(head_end) = head_end else { continue };
            let head = String::from_utf8_lossy(&buffer[..head_end]).to_string();
            let mut lines = head.split("\r\n");
            let line = lines.next().unwrap_or_default().to_owned();
            let headers: Vec<(String, String)> = lines
                .filter_map(|l| l.split_once(':'))
                .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
                .collect();
            let length: usize = headers
                .iter()
                .find(|(n, _)| n == "content-length")
                .map_or(0, |(_, v)| v.parse().unwrap());
            while buffer.len() < head_end + 4 + length {
                let n = socket.read(&mut chunk).await.unwrap();
                buffer.extend_from_slice(&chunk[..n]);
            }
            let index = {
                let mut seen = log.lock().unwrap();
                seen.push(Seen { line, headers });
                seen.len() - 1
            };
            let (status, extra, body) = script[index.min(script.len() - 1)];
            let response = format!(
                "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n{extra}\r\n{body}",
                body.len()
            );
            socket.write_all(response.as_bytes()).await.unwrap();
        }
    });
    (base, seen)
}

const UNAVAILABLE: (u16, &str, &str) = (
    503,
    "",
    r#"{"success":false,"error":{"code":"service_unavailable","message":"try again"}}"#,
);
const ORDER_MISSING: (u16, &str, &str) = (
    404,
    "",
    r#"{"success":false,"error":{"code":"order_not_found","message":"no such order"}}"#,
);
const REPLAYED: (u16, &str, &str) = (
    201,
    "",
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
    let (base, seen) = scripted(vec![UNAVAILABLE, UNAVAILABLE, REPLAYED]).await;
    let created = client(&base).create_webhook(&webhook()).await.unwrap();
    assert_eq!(created.webhook.webhook_id, "whk_1");

    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 3);
    let key = seen[0].header("idempotency-key").unwrap();
    assert_eq!(key.len(), 32);
    assert!(
        seen.iter()
            .all(|s| s.header("idempotency-key") == Some(key))
    );
    let mut nonces: Vec<_> = seen
        .iter()
        .map(|s| s.header("x-api-nonce").unwrap())
        .collect();
    nonces.dedup();
    assert_eq!(nonces.len(), 3, "each attempt is signed anew");
    assert!(
        seen.iter()
            .all(|s| s.line.starts_with("POST /api/v3/webhooks "))
    );
}

#[tokio::test]
async fn a_rate_limit_is_waited_out_as_the_server_asks() {
    let limited = (
        429,
        "retry-after: 1\r\n",
        r#"{"success":false,"error":{"code":"rate_limit_exceeded","message":"slow down"}}"#,
    );
    let (base, seen) = scripted(vec![limited, ORDER_MISSING]).await;
    let started = std::time::Instant::now();
    let error = client(&base)
        .order("ord_0123456789abcdef0123456789abcdef")
        .await
        .unwrap_err();
    assert_eq!(error.code(), Some(ErrorCode::OrderNotFound));
    assert_eq!(seen.lock().unwrap().len(), 2);
    // The wait is the server's second, not the 10 ms backoff (a lower bound, not a timing test).
    assert!(started.elapsed() >= Duration::from_secs(1));
}

#[tokio::test]
async fn client_errors_are_not_retried_and_retries_run_out() {
    let (base, seen) = scripted(vec![ORDER_MISSING]).await;
    let error = client(&base)
        .order("ord_0123456789abcdef0123456789abcdef")
        .await
        .unwrap_err();
    assert_eq!(error.code(), Some(ErrorCode::OrderNotFound));
    assert_eq!(seen.lock().unwrap().len(), 1);

    let (base, seen) = scripted(vec![UNAVAILABLE]).await;
    let error = client(&base).webhooks().await.unwrap_err();
    assert_eq!(error.code(), Some(ErrorCode::ServiceUnavailable));
    assert_eq!(seen.lock().unwrap().len(), 4, "the first try and 3 retries");

    let (base, seen) = scripted(vec![UNAVAILABLE]).await;
    let error = client(&base)
        .with_retry(RetryPolicy::none())
        .webhooks()
        .await
        .unwrap_err();
    assert!(matches!(
        error,
        swapd_client::Error::Api { status: 503, .. }
    ));
    assert_eq!(seen.lock().unwrap().len(), 1);
}

#[tokio::test]
async fn the_x402_client_retries_its_requests_identically() {
    let readiness = (200, "", r#"{"success":true,"data":{"surface":"x402"}}"#);
    let (base, seen) = scripted(vec![UNAVAILABLE, readiness]).await;
    let client = X402Client::new(&base).unwrap().with_retry(RetryPolicy {
        base_delay: Duration::from_millis(10),
        ..RetryPolicy::default()
    });
    let document = client.get("/api/x402", &[]).await.unwrap();
    assert_eq!(document.answer.data["surface"], "x402");
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 2);
    assert!(seen.iter().all(|s| s.line.starts_with("GET /api/x402 ")));
}
