//! Webhook durability (docs/webhooks.md, "Delivery"): a few thousand events are delivered
//! by a `swapd serve --worker` process that is killed with SIGKILL and restarted several times
//! while events keep arriving. At the end every event has been delivered at least once, and
//! every delivery verifies with the official Standard Webhooks library.

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use strum::VariantArray;

use axum::http::{HeaderMap, StatusCode};
use swapd::app::Runtime;
use swapd_core::Store;
use swapd_core::idempotency::{Begin, StoredResponse};
use swapd_core::offchain::order::{EventType, OrderEvent};
use swapd_core::store::IdempotentFinish;
use swapd_core::webhooks::subscription::{Subscription, SubscriptionStatus};

const SWAPD: &str = env!("CARGO_BIN_EXE_swapd");
const ORDERS_PER_ROUND: usize = 200;
const KILLS: usize = 8;
const OWNER: &str = "key:durability";

/// Deliveries seen, by event id, and any that did not verify.
#[derive(Default)]
struct Seen {
    counts: HashMap<String, usize>,
    unverified: Vec<String>,
}

/// A delivery's Standard Webhooks headers, as the official library takes them.
pub(crate) fn standard_headers(headers: &HeaderMap) -> http::HeaderMap {
    let mut standard = http::HeaderMap::new();
    for name in ["webhook-id", "webhook-timestamp", "webhook-signature"] {
        if let Some(value) = headers.get(name) {
            standard.insert(name, value.to_str().unwrap().parse().unwrap());
        }
    }
    standard
}

async fn start_receiver(secret: String) -> (String, Arc<Mutex<Seen>>) {
    let seen = Arc::new(Mutex::new(Seen::default()));
    let log = seen.clone();
    let verifier = Arc::new(standardwebhooks::Webhook::new(&secret).unwrap());
    let app = axum::Router::new().route(
        "/hook",
        axum::routing::post(move |headers: HeaderMap, body: axum::body::Bytes| {
            let (log, verifier) = (log.clone(), verifier.clone());
            async move {
                let standard = standard_headers(&headers);
                let id = headers
                    .get("webhook-id")
                    .map(|v| v.to_str().unwrap().to_owned())
                    .unwrap_or_default();
                let mut seen = log.lock().unwrap();
                if verifier.verify(&body, &standard).is_err() {
                    seen.unverified.push(id);
                    return StatusCode::BAD_REQUEST;
                }
                *seen.counts.entry(id).or_default() += 1;
                StatusCode::NO_CONTENT
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/hook", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (url, seen)
}

fn worker(dir: &Path) -> Child {
    let mut command = Command::new(SWAPD);
    for (key, _) in std::env::vars() {
        if key.starts_with("SWAPD_") {
            command.env_remove(key);
        }
    }
    command
        .current_dir(dir)
        .args(["serve", "--worker", "--data-dir"])
        .arg(dir)
        .env("RUST_LOG", "error")
        .env("SWAPD_SANDBOX__PROFILE", "punctual")
        .env("SWAPD_WEBHOOKS__POLL_INTERVAL_MS", "20")
        .env("SWAPD_WEBHOOKS__BATCH", "50")
        // The orders here are only a source of events: leave their lifecycle alone.
        .env("SWAPD_ORDERS__POLL_INTERVAL_MS", "600000")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn swapd serve --worker")
}

/// Writes `count` orders with their two events each, as the API would: (event ids).
async fn write_orders(store: &dyn Store, round: usize, now_ms: i64) -> Vec<String> {
    let mut ids = Vec::new();
    for i in 0..ORDERS_PER_ROUND {
        let mut order =
            swapd_store::test_support::sample_order(&format!("ord_r{round}_{i}"), OWNER, now_ms);
        order.next_check_at_ms = None;
        let events: Vec<OrderEvent> = [EventType::Created, EventType::AwaitingDeposit]
            .into_iter()
            .map(|event_type| order.record_event(event_type, None))
            .collect();
        ids.extend(events.iter().map(|e| e.id.to_string()));
        let key = format!("idem-{}", order.id);
        let Begin::Execute { lease_token } = store
            .begin_idempotent(OWNER, &key, "fp", "lease", "node-a", now_ms)
            .await
            .unwrap()
        else {
            panic!("fresh key")
        };
        let response = StoredResponse {
            status: 201,
            body: b"{}".to_vec(),
        };
        store
            .create_order(
                &order,
                &events,
                None,
                IdempotentFinish {
                    principal: OWNER,
                    key: &key,
                    hold: swapd_core::store::KeyHold::Lease(&lease_token),
                    response: &response,
                },
            )
            .await
            .unwrap()
            .unwrap();
    }
    ids
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_event_is_delivered_although_the_worker_is_killed_again_and_again() {
    let dir = tempfile::tempdir().unwrap();
    let runtime = Runtime::open(crate::local_config(dir.path()))
        .await
        .unwrap();
    let store = runtime.store.clone();
    let now_ms = runtime.clock.now_ms();

    let secret = swapd_core::webhooks::signing::new_secret();
    let (url, seen) = start_receiver(secret.clone()).await;
    let id = "whk_0000000000000000000000000000d0ab";
    let subscription = Subscription {
        id: crate::support::parsed(id),
        owner: crate::support::parsed(OWNER),
        url,
        events: EventType::VARIANTS.to_vec(),
        description: None,
        status: SubscriptionStatus::Active,
        disabled_reason: None,
        secret_sealed: runtime.master_key.seal(secret.as_bytes(), id),
        previous_secret_sealed: None,
        previous_secret_expires_at_ms: None,
        failing_since_ms: None,
        created_at_ms: now_ms,
        updated_at_ms: now_ms,
        version: 1,
    };
    let Begin::Execute { lease_token } = store
        .begin_idempotent(OWNER, "idem-subscribe", "fp", "lease", "node-a", now_ms)
        .await
        .unwrap()
    else {
        panic!("fresh key")
    };
    store
        .insert_subscription(
            &subscription,
            IdempotentFinish {
                principal: OWNER,
                key: "idem-subscribe",
                hold: swapd_core::store::KeyHold::Lease(&lease_token),
                response: &StoredResponse {
                    status: 201,
                    body: b"{}".to_vec(),
                },
            },
        )
        .await
        .unwrap();

    // Events keep arriving while the worker is killed mid-flight and restarted.
    let mut expected: HashSet<String> = HashSet::new();
    for round in 0..KILLS {
        let mut child = worker(dir.path());
        expected.extend(write_orders(store.as_ref(), round, runtime.clock.now_ms()).await);
        tokio::time::sleep(Duration::from_millis(250 + 100 * (round as u64 % 4))).await;
        child.kill().expect("SIGKILL the worker");
        child.wait().unwrap();
    }
    let delivered_before_last_start = seen.lock().unwrap().counts.len();
    assert!(
        delivered_before_last_start > 0,
        "the killed workers delivered something"
    );

    // A last worker finishes the job: killed workers' leases run out (60 s) and are taken over.
    let mut child = worker(dir.path());
    let deadline = Instant::now() + Duration::from_secs(240);
    loop {
        let done = {
            let seen = seen.lock().unwrap();
            expected.iter().all(|id| seen.counts.contains_key(id))
        };
        if done || Instant::now() > deadline {
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    child.kill().unwrap();
    child.wait().unwrap();

    let seen = seen.lock().unwrap();
    assert!(
        seen.unverified.is_empty(),
        "unverifiable deliveries: {:?}",
        seen.unverified
    );
    let lost: Vec<&String> = expected
        .iter()
        .filter(|id| !seen.counts.contains_key(*id))
        .collect();
    assert_eq!(expected.len(), KILLS * ORDERS_PER_ROUND * 2);
    assert!(
        lost.is_empty(),
        "{} of {} events lost",
        lost.len(),
        expected.len()
    );
    let duplicates: usize = seen.counts.values().map(|n| n - 1).sum();
    println!(
        "{} events delivered through {KILLS} SIGKILLs, {duplicates} duplicate deliveries (at least once)",
        expected.len()
    );
}
