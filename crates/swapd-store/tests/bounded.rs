//! Every store call is bounded: a database that accepts and never answers, or whose network
//! falls silent mid-statement, gets an "unavailable" answer within the deadline, never a hang;
//! and the store recovers by itself when the network returns (docs/reliability.md, "Bounded
//! calls"). The PostgreSQL tests need `SWAPD_TEST_POSTGRES_URL` and are mandatory under CI.

use std::sync::Arc;
use std::time::Duration;

use swapd_core::Store;
use swapd_core::StoreError;
use swapd_store::StoreOptions;
use swapd_store::test_support::{PgTestSchema, SilentRelay, postgres_url, sample_order};

fn short() -> StoreOptions {
    StoreOptions {
        max_connections: 2,
        acquire_timeout: Duration::from_millis(500),
        statement_timeout: Duration::from_millis(300),
    }
}

fn unavailable<T: std::fmt::Debug>(answer: Result<T, StoreError>, what: &str) {
    assert!(
        matches!(answer, Err(StoreError::Unavailable(_))),
        "{what}: {answer:?}"
    );
}

/// Retries `ping` until the store answers: recovery needs no restart. (A bounded number of
/// tries, no timing asserted.)
async fn answers_again(store: &Arc<dyn Store>) {
    for _ in 0..100 {
        if store.ping().await.is_ok() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("the store did not answer again after the network healed");
}

/// A PostgreSQL store reached through a relay that can fall silent, migrated.
async fn behind_relay(schema: &PgTestSchema, url: &str) -> (Arc<dyn Store>, SilentRelay) {
    let relay = SilentRelay::start(swapd_store::test_support::server_addr(url)).await;
    let store = swapd_store::open(&schema.database_url_at(relay.addr.port()), &short())
        .await
        .unwrap();
    store.migrate().await.unwrap();
    (store, relay)
}

#[tokio::test]
async fn opening_a_database_that_accepts_and_never_answers_fails_in_bounded_time() {
    let silent = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = silent.local_addr().unwrap().port();
    let held = tokio::spawn(async move {
        let mut connections = Vec::new();
        while let Ok((connection, _)) = silent.accept().await {
            connections.push(connection);
        }
    });
    let opened = swapd_store::open(
        &format!("postgres://swapd@127.0.0.1:{port}/swapd"),
        &short(),
    )
    .await;
    assert!(
        matches!(opened, Err(swapd_store::OpenError::Connect(_))),
        "{:?}",
        opened.err()
    );
    held.abort();
}

#[tokio::test]
async fn calls_to_a_silent_postgres_are_unavailable_then_answered_when_it_heals() {
    let Some(url) = postgres_url() else { return };
    let schema = PgTestSchema::create(&url).await;
    let (store, relay) = behind_relay(&schema, &url).await;
    let order = sample_order("ord_silent", "key:silent", 1_000);
    let owner = order.owner.clone();

    relay.silence();
    unavailable(store.ping().await, "a read");
    unavailable(store.order(&order.id, &owner).await, "an order read");
    unavailable(store.update_order(&order, &[], None).await, "a write");
    // More calls than the pool has connections: each still answers, none waits for ever.
    for _ in 0..3 {
        unavailable(store.live_nonces(0).await, "a read on a drained pool");
    }

    relay.heal();
    answers_again(&store).await;
    assert!(store.order(&order.id, &owner).await.unwrap().is_none());
}

/// Calls cut off mid-statement leave their connections lost (the server gave up on them, the
/// client never hears it): the store does not wait for them for ever, it closes them and opens
/// new ones when the network heals.
#[tokio::test]
async fn connections_lost_mid_statement_are_replaced() {
    let Some(url) = postgres_url() else { return };
    let schema = PgTestSchema::create(&url).await;
    let relay = SilentRelay::start(swapd_store::test_support::server_addr(&url)).await;
    let options = StoreOptions {
        statement_timeout: Duration::from_secs(2),
        ..short()
    };
    let store = swapd_store::open(&schema.database_url_at(relay.addr.port()), &options)
        .await
        .unwrap();
    store.migrate().await.unwrap();
    let order = sample_order("ord_locked", "key:locked", 1_000);
    store
        .create_order(
            &order,
            &[],
            None,
            swapd_core::store::IdempotentFinish {
                principal: "key:locked",
                key: "idem-locked",
                hold: swapd_core::store::KeyHold::AtCommit {
                    fingerprint: "f",
                    now_ms: 1_000,
                },
                response: &swapd_core::idempotency::StoredResponse {
                    status: 201,
                    body: b"{}".to_vec(),
                },
            },
        )
        .await
        .unwrap()
        .unwrap();

    // Another session holds the order's row, so both of the pool's connections wait in a
    // statement at the server when the network falls silent.
    use sqlx::Connection;
    let mut holder = sqlx::PgConnection::connect(&schema.database_url())
        .await
        .unwrap();
    sqlx::query("BEGIN").execute(&mut holder).await.unwrap();
    sqlx::query("SELECT 1 FROM orders WHERE id = 'ord_locked' FOR UPDATE")
        .execute(&mut holder)
        .await
        .unwrap();
    let mut saved = order.clone();
    saved.version += 1;
    let blocked: Vec<_> = (0..2)
        .map(|_| {
            let (store, saved) = (store.clone(), saved.clone());
            tokio::spawn(async move { store.update_order(&saved, &[], None).await })
        })
        .collect();
    tokio::time::sleep(Duration::from_millis(200)).await;
    relay.silence();
    relay.lose_open();
    for call in blocked {
        // A guard against hanging the suite, far above the deadline (no timing is asserted).
        let answer = tokio::time::timeout(Duration::from_secs(60), call)
            .await
            .expect("a call cut off mid-statement hangs");
        unavailable(answer.unwrap(), "a write cut off mid-statement");
    }
    sqlx::query("ROLLBACK").execute(&mut holder).await.unwrap();

    relay.heal();
    answers_again(&store).await;
}

#[tokio::test]
async fn a_work_listener_lost_silently_listens_anew() {
    let Some(url) = postgres_url() else { return };
    let schema = PgTestSchema::create(&url).await;
    let writer = swapd_store::open(&schema.database_url(), &StoreOptions::default())
        .await
        .unwrap();
    writer.migrate().await.unwrap();
    let (listener, relay) = behind_relay(&schema, &url).await;
    swapd_store::conformance::announcements_are_heard_again_after_the_listener_is_lost_silently(
        &writer,
        &listener,
        || {
            relay.silence();
            relay.lose_open();
            relay.heal();
        },
    )
    .await;
}

/// A pooled connection the server ended while it sat idle (a restart, an idle-session timeout)
/// is tested and replaced before the next call takes it: the call is answered, not failed.
#[tokio::test]
async fn a_connection_ended_while_idle_is_replaced_before_use() {
    let Some(url) = postgres_url() else { return };
    let schema = PgTestSchema::create(&url).await;
    let name = format!("swapd_idle_{}", std::process::id());
    let store = swapd_store::open(
        &format!("{}&application_name={name}", schema.database_url()),
        &StoreOptions {
            max_connections: 1,
            ..short()
        },
    )
    .await
    .unwrap();
    store.ping().await.unwrap();

    use sqlx::Connection;
    let mut admin = sqlx::PgConnection::connect(&url).await.unwrap();
    let ended: i64 = sqlx::query_scalar(
        "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity \
         WHERE application_name = $1",
    )
    .bind(&name)
    .fetch_one(&mut admin)
    .await
    .unwrap();
    assert_eq!(ended, 1, "the pool's one connection");
    // Idle past the point where a connection is tested before use.
    tokio::time::sleep(Duration::from_secs(6)).await;
    store
        .ping()
        .await
        .expect("the ended connection is replaced, not used");
}
