//! OpenTelemetry traces from a real `swapd serve` (docs/deploy.md, "Traces"): a local collector
//! decodes the OTLP/HTTP protobuf the exporter sends; a signed order creation carrying a
//! `traceparent` is one trace, from the HTTP span through the store's transactions and the
//! desk's call, in the caller's trace; its log lines carry the request id and the trace id; the
//! webhook delivery it causes carries a `traceparent` on. With the collector gone, requests
//! still succeed and the spans it did not take are counted in `/metrics`.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::Bytes;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use prost::Message;
use serde_json::{Value, json};
use swapd_types::signing;

use super::crash::{create_key, serve_watched, swapd};

/// A span as the collector received it.
#[derive(Debug, Clone)]
struct Received {
    trace_id: String,
    parent_span_id: String,
    name: String,
    attributes: Vec<(String, String)>,
}

/// A collector on a free port keeping every span it is sent.
async fn collector() -> (String, Arc<Mutex<Vec<Received>>>) {
    let spans = Arc::new(Mutex::new(Vec::new()));
    let kept = spans.clone();
    let app = axum::Router::new().route(
        "/v1/traces",
        axum::routing::post(move |body: Bytes| {
            let kept = kept.clone();
            async move {
                let request = ExportTraceServiceRequest::decode(body).expect("OTLP protobuf");
                let mut kept = kept.lock().unwrap();
                for resource in request.resource_spans {
                    for scope in resource.scope_spans {
                        for span in scope.spans {
                            kept.push(Received {
                                trace_id: alloy_primitives::hex::encode(&span.trace_id),
                                parent_span_id: alloy_primitives::hex::encode(&span.parent_span_id),
                                name: span.name,
                                attributes: span
                                    .attributes
                                    .into_iter()
                                    .map(|kv| (kv.key, format!("{:?}", kv.value)))
                                    .collect(),
                            });
                        }
                    }
                }
                axum::http::StatusCode::OK
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (url, spans)
}

/// A webhook receiver keeping the `traceparent` of every delivery.
async fn hooks() -> (String, Arc<Mutex<Vec<Option<String>>>>) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let kept = seen.clone();
    let app = axum::Router::new().route(
        "/hook",
        axum::routing::post(move |headers: axum::http::HeaderMap| {
            let kept = kept.clone();
            async move {
                let traceparent = headers
                    .get("traceparent")
                    .and_then(|value| value.to_str().ok())
                    .map(str::to_owned);
                kept.lock().unwrap().push(traceparent);
                axum::http::StatusCode::NO_CONTENT
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/hook", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (url, seen)
}

/// A signed `POST /api/v3/orders` carrying `traceparent`.
async fn create_order(base: &str, key: &Value, traceparent: &str) -> reqwest::Response {
    let body = serde_json::to_vec(&json!({
        "fromCcy": "BTC", "toCcy": "USDTTRC", "amount": "0.05",
        "toAddress": crate::lifecycle::TRON_ADDRESS
    }))
    .unwrap();
    let timestamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
        .to_string();
    let nonce = swapd_client::new_idempotency_key();
    let message = signing::string_to_sign("POST", "/api/v3/orders", "", &timestamp, &nonce, &body);
    let secret = key["apiSecret"].as_str().unwrap();
    reqwest::Client::new()
        .post(format!("{base}/api/v3/orders"))
        .header("X-API-KEY", key["apiKey"].as_str().unwrap())
        .header("X-API-TIMESTAMP", &timestamp)
        .header("X-API-NONCE", &nonce)
        .header("X-API-SIGN", signing::sign(secret.as_bytes(), &message))
        .header("Idempotency-Key", swapd_client::new_idempotency_key())
        .header("Content-Type", "application/json")
        .header("traceparent", traceparent)
        .body(body)
        .send()
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_signed_order_creation_is_one_trace_in_the_callers_and_a_missing_collector_costs_nothing()
{
    let (collector, spans) = collector().await;
    let dir = tempfile::tempdir().unwrap();
    let key = create_key(
        dir.path(),
        "prices:read,orders:create,orders:read,webhooks:write",
    );
    let (mut server, base, log) = serve_watched(
        swapd(dir.path())
            .args(["serve", "--listen", "127.0.0.1:0"])
            .env("SWAPD_TELEMETRY__OTLP_ENDPOINT", &collector)
            .env("SWAPD_TELEMETRY__SERVICE_NAME", "swapd-under-test")
            // The HTTP layer's own lines, in JSON: they carry the request's span.
            .env("SWAPD_LOG__FORMAT", "json")
            .env("RUST_LOG", "warn,tower_http=debug,swapd_api=info"),
    );

    let (hook, deliveries) = hooks().await;
    super::crash::client_for(&base, &key)
        .send(
            reqwest::Method::POST,
            "/api/v3/webhooks",
            &[],
            Some(&json!({"url": hook, "events": ["order.created"]})),
        )
        .await
        .unwrap();

    let trace_id = "4bf92f3577b34da6a3ce929d0e0e4736";
    let parent = "00f067aa0ba902b7";
    let created = create_order(&base, &key, &format!("00-{trace_id}-{parent}-01")).await;
    assert_eq!(created.status(), 201, "{:?}", created.text().await);

    // The batch goes out within a second or so.
    let deadline = Instant::now() + Duration::from_secs(30);
    let trace = loop {
        let trace: Vec<Received> = spans
            .lock()
            .unwrap()
            .iter()
            .filter(|span| span.trace_id == trace_id)
            .cloned()
            .collect();
        let names: Vec<&str> = trace.iter().map(|span| span.name.as_str()).collect();
        if ["request", "store.commit", "desk.open"]
            .iter()
            .all(|name| names.contains(name))
        {
            break trace;
        }
        assert!(Instant::now() < deadline, "spans so far: {names:?}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    let request = trace.iter().find(|span| span.name == "request").unwrap();
    assert_eq!(
        request.parent_span_id, parent,
        "a child of the caller's span"
    );
    let attribute = |name: &str| {
        request
            .attributes
            .iter()
            .find(|(key, _)| key == name)
            .map(|(_, value)| value.clone())
            .unwrap_or_default()
    };
    assert!(
        attribute("http.route").contains("/api/v3/orders"),
        "{request:?}"
    );
    assert!(attribute("http.status_code").contains("201"), "{request:?}");
    assert!(attribute("principal").contains("key"), "{request:?}");
    // Never a secret: no key, signature or body in any span.
    let secret = key["apiSecret"].as_str().unwrap();
    for span in spans.lock().unwrap().iter() {
        for (_, value) in &span.attributes {
            assert!(!value.contains(secret), "{span:?}");
        }
    }
    // The logs join the trace: a line inside the request carries its request id and trace id.
    let deadline = Instant::now() + Duration::from_secs(10);
    let joined = loop {
        match log.recv_timeout(Duration::from_millis(200)) {
            Ok(line) if line.contains(trace_id) => break line,
            Ok(_) => {}
            Err(_) => assert!(Instant::now() < deadline, "no log line in the trace"),
        }
    };
    let line: Value = serde_json::from_str(&joined).unwrap();
    let request_span = line["spans"]
        .as_array()
        .and_then(|spans| spans.iter().find(|span| span["name"] == "request"))
        .unwrap_or_else(|| panic!("{line}"));
    assert_eq!(request_span["trace_id"], trace_id, "{line}");
    assert!(
        request_span["request_id"]
            .as_str()
            .is_some_and(|id| !id.is_empty()),
        "{line}"
    );
    let desk = trace.iter().find(|span| span.name == "desk.open").unwrap();
    assert!(
        desk.attributes.iter().any(|(key, _)| key == "provider"),
        "{desk:?}"
    );
    // The delivery of the order's event carries its own trace context on.
    let deadline = Instant::now() + Duration::from_secs(30);
    let traceparent = loop {
        if let Some(first) = deliveries.lock().unwrap().first().cloned() {
            break first;
        }
        assert!(Instant::now() < deadline, "no delivery arrived");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let traceparent = traceparent.expect("a traceparent on the delivery");
    let parts: Vec<&str> = traceparent.split('-').collect();
    assert_eq!(
        (parts.len(), parts[0], parts[1].len(), parts[2].len()),
        (4, "00", 32, 16),
        "{traceparent}"
    );

    // Stopped gracefully: the next node on this data dir takes requests at once.
    assert!(
        std::process::Command::new("kill")
            .args(["-TERM", &server.id().to_string()])
            .status()
            .unwrap()
            .success()
    );
    server.wait().unwrap();

    // No collector: requests still succeed, and the spans it did not take are counted.
    let closed = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://{}", listener.local_addr().unwrap())
    };
    let (mut server, base, _log) = serve_watched(
        swapd(dir.path())
            .args(["serve", "--listen", "127.0.0.1:0"])
            .env("SWAPD_TELEMETRY__OTLP_ENDPOINT", &closed)
            .env("SWAPD_TELEMETRY__EXPORT_TIMEOUT_MS", "500"),
    );
    for _ in 0..3 {
        let created = create_order(&base, &key, &format!("00-{trace_id}-{parent}-01")).await;
        assert_eq!(created.status(), 201);
    }
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let metrics = reqwest::get(format!("{base}/metrics"))
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        let dropped = metrics
            .lines()
            .find(|line| line.starts_with("otel_spans_dropped_total"))
            .and_then(|line| line.split_whitespace().last())
            .and_then(|count| count.parse::<f64>().ok())
            .unwrap_or(0.0);
        if dropped > 0.0 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "no dropped spans counted:\n{metrics}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    server.kill().unwrap();
    server.wait().unwrap();
}
