//! API keys, nonces, console logouts and rate cells.

use super::*;

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

pub async fn api_keys_round_trip_exactly(store: &Arc<dyn Store>) {
    let store = store.as_ref();
    let master = MasterKey::generate();
    // With a markup paid on chain to its recipient.
    let policy = sample_policy("Ünïcode partner ✓")
        .with_markup_bps(25)
        .with_markup_recipient("0x90F79bf6EB2c4f870365E785982E1f101E93b906")
        .unwrap();
    let issued = ApiKey::issue(policy, &master, 1_700_000_000_001);
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

pub async fn duplicate_api_key_ids_conflict(store: &Arc<dyn Store>) {
    let store = store.as_ref();
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

pub async fn api_keys_list_oldest_first(store: &Arc<dyn Store>) {
    let store = store.as_ref();
    let master = MasterKey::generate();
    for (name, created_at_ms) in [("second", 20), ("third", 30), ("first", 10)] {
        let key = ApiKey::issue(sample_policy(name), &master, created_at_ms).key;
        store.insert_api_key(&key).await.unwrap();
    }
    let listed = store.list_api_keys().await.unwrap();
    let times: Vec<i64> = listed.iter().map(|k| k.created_at_ms).collect();
    let mut sorted = times.clone();
    sorted.sort();
    assert_eq!(times, sorted);
    let names: Vec<&str> = listed.iter().map(|k| k.policy.name()).collect();
    assert_eq!(names, ["first", "second", "third"]);
}

pub async fn revocation_is_idempotent_and_keeps_the_first_time(store: &Arc<dyn Store>) {
    let store = store.as_ref();
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

pub async fn console_logouts_end_one_session_or_every_earlier_one_until_purged(
    store: &Arc<dyn Store>,
) {
    let store = store.as_ref();
    let ended = |session: &'static str, issued_at_ms: i64| async move {
        store
            .console_session_ended(session, issued_at_ms)
            .await
            .unwrap()
    };
    assert!(!ended("sess-a", 1_000).await);
    store
        .end_console_session("sess-a", 2_000, 50_000)
        .await
        .unwrap();
    assert!(ended("sess-a", 1_000).await, "logged out");
    assert!(!ended("sess-b", 1_000).await, "another session lives on");
    // Everywhere: every session issued until then, not one issued later.
    store
        .end_console_session(swapd_core::store::EVERY_CONSOLE_SESSION, 3_000, 60_000)
        .await
        .unwrap();
    assert!(ended("sess-b", 1_000).await);
    assert!(ended("sess-c", 3_000).await);
    assert!(!ended("sess-d", 3_001).await);
    // A second logout everywhere moves the line.
    store
        .end_console_session(swapd_core::store::EVERY_CONSOLE_SESSION, 4_000, 70_000)
        .await
        .unwrap();
    assert!(ended("sess-d", 3_001).await);
    // Purged once the sessions would have expired anyway.
    store.purge_expired(70_000, u32::MAX).await.unwrap();
    assert!(!ended("sess-a", 1_000).await && !ended("sess-d", 3_001).await);
}

pub async fn nonces_are_single_use_per_key_until_purged(store: &Arc<dyn Store>) {
    let store = store.as_ref();
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

    assert_eq!(store.purge_expired(999, u32::MAX).await.unwrap(), 0);
    assert_eq!(store.purge_expired(1_000, u32::MAX).await.unwrap(), 2);
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
    assert_eq!(store.purge_expired(i64::MAX, u32::MAX).await.unwrap(), 2);
}

/// A nonce of `key_id` as the single-node log keeps it.
fn logged_nonce(key_id: &str, nonce: &str, expires_at_ms: i64) -> NonceRecord {
    NonceRecord {
        key_id: key_id.into(),
        nonce: nonce.into(),
        expires_at_ms,
    }
}

/// The janitor's purge takes at most its limit of rows a call, across tables, and says when
/// nothing expired is left; what is still live stays.
pub async fn expired_rows_are_purged_in_steps_of_at_most_the_limit(store: &Arc<dyn Store>) {
    let store = store.as_ref();
    for n in 0..5 {
        let nonce = format!("step-{n:04}");
        assert!(
            store
                .remember_nonce("key_step", &nonce, 1_000)
                .await
                .unwrap()
        );
    }
    assert!(
        store
            .remember_nonce("key_step", "step-live", 9_000)
            .await
            .unwrap()
    );
    let logged = |nonce: &str, expires_at_ms| logged_nonce("key_step", nonce, expires_at_ms);
    store
        .remember_nonces(&[
            logged("log-0001", 500),
            logged("log-0002", 1_000),
            logged("log-0003", 1_000),
            logged("log-live", 9_000),
        ])
        .await
        .unwrap();

    // Eight rows expired by 1 000, in two tables: three, three, then the last two.
    assert_eq!(store.purge_expired(1_000, 3).await.unwrap(), 3);
    assert_eq!(store.purge_expired(1_000, 3).await.unwrap(), 3);
    assert_eq!(store.purge_expired(1_000, 3).await.unwrap(), 2);
    assert_eq!(store.purge_expired(1_000, 3).await.unwrap(), 0);
    for n in 0..5 {
        let nonce = format!("step-{n:04}");
        assert!(
            store
                .remember_nonce("key_step", &nonce, 9_000)
                .await
                .unwrap(),
            "{nonce} was purged"
        );
    }
    assert!(
        !store
            .remember_nonce("key_step", "step-live", 9_000)
            .await
            .unwrap()
    );
    assert_eq!(
        store.live_nonces(0).await.unwrap(),
        [logged("log-live", 9_000)]
    );
    store.purge_expired(i64::MAX, u32::MAX).await.unwrap();
}

pub async fn nonce_batches_ignore_duplicates_and_live_nonces_reload(store: &Arc<dyn Store>) {
    let store = store.as_ref();
    let record = |nonce: &str, expires_at_ms| logged_nonce("key_batch", nonce, expires_at_ms);
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
    assert!(store.purge_expired(7_000, u32::MAX).await.unwrap() >= 2_501);
    assert_eq!(
        store.live_nonces(0).await.unwrap(),
        [record("batch-0002", 9_000)]
    );
    store.purge_expired(i64::MAX, u32::MAX).await.unwrap();
}

pub async fn rate_decisions_match_the_pure_function_and_refusals_consume_nothing(
    store: &Arc<dyn Store>,
) {
    let store = store.as_ref();
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

pub async fn concurrent_rate_consumption_admits_exactly_the_quota(store: &Arc<dyn Store>) {
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
