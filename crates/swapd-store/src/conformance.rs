//! The behaviour every [`Store`] implementation must show. The same suite runs against SQLite
//! and PostgreSQL (`tests/conformance.rs`); a backend that differs from the other fails here.

use swapd_core::api_keys::{ApiKey, ApiKeyPolicy, KeyStatus, RateLimits};
use swapd_core::secrets::MasterKey;
use swapd_core::{Store, StoreError};
use swapd_types::Permission;

use crate::{Backend, migrations};

/// Runs every check against a freshly opened, not yet migrated store.
pub async fn run_all(store: &dyn Store) {
    migrations_apply_once_and_match_the_embedded_list(store).await;
    ping_answers(store).await;
    api_keys_round_trip_exactly(store).await;
    duplicate_api_key_ids_conflict(store).await;
    api_keys_list_oldest_first(store).await;
    revocation_is_idempotent_and_keeps_the_first_time(store).await;
    nonces_are_single_use_per_key_until_purged(store).await;
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
