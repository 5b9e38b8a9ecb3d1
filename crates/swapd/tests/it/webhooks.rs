//! Webhooks on `/api/v3` against a running server and a local receiver: subscriptions,
//! Standard Webhooks signatures checked by the official library (`standardwebhooks`), rotation,
//! the retry schedule, 410 and redirects, replay, test callbacks, the delivery log, ownership,
//! and the SSRF policy of live mode (docs/webhooks.md, "Where deliveries may go").

use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::support::{Options, TestKey, TestServer};
use axum::http::{HeaderMap, StatusCode};
use axum::response::IntoResponse;
use axum::routing::{any, post};
use serde_json::{Value, json};
use swapd_core::ManualClock;
use swapd_types::Permission::{OrdersCreate, OrdersRead, PricesRead, WebhooksRead, WebhooksWrite};

/// What the receiver answers next (then 200 once the script is used up).
#[derive(Debug, Clone)]
enum Reply {
    Status(u16),
    RetryAfter(u16, u64),
    Sleep(u64),
    Redirect,
    Body(u16, &'static str),
}

#[derive(Debug, Clone)]
struct Received {
    headers: HeaderMap,
    body: Vec<u8>,
}

impl Received {
    fn header(&self, name: &str) -> &str {
        self.headers.get(name).unwrap().to_str().unwrap()
    }

    fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap()
    }

    fn timestamp(&self) -> i64 {
        self.header("webhook-timestamp").parse().unwrap()
    }
}

/// A local webhook receiver that records every delivery.
struct Receiver {
    url: String,
    received: Arc<Mutex<Vec<Received>>>,
    script: Arc<Mutex<VecDeque<Reply>>>,
    /// Requests to `/elsewhere` (where redirects point).
    followed: Arc<AtomicUsize>,
}

impl Receiver {
    async fn start() -> Receiver {
        let received = Arc::new(Mutex::new(Vec::new()));
        let script = Arc::new(Mutex::new(VecDeque::new()));
        let followed = Arc::new(AtomicUsize::new(0));
        let (log, replies, hits) = (received.clone(), script.clone(), followed.clone());
        let app = axum::Router::new()
            .route(
                "/hook",
                post(move |headers: HeaderMap, body: axum::body::Bytes| {
                    let (log, replies) = (log.clone(), replies.clone());
                    async move {
                        log.lock().unwrap().push(Received {
                            headers,
                            body: body.to_vec(),
                        });
                        let reply = replies.lock().unwrap().pop_front();
                        match reply {
                            None => StatusCode::OK.into_response(),
                            Some(Reply::Status(code)) => {
                                StatusCode::from_u16(code).unwrap().into_response()
                            }
                            Some(Reply::RetryAfter(code, secs)) => (
                                StatusCode::from_u16(code).unwrap(),
                                [("retry-after", secs.to_string())],
                            )
                                .into_response(),
                            Some(Reply::Sleep(ms)) => {
                                tokio::time::sleep(Duration::from_millis(ms)).await;
                                StatusCode::OK.into_response()
                            }
                            Some(Reply::Redirect) => {
                                (StatusCode::FOUND, [("location", "/elsewhere")]).into_response()
                            }
                            Some(Reply::Body(code, body)) => {
                                (StatusCode::from_u16(code).unwrap(), body).into_response()
                            }
                        }
                    }
                }),
            )
            .route(
                "/elsewhere",
                any(move || {
                    let hits = hits.clone();
                    async move {
                        hits.fetch_add(1, Ordering::SeqCst);
                        StatusCode::OK
                    }
                }),
            );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        Receiver {
            url: format!("http://127.0.0.1:{port}/hook"),
            received,
            script,
            followed,
        }
    }

    fn script(&self, replies: impl IntoIterator<Item = Reply>) {
        self.script.lock().unwrap().extend(replies);
    }

    fn received(&self) -> Vec<Received> {
        self.received.lock().unwrap().clone()
    }
}

/// A server whose manual clock starts at real time, so the Standard Webhooks verifier's
/// ±5-minute tolerance holds for deliveries made before the clock is moved on.
async fn server() -> TestServer {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    TestServer::start_with(Options {
        clock: Some(Arc::new(ManualClock::new(now))),
        ..Options::default()
    })
    .await
}

async fn key(server: &TestServer) -> TestKey {
    server
        .key(&[
            PricesRead,
            OrdersCreate,
            OrdersRead,
            WebhooksRead,
            WebhooksWrite,
        ])
        .await
}

/// Subscribes `key` to `events` at `url`: (webhook id, secret).
async fn subscribe(
    server: &TestServer,
    key: &TestKey,
    url: &str,
    events: &[&str],
) -> (String, String) {
    let resp = server
        .post(
            key,
            "/api/v3/webhooks",
            &json!({"url": url, "events": events, "description": "test receiver"}),
        )
        .await;
    let created = resp.data(201);
    (
        created["webhookId"].as_str().unwrap().to_owned(),
        created["secret"].as_str().unwrap().to_owned(),
    )
}

/// Creates an order (its `order.created` and `order.awaiting_deposit` events); its id.
async fn order(server: &TestServer, key: &TestKey) -> String {
    let resp = server
        .post(
            key,
            "/api/v3/orders",
            &json!({"fromCcy": "BTC", "toCcy": "USDTTRC", "amount": "0.05",
                "toAddress": "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t"}),
        )
        .await;
    resp.data(201)["orderId"].as_str().unwrap().to_owned()
}

/// The official library's signature of `received` for `secret` is among those sent.
fn signed_by(secret: &str, received: &Received) -> bool {
    let expected = standardwebhooks::Webhook::new(secret)
        .unwrap()
        .sign(
            received.header("webhook-id"),
            received.timestamp(),
            &received.body,
        )
        .unwrap();
    received
        .header("webhook-signature")
        .split(' ')
        .any(|s| s == expected)
}

/// The official verifier accepts `received` with `secret`, from the `webhook-*` headers only.
fn verifies(secret: &str, received: &Received) -> bool {
    let mut headers = http::HeaderMap::new();
    for name in ["webhook-id", "webhook-timestamp", "webhook-signature"] {
        headers.insert(name, received.header(name).parse().unwrap());
    }
    standardwebhooks::Webhook::new(secret)
        .unwrap()
        .verify(&received.body, &headers)
        .is_ok()
}

#[tokio::test]
async fn order_events_arrive_signed_as_standard_webhooks_verify_them() {
    let server = server().await;
    let key = key(&server).await;
    let receiver = Receiver::start().await;
    let (all, secret) = subscribe(
        &server,
        &key,
        &receiver.url,
        &["order.created", "order.awaiting_deposit"],
    )
    .await;
    let (_only_completed, _) = subscribe(&server, &key, &receiver.url, &["order.completed"]).await;
    let order_id = order(&server, &key).await;
    assert_eq!(
        server.dispatcher.run_due().await,
        2,
        "one delivery per subscribed event"
    );

    let received = receiver.received();
    assert_eq!(received.len(), 2);
    for (delivery, (expected_type, sequence)) in received
        .iter()
        .zip([("order.created", 1), ("order.awaiting_deposit", 2)])
    {
        // Case 92: the official verifier accepts the delivery from the webhook-* headers alone.
        assert!(verifies(&secret, delivery));
        for name in ["id", "timestamp", "signature"] {
            assert_eq!(
                delivery.header(&format!("x-webhook-{name}")),
                delivery.header(&format!("webhook-{name}"))
            );
        }
        let body = delivery.json();
        assert_eq!(body["id"], delivery.header("webhook-id"));
        assert!(body["id"].as_str().unwrap().starts_with("evt_"));
        assert_eq!(body["type"], expected_type);
        assert_eq!(
            body["sequence"], sequence,
            "case 104: receivers can order and drop stale events"
        );
        assert_eq!(body["data"]["order"]["orderId"], order_id);
        assert!(body["createdAt"].is_i64());
        // Case 93: changing the id or the timestamp breaks the signature.
        let mut forged = delivery.clone();
        forged
            .headers
            .insert("webhook-id", "evt_forged".parse().unwrap());
        assert!(!verifies(&secret, &forged));
        let mut shifted = delivery.clone();
        shifted.headers.insert(
            "webhook-timestamp",
            (delivery.timestamp() - 1).to_string().parse().unwrap(),
        );
        assert!(!verifies(&secret, &shifted));
        assert!(!verifies(
            &swapd_core::webhooks::signing::new_secret(),
            delivery
        ));
    }

    // The log shows each delivery with its attempt.
    let log = server
        .call(
            &key,
            "GET",
            &format!("/api/v3/webhooks/{all}/deliveries"),
            "",
            b"",
        )
        .await;
    let log = log.data(200);
    assert_eq!(log["count"], 2);
    let entry = &log["deliveries"][0];
    assert_eq!(entry["status"], "succeeded");
    assert_eq!(entry["attempts"], 1);
    assert_eq!(entry["lastStatusCode"], 200);
    assert_eq!(entry["log"][0]["statusCode"], 200);
    assert_eq!(entry["kind"], "event");
    // Nothing more is due.
    assert_eq!(server.dispatcher.run_due().await, 0);
    server.stop().await;
}

#[tokio::test]
async fn a_failing_receiver_gets_the_schedule_with_one_event_id_and_the_stored_bytes() {
    let server = server().await;
    let key = key(&server).await;
    let receiver = Receiver::start().await;
    let (id, secret) = subscribe(&server, &key, &receiver.url, &["order.created"]).await;
    // The receiver fails four times; twice it asks for more time than the schedule would wait
    // (honoured, up to an hour).
    receiver.script([
        Reply::RetryAfter(503, 120),
        Reply::Status(500),
        Reply::RetryAfter(429, 86_400),
        Reply::Status(502),
    ]);
    order(&server, &key).await;
    assert_eq!(server.dispatcher.run_due().await, 1);
    // Case 95: each next attempt falls inside its window (the schedule's delay ±10 % jitter, or
    // the receiver's Retry-After), never before.
    for (earliest_ms, latest_ms) in [
        (120_000, 120_000),
        (270_000, 330_000),
        (3_600_000, 3_600_000),
        (6_480_000, 7_920_000),
    ] {
        server.clock.advance_ms(earliest_ms - 1);
        assert_eq!(
            server.dispatcher.run_due().await,
            0,
            "not due before {earliest_ms} ms"
        );
        server.clock.advance_ms(latest_ms - earliest_ms + 1);
        assert_eq!(
            server.dispatcher.run_due().await,
            1,
            "due by {latest_ms} ms"
        );
        // Start the next window from the attempt just made.
        let last = receiver.received().pop().unwrap().timestamp() * 1000;
        let now = swapd_core::Clock::now_ms(server.clock.as_ref());
        assert!(now - last < 1_000);
    }
    let received = receiver.received();
    assert_eq!(received.len(), 5);
    let event_id = received[0].header("webhook-id");
    for delivery in &received {
        assert_eq!(
            delivery.header("webhook-id"),
            event_id,
            "the same event id on every attempt"
        );
        assert_eq!(
            delivery.body, received[0].body,
            "case 102: the stored bytes every time"
        );
        assert!(
            signed_by(&secret, delivery),
            "each attempt signed for its own timestamp"
        );
    }
    assert_ne!(
        received[0].header("webhook-signature"),
        received[1].header("webhook-signature")
    );
    let gaps: Vec<i64> = received
        .windows(2)
        .map(|w| w[1].timestamp() - w[0].timestamp())
        .collect();
    assert_eq!(
        gaps[0], 120,
        "Retry-After longer than the schedule: {gaps:?}"
    );
    assert!((270..=330).contains(&gaps[1]), "{gaps:?}");
    assert_eq!(gaps[2], 3_600, "Retry-After capped at an hour: {gaps:?}");
    assert!((6_480..=7_920).contains(&gaps[3]), "{gaps:?}");

    let log = server
        .call(
            &key,
            "GET",
            &format!("/api/v3/webhooks/{id}/deliveries"),
            "limit=5",
            b"",
        )
        .await;
    let entry = log.data(200)["deliveries"][0].clone();
    assert_eq!(entry["status"], "succeeded");
    assert_eq!(entry["attempts"], 5);
    let codes: Vec<Value> = entry["log"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["statusCode"].clone())
        .collect();
    assert_eq!(
        codes,
        [json!(503), json!(500), json!(429), json!(502), json!(200)]
    );
    assert!(entry["log"][0]["nextAttemptAt"].is_i64());
    assert_eq!(entry["log"][4]["nextAttemptAt"], Value::Null);
    // A success ends the subscription's failing streak.
    let list = server.call(&key, "GET", "/api/v3/webhooks", "", b"").await;
    assert_eq!(list.data(200)["webhooks"][0]["status"], "active");
    server.stop().await;
}

#[tokio::test]
async fn gone_disables_redirects_fail_unfollowed_and_slow_receivers_time_out() {
    let server = server().await;
    let key = key(&server).await;
    let receiver = Receiver::start().await;
    let (id, _) = subscribe(&server, &key, &receiver.url, &["order.created"]).await;

    // Case 96: a redirect is a failure and its Location is never fetched.
    receiver.script([Reply::Redirect]);
    order(&server, &key).await;
    server.dispatcher.run_due().await;
    assert_eq!(receiver.followed.load(Ordering::SeqCst), 0);
    // Case 97: an answer slower than the timeout fails the attempt, which is retried.
    receiver.script([Reply::Sleep(1_500)]);
    server.clock.advance_ms(6_000);
    server.dispatcher.run_due().await;
    // Case 96: 410 disables the subscription; nothing more is sent.
    receiver.script([Reply::Status(410)]);
    server.clock.advance_ms(400_000);
    server.dispatcher.run_due().await;
    let log = server
        .call(
            &key,
            "GET",
            &format!("/api/v3/webhooks/{id}/deliveries"),
            "",
            b"",
        )
        .await;
    let entry = log.data(200)["deliveries"][0].clone();
    assert_eq!(entry["status"], "failed");
    let attempts = entry["log"].as_array().unwrap();
    assert_eq!(attempts[0]["statusCode"], 302);
    assert!(
        attempts[0]["error"]
            .as_str()
            .unwrap()
            .contains("redirects are not followed")
    );
    assert_eq!(attempts[1]["statusCode"], Value::Null);
    assert!(
        attempts[1]["error"]
            .as_str()
            .unwrap()
            .starts_with("timeout"),
        "{}",
        attempts[1]
    );
    assert_eq!(attempts[2]["statusCode"], 410);
    let list = server.call(&key, "GET", "/api/v3/webhooks", "", b"").await;
    let webhook = list.data(200)["webhooks"][0].clone();
    assert_eq!(webhook["status"], "disabled");
    assert!(webhook["disabledReason"].as_str().unwrap().contains("410"));
    let before = receiver.received().len();
    order(&server, &key).await;
    server.clock.advance_ms(100_000_000);
    assert_eq!(server.dispatcher.run_due().await, 0);
    assert_eq!(receiver.received().len(), before);

    // Enabled again, it receives new events.
    let resp = server
        .patch(
            &key,
            &format!("/api/v3/webhooks/{id}"),
            &json!({"status": "active"}),
        )
        .await;
    let webhook = resp.data(200);
    assert_eq!(webhook["status"], "active");
    assert_eq!(webhook["disabledReason"], Value::Null);
    order(&server, &key).await;
    assert_eq!(server.dispatcher.run_due().await, 1);
    server.stop().await;
}

#[tokio::test]
async fn a_subscription_failing_for_five_days_is_disabled() {
    let server = server().await;
    let key = key(&server).await;
    let receiver = Receiver::start().await;
    let (id, _) = subscribe(&server, &key, &receiver.url, &["order.created"]).await;
    receiver.script((0..100).map(|_| Reply::Status(500)));
    order(&server, &key).await;
    server.dispatcher.run_due().await;
    // Passes every hour for four days follow the schedule: the first event's ten attempts
    // run out after about three days (3 d 3.6 h ± jitter), and do not disable.
    for _ in 0..96 {
        server.clock.advance_ms(3_600_000);
        server.dispatcher.run_due().await;
    }
    let log = server
        .call(
            &key,
            "GET",
            &format!("/api/v3/webhooks/{id}/deliveries"),
            "",
            b"",
        )
        .await;
    let delivery = log.data(200)["deliveries"][0].clone();
    assert_eq!(delivery["attempts"], 10, "the whole schedule");
    assert_eq!(delivery["status"], "failed");
    let list = server.call(&key, "GET", "/api/v3/webhooks", "", b"").await;
    assert_eq!(list.data(200)["webhooks"][0]["status"], "active");
    // Five days after the streak began, the next failure disables it.
    server.clock.advance_ms(24 * 3_600_000);
    order(&server, &key).await;
    server.dispatcher.run_due().await;
    let list = server.call(&key, "GET", "/api/v3/webhooks", "", b"").await;
    let webhook = list.data(200)["webhooks"][0].clone();
    assert_eq!(webhook["webhookId"], id);
    assert_eq!(webhook["status"], "disabled");
    assert!(
        webhook["disabledReason"]
            .as_str()
            .unwrap()
            .contains("5 days")
    );
    server.stop().await;
}

#[tokio::test]
async fn rotation_signs_with_both_secrets_during_the_grace_only() {
    let server = server().await;
    let key = key(&server).await;
    let receiver = Receiver::start().await;
    let (id, old) = subscribe(&server, &key, &receiver.url, &["order.created"]).await;
    let resp = server
        .post(
            &key,
            &format!("/api/v3/webhooks/{id}/rotate-secret"),
            &json!({}),
        )
        .await;
    let rotated = resp.data(200);
    let new = rotated["secret"].as_str().unwrap().to_owned();
    assert_ne!(new, old);
    assert_eq!(
        rotated["previousSecretExpiresAt"],
        server.now_secs() + 86_400
    );
    // Case 94: during the grace every delivery carries both signatures; both receivers verify.
    order(&server, &key).await;
    server.dispatcher.run_due().await;
    let during = receiver.received().pop().unwrap();
    assert_eq!(during.header("webhook-signature").split(' ').count(), 2);
    assert!(verifies(&new, &during) && verifies(&old, &during));
    // A second rotation during the grace is refused, unless forced.
    server
        .post(
            &key,
            &format!("/api/v3/webhooks/{id}/rotate-secret"),
            &json!({}),
        )
        .await
        .expect(409, "rotation_in_progress");
    let resp = server
        .post(
            &key,
            &format!("/api/v3/webhooks/{id}/rotate-secret"),
            &json!({"force": true, "previousSecretExpiresIn": 3_600}),
        )
        .await;
    let newest = resp.data(200)["secret"].as_str().unwrap().to_owned();
    order(&server, &key).await;
    server.dispatcher.run_due().await;
    let forced = receiver.received().pop().unwrap();
    assert!(verifies(&newest, &forced) && verifies(&new, &forced));
    assert!(
        !verifies(&old, &forced),
        "the oldest secret stopped at the forced rotation"
    );
    // After the grace, only the newest signs.
    server.clock.advance_ms(3_600_000);
    order(&server, &key).await;
    server.dispatcher.run_due().await;
    let after = receiver.received().pop().unwrap();
    assert_eq!(after.header("webhook-signature").split(' ').count(), 1);
    assert!(signed_by(&newest, &after) && !signed_by(&new, &after));
    // Grace 0: the current secret is retired at once (after a leak).
    let resp = server
        .post(
            &key,
            &format!("/api/v3/webhooks/{id}/rotate-secret"),
            &json!({"previousSecretExpiresIn": 0}),
        )
        .await;
    let immediate = resp.data(200);
    assert_eq!(immediate["previousSecretExpiresAt"], Value::Null);
    server
        .post(
            &key,
            &format!("/api/v3/webhooks/{id}/rotate-secret"),
            &json!({"previousSecretExpiresIn": 604_801}),
        )
        .await
        .expect(400, "validation_failed");
    server.stop().await;
}

#[tokio::test]
async fn replays_resend_own_events_by_id_or_window() {
    let server = server().await;
    let key = key(&server).await;
    let other = server
        .key(&[WebhooksRead, WebhooksWrite, OrdersCreate, PricesRead])
        .await;
    let receiver = Receiver::start().await;
    let (id, secret) = subscribe(
        &server,
        &key,
        &receiver.url,
        &["order.created", "order.awaiting_deposit"],
    )
    .await;
    let started = server.now_secs();
    order(&server, &key).await;
    server.dispatcher.run_due().await;
    let first = receiver.received()[0].clone();
    let event_id = first.header("webhook-id").to_owned();

    // Case 103: replaying an own event queues it; it arrives again with the same id and bytes.
    server.clock.advance_ms(60_000);
    let resp = server
        .post(
            &key,
            &format!("/api/v3/webhooks/{id}/replay"),
            &json!({"eventId": event_id}),
        )
        .await;
    let queued = resp.data(202);
    assert_eq!(queued["queued"], 1);
    assert_eq!(queued["deliveries"][0]["eventId"], event_id);
    assert_eq!(queued["deliveries"][0]["eventType"], "order.created");
    assert_eq!(server.dispatcher.run_due().await, 1);
    let replayed = receiver.received().pop().unwrap();
    assert_eq!(replayed.header("webhook-id"), event_id);
    assert_eq!(replayed.body, first.body);
    assert!(verifies(&secret, &replayed));

    // A window: both events, oldest first; limit bounds it.
    let resp = server
        .post(
            &key,
            &format!("/api/v3/webhooks/{id}/replay"),
            &json!({"since": started - 1, "until": server.now_secs() + 1, "limit": 1}),
        )
        .await;
    assert_eq!(resp.data(202)["queued"], 1);
    let resp = server
        .post(
            &key,
            &format!("/api/v3/webhooks/{id}/replay"),
            &json!({"since": started - 1}),
        )
        .await;
    let window = resp.data(202);
    assert_eq!(window["queued"], 2);
    assert_eq!(
        window["deliveries"][1]["eventType"],
        "order.awaiting_deposit"
    );
    assert_eq!(server.dispatcher.run_due().await, 3);
    let log = server
        .call(
            &key,
            "GET",
            &format!("/api/v3/webhooks/{id}/deliveries"),
            "",
            b"",
        )
        .await;
    assert_eq!(log.data(200)["deliveries"][0]["kind"], "replay");

    // Other principals: neither their subscription nor their events.
    let (theirs, _) = subscribe(&server, &other, &receiver.url, &["order.created"]).await;
    server
        .post(
            &other,
            &format!("/api/v3/webhooks/{theirs}/replay"),
            &json!({"eventId": event_id}),
        )
        .await
        .expect(404, "event_not_found");
    server
        .post(
            &other,
            &format!("/api/v3/webhooks/{id}/replay"),
            &json!({"eventId": event_id}),
        )
        .await
        .expect(404, "webhook_not_found");
    // Malformed selections.
    for body in [
        json!({}),
        json!({"eventId": event_id, "since": started}),
        json!({"since": started, "limit": 101}),
        json!({"since": started, "limit": 0}),
        json!({"since": started, "until": started}),
        json!({"eventId": event_id, "limit": 5}),
    ] {
        server
            .post(&key, &format!("/api/v3/webhooks/{id}/replay"), &body)
            .await
            .expect(400, "validation_failed");
    }
    server
        .post(
            &key,
            &format!("/api/v3/webhooks/{id}/replay"),
            &json!({"eventId": "evt_0123456789abcdef0123456789abcdef"}),
        )
        .await
        .expect(404, "event_not_found");
    server.stop().await;
}

#[tokio::test]
async fn test_callbacks_report_only_status_and_latency() {
    let server = server().await;
    let key = key(&server).await;
    let receiver = Receiver::start().await;
    let (id, secret) = subscribe(&server, &key, &receiver.url, &["order.completed"]).await;
    let resp = server
        .post(
            &key,
            "/api/v3/callbacks/test",
            &json!({"webhookId": id, "eventType": "order.completed"}),
        )
        .await;
    let result = resp.data(200);
    assert_eq!(result["delivered"], true);
    assert_eq!(result["statusCode"], 200);
    assert!(result["latencyMs"].is_i64());
    let test = receiver.received().pop().unwrap();
    assert!(verifies(&secret, &test));
    assert_eq!(test.json()["test"], true);
    assert_eq!(test.json()["type"], "order.completed");
    assert_eq!(test.header("webhook-id"), result["eventId"]);

    // Case 101: what the receiver says is never shown.
    receiver.script([Reply::Body(418, "internal receiver secret: hunter2")]);
    let resp = server
        .post(&key, "/api/v3/callbacks/test", &json!({"webhookId": id}))
        .await;
    let result = resp.data(200);
    assert_eq!(result["delivered"], false);
    assert_eq!(result["statusCode"], 418);
    assert_eq!(result["failure"], "http_status");
    assert!(!resp.body.to_string().contains("hunter2"));
    let keys: Vec<&String> = result.as_object().unwrap().keys().collect();
    assert_eq!(
        keys,
        [
            "delivered",
            "eventId",
            "failure",
            "latencyMs",
            "statusCode",
            "webhookId"
        ]
    );
    // Test events are not events: nothing is queued or logged.
    let log = server
        .call(
            &key,
            "GET",
            &format!("/api/v3/webhooks/{id}/deliveries"),
            "",
            b"",
        )
        .await;
    assert_eq!(log.data(200)["count"], 0);
    server
        .post(
            &key,
            "/api/v3/callbacks/test",
            &json!({"webhookId": id, "eventType": "order.paid"}),
        )
        .await
        .expect(400, "validation_failed");
    server.stop().await;
}

#[tokio::test]
async fn subscriptions_are_managed_by_their_owner_only() {
    let server = server().await;
    let key = key(&server).await;
    let other = server.key(&[WebhooksRead, WebhooksWrite]).await;
    let reader = server.key(&[WebhooksRead]).await;
    let receiver = Receiver::start().await;
    let resp = server.post(&key, "/api/v3/webhooks", &json!({"url": receiver.url, "events": ["order.completed", "order.created", "order.completed"]}))
    .await;
    let created = resp.data(201);
    let id = created["webhookId"].as_str().unwrap().to_owned();
    assert!(id.starts_with("whk_"));
    assert!(created["secret"].as_str().unwrap().starts_with("whsec_"));
    assert_eq!(
        created["events"],
        json!(["order.created", "order.completed"]),
        "deduplicated, spec order"
    );
    assert_eq!(created["status"], "active");
    assert_eq!(created["description"], Value::Null);
    // The secret is never shown again.
    let list = server.call(&key, "GET", "/api/v3/webhooks", "", b"").await;
    let list = list.data(200);
    assert_eq!(list["count"], 1);
    assert!(list["webhooks"][0].get("secret").is_none());

    let resp = server
        .patch(
            &key,
            &format!("/api/v3/webhooks/{id}"),
            &json!({"description": "prod", "events": ["order.failed"], "status": "disabled"}),
        )
        .await;
    let updated = resp.data(200);
    assert_eq!(updated["description"], "prod");
    assert_eq!(updated["events"], json!(["order.failed"]));
    assert_eq!(updated["status"], "disabled");
    server
        .post(
            &key,
            &format!("/api/v3/webhooks/{id}/replay"),
            &json!({"since": 0}),
        )
        .await
        .expect(409, "webhook_disabled");
    let resp = server
        .patch(
            &key,
            &format!("/api/v3/webhooks/{id}"),
            &json!({"description": null}),
        )
        .await;
    assert_eq!(resp.data(200)["description"], Value::Null);
    assert_eq!(
        resp.data(200)["events"],
        json!(["order.failed"]),
        "left-out fields stay"
    );

    // Other keys: 404 everywhere, byte-identical to an unknown id; a new URL for another
    // key's subscription is not even resolved.
    let missing = "whk_0123456789abcdef0123456789abcdef";
    for (method, path, body) in [
        (
            "PATCH",
            format!("/api/v3/webhooks/{id}"),
            json!({"status": "active"}),
        ),
        (
            "PATCH",
            format!("/api/v3/webhooks/{id}"),
            json!({"url": "https://nowhere.invalid/hooks"}),
        ),
        (
            "POST",
            format!("/api/v3/webhooks/{id}/rotate-secret"),
            json!({}),
        ),
        (
            "POST",
            format!("/api/v3/webhooks/{id}/replay"),
            json!({"since": 0}),
        ),
        (
            "POST",
            "/api/v3/callbacks/test".to_owned(),
            json!({"webhookId": id}),
        ),
    ] {
        let theirs = server
            .call(
                &other,
                method,
                &path,
                "",
                &serde_json::to_vec(&body).unwrap(),
            )
            .await;
        theirs.expect(404, "webhook_not_found");
        let unknown_path = path.replace(&id, missing);
        let unknown_body = serde_json::to_vec(&body).unwrap();
        let unknown_body = String::from_utf8(unknown_body)
            .unwrap()
            .replace(&id, missing);
        let unknown = server
            .call(&other, method, &unknown_path, "", unknown_body.as_bytes())
            .await;
        assert_eq!(theirs.body, unknown.body);
    }
    server
        .call(
            &other,
            "GET",
            &format!("/api/v3/webhooks/{id}/deliveries"),
            "",
            b"",
        )
        .await
        .expect(404, "webhook_not_found");
    assert_eq!(
        server
            .call(&other, "GET", "/api/v3/webhooks", "", b"")
            .await
            .data(200)
            .clone()["count"],
        0
    );
    // Permissions: reading is not writing.
    server
        .post(
            &reader,
            "/api/v3/webhooks",
            &json!({"url": receiver.url, "events": ["order.created"]}),
        )
        .await
        .expect(403, "permission_denied");

    // Bad input changes nothing.
    for (body, code) in [
        (
            json!({"url": receiver.url, "events": []}),
            "validation_failed",
        ),
        (
            json!({"url": receiver.url, "events": ["order.paid"]}),
            "validation_failed",
        ),
        (
            json!({"url": receiver.url, "events": ["order.created"], "secret": "mine"}),
            "validation_failed",
        ),
        (
            json!({"url": "ftp://example.com/", "events": ["order.created"]}),
            "webhook_url_scheme_not_allowed",
        ),
        (
            json!({"url": "not a url", "events": ["order.created"]}),
            "webhook_url_invalid",
        ),
        (
            json!({"url": "http://169.254.169.254/latest/meta-data/", "events": ["order.created"]}),
            "webhook_url_host_not_allowed",
        ),
        (
            json!({"url": "http://no-such-host.invalid/hook", "events": ["order.created"]}),
            "webhook_url_unresolvable",
        ),
        (
            json!({"url": receiver.url, "events": ["order.created"], "description": "d".repeat(257)}),
            "validation_failed",
        ),
    ] {
        server
            .post(&key, "/api/v3/webhooks", &body)
            .await
            .expect(400, code);
    }
    server
        .patch(
            &key,
            &format!("/api/v3/webhooks/{id}"),
            &json!({"status": "paused"}),
        )
        .await
        .expect(400, "validation_failed");
    assert_eq!(
        server
            .call(&key, "GET", "/api/v3/webhooks", "", b"")
            .await
            .data(200)
            .clone()["count"],
        1
    );
    server.stop().await;
}

/// Counts TCP connections made to it: a sinkhole that must stay untouched.
struct Sinkhole {
    port: u16,
    connections: Arc<AtomicUsize>,
}

impl Sinkhole {
    async fn bind(address: &str) -> Sinkhole {
        let listener = tokio::net::TcpListener::bind(address)
            .await
            .unwrap_or_else(|e| panic!("bind the sinkhole on {address}: {e}"));
        let port = listener.local_addr().unwrap().port();
        let connections = Arc::new(AtomicUsize::new(0));
        let count = connections.clone();
        tokio::spawn(async move {
            while let Ok((_socket, _)) = listener.accept().await {
                count.fetch_add(1, Ordering::SeqCst);
            }
        });
        Sinkhole { port, connections }
    }
}

#[tokio::test]
async fn a_key_at_its_subscription_cap_gets_a_conflict_and_nothing_is_created() {
    let server = server().await;
    let key = key(&server).await;
    for i in 0..20 {
        subscribe(
            &server,
            &key,
            &format!("http://127.0.0.1:9/{i}"),
            &["order.created"],
        )
        .await;
    }
    let refused = server
        .post(
            &key,
            "/api/v3/webhooks",
            &json!({"url": "http://127.0.0.1:9/21", "events": ["order.created"]}),
        )
        .await;
    refused.expect(409, "webhook_limit_reached");
    let list = server.call(&key, "GET", "/api/v3/webhooks", "", b"").await;
    assert_eq!(list.data(200)["count"], 20);
    server.stop().await;
}

#[tokio::test]
async fn live_mode_refuses_every_non_public_destination_without_connecting() {
    let server = TestServer::start_with(Options {
        url_policy: swapd_core::webhooks::url_policy::UrlPolicy::Live,
        ..Options::default()
    })
    .await;
    let key = key(&server).await;
    // Loopback on the https port (root may bind it) and on a port of its own.
    let on_443 = Sinkhole::bind("127.0.0.1:443").await;
    let anywhere = Sinkhole::bind("127.0.0.1:0").await;
    let p = anywhere.port;
    let matrix: Vec<(String, &str)> = [
        ("https://127.0.0.1/", "webhook_url_host_not_allowed"),
        ("https://localhost/", "webhook_url_host_not_allowed"),
        ("https://[::1]/", "webhook_url_host_not_allowed"),
        ("https://0.0.0.0/", "webhook_url_host_not_allowed"),
        (
            "https://[::ffff:127.0.0.1]/",
            "webhook_url_host_not_allowed",
        ),
        ("https://[::ffff:7f00:1]/", "webhook_url_host_not_allowed"),
        (
            "https://169.254.169.254/latest/meta-data/",
            "webhook_url_host_not_allowed",
        ),
        (
            "https://[::ffff:a9fe:a9fe]/",
            "webhook_url_host_not_allowed",
        ),
        (
            "https://[64:ff9b::a9fe:a9fe]/",
            "webhook_url_host_not_allowed",
        ),
        ("https://[2002:7f00:1::]/", "webhook_url_host_not_allowed"),
        ("https://10.0.0.1/", "webhook_url_host_not_allowed"),
        ("https://100.64.0.1/", "webhook_url_host_not_allowed"),
        ("https://[fd00::1]/", "webhook_url_host_not_allowed"),
        ("https://2130706433/", "webhook_url_host_not_allowed"),
        ("https://0177.0.0.1/", "webhook_url_host_not_allowed"),
        ("https://127.1/", "webhook_url_host_not_allowed"),
        ("http://127.0.0.1/", "webhook_url_scheme_not_allowed"),
        (
            "https://user:pass@example.com/",
            "webhook_url_credentials_not_allowed",
        ),
        ("https://example.com:22/", "webhook_url_port_not_allowed"),
    ]
    .into_iter()
    .map(|(url, code)| (url.to_owned(), code))
    .chain([(
        format!("https://127.0.0.1:{p}/"),
        "webhook_url_host_not_allowed",
    )])
    .collect();
    for (url, code) in &matrix {
        server
            .post(
                &key,
                "/api/v3/webhooks",
                &json!({"url": url, "events": ["order.created"]}),
            )
            .await
            .expect(400, code);
    }
    assert_eq!(
        server
            .call(&key, "GET", "/api/v3/webhooks", "", b"")
            .await
            .data(200)
            .clone()["count"],
        0
    );

    // Checked at delivery too: a subscription whose URL turned bad (written around the API, as
    // a name that now resolves to loopback would be) fails each attempt without a connection.
    let now = swapd_core::Clock::now_ms(server.clock.as_ref());
    let master = server.master.clone();
    let subscription = swapd_core::webhooks::subscription::Subscription {
        id: crate::support::parsed("whk_00000000000000000000000000000bad"),
        owner: key.owner(),
        url: "https://localhost/hook".into(),
        events: vec![swapd_core::offchain::order::EventType::Created],
        description: None,
        status: swapd_core::webhooks::subscription::SubscriptionStatus::Active,
        disabled_reason: None,
        secret_sealed: master.seal(
            swapd_core::webhooks::signing::new_secret().as_bytes(),
            "whk_00000000000000000000000000000bad",
        ),
        previous_secret_sealed: None,
        previous_secret_expires_at_ms: None,
        failing_since_ms: None,
        created_at_ms: now,
        updated_at_ms: now,
        version: 1,
    };
    let lease = match server
        .state
        .store
        .begin_idempotent(
            &subscription.owner.scope(),
            "insert-bad",
            "fp",
            "lease",
            "node-a",
            now,
        )
        .await
        .unwrap()
    {
        swapd_core::idempotency::Begin::Execute { lease_token } => lease_token,
        other => panic!("{other:?}"),
    };
    server
        .state
        .store
        .insert_subscription(
            &subscription,
            swapd_core::store::IdempotentFinish {
                principal: &subscription.owner.scope(),
                key: "insert-bad",
                hold: swapd_core::store::KeyHold::Lease(&lease),
                response: &swapd_core::idempotency::StoredResponse {
                    status: 201,
                    body: b"{}".to_vec(),
                },
            },
        )
        .await
        .unwrap();
    // Updating it to another blocked URL is refused as creation is.
    server
        .patch(
            &key,
            &format!("/api/v3/webhooks/{}", subscription.id),
            &json!({"url": "https://[::ffff:a9fe:a9fe]/"}),
        )
        .await
        .expect(400, "webhook_url_host_not_allowed");
    order(&server, &key).await;
    assert_eq!(server.dispatcher.run_due().await, 1);
    let log = server
        .call(
            &key,
            "GET",
            &format!("/api/v3/webhooks/{}/deliveries", subscription.id),
            "",
            b"",
        )
        .await;
    let attempt = log.data(200)["deliveries"][0]["log"][0].clone();
    assert!(
        attempt["error"]
            .as_str()
            .unwrap()
            .starts_with("destination_blocked"),
        "{attempt}"
    );
    assert_eq!(attempt["statusCode"], Value::Null);
    // The test callback is held to the same policy.
    let resp = server
        .post(
            &key,
            "/api/v3/callbacks/test",
            &json!({"webhookId": subscription.id.as_str()}),
        )
        .await;
    assert_eq!(resp.data(200)["failure"], "destination_blocked");

    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(
        on_443.connections.load(Ordering::SeqCst),
        0,
        "no connection was ever made"
    );
    assert_eq!(
        anywhere.connections.load(Ordering::SeqCst),
        0,
        "no connection was ever made"
    );
    server.stop().await;
}

/// Case 92 with another implementation: PyPI's `standardwebhooks` (installed by `.ci/run`)
/// verifies deliveries made before, during and after a rotation, from the `webhook-*` headers.
#[tokio::test]
async fn python_standardwebhooks_verifies_our_deliveries_across_a_rotation() {
    let probe = std::process::Command::new("python3")
        .args(["-c", "import standardwebhooks"])
        .output();
    if !probe.is_ok_and(|out| out.status.success()) {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI must run this test: pip install standardwebhooks==1.1.0 (.ci/run does)"
        );
        println!("SKIPPED: python3 with standardwebhooks is not installed");
        return;
    }
    let server = server().await;
    let key = key(&server).await;
    let receiver = Receiver::start().await;
    let (id, old) = subscribe(&server, &key, &receiver.url, &["order.created"]).await;
    order(&server, &key).await;
    server.dispatcher.run_due().await;
    let resp = server
        .post(
            &key,
            &format!("/api/v3/webhooks/{id}/rotate-secret"),
            &json!({"previousSecretExpiresIn": 60}),
        )
        .await;
    let new = resp.data(200)["secret"].as_str().unwrap().to_owned();
    order(&server, &key).await;
    server.dispatcher.run_due().await;
    server.clock.advance_ms(60_000);
    order(&server, &key).await;
    server.dispatcher.run_due().await;
    let received = receiver.received();
    assert_eq!(received.len(), 3);

    // (delivery, secret, whether it must verify)
    let cases = [
        (0, &old, true),
        (0, &new, false),
        (1, &old, true),
        (1, &new, true),
        (2, &old, false),
        (2, &new, true),
    ];
    let input: Vec<Value> = cases
        .iter()
        .map(|(i, secret, _)| {
            let delivery = &received[*i];
            json!({
                "secret": secret,
                "body": String::from_utf8(delivery.body.clone()).unwrap(),
                "headers": {
                    "webhook-id": delivery.header("webhook-id"),
                    "webhook-timestamp": delivery.header("webhook-timestamp"),
                    "webhook-signature": delivery.header("webhook-signature"),
                },
            })
        })
        .collect();
    let script = r#"
import json, sys
from standardwebhooks.webhooks import Webhook
for case in json.load(sys.stdin):
    try:
        Webhook(case["secret"]).verify(case["body"].encode(), case["headers"])
        print("ok")
    except Exception as error:
        print("refused", type(error).__name__)
"#;
    let mut child = std::process::Command::new("python3")
        .args(["-c", script])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(&serde_json::to_vec(&input).unwrap())
        .unwrap();
    let output = child.wait_with_output().unwrap();
    assert!(output.status.success());
    let verdicts: Vec<String> = String::from_utf8(output.stdout)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect();
    assert_eq!(verdicts.len(), cases.len());
    for ((i, _, must), verdict) in cases.iter().zip(&verdicts) {
        assert_eq!(verdict == "ok", *must, "delivery {i}: {verdict}");
    }
    server.stop().await;
}

/// Webhook secrets never rest in clear: not in the subscriptions, and not in the responses kept
/// for replay (create and rotate answer with the secret); replays still answer it.
#[tokio::test]
async fn no_webhook_secret_rests_in_clear_and_replays_still_answer_it() {
    let server = server().await;
    let key = key(&server).await;
    let receiver = Receiver::start().await;
    let body =
        serde_json::to_vec(&json!({"url": receiver.url, "events": ["order.created"]})).unwrap();
    let create = server
        .sign(&key, "POST", "/api/v3/webhooks", "", &body)
        .set("Idempotency-Key", "create-hook-with-a-secret");
    let created = server.send(&create).await.data(201).clone();
    let id = created["webhookId"].as_str().unwrap().to_owned();
    let first_secret = created["secret"].as_str().unwrap().to_owned();
    let path = format!("/api/v3/webhooks/{id}/rotate-secret");
    let rotate = server
        .sign(
            &key,
            "POST",
            &path,
            "",
            br#"{"previousSecretExpiresIn":60}"#,
        )
        .set("Idempotency-Key", "rotate-hook-secret-once");
    let rotated = server.send(&rotate).await.data(200).clone();
    let second_secret = rotated["secret"].as_str().unwrap().to_owned();
    order(&server, &key).await;
    server.dispatcher.run_due().await;

    // Replays answer the secrets they first answered.
    let again = server
        .sign(&key, "POST", "/api/v3/webhooks", "", &body)
        .set("Idempotency-Key", "create-hook-with-a-secret");
    let replayed = server.send(&again).await;
    assert_eq!(replayed.header("idempotent-replayed"), Some("true"));
    assert_eq!(replayed.data(200)["secret"], first_secret);
    let again = server
        .sign(
            &key,
            "POST",
            &path,
            "",
            br#"{"previousSecretExpiresIn":60}"#,
        )
        .set("Idempotency-Key", "rotate-hook-secret-once");
    assert_eq!(server.send(&again).await.data(200)["secret"], second_secret);

    let stored = server.database_text().await;
    assert!(stored.contains(&id), "the scan reads the tables");
    for secret in [&first_secret, &second_secret] {
        let key_part = secret.trim_start_matches("whsec_");
        assert!(
            !stored.contains(key_part),
            "a webhook secret rests in clear"
        );
    }
    assert!(!stored.contains("whsec_"));
}

/// Replays are limited per subscription (`webhooks.replays_per_minute`, 10): the eleventh in a
/// minute is refused with `Retry-After`, queues nothing, and the next minute admits again.
#[tokio::test]
async fn replays_are_rate_limited_per_subscription() {
    let server = server().await;
    let key = key(&server).await;
    let receiver = Receiver::start().await;
    let (id, _) = subscribe(&server, &key, &receiver.url, &["order.created"]).await;
    let (other, _) = subscribe(&server, &key, &receiver.url, &["order.created"]).await;
    let started = server.now_secs();
    order(&server, &key).await;
    let replay = |subscription: &str| {
        let path = format!("/api/v3/webhooks/{subscription}/replay");
        let (server, key) = (&server, &key);
        async move {
            server
                .post(key, &path, &json!({"since": started - 1}))
                .await
        }
    };
    for _ in 0..10 {
        replay(&id).await.data(202);
    }
    let refused = replay(&id).await;
    refused.expect(429, "rate_limit_exceeded");
    let wait: u64 = refused.header("retry-after").unwrap().parse().unwrap();
    assert!((1..=60).contains(&wait), "{wait}");
    // Another subscription has its own budget.
    replay(&other).await.data(202);
    server.clock.advance_ms(60_000);
    replay(&id).await.data(202);
    server.stop().await;
}
