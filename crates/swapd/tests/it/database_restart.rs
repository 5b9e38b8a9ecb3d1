//! PostgreSQL going away under load (its backends terminated, as a restart does: SQLSTATE 57P01
//! on in-flight queries, refused connections meanwhile): no request answers 500, every refusal
//! is 503 with `Retry-After`, every Idempotency-Key of a refused request is free again for its
//! retry, which creates its order once, and every order created has its webhook delivery (the
//! fan-out commits with the order, or not at all). And PostgreSQL going silent (its packets
//! dropped, no connection closed): the node answers 503 with `Retry-After` rather than hang,
//! is not ready, and serves again by itself when the network heals.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;
use sqlx::Connection;
use swapd_api::limits::Sharing;
use swapd_types::Permission::{OrdersCreate, OrdersRead, WebhooksWrite};

use crate::support::{Options, TestServer};

const TRON_ADDRESS: &str = "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_postgres_restart_under_load_answers_no_500_and_frees_every_key() {
    let Some(url) = swapd_store::test_support::postgres_url() else {
        return;
    };
    let schema = swapd_store::test_support::PgTestSchema::create(&url).await;
    let application = format!("swapd_restart_{}", std::process::id());
    let store = swapd_store::SqlStore::open(
        &format!("{}&application_name={application}", schema.database_url()),
        &swapd_store::StoreOptions {
            acquire_timeout: Duration::from_millis(500),
            ..Default::default()
        },
    )
    .await
    .unwrap();
    let server = Arc::new(
        TestServer::start_with(Options {
            sharing: Sharing::Database,
            store: Some(Arc::new(store)),
            ..Options::default()
        })
        .await,
    );
    let limits = swapd_core::api_keys::RateLimits {
        per_minute: 100_000,
        per_hour: 1_000_000,
        weight_per_hour: 10_000_000,
    };
    let key = Arc::new(
        server
            .key_with(&[OrdersCreate, OrdersRead, WebhooksWrite], &[], &[], limits)
            .await,
    );
    let subscribed = server
        .call(
            &key,
            "POST",
            "/api/v3/webhooks",
            "",
            &serde_json::to_vec(
                &json!({"url": "http://127.0.0.1:9/hook", "events": ["order.created"]}),
            )
            .unwrap(),
        )
        .await;
    assert_eq!(subscribed.status, 201, "{}", subscribed.body);
    let body = serde_json::to_vec(
        &json!({"fromCcy": "BTC", "toCcy": "USDTTRC", "amount": "0.05", "toAddress": TRON_ADDRESS}),
    )
    .unwrap();
    let create = {
        let (server, key, body) = (server.clone(), key.clone(), body.clone());
        move |idempotency_key: String| {
            let (server, key, body) = (server.clone(), key.clone(), body.clone());
            async move {
                let request = server
                    .sign(&key, "POST", "/api/v3/orders", "", &body)
                    .set("Idempotency-Key", &idempotency_key);
                server.send(&request).await
            }
        }
    };

    // The restart: every backend of this server's pool terminated, over and over, for 1.5 s.
    let killer = {
        let (url, application) = (url.clone(), application.clone());
        tokio::spawn(async move {
            let mut admin = sqlx::PgConnection::connect(&url).await.unwrap();
            tokio::time::sleep(Duration::from_millis(300)).await;
            let until = Instant::now() + Duration::from_millis(1_500);
            let mut terminated = 0u64;
            while Instant::now() < until {
                terminated += sqlx::query_scalar::<_, i64>(
                    "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity \
                     WHERE application_name = $1",
                )
                .bind(&application)
                .fetch_one(&mut admin)
                .await
                .unwrap() as u64;
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            terminated
        })
    };
    let load: Vec<_> = (0..6)
        .map(|client| {
            let create = create.clone();
            tokio::spawn(async move {
                let mut sent = Vec::new();
                let until = Instant::now() + Duration::from_millis(2_500);
                let mut n = 0;
                while Instant::now() < until {
                    n += 1;
                    let idempotency_key = format!("restart-{client}-{n:05}");
                    let answer = create(idempotency_key.clone()).await;
                    sent.push((idempotency_key, answer));
                }
                sent
            })
        })
        .collect();
    let mut sent = Vec::new();
    for task in load {
        sent.extend(task.await.unwrap());
    }
    let terminated = killer.await.unwrap();
    assert!(terminated > 0, "the restart terminated backends");

    let mut refused = 0;
    for (idempotency_key, answer) in &sent {
        let response = answer;
        assert!(
            response.status < 500 || response.status == 503,
            "{idempotency_key}: {} {}",
            response.status,
            response.body
        );
        if response.status == 503 {
            refused += 1;
            assert!(
                response.header("retry-after").is_some(),
                "{idempotency_key}: 503 without Retry-After: {}",
                response.body
            );
        }
    }
    assert!(refused > 0, "some requests met the restart");

    // After it, each key answers: the order it created, or creates it now; none stays claimed.
    let mut created = Vec::new();
    for (idempotency_key, answer) in &sent {
        let first = (answer.status == 201).then(|| answer.body["data"]["orderId"].clone());
        let mut retry = None;
        for _ in 0..100 {
            let response = create(idempotency_key.clone()).await;
            // Still claimed (409), or this address's request budget spent by the load (429):
            // ask again shortly, as a client would.
            if !matches!(response.status, 409 | 429) {
                retry = Some(response);
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let retry = retry.unwrap_or_else(|| panic!("{idempotency_key} stayed claimed"));
        assert!(
            matches!(retry.status, 200 | 201),
            "{idempotency_key}: {} {}",
            retry.status,
            retry.body
        );
        if let Some(order) = first {
            assert_eq!(retry.status, 200, "{idempotency_key}: a replay");
            assert_eq!(retry.body["data"]["orderId"], order, "{idempotency_key}");
        }
        created.push(retry.body["data"]["orderId"].as_str().unwrap().to_owned());
    }

    // Each order has exactly one `order.created` delivery queued.
    let now_ms = swapd_core::Clock::now_ms(server.clock.as_ref());
    let queued = server
        .state
        .store
        .claim_deliveries(now_ms + 1, "check", now_ms + 60_000, 100_000)
        .await
        .unwrap();
    let mut delivered: Vec<String> = queued
        .iter()
        .map(|delivery| {
            let event: serde_json::Value = serde_json::from_slice(&delivery.payload).unwrap();
            assert_eq!(event["type"], "order.created");
            event["data"]["order"]["orderId"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    delivered.sort();
    created.sort();
    assert_eq!(delivered, created, "one delivery per order created");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_whose_postgres_falls_silent_answers_503_and_recovers_when_it_heals() {
    let Some(url) = swapd_store::test_support::postgres_url() else {
        return;
    };
    let schema = swapd_store::test_support::PgTestSchema::create(&url).await;
    let relay =
        swapd_store::test_support::SilentRelay::start(swapd_store::test_support::server_addr(&url))
            .await;
    let store = swapd_store::open(
        &schema.database_url_at(relay.addr.port()),
        &swapd_store::StoreOptions {
            acquire_timeout: Duration::from_millis(500),
            statement_timeout: Duration::from_millis(500),
            ..Default::default()
        },
    )
    .await
    .unwrap();
    let server = TestServer::start_with(Options {
        sharing: Sharing::Database,
        store: Some(store),
        ..Options::default()
    })
    .await;
    let key = server.key(&[OrdersCreate, OrdersRead]).await;
    let body = serde_json::to_vec(
        &json!({"fromCcy": "BTC", "toCcy": "USDTTRC", "amount": "0.05", "toAddress": TRON_ADDRESS}),
    )
    .unwrap();
    let create = |idempotency_key: &str| {
        server
            .sign(&key, "POST", "/api/v3/orders", "", &body)
            .set("Idempotency-Key", idempotency_key)
    };
    let created = server.send(&create("before-the-cut")).await;
    assert_eq!(created.status, 201, "{}", created.body);
    let order_path = format!(
        "/api/v3/orders/{}",
        created.body["data"]["orderId"].as_str().unwrap()
    );
    let ready = || async {
        reqwest::get(format!("{}/readyz", server.base))
            .await
            .unwrap()
            .status()
    };

    relay.silence();
    // A guard against hanging the suite, far above the bounds (no timing is asserted).
    let guard = Duration::from_secs(60);
    let during = [
        create("during-the-cut"),
        server.sign(&key, "GET", &order_path, "", b""),
    ];
    for request in &during {
        let answer = tokio::time::timeout(guard, server.send(request))
            .await
            .expect("a request hangs while PostgreSQL is silent");
        assert_eq!(answer.status, 503, "{}", answer.body);
        assert!(answer.header("retry-after").is_some(), "{}", answer.body);
    }
    let readiness = tokio::time::timeout(guard, ready()).await.unwrap();
    assert_eq!(readiness, 503, "not ready while PostgreSQL is silent");

    relay.heal();
    let mut healed = false;
    for _ in 0..100 {
        if ready().await == 200 {
            healed = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(
        healed,
        "ready again after the network healed, without a restart"
    );
    // The key refused during the cut creates its order now (it was not taken), once.
    let retried = server.send(&create("during-the-cut")).await;
    assert_eq!(retried.status, 201, "{}", retried.body);
    let replayed = server.send(&create("during-the-cut")).await;
    assert_eq!(replayed.status, 200, "{}", replayed.body);
    assert_eq!(
        replayed.body["data"]["orderId"],
        retried.body["data"]["orderId"]
    );
    let read = server.call(&key, "GET", &order_path, "", b"").await;
    assert_eq!(read.status, 200, "{}", read.body);
}
