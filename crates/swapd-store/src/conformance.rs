//! The behaviour every [`Store`] implementation must show. The same suite runs against SQLite
//! and PostgreSQL (`tests/conformance.rs`); a backend that differs from the other fails here.

use std::sync::Arc;

use swapd_core::api_keys::{ApiKey, ApiKeyPolicy, KeyStatus, RateLimits};
use swapd_core::idempotency::{Begin, IDEMPOTENCY_TTL_MS, LEASE_MS, StoredResponse};
use swapd_core::rate_limit::{self, Policy, RateState};
use swapd_core::secrets::MasterKey;
use swapd_core::store::NonceRecord;
use swapd_core::{Store, StoreError};
use swapd_types::Permission;

use crate::{Backend, migrations};

/// Runs every check against a freshly opened, not yet migrated store.
pub async fn run_all(shared: Arc<dyn Store>) {
    let store = shared.as_ref();
    migrations_apply_once_and_match_the_embedded_list(store).await;
    ping_answers(store).await;
    api_keys_round_trip_exactly(store).await;
    duplicate_api_key_ids_conflict(store).await;
    api_keys_list_oldest_first(store).await;
    revocation_is_idempotent_and_keeps_the_first_time(store).await;
    nonces_are_single_use_per_key_until_purged(store).await;
    nonce_batches_ignore_duplicates_and_live_nonces_reload(store).await;
    rate_decisions_match_the_pure_function_and_refusals_consume_nothing(store).await;
    concurrent_rate_consumption_admits_exactly_the_quota(&shared).await;
    idempotency_records_follow_the_plan(store).await;
    concurrent_first_attempts_execute_once(&shared).await;
}

async fn migrations_apply_once_and_match_the_embedded_list(store: &dyn Store) {
    store.migrate().await.expect("first migration run");
    store
        .migrate()
        .await
        .expect("second migration run is a no-op");
    let backend = match store.backend() {
        "sqlite" => Backend::Sqlite,
        "postgres" => Backend::Postgres,
        other => panic!("unknown backend {other}"),
    };
    let expected: Vec<i64> = migrations(backend).into_iter().map(|(v, _)| v).collect();
    assert_eq!(store.applied_migrations().await.unwrap(), expected);
}

async fn ping_answers(store: &dyn Store) {
    store.ping().await.expect("ping");
}

fn sample_policy(name: &str) -> ApiKeyPolicy {
    ApiKeyPolicy::new(
        name,
        [Permission::PricesRead, Permission::WebhooksWrite],
        &["203.0.113.0/24".into(), "2001:db8::/32".into()],
        &["https://partner.example".into()],
        RateLimits {
            per_minute: 7,
            per_hour: 70,
            weight_per_hour: 700,
        },
    )
    .unwrap()
}

async fn api_keys_round_trip_exactly(store: &dyn Store) {
    let master = MasterKey::generate();
    let issued = ApiKey::issue(
        sample_policy("Ünïcode partner ✓"),
        &master,
        1_700_000_000_001,
    );
    store.insert_api_key(&issued.key).await.unwrap();

    let loaded = store
        .api_key(&issued.key.id)
        .await
        .unwrap()
        .expect("stored key");
    assert_eq!(loaded, issued.key);
    assert_eq!(loaded.secret(&master).unwrap(), issued.secret);

    let open = ApiKeyPolicy::new(
        "open",
        [Permission::OrdersRead],
        &[],
        &[],
        RateLimits::default(),
    )
    .unwrap();
    let unrestricted = ApiKey::issue(open, &master, 1_700_000_000_002).key;
    store.insert_api_key(&unrestricted).await.unwrap();
    assert_eq!(
        store.api_key(&unrestricted.id).await.unwrap(),
        Some(unrestricted)
    );

    assert_eq!(store.api_key("key_doesnotexist").await.unwrap(), None);
}

async fn duplicate_api_key_ids_conflict(store: &dyn Store) {
    let master = MasterKey::generate();
    let key = ApiKey::issue(sample_policy("dup"), &master, 5).key;
    store.insert_api_key(&key).await.unwrap();
    let mut twin = ApiKey::issue(sample_policy("twin"), &master, 6).key;
    twin.id = key.id.clone();
    let err = store.insert_api_key(&twin).await.unwrap_err();
    assert!(matches!(err, StoreError::Conflict(_)), "{err:?}");
    assert_eq!(
        store.api_key(&key.id).await.unwrap().unwrap().policy.name(),
        "dup"
    );
}

async fn api_keys_list_oldest_first(store: &dyn Store) {
    let listed = store.list_api_keys().await.unwrap();
    let times: Vec<i64> = listed.iter().map(|k| k.created_at_ms).collect();
    let mut sorted = times.clone();
    sorted.sort();
    assert_eq!(times, sorted);
    assert_eq!(listed.len(), 3);
}

async fn revocation_is_idempotent_and_keeps_the_first_time(store: &dyn Store) {
    let master = MasterKey::generate();
    let key = ApiKey::issue(sample_policy("to revoke"), &master, 10).key;
    store.insert_api_key(&key).await.unwrap();

    let revoked = store.revoke_api_key(&key.id, 2_000).await.unwrap().unwrap();
    assert_eq!(revoked.status, KeyStatus::Revoked);
    assert_eq!(revoked.revoked_at_ms, Some(2_000));
    let again = store.revoke_api_key(&key.id, 9_000).await.unwrap().unwrap();
    assert_eq!(again.revoked_at_ms, Some(2_000));
    assert_eq!(store.api_key(&key.id).await.unwrap(), Some(again));

    assert_eq!(store.revoke_api_key("key_missing", 1).await.unwrap(), None);
}

async fn nonces_are_single_use_per_key_until_purged(store: &dyn Store) {
    assert!(
        store
            .remember_nonce("key_a", "nonce-0001", 1_000)
            .await
            .unwrap()
    );
    assert!(
        !store
            .remember_nonce("key_a", "nonce-0001", 5_000)
            .await
            .unwrap()
    );
    assert!(
        store
            .remember_nonce("key_b", "nonce-0001", 1_000)
            .await
            .unwrap()
    );
    assert!(
        store
            .remember_nonce("key_a", "nonce-0002", 3_000)
            .await
            .unwrap()
    );

    assert_eq!(store.purge_expired(999).await.unwrap(), 0);
    assert_eq!(store.purge_expired(1_000).await.unwrap(), 2);
    assert!(
        !store
            .remember_nonce("key_a", "nonce-0002", 9_000)
            .await
            .unwrap()
    );
    assert!(
        store
            .remember_nonce("key_a", "nonce-0001", 9_000)
            .await
            .unwrap()
    );
    assert_eq!(store.purge_expired(i64::MAX).await.unwrap(), 2);
}

async fn nonce_batches_ignore_duplicates_and_live_nonces_reload(store: &dyn Store) {
    let record = |nonce: &str, expires_at_ms| NonceRecord {
        key_id: "key_batch".into(),
        nonce: nonce.into(),
        expires_at_ms,
    };
    store
        .remember_nonces(&[record("batch-0001", 5_000)])
        .await
        .unwrap();
    store
        .remember_nonces(&[
            record("batch-0001", 5_000),
            record("batch-0002", 9_000),
            record("batch-0003", 100),
        ])
        .await
        .unwrap();
    let mut live = store.live_nonces(1_000).await.unwrap();
    live.sort_by(|a, b| a.nonce.cmp(&b.nonce));
    assert_eq!(
        live,
        [record("batch-0001", 5_000), record("batch-0002", 9_000)]
    );
    // The log is not the shared set.
    assert!(
        store
            .remember_nonce("key_batch", "batch-0002", 9_000)
            .await
            .unwrap()
    );
    store.remember_nonces(&[]).await.unwrap();

    // More than one chunk, with a duplicate inside the batch.
    let mut big: Vec<NonceRecord> = (0..2_500)
        .map(|i| record(&format!("big-{i:05}"), 7_000))
        .collect();
    big.push(record("big-00042", 7_000));
    store.remember_nonces(&big).await.unwrap();
    assert_eq!(store.live_nonces(6_999).await.unwrap().len(), 2_500 + 1);
    assert!(store.purge_expired(7_000).await.unwrap() >= 2_501);
    assert_eq!(
        store.live_nonces(0).await.unwrap(),
        [record("batch-0002", 9_000)]
    );
    store.purge_expired(i64::MAX).await.unwrap();
}

async fn rate_decisions_match_the_pure_function_and_refusals_consume_nothing(store: &dyn Store) {
    let limits = RateLimits {
        per_minute: 3,
        per_hour: 100,
        weight_per_hour: 7,
    };
    let now = 1_700_000_000_000;
    assert_eq!(
        store.rate_state("key_rate").await.unwrap(),
        RateState::default()
    );
    let mut expected = RateState::default();
    for (cost, at) in [
        (1, now),
        (5, now + 1),
        (2, now + 2),
        (1, now + 3),
        (1, now + 60_000),
    ] {
        let pure = rate_limit::decide(expected, limits, cost, at);
        let stored = store
            .consume_rate("key_rate", limits, cost, at)
            .await
            .unwrap();
        assert_eq!(stored, pure);
        expected = pure.state;
        assert_eq!(store.rate_state("key_rate").await.unwrap(), expected);
    }
    let refused = store
        .consume_rate("key_rate", limits, 1, now + 60_001)
        .await
        .unwrap();
    assert_eq!(refused.refused_by, Some(Policy::KeyWeightHour));
    assert_eq!(store.rate_state("key_rate").await.unwrap(), expected);
}

async fn concurrent_rate_consumption_admits_exactly_the_quota(store: &Arc<dyn Store>) {
    let limits = RateLimits {
        per_minute: 5,
        per_hour: 100,
        weight_per_hour: 100,
    };
    let now = 1_700_000_000_000;
    let tasks: Vec<_> = (0..20)
        .map(|_| {
            let store = store.clone();
            tokio::spawn(async move { store.consume_rate("key_race", limits, 1, now).await })
        })
        .collect();
    let mut admitted = 0;
    for task in tasks {
        if task.await.unwrap().unwrap().refused_by.is_none() {
            admitted += 1;
        }
    }
    assert_eq!(admitted, 5);
    assert_eq!(store.rate_state("key_race").await.unwrap().hour_count, 5);
}

async fn idempotency_records_follow_the_plan(store: &dyn Store) {
    let now = 1_700_000_000_000;
    let begin = |fp: &'static str, token: &'static str, at: i64| async move {
        store
            .begin_idempotent("key_p", "idem-0001", fp, token, at)
            .await
            .unwrap()
    };
    assert_eq!(
        begin("fp", "t1", now).await,
        Begin::Execute {
            lease_token: "t1".into()
        }
    );
    assert_eq!(
        begin("fp", "t2", now + 1).await,
        Begin::InFlight {
            retry_after_secs: 60
        }
    );
    assert_eq!(begin("other", "t2", now + 1).await, Begin::Mismatch);
    assert_eq!(
        store
            .begin_idempotent("key_q", "idem-0001", "other", "t9", now)
            .await
            .unwrap(),
        Begin::Execute {
            lease_token: "t9".into()
        },
        "keys are scoped per principal"
    );

    let response = StoredResponse {
        status: 201,
        body: br#"{"success":true}"#.to_vec(),
    };
    assert!(
        !store
            .finish_idempotent("key_p", "idem-0001", "wrong", &response)
            .await
            .unwrap()
    );
    assert!(
        store
            .finish_idempotent("key_p", "idem-0001", "t1", &response)
            .await
            .unwrap()
    );
    assert_eq!(
        begin("fp", "t3", now + 2).await,
        Begin::Replay(response.clone())
    );
    assert_eq!(begin("other", "t3", now + 2).await, Begin::Mismatch);

    // Released (nothing stored): the next attempt executes afresh.
    assert_eq!(
        store
            .begin_idempotent("key_p", "idem-0002", "fp", "t4", now)
            .await
            .unwrap(),
        Begin::Execute {
            lease_token: "t4".into()
        }
    );
    store
        .release_idempotent("key_p", "idem-0002", "t4")
        .await
        .unwrap();
    assert_eq!(
        store
            .begin_idempotent("key_p", "idem-0002", "fp2", "t5", now)
            .await
            .unwrap(),
        Begin::Execute {
            lease_token: "t5".into()
        }
    );
    // Abandoned (lease expired): the next attempt takes over; the old holder can no longer finish.
    assert_eq!(
        store
            .begin_idempotent("key_p", "idem-0002", "fp2", "t6", now + LEASE_MS)
            .await
            .unwrap(),
        Begin::Execute {
            lease_token: "t6".into()
        }
    );
    assert!(
        !store
            .finish_idempotent("key_p", "idem-0002", "t5", &response)
            .await
            .unwrap()
    );

    // After 24 h the key is new again, and the janitor forgets it.
    let later = now + IDEMPOTENCY_TTL_MS;
    assert_eq!(
        begin("other", "t7", later).await,
        Begin::Execute {
            lease_token: "t7".into()
        }
    );
    assert!(
        store
            .purge_expired(later + IDEMPOTENCY_TTL_MS)
            .await
            .unwrap()
            >= 1
    );
    assert_eq!(
        store
            .begin_idempotent("key_p", "idem-0001", "fp", "t8", now)
            .await
            .unwrap(),
        Begin::Execute {
            lease_token: "t8".into()
        }
    );
}

async fn concurrent_first_attempts_execute_once(store: &Arc<dyn Store>) {
    let now = 1_700_000_000_000;
    let tasks: Vec<_> = (0..20)
        .map(|i| {
            let store = store.clone();
            tokio::spawn(async move {
                store
                    .begin_idempotent("key_c", "idem-race", "fp", &format!("t{i}"), now)
                    .await
            })
        })
        .collect();
    let mut executions = 0;
    for task in tasks {
        match task.await.unwrap().unwrap() {
            Begin::Execute { .. } => executions += 1,
            Begin::InFlight { .. } => {}
            other => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!(executions, 1);
}
