//! Webhook delivery benchmark (docs/benchmarks.md): the real store (SQLite, or PostgreSQL with
//! `--postgres URL`), the real dispatcher loop and SSRF-checked sender, and a receiver on
//! loopback.
//!
//! 1. Latency: events are committed at a steady rate while the dispatcher runs; for each event,
//!    the time from its commit to the receiver seeing its first attempt.
//! 2. Throughput: a backlog of events is committed with no dispatcher running; then one starts,
//!    and the time until every event was received gives deliveries per second.
//!
//! `cargo run --release -p swapd --example bench_webhooks -- [--postgres URL] [--events N]
//! [--rate PER_SECOND] [--poll-ms MS]`

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::http::{HeaderMap, StatusCode};
use swapd_core::idempotency::{Begin, StoredResponse};
use swapd_core::offchain::order::{EventType, OrderEvent};
use swapd_core::secrets::MasterKey;
use swapd_core::store::IdempotentFinish;
use swapd_core::webhooks::subscription::{Subscription, SubscriptionStatus};
use swapd_core::webhooks::url_policy::UrlPolicy;
use swapd_core::{Clock, Store, SystemClock};
use tokio_util::sync::CancellationToken;

const OWNER: &str = "key:bench";

struct Args {
    postgres: Option<String>,
    events: usize,
    rate: u64,
    poll_ms: u64,
}

fn args() -> Args {
    let mut args = Args {
        postgres: None,
        events: 4_000,
        rate: 200,
        poll_ms: 100,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let value = it.next().unwrap_or_else(|| panic!("{flag} needs a value"));
        match flag.as_str() {
            "--postgres" => args.postgres = Some(value),
            "--events" => args.events = value.parse().expect("--events N"),
            "--rate" => args.rate = value.parse().expect("--rate PER_SECOND"),
            "--poll-ms" => args.poll_ms = value.parse().expect("--poll-ms MS"),
            other => panic!("unknown flag {other}"),
        }
    }
    args
}

type Arrivals = Arc<Mutex<HashMap<String, Instant>>>;

async fn receiver() -> (String, Arrivals) {
    let arrivals: Arrivals = Arc::default();
    let log = arrivals.clone();
    let app = axum::Router::new().route(
        "/hook",
        axum::routing::post(move |headers: HeaderMap| {
            let log = log.clone();
            async move {
                let id = headers["webhook-id"].to_str().unwrap().to_owned();
                log.lock().unwrap().entry(id).or_insert_with(Instant::now);
                StatusCode::NO_CONTENT
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/hook", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (url, arrivals)
}

async fn finish<'a>(
    store: &dyn Store,
    key: &'a str,
    lease: &'a mut String,
) -> IdempotentFinish<'a> {
    let Begin::Execute { lease_token } = store
        .begin_idempotent(OWNER, key, "fp", "lease", "bench", SystemClock.now_ms())
        .await
        .unwrap()
    else {
        panic!("fresh key")
    };
    *lease = lease_token;
    static RESPONSE: std::sync::OnceLock<StoredResponse> = std::sync::OnceLock::new();
    IdempotentFinish {
        principal: OWNER,
        key,
        hold: swapd_core::store::KeyHold::Lease(lease),
        response: RESPONSE.get_or_init(|| StoredResponse {
            status: 201,
            body: b"{}".to_vec(),
        }),
    }
}

/// Commits one order with its `order.created` event; the event id.
async fn commit_event(store: &dyn Store, n: usize, tag: &str) -> String {
    let mut order = swapd_store::test_support::sample_order(
        &format!("ord_{tag}_{n}"),
        OWNER,
        SystemClock.now_ms(),
    );
    order.next_check_at_ms = None;
    let event: OrderEvent = order.record_event(EventType::Created, None);
    let key = format!("idem-{}", order.id);
    let mut lease = String::new();
    let finish = finish(store, &key, &mut lease).await;
    store
        .create_order(&order, std::slice::from_ref(&event), None, finish)
        .await
        .unwrap()
        .unwrap();
    event.id.into_string()
}

fn dispatcher(store: Arc<dyn Store>, master: &MasterKey) -> swapd_worker::WebhookDispatcher {
    swapd_worker::WebhookDispatcher::new(
        store,
        Arc::new(SystemClock),
        master.clone(),
        swapd_delivery::Sender::new(UrlPolicy::Sandbox, Duration::from_secs(15)),
        swapd_worker::DispatchLimits::default(),
    )
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

#[tokio::main]
async fn main() {
    let args = args();
    let dir = tempfile::tempdir().unwrap();
    let (url, schema) = match &args.postgres {
        Some(url) => {
            let schema = swapd_store::test_support::PgTestSchema::create(url).await;
            (schema.database_url(), Some(schema))
        }
        None => (
            format!("sqlite://{}", dir.path().join("bench.db").display()),
            None,
        ),
    };
    let store = swapd_store::open(&url, &swapd_store::StoreOptions::default())
        .await
        .unwrap();
    store.migrate().await.unwrap();
    let master = MasterKey::generate();
    let (hook, arrivals) = receiver().await;
    let id = "whk_0000000000000000000000000000be4c";
    let now = SystemClock.now_ms();
    let mut lease = String::new();
    let finish_subscribe = finish(store.as_ref(), "idem-subscribe", &mut lease).await;
    store
        .insert_subscription(
            &Subscription {
                id: id.parse().unwrap(),
                owner: OWNER.parse().unwrap(),
                url: hook,
                events: vec![EventType::Created],
                description: None,
                status: SubscriptionStatus::Active,
                disabled_reason: None,
                secret_sealed: master
                    .seal(swapd_core::webhooks::signing::new_secret().as_bytes(), id),
                previous_secret_sealed: None,
                previous_secret_expires_at_ms: None,
                failing_since_ms: None,
                created_at_ms: now,
                updated_at_ms: now,
                version: 1,
            },
            finish_subscribe,
        )
        .await
        .unwrap();
    let backend = store.backend();

    // 1. Commit-to-first-attempt latency at a steady rate, the dispatcher polling as configured.
    let stop = CancellationToken::new();
    let worker = swapd_worker::Worker::new(store.clone(), Arc::new(SystemClock)).with_webhooks(
        dispatcher(store.clone(), &master),
        Duration::from_millis(args.poll_ms),
    );
    let running = tokio::spawn(worker.run(stop.clone()));
    let latency_events = args.events / 2;
    let mut committed = HashMap::new();
    let mut tick = tokio::time::interval(Duration::from_micros(1_000_000 / args.rate));
    for n in 0..latency_events {
        tick.tick().await;
        let event = commit_event(store.as_ref(), n, "lat").await;
        committed.insert(event, Instant::now());
    }
    let deadline = Instant::now() + Duration::from_secs(120);
    while arrivals.lock().unwrap().len() < latency_events && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    stop.cancel();
    running.await.unwrap();
    let mut latencies: Vec<f64> = {
        let arrivals = arrivals.lock().unwrap();
        committed
            .iter()
            .map(|(id, at)| arrivals[id].saturating_duration_since(*at).as_secs_f64() * 1000.0)
            .collect()
    };
    latencies.sort_by(f64::total_cmp);
    println!(
        "{backend:8} latency  {latency_events} events at {}/s, poll {} ms: commit → first attempt p50 {:.1} ms, p90 {:.1} ms, p99 {:.1} ms, max {:.1} ms",
        args.rate,
        args.poll_ms,
        percentile(&latencies, 0.5),
        percentile(&latencies, 0.9),
        percentile(&latencies, 0.99),
        latencies.last().unwrap()
    );

    // 2. Throughput: a backlog, then one dispatcher drains it.
    let backlog = args.events - latency_events;
    let mut ids = Vec::with_capacity(backlog);
    for n in 0..backlog {
        ids.push(commit_event(store.as_ref(), n, "tput").await);
    }
    let dispatcher = dispatcher(store.clone(), &master);
    let started = Instant::now();
    let mut sent = 0;
    while sent < backlog {
        sent += dispatcher.run_due().await;
    }
    let elapsed = started.elapsed().as_secs_f64();
    let arrived = {
        let arrivals = arrivals.lock().unwrap();
        ids.iter().filter(|id| arrivals.contains_key(*id)).count()
    };
    println!(
        "{backend:8} drain    {backlog} queued deliveries in {elapsed:.2} s: {:.0} deliveries/s ({arrived} received)",
        backlog as f64 / elapsed
    );
    drop(schema);
}
