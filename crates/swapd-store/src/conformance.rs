//! The behaviour every [`Store`] implementation must show: one check per function, run as one
//! test per backend by [`conformance_tests!`] (`tests/conformance.rs`), on SQLite and on
//! PostgreSQL; a backend that differs from the other fails here.

use std::sync::Arc;
use strum::VariantArray;

use swapd_core::api_keys::{ApiKey, ApiKeyPolicy, KeyStatus, RateLimits};
use swapd_core::idempotency::{Begin, IDEMPOTENCY_TTL_MS, LEASE_MS, StoredResponse};
use swapd_core::market::routes::{CreateTokenRecord, RedeemError, RouteQuote, hash_create_token};
use swapd_core::market::{Direction, ExecutionType, RateType};
use swapd_core::market_intel::{Job, JobOutcome, JobRequest};
use swapd_core::offchain::order::{EventType, Order, OrderEvent, OrderStatus};
use swapd_core::onchain::plan::{ExecutionPlan, ExecutionReport, ExecutionStatus};
use swapd_core::purchases::{PURCHASE_LEASE_MS, Presented, PurchaseStep};
use swapd_core::rate_limit::{self, Policy, RateState};
use swapd_core::secrets::MasterKey;
use swapd_core::store::{
    EXPIRED_RETENTION_MS, IdempotentFinish, KeyHold, NonceRecord, RateObservation, SandboxDeposit,
    SandboxTransfer, X402Settlement,
};
use swapd_core::webhooks::delivery::{
    AfterAttempt, AttemptRecord, DeliveryStatus, QueuedDelivery, ReplaySelection,
};
use swapd_core::webhooks::subscription::{Subscription, SubscriptionStatus};
use swapd_core::{Store, StoreError};
use swapd_types::Permission;
use swapd_types::market_intel::{JobError, JobStatus};

use crate::test_support::sample_order;
use crate::{Backend, migrations};

/// One test per check for a backend: `conformance_tests!(fresh)` in a test module, where
/// `fresh().await` opens an empty store of that backend with whatever must outlive it (its
/// directory, its schema), or `None` when the backend is not available here. Each check gets a
/// store of its own, migrated, so no check sees rows another left behind and a failure hides no
/// other.
#[macro_export]
macro_rules! conformance_tests {
    ($fresh:path) => {
        $crate::conformance_tests!(@each $fresh; migrations_apply_once_and_match_the_embedded_list, ping_answers, api_keys_round_trip_exactly, duplicate_api_key_ids_conflict, api_keys_list_oldest_first, revocation_is_idempotent_and_keeps_the_first_time, nonces_are_single_use_per_key_until_purged, console_logouts_end_one_session_or_every_earlier_one_until_purged, nonce_batches_ignore_duplicates_and_live_nonces_reload, rate_decisions_match_the_pure_function_and_refusals_consume_nothing, concurrent_rate_consumption_admits_exactly_the_quota, idempotency_records_follow_the_plan, keys_taken_at_commit_yield_to_live_records_only, concurrent_first_attempts_execute_once, a_restarted_node_releases_only_its_own_claims, route_quotes_are_visible_to_their_owner_only, create_tokens_are_single_use_owner_bound_and_expire, concurrent_redemptions_succeed_once, orders_are_created_with_their_events_and_token_atomically, order_updates_are_compare_and_set, affiliates_are_unique_listed_and_disabled, fee_ledger_rows_are_written_with_the_order_and_its_completion, due_orders_are_claimed_earliest_first_until_their_lease_ends, concurrent_order_claims_are_disjoint, sandbox_transfers_happen_once_per_key, sandbox_exchanges_open_once_and_update_by_compare_and_set, sandbox_deposits_commit_with_their_idempotency_record, notifications_are_leased_until_marked, execution_plans_are_one_per_resolve_key_and_owner_bound, execution_plan_updates_are_compare_and_set, due_execution_plans_are_claimed_earliest_first_until_their_lease_ends, subscriptions_are_owner_bound_and_compare_and_set, the_subscription_cap_holds_under_concurrent_inserts, events_fan_out_to_matching_active_subscriptions_in_their_transaction, old_events_are_purged_with_their_deliveries, concurrent_claims_are_disjoint_and_leases_expire, attempts_are_recorded_with_their_lease_and_can_disable_a_subscription, replays_select_owned_events_and_queue_deliveries, x402_settlements_happen_once_and_payments_buy_one_call, siwx_nonces_are_used_once, windows_admit_their_limit_and_refusals_count_nothing, jobs_are_claimed_once_taken_over_after_their_lease_and_finished_by_the_holder, commits_ring_the_bells_of_the_work_they_make, served_rates_come_back_by_pair_and_window);
    };
    (@each $fresh:path; $($check:ident),*) => {
        $(
            #[tokio::test]
            async fn $check() {
                let Some((store, _keep)) = $fresh().await else {
                    return;
                };
                store.migrate().await.expect("migrate a fresh store");
                // Run apart so that a failed check still closes the store before its database
                // is dropped (an open transaction would block the drop).
                let checked = ::tokio::spawn({
                    let store = store.clone();
                    async move { $crate::conformance::$check(&store).await }
                })
                .await;
                store.close().await;
                if let Err(failure) = checked {
                    ::std::panic::resume_unwind(failure.into_panic());
                }
            }
        )*
    };
}

pub async fn migrations_apply_once_and_match_the_embedded_list(store: &Arc<dyn Store>) {
    // The harness ran the first migration; another run changes nothing.
    let store = store.as_ref();
    store
        .migrate()
        .await
        .expect("second migration run is a no-op");
    let backend = [Backend::Sqlite, Backend::Postgres]
        .into_iter()
        .find(|backend| backend.name() == store.backend())
        .unwrap_or_else(|| panic!("unknown backend {}", store.backend()));
    let expected: Vec<i64> = migrations(backend).into_iter().map(|(v, _)| v).collect();
    assert_eq!(store.applied_migrations().await.unwrap(), expected);
}

pub async fn ping_answers(store: &Arc<dyn Store>) {
    let store = store.as_ref();
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
    store.purge_expired(70_000).await.unwrap();
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

pub async fn nonce_batches_ignore_duplicates_and_live_nonces_reload(store: &Arc<dyn Store>) {
    let store = store.as_ref();
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

pub async fn idempotency_records_follow_the_plan(store: &Arc<dyn Store>) {
    let store = store.as_ref();
    let now = 1_700_000_000_000;
    let begin = |fp: &'static str, token: &'static str, at: i64| async move {
        store
            .begin_idempotent("key_p", "idem-0001", fp, token, "node-a", at)
            .await
            .unwrap()
    };
    assert_eq!(
        begin("fp", "t1", now).await,
        Begin::Execute {
            lease_token: "t1".into()
        }
    );
    // The first attempt has only just begun: retry in about a second (docs/authentication.md).
    assert_eq!(
        begin("fp", "t2", now + 1).await,
        Begin::InFlight {
            retry_after_secs: 1
        }
    );
    assert_eq!(begin("other", "t2", now + 1).await, Begin::Mismatch);
    assert_eq!(
        store
            .begin_idempotent("key_q", "idem-0001", "other", "t9", "node-a", now)
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
            .finish_idempotent(IdempotentFinish {
                principal: "key_p",
                key: "idem-0001",
                hold: KeyHold::Lease("wrong"),
                response: &response,
            })
            .await
            .unwrap()
    );
    assert!(
        store
            .finish_idempotent(IdempotentFinish {
                principal: "key_p",
                key: "idem-0001",
                hold: KeyHold::Lease("t1"),
                response: &response,
            })
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
            .begin_idempotent("key_p", "idem-0002", "fp", "t4", "node-a", now)
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
            .begin_idempotent("key_p", "idem-0002", "fp2", "t5", "node-a", now)
            .await
            .unwrap(),
        Begin::Execute {
            lease_token: "t5".into()
        }
    );
    // Abandoned (lease expired): the next attempt takes over; the old holder can no longer finish.
    assert_eq!(
        store
            .begin_idempotent("key_p", "idem-0002", "fp2", "t6", "node-a", now + LEASE_MS)
            .await
            .unwrap(),
        Begin::Execute {
            lease_token: "t6".into()
        }
    );
    assert!(
        !store
            .finish_idempotent(IdempotentFinish {
                principal: "key_p",
                key: "idem-0002",
                hold: KeyHold::Lease("t5"),
                response: &response,
            })
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
            .begin_idempotent("key_p", "idem-0001", "fp", "t8", "node-a", now)
            .await
            .unwrap(),
        Begin::Execute {
            lease_token: "t8".into()
        }
    );
}

pub async fn keys_taken_at_commit_yield_to_live_records_only(store: &Arc<dyn Store>) {
    let store = store.as_ref();
    let now = 1_700_000_000_000;
    let response = |body: &str| StoredResponse {
        status: 201,
        body: body.as_bytes().to_vec(),
    };
    let (first, second) = (&response("first"), &response("second"));
    async fn at_commit(store: &dyn Store, key: &str, response: &StoredResponse, at: i64) -> bool {
        let hold = KeyHold::AtCommit {
            fingerprint: "fp",
            now_ms: at,
        };
        store
            .finish_idempotent(IdempotentFinish {
                principal: "key_c",
                key,
                hold,
                response,
            })
            .await
            .unwrap()
    }

    // Nothing stored: the request executes, and its write takes the key.
    assert_eq!(
        store
            .idempotent_answer("key_c", "idem-c-1", "fp", now)
            .await
            .unwrap(),
        None
    );
    assert!(at_commit(store, "idem-c-1", first, now).await);
    // A concurrent attempt that executed too loses at its commit and finds the first answer.
    assert!(!at_commit(store, "idem-c-1", second, now + 1).await);
    assert_eq!(
        store
            .idempotent_answer("key_c", "idem-c-1", "fp", now + 1)
            .await
            .unwrap(),
        Some(Begin::Replay(first.clone()))
    );
    assert_eq!(
        store
            .idempotent_answer("key_c", "idem-c-1", "other", now + 1)
            .await
            .unwrap(),
        Some(Begin::Mismatch)
    );
    // After 24 h the record is expired: the key is taken afresh.
    let later = now + IDEMPOTENCY_TTL_MS;
    assert_eq!(
        store
            .idempotent_answer("key_c", "idem-c-1", "fp", later)
            .await
            .unwrap(),
        None
    );
    assert!(at_commit(store, "idem-c-1", second, later).await);
    assert_eq!(
        store
            .idempotent_answer("key_c", "idem-c-1", "fp", later)
            .await
            .unwrap(),
        Some(Begin::Replay(second.clone()))
    );

    // A key claimed under a lease is not taken while the lease lasts, and is once it ends.
    assert!(matches!(
        store
            .begin_idempotent("key_c", "idem-c-2", "fp", "t1", "node-a", now)
            .await
            .unwrap(),
        Begin::Execute { .. }
    ));
    assert!(matches!(
        store
            .idempotent_answer("key_c", "idem-c-2", "fp", now + 1)
            .await
            .unwrap(),
        Some(Begin::InFlight { .. })
    ));
    assert!(!at_commit(store, "idem-c-2", first, now + 1).await);
    assert!(at_commit(store, "idem-c-2", first, now + LEASE_MS).await);
    // The holder of the lease that ended cannot finish over it.
    assert!(
        !store
            .finish_idempotent(IdempotentFinish {
                principal: "key_c",
                key: "idem-c-2",
                hold: KeyHold::Lease("t1"),
                response: second,
            })
            .await
            .unwrap()
    );
    assert_eq!(
        store
            .idempotent_answer("key_c", "idem-c-2", "fp", now + LEASE_MS)
            .await
            .unwrap(),
        Some(Begin::Replay(first.clone()))
    );
}

pub async fn concurrent_first_attempts_execute_once(store: &Arc<dyn Store>) {
    let now = 1_700_000_000_000;
    let tasks: Vec<_> = (0..20)
        .map(|i| {
            let store = store.clone();
            tokio::spawn(async move {
                store
                    .begin_idempotent("key_c", "idem-race", "fp", &format!("t{i}"), "node-a", now)
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

pub async fn a_restarted_node_releases_only_its_own_claims(store: &Arc<dyn Store>) {
    let now = 1_700_000_000_000;
    let begin = |key: &'static str, token: &'static str, holder: &'static str| {
        let store = store.clone();
        async move {
            store
                .begin_idempotent("key_n", key, "fp", token, holder, now)
                .await
                .unwrap()
        }
    };
    let execute = |token: &str| Begin::Execute {
        lease_token: token.into(),
    };
    assert_eq!(begin("idem-dead-1", "t1", "node-a").await, execute("t1"));
    assert_eq!(begin("idem-done-1", "t2", "node-a").await, execute("t2"));
    let response = StoredResponse {
        status: 201,
        body: b"{}".to_vec(),
    };
    assert!(
        store
            .finish_idempotent(IdempotentFinish {
                principal: "key_n",
                key: "idem-done-1",
                hold: KeyHold::Lease("t2"),
                response: &response,
            })
            .await
            .unwrap()
    );
    assert_eq!(begin("idem-live-1", "t3", "node-b").await, execute("t3"));

    assert_eq!(store.release_claims_of("node-a").await.unwrap(), 1);
    // node-a's unfinished claim is free at once; its finished one and node-b's are kept.
    assert_eq!(begin("idem-dead-1", "t4", "node-a").await, execute("t4"));
    assert_eq!(
        begin("idem-done-1", "t5", "node-a").await,
        Begin::Replay(response)
    );
    assert!(matches!(
        begin("idem-live-1", "t6", "node-a").await,
        Begin::InFlight { .. }
    ));
}

fn sample_route(id: &str, owner: &str, expires_at_ms: i64) -> RouteQuote {
    RouteQuote {
        affiliate_code: None,
        id: id.into(),
        owner: owner.into(),
        provider: "atlas".into(),
        execution_type: ExecutionType::Offchain,
        rate_type: RateType::Fixed,
        direction: Direction::From,
        from_code: "BTC".into(),
        to_code: "USDTTRC".into(),
        from_amount: "0.1".into(),
        to_amount: "9602.5".into(),
        min_output: "9602.5".into(),
        rate: "96025".into(),
        min: "0.0001".into(),
        max: Some("1".into()),
        fees: vec![swapd_core::fees::entry::RouteFee {
            bps: None,
            kind: "network".into(),
            amount: "1".into(),
            currency: "USDTTRC".into(),
        }],
        estimated_duration_secs: 900,
        wallet_address: None,
        wallet_namespace: None,
        recipient: None,
        gasless: false,
        rate_lock: Some("rate-lock-1".into()),
        onchain_fees: Vec::new(),
        created_at_ms: expires_at_ms - 120_000,
        expires_at_ms,
    }
}

pub async fn route_quotes_are_visible_to_their_owner_only(store: &Arc<dyn Store>) {
    let store = store.as_ref();
    let now = 1_700_000_000_000;
    let quotes = [
        sample_route("rqq_a", "key:one", now + 120_000),
        sample_route("rqq_b", "key:one", now + 120_000),
    ];
    store.save_route_quotes(&quotes).await.unwrap();
    store.save_route_quotes(&[]).await.unwrap();
    assert_eq!(
        store
            .route_quote("rqq_a", "key:one")
            .await
            .unwrap()
            .as_ref(),
        Some(&quotes[0])
    );
    assert_eq!(store.route_quote("rqq_a", "key:two").await.unwrap(), None);
    assert_eq!(
        store.route_quote("rqq_none", "key:one").await.unwrap(),
        None
    );
    assert!(matches!(
        store.save_route_quotes(&quotes[..1]).await,
        Err(StoreError::Conflict(_))
    ));
    // Expired quotes are kept a while, so callers can be told they expired.
    store.purge_expired(now + 200_000).await.unwrap();
    assert!(
        store
            .route_quote("rqq_b", "key:one")
            .await
            .unwrap()
            .is_some()
    );
    store
        .purge_expired(now + 120_000 + EXPIRED_RETENTION_MS)
        .await
        .unwrap();
    assert!(
        store
            .route_quote("rqq_b", "key:one")
            .await
            .unwrap()
            .is_none()
    );
}

async fn issue(
    store: &dyn Store,
    token: &str,
    owner: &str,
    idem: &str,
    now: i64,
    expires_at_ms: i64,
) -> CreateTokenRecord {
    let Begin::Execute { lease_token } = store
        .begin_idempotent(owner, idem, "fp", "lease", "node-a", now)
        .await
        .unwrap()
    else {
        panic!("fresh key executes");
    };
    let record = CreateTokenRecord {
        token_hash: hash_create_token(token),
        owner: owner.into(),
        route: sample_route(&format!("rqq_{token}"), owner, expires_at_ms),
        created_at_ms: now,
        expires_at_ms,
        used_at_ms: None,
    };
    let response = StoredResponse {
        status: 200,
        body: b"{}".to_vec(),
    };
    store
        .issue_create_token(
            &record,
            IdempotentFinish {
                principal: owner,
                key: idem,
                hold: KeyHold::Lease(&lease_token),
                response: &response,
            },
        )
        .await
        .unwrap();
    assert!(matches!(
        store.begin_idempotent(owner, idem, "fp", "other", "node-a", now).await.unwrap(),
        Begin::Replay(stored) if stored == response
    ));
    record
}

pub async fn create_tokens_are_single_use_owner_bound_and_expire(store: &Arc<dyn Store>) {
    let store = store.as_ref();
    let now = 1_700_000_000_000;
    let record = issue(
        store,
        "ctk_one",
        "key:one",
        "idem-ctk-1",
        now,
        now + 600_000,
    )
    .await;

    assert_eq!(
        store
            .redeem_create_token(&record.token_hash, "key:two", now)
            .await
            .unwrap(),
        Err(RedeemError::NotFound)
    );
    assert_eq!(
        store
            .redeem_create_token("unknown", "key:one", now)
            .await
            .unwrap(),
        Err(RedeemError::NotFound)
    );
    let redeemed = store
        .redeem_create_token(&record.token_hash, "key:one", now + 1)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(redeemed.route, record.route);
    assert_eq!(redeemed.used_at_ms, Some(now + 1));
    assert_eq!(
        store
            .redeem_create_token(&record.token_hash, "key:one", now + 2)
            .await
            .unwrap(),
        Err(RedeemError::Used)
    );

    let expiring = issue(
        store,
        "ctk_two",
        "key:one",
        "idem-ctk-2",
        now,
        now + 600_000,
    )
    .await;
    assert_eq!(
        store
            .redeem_create_token(&expiring.token_hash, "key:one", now + 600_000)
            .await
            .unwrap(),
        Err(RedeemError::Expired)
    );

    // A write whose idempotency lease was lost commits nothing.
    let record = CreateTokenRecord {
        token_hash: hash_create_token("ctk_three"),
        ..record
    };
    let response = StoredResponse {
        status: 200,
        body: b"{}".to_vec(),
    };
    let lost = store
        .issue_create_token(
            &record,
            IdempotentFinish {
                principal: "key:one",
                key: "idem-never-claimed",
                hold: KeyHold::Lease("x"),
                response: &response,
            },
        )
        .await;
    assert!(matches!(lost, Err(StoreError::LeaseLost)), "{lost:?}");
    assert_eq!(
        store
            .redeem_create_token(&record.token_hash, "key:one", now)
            .await
            .unwrap(),
        Err(RedeemError::NotFound)
    );
}

pub async fn concurrent_redemptions_succeed_once(store: &Arc<dyn Store>) {
    let now = 1_700_000_000_000;
    let record = issue(
        store.as_ref(),
        "ctk_race",
        "key:race",
        "idem-ctk-race",
        now,
        now + 600_000,
    )
    .await;
    let tasks: Vec<_> = (0..10)
        .map(|_| {
            let store = store.clone();
            let hash = record.token_hash.clone();
            tokio::spawn(async move { store.redeem_create_token(&hash, "key:race", now).await })
        })
        .collect();
    let mut redeemed = 0;
    for task in tasks {
        match task.await.unwrap().unwrap() {
            Ok(_) => redeemed += 1,
            Err(RedeemError::Used) => {}
            Err(other) => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!(redeemed, 1);
}

fn event(order: &Order, sequence: i64, event_type: EventType) -> OrderEvent {
    OrderEvent {
        id: format!("evt_{}_{sequence}", order.id),
        order_id: order.id.clone(),
        owner: order.owner.clone(),
        sequence,
        event_type,
        data: serde_json::json!({"status": order.status.as_str()}),
        created_at_ms: order.updated_at_ms,
        notify_email: order.email.clone(),
    }
}

async fn claim(store: &dyn Store, owner: &str, key: &str, now: i64) -> String {
    match store
        .begin_idempotent(owner, key, "fp", "lease-o", "node-a", now)
        .await
        .unwrap()
    {
        Begin::Execute { lease_token } => lease_token,
        other => panic!("fresh key executes, got {other:?}"),
    }
}

/// Whether `work`'s bell of `bells` rings within a second.
async fn rings(bells: &swapd_core::wakeup::Bells, work: swapd_core::wakeup::Work) -> bool {
    tokio::time::timeout(std::time::Duration::from_secs(1), bells.rung(work))
        .await
        .is_ok()
}

/// Creates an order of `owner` with two events (mailed to `email` when given).
async fn create_ringing_order(store: &dyn Store, id: &str, owner: &str, email: Option<&str>) {
    let now = 1_700_000_000_000;
    let mut order = sample_order(id, owner, now);
    order.email = email.map(str::to_owned);
    let events = [
        event(&order, 1, EventType::Created),
        event(&order, 2, EventType::AwaitingDeposit),
    ];
    let lease = claim(store, owner, id, now).await;
    let response = StoredResponse {
        status: 201,
        body: b"{}".to_vec(),
    };
    let finish = IdempotentFinish {
        principal: owner,
        key: id,
        hold: KeyHold::Lease(&lease),
        response: &response,
    };
    store
        .create_order(&order, &events, None, finish)
        .await
        .unwrap()
        .unwrap();
}

pub async fn commits_ring_the_bells_of_the_work_they_make(store: &Arc<dyn Store>) {
    use swapd_core::wakeup::Work;
    let bells = store.bells();
    let store = store.as_ref();
    create_ringing_order(store, "ord_bell", "key:bell", Some("ops@example.com")).await;
    for work in [Work::Orders, Work::Deliveries, Work::Notifications] {
        assert!(rings(&bells, work).await, "{work:?} rang");
    }
    assert!(!rings(&bells, Work::Jobs).await, "no job was queued");
    // The engine's save of the order rings the engine (its next look may be due now).
    let mut order = store.order("ord_bell", "key:bell").await.unwrap().unwrap();
    order.version += 1;
    assert!(store.update_order(&order, &[], None).await.unwrap());
    assert!(rings(&bells, Work::Orders).await);
    assert!(
        !rings(&bells, Work::Deliveries).await,
        "no event, no delivery"
    );
}

/// Work committed on one node rings the bells of another that listens (PostgreSQL).
pub async fn announcements_reach_listening_nodes(
    writer: &Arc<dyn Store>,
    listener: &Arc<dyn Store>,
) {
    use swapd_core::wakeup::Work;
    let listening = tokio::spawn(
        listener
            .listen_for_work()
            .expect("a store shared by several nodes listens"),
    );
    let bells = listener.bells();
    // The listener connects in the background: announce until it hears.
    let mut heard = false;
    for n in 0..20 {
        create_ringing_order(
            writer.as_ref(),
            &format!("ord_heard_{n}"),
            "key:heard",
            None,
        )
        .await;
        if rings(&bells, Work::Deliveries).await {
            heard = true;
            break;
        }
    }
    listening.abort();
    assert!(heard, "the other node heard the commit");
}

pub async fn orders_are_created_with_their_events_and_token_atomically(store: &Arc<dyn Store>) {
    let store = store.as_ref();
    let now = 1_700_000_000_000;
    let response = StoredResponse {
        status: 201,
        body: b"{}".to_vec(),
    };
    let order = sample_order("ord_plain", "key:one", now);
    let events = [
        event(&order, 1, EventType::Created),
        event(&order, 2, EventType::AwaitingDeposit),
    ];
    let lease = claim(store, "key:one", "idem-ord-1", now).await;
    let finish = IdempotentFinish {
        principal: "key:one",
        key: "idem-ord-1",
        hold: KeyHold::Lease(&lease),
        response: &response,
    };
    assert_eq!(
        store
            .create_order(&order, &events, None, finish)
            .await
            .unwrap(),
        Ok(())
    );
    assert_eq!(
        store.order("ord_plain", "key:one").await.unwrap(),
        Some(order.clone())
    );
    assert_eq!(store.order("ord_plain", "key:two").await.unwrap(), None);
    // The console searches every owner's orders.
    use swapd_core::store::OrderSearch;
    let search = |search: OrderSearch| async move { store.search_orders(&search).await.unwrap() };
    let all = OrderSearch {
        limit: 10,
        ..OrderSearch::default()
    };
    assert_eq!(search(all.clone()).await, vec![order.clone()]);
    let by_id = OrderSearch {
        id: Some("ord_plain".into()),
        ..all.clone()
    };
    assert_eq!(search(by_id).await.len(), 1);
    for miss in [
        OrderSearch {
            owner: Some("key:two".into()),
            ..all.clone()
        },
        OrderSearch {
            status: Some(swapd_core::offchain::order::OrderStatus::Completed),
            ..all.clone()
        },
        OrderSearch {
            created_from_ms: Some(now + 1),
            ..all.clone()
        },
        OrderSearch {
            created_until_ms: Some(now),
            ..all.clone()
        },
    ] {
        assert!(search(miss.clone()).await.is_empty(), "{miss:?}");
    }
    let hit = OrderSearch {
        owner: Some("key:one".into()),
        status: Some(order.status),
        created_from_ms: Some(now),
        created_until_ms: Some(now + 1),
        ..all.clone()
    };
    assert_eq!(search(hit).await.len(), 1);
    // The hosted page reads it whoever owns it (it checks the page token itself).
    assert_eq!(
        store.order_for_page("ord_plain").await.unwrap(),
        Some(order.clone())
    );
    assert_eq!(store.order_for_page("ord_missing").await.unwrap(), None);
    assert_eq!(
        store.order_events("ord_plain").await.unwrap(),
        events.to_vec()
    );
    assert!(matches!(
        store
            .begin_idempotent("key:one", "idem-ord-1", "fp", "x", "node-a", now)
            .await
            .unwrap(),
        Begin::Replay(_)
    ));

    // With a createToken: redeemed in the same transaction, or nothing is written.
    let token = issue(
        store,
        "ctk_order",
        "key:one",
        "idem-ctk-order",
        now,
        now + 600_000,
    )
    .await;
    let mut with_token = sample_order("ord_token", "key:one", now);
    with_token.create_token_hash = Some(token.token_hash.clone());
    let events = [event(&with_token, 1, EventType::Created)];
    let foreign = sample_order("ord_foreign", "key:two", now);
    let lease = claim(store, "key:two", "idem-ord-2", now).await;
    let finish = IdempotentFinish {
        principal: "key:two",
        key: "idem-ord-2",
        hold: KeyHold::Lease(&lease),
        response: &response,
    };
    assert_eq!(
        store
            .create_order(
                &foreign,
                &[event(&foreign, 1, EventType::Created)],
                Some(&token.token_hash),
                finish
            )
            .await
            .unwrap(),
        Err(RedeemError::NotFound)
    );
    assert_eq!(store.order("ord_foreign", "key:two").await.unwrap(), None);
    assert!(store.order_events("ord_foreign").await.unwrap().is_empty());

    let lease = claim(store, "key:one", "idem-ord-3", now).await;
    let finish = IdempotentFinish {
        principal: "key:one",
        key: "idem-ord-3",
        hold: KeyHold::Lease(&lease),
        response: &response,
    };
    assert_eq!(
        store
            .create_order(&with_token, &events, Some(&token.token_hash), finish)
            .await
            .unwrap(),
        Ok(())
    );
    let lease = claim(store, "key:one", "idem-ord-4", now).await;
    let again = sample_order("ord_token_again", "key:one", now);
    let finish = IdempotentFinish {
        principal: "key:one",
        key: "idem-ord-4",
        hold: KeyHold::Lease(&lease),
        response: &response,
    };
    assert_eq!(
        store
            .create_order(
                &again,
                &[event(&again, 1, EventType::Created)],
                Some(&token.token_hash),
                finish
            )
            .await
            .unwrap(),
        Err(RedeemError::Used)
    );
    assert_eq!(
        store.order("ord_token_again", "key:one").await.unwrap(),
        None
    );
}

pub async fn affiliates_are_unique_listed_and_disabled(store: &Arc<dyn Store>) {
    use swapd_core::affiliates::Affiliate;
    let first = Affiliate::new("wallet-app", "Wallet App", 2_500, "0xabc", 1_000).unwrap();
    let second = Affiliate::new("blog", "Blog", 100, "bc1q", 2_000).unwrap();
    store.insert_affiliate(&first).await.unwrap();
    store.insert_affiliate(&second).await.unwrap();
    assert!(matches!(
        store.insert_affiliate(&first).await,
        Err(StoreError::Conflict(_))
    ));
    assert_eq!(
        store.affiliate("wallet-app").await.unwrap(),
        Some(first.clone())
    );
    assert_eq!(store.affiliate("nobody").await.unwrap(), None);
    let codes: Vec<String> = store
        .list_affiliates()
        .await
        .unwrap()
        .into_iter()
        .map(|a| a.code)
        .collect();
    assert_eq!(codes, ["wallet-app", "blog"], "oldest first");
    let disabled = store
        .set_affiliate_active("wallet-app", false)
        .await
        .unwrap()
        .unwrap();
    assert!(!disabled.active);
    assert!(!store.affiliate("wallet-app").await.unwrap().unwrap().active);
    assert_eq!(
        store.set_affiliate_active("nobody", false).await.unwrap(),
        None
    );
}

pub async fn fee_ledger_rows_are_written_with_the_order_and_its_completion(store: &Arc<dyn Store>) {
    use swapd_core::fees::Party;
    use swapd_core::fees::entry::RouteFee;
    use swapd_core::fees::ledger::Stage;
    let now = 1_700_000_000_000;
    let response = StoredResponse {
        status: 201,
        body: b"{}".to_vec(),
    };
    let fee = |kind: &str, bps: Option<&str>, amount: &str| RouteFee {
        kind: kind.into(),
        bps: bps.map(Into::into),
        amount: amount.into(),
        currency: "ETH".into(),
    };
    let mut order = sample_order("ord_fees", "key:shop", now);
    order.fees = vec![
        fee("network", None, "0.001"),
        fee("service", Some("30"), "0.003"),
        fee("partner", Some("12.5"), "0.00125"),
    ];
    let lease = claim(store.as_ref(), "key:shop", "idem-fees", now).await;
    let finish = IdempotentFinish {
        principal: "key:shop",
        key: "idem-fees",
        hold: KeyHold::Lease(&lease),
        response: &response,
    };
    store
        .create_order(
            &order,
            &[event(&order, 1, EventType::Created)],
            None,
            finish,
        )
        .await
        .unwrap()
        .unwrap();
    let rows = store
        .fee_ledger(Some("key:shop"), now, now + 1, 100)
        .await
        .unwrap();
    let seen: Vec<(Party, Stage, &str, Option<&str>)> = rows
        .iter()
        .map(|r| (r.party, r.stage, r.amount.as_str(), r.bps.as_deref()))
        .collect();
    assert_eq!(
        seen,
        [
            (Party::Partner, Stage::Expected, "0.00125", Some("12.5")),
            (Party::Service, Stage::Expected, "0.003", Some("30")),
        ],
        "the parties' fees only, expected at creation"
    );

    // A change that does not complete the order learns nothing; completion realizes the fees,
    // once however often it is written.
    let mut next = order.clone();
    next.version = 2;
    next.status = OrderStatus::Confirming;
    next.updated_at_ms = now + 10;
    assert!(
        store
            .update_order(&next, &[event(&next, 2, EventType::Updated)], None)
            .await
            .unwrap()
    );
    assert_eq!(
        store
            .fee_ledger(Some("key:shop"), now, now + 100, 100)
            .await
            .unwrap()
            .len(),
        2
    );
    let mut done = next.clone();
    done.version = 3;
    done.status = OrderStatus::Completed;
    done.updated_at_ms = now + 20;
    assert!(
        store
            .update_order(&done, &[event(&done, 3, EventType::Completed)], None)
            .await
            .unwrap()
    );
    let rows = store
        .fee_ledger(Some("key:shop"), now, now + 100, 100)
        .await
        .unwrap();
    let realized: Vec<(Party, i64)> = rows
        .iter()
        .filter(|r| r.stage == Stage::Realized)
        .map(|r| (r.party, r.at_ms))
        .collect();
    assert_eq!(
        realized,
        [(Party::Partner, now + 20), (Party::Service, now + 20)]
    );
    // The window and the owner bound what is read.
    assert_eq!(
        store
            .fee_ledger(Some("key:shop"), now + 1, now + 100, 100)
            .await
            .unwrap()
            .len(),
        2
    );
    assert!(
        store
            .fee_ledger(Some("key:other"), 0, i64::MAX, 100)
            .await
            .unwrap()
            .is_empty()
    );
    // The operator's view: every owner's rows.
    assert_eq!(
        store
            .fee_ledger(None, now + 1, now + 100, 100)
            .await
            .unwrap()
            .len(),
        2
    );
    assert_eq!(
        store
            .fee_ledger(Some("key:shop"), 0, i64::MAX, 1)
            .await
            .unwrap()
            .len(),
        1
    );
}

pub async fn order_updates_are_compare_and_set(store: &Arc<dyn Store>) {
    let now = 1_700_000_000_000;
    let response = StoredResponse {
        status: 201,
        body: b"{}".to_vec(),
    };
    let order = sample_order("ord_cas", "key:cas", now);
    let lease = claim(store.as_ref(), "key:cas", "idem-cas", now).await;
    let finish = IdempotentFinish {
        principal: "key:cas",
        key: "idem-cas",
        hold: KeyHold::Lease(&lease),
        response: &response,
    };
    store
        .create_order(
            &order,
            &[event(&order, 1, EventType::Created)],
            None,
            finish,
        )
        .await
        .unwrap()
        .unwrap();

    // Ten writers read version 1 and race to move the order on: exactly one wins.
    let tasks: Vec<_> = (0..10)
        .map(|i| {
            let store = store.clone();
            let mut next = order.clone();
            next.version = 2;
            next.status = OrderStatus::Confirming;
            next.updated_at_ms = now + i;
            tokio::spawn(async move {
                let events = [event(&next, 2, EventType::Updated)];
                store.update_order(&next, &events, None).await.unwrap()
            })
        })
        .collect();
    let mut wins = 0;
    for task in tasks {
        wins += usize::from(task.await.unwrap());
    }
    assert_eq!(wins, 1);
    let stored = store.order("ord_cas", "key:cas").await.unwrap().unwrap();
    assert_eq!(
        (stored.version, stored.status),
        (2, OrderStatus::Confirming)
    );
    let events = store.order_events("ord_cas").await.unwrap();
    assert_eq!(
        events.iter().map(|e| e.sequence).collect::<Vec<_>>(),
        [1, 2]
    );
}

pub async fn due_orders_are_claimed_earliest_first_until_their_lease_ends(store: &Arc<dyn Store>) {
    let store = store.as_ref();
    let now = 1_800_000_000_000;
    let response = StoredResponse {
        status: 201,
        body: b"{}".to_vec(),
    };
    for (id, at) in [
        ("ord_due_late", now + 5),
        ("ord_due_early", now + 1),
        ("ord_due_never", now + 10_000),
    ] {
        let mut order = sample_order(id, "key:due", now);
        order.next_check_at_ms = Some(at);
        let lease = claim(store, "key:due", id, now).await;
        let finish = IdempotentFinish {
            principal: "key:due",
            key: id,
            hold: KeyHold::Lease(&lease),
            response: &response,
        };
        store
            .create_order(
                &order,
                &[event(&order, 1, EventType::Created)],
                None,
                finish,
            )
            .await
            .unwrap()
            .unwrap();
    }
    let claimed = |at: i64, until: i64| async move {
        store
            .claim_due_orders(at, until, 10)
            .await
            .unwrap()
            .into_iter()
            .map(|o| o.id)
            .filter(|id| id.starts_with("ord_due"))
            .collect::<Vec<_>>()
    };
    assert_eq!(
        claimed(now + 100, now + 1_000).await,
        ["ord_due_early", "ord_due_late"]
    );
    // Leased: no other engine gets them until the lease ends.
    assert!(claimed(now + 100, now + 1_000).await.is_empty());
    assert!(claimed(now + 999, now + 2_000).await.is_empty());
    assert_eq!(
        claimed(now + 1_000, now + 2_000).await,
        ["ord_due_early", "ord_due_late"],
        "due again once the lease ended (the engine died)"
    );
    // The engine's save sets the real next check (the lease changed no version); a finished
    // order (no next check) is never due.
    let mut early = store
        .order("ord_due_early", "key:due")
        .await
        .unwrap()
        .unwrap();
    early.version += 1;
    early.next_check_at_ms = None;
    assert!(store.update_order(&early, &[], None).await.unwrap());
    let mut late = store
        .order("ord_due_late", "key:due")
        .await
        .unwrap()
        .unwrap();
    late.version += 1;
    late.next_check_at_ms = Some(now + 1_500);
    assert!(store.update_order(&late, &[], None).await.unwrap());
    assert_eq!(claimed(now + 1_500, now + 3_000).await, ["ord_due_late"]);
}

pub async fn concurrent_order_claims_are_disjoint(store: &Arc<dyn Store>) {
    let store = store.as_ref();
    let now = 1_800_000_000_000;
    let response = StoredResponse {
        status: 201,
        body: b"{}".to_vec(),
    };
    for n in 0..12 {
        let id = format!("ord_race_{n:02}");
        let mut order = sample_order(&id, "key:race", now);
        order.next_check_at_ms = Some(now + n);
        let lease = claim(store, "key:race", &id, now).await;
        let finish = IdempotentFinish {
            principal: "key:race",
            key: &id,
            hold: KeyHold::Lease(&lease),
            response: &response,
        };
        store
            .create_order(
                &order,
                &[event(&order, 1, EventType::Created)],
                None,
                finish,
            )
            .await
            .unwrap()
            .unwrap();
    }
    let claim_some = || async {
        store
            .claim_due_orders(now + 100, now + 60_000, 5)
            .await
            .unwrap()
            .into_iter()
            .map(|o| o.id)
            .collect::<Vec<_>>()
    };
    let (a, b, c) = tokio::join!(claim_some(), claim_some(), claim_some());
    let mut all: Vec<String> = a.iter().chain(&b).chain(&c).cloned().collect();
    let claimed = all.len();
    all.sort();
    all.dedup();
    assert_eq!(
        all.len(),
        claimed,
        "no order claimed twice: {a:?} {b:?} {c:?}"
    );
    assert_eq!(claimed, 12);
}

pub async fn sandbox_transfers_happen_once_per_key(store: &Arc<dyn Store>) {
    let store = store.as_ref();
    let deposit = SandboxDeposit {
        tx_id: "tx_dep_1".into(),
        address: "rAddress".into(),
        tag: Some("7".into()),
        amount: "12.5".into(),
        confirmations: 0,
        seen_at_ms: 1,
    };
    store.sandbox_record_deposit(&deposit, None).await.unwrap();
    assert!(matches!(
        store.sandbox_record_deposit(&deposit, None).await,
        Err(StoreError::Conflict(_))
    ));
    assert_eq!(
        store.sandbox_deposits("rAddress", Some("7")).await.unwrap(),
        vec![deposit.clone()]
    );
    assert!(
        store
            .sandbox_deposits("rAddress", Some("8"))
            .await
            .unwrap()
            .is_empty()
    );
    assert!(
        store
            .sandbox_deposits("rAddress", None)
            .await
            .unwrap()
            .is_empty()
    );

    let first = SandboxTransfer {
        key: "payout:ord_x".into(),
        tx_id: "tx_first".into(),
        currency: "BTC".into(),
        address: "bc1q".into(),
        tag: None,
        amount: "1".into(),
        created_at_ms: 5,
    };
    assert_eq!(store.sandbox_transfer(&first).await.unwrap(), first);
    let retry = SandboxTransfer {
        tx_id: "tx_second".into(),
        amount: "2".into(),
        ..first.clone()
    };
    assert_eq!(store.sandbox_transfer(&retry).await.unwrap(), first);
    let all = store.sandbox_transfers().await.unwrap();
    assert_eq!(all.iter().filter(|t| t.key == "payout:ord_x").count(), 1);
}

pub async fn sandbox_exchanges_open_once_and_update_by_compare_and_set(store: &Arc<dyn Store>) {
    let store = store.as_ref();
    let book = sample_order("ord_book", "desk", 1_700_000_000_000);
    assert_eq!(
        store.sandbox_exchange("atlas-ord_book").await.unwrap(),
        None
    );
    assert_eq!(
        store
            .sandbox_open_exchange("atlas-ord_book", &book)
            .await
            .unwrap(),
        book
    );
    // A repeated open answers the first book, whatever it is given.
    let other = sample_order("ord_book", "desk", 1_700_000_000_999);
    assert_eq!(
        store
            .sandbox_open_exchange("atlas-ord_book", &other)
            .await
            .unwrap(),
        book
    );
    let mut moved = book.clone();
    moved.version += 1;
    moved.to_amount = "1.5".into();
    assert!(
        store
            .sandbox_update_exchange("atlas-ord_book", &moved)
            .await
            .unwrap()
    );
    // The same step again starts from a version that is gone.
    assert!(
        !store
            .sandbox_update_exchange("atlas-ord_book", &moved)
            .await
            .unwrap()
    );
    assert_eq!(
        store.sandbox_exchange("atlas-ord_book").await.unwrap(),
        Some(moved)
    );
}

pub async fn sandbox_deposits_commit_with_their_idempotency_record(store: &Arc<dyn Store>) {
    let store = store.as_ref();
    let now = 1_700_000_000_000;
    let response = StoredResponse {
        status: 202,
        body: b"{}".to_vec(),
    };
    let deposit = |tx_id: &str| SandboxDeposit {
        tx_id: tx_id.into(),
        address: "bc1qdeposit".into(),
        tag: None,
        amount: "0.5".into(),
        confirmations: 0,
        seen_at_ms: now,
    };
    let mut lease = String::new();
    let finish = finish_with(store, "key:dep", "idem-dep-1", &mut lease, &response, now).await;
    store
        .sandbox_record_deposit(&deposit("tx_a"), Some(finish))
        .await
        .unwrap();
    assert_eq!(
        store
            .begin_idempotent("key:dep", "idem-dep-1", "fp", "t2", "node-a", now)
            .await
            .unwrap(),
        Begin::Replay(response.clone())
    );
    // A lease lost meanwhile rolls the deposit back.
    let stale = IdempotentFinish {
        principal: "key:dep",
        key: "idem-dep-1",
        hold: KeyHold::Lease("not-the-lease"),
        response: &response,
    };
    assert!(matches!(
        store
            .sandbox_record_deposit(&deposit("tx_b"), Some(stale))
            .await,
        Err(StoreError::LeaseLost)
    ));
    assert_eq!(
        store.sandbox_deposits("bc1qdeposit", None).await.unwrap(),
        vec![deposit("tx_a")]
    );
}

pub async fn notifications_are_leased_until_marked(store: &Arc<dyn Store>) {
    let store = store.as_ref();
    let now = 1_900_000_000_000;
    let response = StoredResponse {
        status: 201,
        body: b"{}".to_vec(),
    };
    let mut order = sample_order("ord_mail", "key:mail", now);
    order.email = Some("ops@example.com".into());
    let events = [
        event(&order, 1, EventType::Created),
        event(&order, 2, EventType::AwaitingDeposit),
    ];
    let lease = claim(store, "key:mail", "idem-mail", now).await;
    let finish = IdempotentFinish {
        principal: "key:mail",
        key: "idem-mail",
        hold: KeyHold::Lease(&lease),
        response: &response,
    };
    store
        .create_order(&order, &events, None, finish)
        .await
        .unwrap()
        .unwrap();
    let claimed = |at: i64| async move {
        store
            .claim_notifications(at, at + 60_000, 100)
            .await
            .unwrap()
            .into_iter()
            .filter(|e| e.order_id == "ord_mail")
            .map(|e| e.id)
            .collect::<Vec<_>>()
    };
    assert_eq!(
        claimed(now).await,
        [events[0].id.clone(), events[1].id.clone()]
    );
    // Leased to the notifier that claimed them until the lease ends.
    assert!(claimed(now + 59_999).await.is_empty());
    assert_eq!(
        store.order_events("ord_mail").await.unwrap()[0]
            .notify_email
            .as_deref(),
        Some("ops@example.com")
    );
    store.mark_notified(&events[0].id, now).await.unwrap();
    // The lease ended without the second being marked (its notifier died): claimed again.
    assert_eq!(claimed(now + 60_000).await, [events[1].id.clone()]);
}

fn sample_plan(id: &str, owner: &str, resolve_key: &str, now: i64) -> ExecutionPlan {
    ExecutionPlan {
        id: id.into(),
        owner: owner.into(),
        route_quote_id: "rqq_00000000000000000000000000000001".into(),
        resolve_key: resolve_key.into(),
        provider: "meridian".into(),
        chain_namespace: "eip155".into(),
        wallet_address: "0x1111111111111111111111111111111111111111".into(),
        recipient: None,
        from_code: "ETH".into(),
        to_code: "USDCETH".into(),
        from_amount: "1".into(),
        expected_output: "3000".into(),
        min_output: "2985".into(),
        slippage_bps: 50,
        gasless: false,
        steps: Vec::new(),
        provider_state: None,
        created_at_ms: now,
        expires_at_ms: now + 300_000,
        version: 1,
        status: ExecutionStatus::AwaitingUser,
        substatus: None,
        outcome: None,
        report: None,
        reported_at_ms: None,
        relayed_at_ms: None,
        tx_hashes: Vec::new(),
        received_amount: None,
        received_token: None,
        updated_at_ms: now,
        page_url: None,
        next_check_at_ms: Some(now + 300_000),
        fees: Vec::new(),
        affiliate_code: None,
        onchain_fees: Vec::new(),
        fees_realized: None,
    }
}

pub async fn execution_plans_are_one_per_resolve_key_and_owner_bound(store: &Arc<dyn Store>) {
    let store = store.as_ref();
    let now = 1_700_000_000_000;
    let response = StoredResponse {
        status: 200,
        body: b"{\"plan\":1}".to_vec(),
    };
    let plan = sample_plan("ocx_one", "key:plans", "rk-1", now);
    let lease = claim(store, "key:plans", "idem-plan-1", now).await;
    let finish = |lease| IdempotentFinish {
        principal: "key:plans",
        key: "idem-plan-1",
        hold: KeyHold::Lease(lease),
        response: &response,
    };
    store
        .insert_execution_plan(&plan, finish(&lease))
        .await
        .unwrap();
    assert_eq!(
        store.execution_plan("ocx_one", "key:plans").await.unwrap(),
        Some(plan.clone())
    );
    assert_eq!(
        store.execution_plan_for("key:plans", "rk-1").await.unwrap(),
        Some(plan.clone())
    );
    // Another owner sees nothing, by id or by resolve key.
    assert_eq!(
        store.execution_plan("ocx_one", "key:other").await.unwrap(),
        None
    );
    assert_eq!(
        store.execution_plan_for("key:other", "rk-1").await.unwrap(),
        None
    );
    // The idempotency record was completed with the plan.
    match store
        .begin_idempotent("key:plans", "idem-plan-1", "fp", "lease-x", "node-a", now)
        .await
        .unwrap()
    {
        Begin::Replay(stored) => assert_eq!(stored, response),
        other => panic!("expected the stored response, got {other:?}"),
    }

    // A second plan for the same owner and resolve key is refused and leaves nothing behind.
    let twin = sample_plan("ocx_twin", "key:plans", "rk-1", now);
    let lease = claim(store, "key:plans", "idem-plan-2", now).await;
    let refused = store
        .insert_execution_plan(
            &twin,
            IdempotentFinish {
                principal: "key:plans",
                key: "idem-plan-2",
                hold: KeyHold::Lease(&lease),
                response: &response,
            },
        )
        .await;
    assert!(
        matches!(refused, Err(StoreError::Conflict(_))),
        "{refused:?}"
    );
    assert_eq!(
        store.execution_plan("ocx_twin", "key:plans").await.unwrap(),
        None
    );
    // The same resolve key under another owner is a plan of its own.
    let lease = claim(store, "key:other", "idem-plan-3", now).await;
    store
        .insert_execution_plan(
            &sample_plan("ocx_other", "key:other", "rk-1", now),
            IdempotentFinish {
                principal: "key:other",
                key: "idem-plan-3",
                hold: KeyHold::Lease(&lease),
                response: &response,
            },
        )
        .await
        .unwrap();
}

pub async fn execution_plan_updates_are_compare_and_set(store: &Arc<dyn Store>) {
    let now = 1_700_000_000_000;
    let response = StoredResponse {
        status: 200,
        body: b"{}".to_vec(),
    };
    let plan = sample_plan("ocx_cas", "key:plancas", "rk-cas", now);
    let lease = claim(store.as_ref(), "key:plancas", "idem-plancas", now).await;
    store
        .insert_execution_plan(
            &plan,
            IdempotentFinish {
                principal: "key:plancas",
                key: "idem-plancas",
                hold: KeyHold::Lease(&lease),
                response: &response,
            },
        )
        .await
        .unwrap();

    // Ten reporters read version 1 and race to record their transaction: exactly one wins.
    let tasks: Vec<_> = (0..10)
        .map(|i| {
            let store = store.clone();
            let mut next = plan.clone();
            tokio::spawn(async move {
                next.accept_report(
                    ExecutionReport::TxHash {
                        tx_hash: format!("0x{i:064x}"),
                    },
                    now + 1,
                )
                .unwrap();
                store.update_execution_plan(&next, None).await.unwrap()
            })
        })
        .collect();
    let mut wins = 0;
    for task in tasks {
        wins += usize::from(task.await.unwrap());
    }
    assert_eq!(wins, 1);
    let stored = store
        .execution_plan("ocx_cas", "key:plancas")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        (stored.version, stored.status),
        (2, ExecutionStatus::Submitted)
    );

    // An update that completes an idempotency record writes both or, with a stale version,
    // neither.
    let lease = claim(store.as_ref(), "key:plancas", "idem-report", now).await;
    let stale = plan.clone();
    let finish = IdempotentFinish {
        principal: "key:plancas",
        key: "idem-report",
        hold: KeyHold::Lease(&lease),
        response: &response,
    };
    let mut stale_next = stale.clone();
    stale_next.version = 2;
    assert!(
        !store
            .update_execution_plan(&stale_next, Some(finish))
            .await
            .unwrap()
    );
    let mut next = stored.clone();
    next.substatus = Some("source_confirming".into());
    next.version += 1;
    assert!(
        store
            .update_execution_plan(&next, Some(finish))
            .await
            .unwrap()
    );
    match store
        .begin_idempotent("key:plancas", "idem-report", "fp", "lease-y", "node-a", now)
        .await
        .unwrap()
    {
        Begin::Replay(stored) => assert_eq!(stored, response),
        other => panic!("expected the stored response, got {other:?}"),
    }
}

pub async fn due_execution_plans_are_claimed_earliest_first_until_their_lease_ends(
    store: &Arc<dyn Store>,
) {
    let store = store.as_ref();
    let now = 1_900_000_000_000;
    let response = StoredResponse {
        status: 200,
        body: b"{}".to_vec(),
    };
    for (id, due) in [
        ("ocx_due_b", Some(now - 10)),
        ("ocx_due_a", Some(now - 20)),
        ("ocx_due_later", Some(now + 1)),
        ("ocx_due_never", None),
    ] {
        let mut plan = sample_plan(id, "key:due", id, now);
        plan.next_check_at_ms = due;
        let key = format!("idem-{id}");
        let lease = claim(store, "key:due", &key, now).await;
        store
            .insert_execution_plan(
                &plan,
                IdempotentFinish {
                    principal: "key:due",
                    key: &key,
                    hold: KeyHold::Lease(&lease),
                    response: &response,
                },
            )
            .await
            .unwrap();
    }
    let claimed = |at: i64| async move {
        store
            .claim_due_execution_plans(at, at + 60_000, 10)
            .await
            .unwrap()
            .into_iter()
            .filter(|p| p.owner == "key:due")
            .map(|p| p.id)
            .collect::<Vec<_>>()
    };
    assert_eq!(claimed(now).await, ["ocx_due_a", "ocx_due_b"]);
    // Leased: the later one becomes due meanwhile, the claimed ones do not.
    assert_eq!(claimed(now + 1).await, ["ocx_due_later"]);
    assert_eq!(
        claimed(now + 60_000).await,
        ["ocx_due_a", "ocx_due_b"],
        "due again once their lease ended"
    );
}

fn sample_subscription(id: &str, owner: &str, events: &[EventType], now: i64) -> Subscription {
    Subscription {
        id: id.into(),
        owner: owner.into(),
        url: "https://hooks.example.com/swapd".into(),
        events: events.to_vec(),
        description: Some("test".into()),
        status: SubscriptionStatus::Active,
        disabled_reason: None,
        secret_sealed: "sealed".into(),
        previous_secret_sealed: None,
        previous_secret_expires_at_ms: None,
        failing_since_ms: None,
        created_at_ms: now,
        updated_at_ms: now,
        version: 1,
    }
}

async fn finish_with<'a>(
    store: &dyn Store,
    owner: &'a str,
    key: &'a str,
    lease: &'a mut String,
    response: &'a StoredResponse,
    now: i64,
) -> IdempotentFinish<'a> {
    *lease = claim(store, owner, key, now).await;
    IdempotentFinish {
        principal: owner,
        key,
        hold: KeyHold::Lease(lease),
        response,
    }
}

async fn subscribe(store: &dyn Store, subscription: &Subscription, now: i64) {
    let response = StoredResponse {
        status: 201,
        body: b"{}".to_vec(),
    };
    let key = format!("idem-{}", subscription.id);
    let mut lease = String::new();
    let finish = finish_with(store, &subscription.owner, &key, &mut lease, &response, now).await;
    assert!(
        store
            .insert_subscription(subscription, finish)
            .await
            .unwrap()
    );
}

pub async fn the_subscription_cap_holds_under_concurrent_inserts(store: &Arc<dyn Store>) {
    let now = 1_700_000_000_000;
    let cap = swapd_core::webhooks::subscription::MAX_SUBSCRIPTIONS_PER_OWNER;
    let response = StoredResponse {
        status: 201,
        body: b"{}".to_vec(),
    };
    let tasks: Vec<_> = (0..cap + 5)
        .map(|i| {
            let store = store.clone();
            let response = response.clone();
            tokio::spawn(async move {
                let subscription = sample_subscription(
                    &format!("whk_cap_{i}"),
                    "key:cap",
                    &[EventType::Completed],
                    now,
                );
                let key = format!("idem-cap-{i}");
                let lease = claim(store.as_ref(), "key:cap", &key, now).await;
                let finish = IdempotentFinish {
                    principal: "key:cap",
                    key: &key,
                    hold: KeyHold::Lease(&lease),
                    response: &response,
                };
                store
                    .insert_subscription(&subscription, finish)
                    .await
                    .unwrap()
            })
        })
        .collect();
    let mut inserted = 0;
    for task in tasks {
        inserted += usize::from(task.await.unwrap());
    }
    assert_eq!(inserted, cap);
    assert_eq!(store.subscriptions("key:cap").await.unwrap().len(), cap);
}

pub async fn subscriptions_are_owner_bound_and_compare_and_set(store: &Arc<dyn Store>) {
    let store = store.as_ref();
    let now = 1_700_000_000_000;
    let sub = sample_subscription(
        "whk_crud",
        "key:hooks",
        &[EventType::Created, EventType::Completed],
        now,
    );
    subscribe(store, &sub, now).await;
    assert_eq!(
        store.subscription("whk_crud", "key:hooks").await.unwrap(),
        Some(sub.clone())
    );
    assert_eq!(
        store.subscription("whk_crud", "key:other").await.unwrap(),
        None
    );
    assert_eq!(
        store.subscriptions("key:hooks").await.unwrap(),
        std::slice::from_ref(&sub)
    );
    assert!(store.subscriptions("key:other").await.unwrap().is_empty());

    let mut next = sub.clone();
    next.version = 2;
    next.status = SubscriptionStatus::Disabled;
    next.previous_secret_sealed = Some("old".into());
    next.previous_secret_expires_at_ms = Some(now + 1);
    assert!(store.update_subscription(&next, None).await.unwrap());
    // A writer that read version 1 loses.
    assert!(!store.update_subscription(&next, None).await.unwrap());
    let mut foreign = next.clone();
    foreign.owner = "key:other".into();
    foreign.version = 3;
    assert!(!store.update_subscription(&foreign, None).await.unwrap());
    assert_eq!(
        store.subscription("whk_crud", "key:hooks").await.unwrap(),
        Some(next)
    );
}

/// The order `ord_fanout` of `owner`, created at `now` with its events 1 (created) and 2
/// (awaiting deposit), then completed at `now + 5` with event 3. Returns the completed order.
async fn order_with_three_events(store: &dyn Store, owner: &str, now: i64) -> Order {
    let order = sample_order("ord_fanout", owner, now);
    let events = [
        event(&order, 1, EventType::Created),
        event(&order, 2, EventType::AwaitingDeposit),
    ];
    let response = StoredResponse {
        status: 201,
        body: b"{}".to_vec(),
    };
    let mut lease = String::new();
    let finish = finish_with(store, owner, "idem-fanout", &mut lease, &response, now).await;
    store
        .create_order(&order, &events, None, finish)
        .await
        .unwrap()
        .unwrap();
    let mut next = order.clone();
    next.version = 2;
    next.status = OrderStatus::Completed;
    next.updated_at_ms = now + 5;
    store
        .update_order(&next, &[event(&next, 3, EventType::Completed)], None)
        .await
        .unwrap();

    next
}

pub async fn old_events_are_purged_with_their_deliveries(store: &Arc<dyn Store>) {
    let store = store.as_ref();
    let now = 1_700_000_100_000;
    let owner = "key:fanout";
    subscribe(
        store,
        &sample_subscription("whk_old", owner, EventType::VARIANTS, now),
        now,
    )
    .await;
    order_with_three_events(store, owner, now).await;
    // Events 1 and 2 were written at `now`, event 3 five milliseconds later; oldest first.
    assert_eq!(store.purge_event_history(now + 5, 1).await.unwrap(), 1);
    assert_eq!(store.purge_event_history(now + 5, 100).await.unwrap(), 1);
    assert_eq!(store.purge_event_history(now + 5, 100).await.unwrap(), 0);
    let claimed = store
        .claim_deliveries(now + 10, "lease-old", now + 60_010, 100)
        .await
        .unwrap();
    let left: Vec<&str> = claimed
        .iter()
        .filter(|d| d.subscription.owner == owner)
        .map(|d| d.event_id.as_str())
        .collect();
    assert_eq!(
        left,
        ["evt_ord_fanout_3"],
        "only the newer event's delivery is left"
    );
}

pub async fn events_fan_out_to_matching_active_subscriptions_in_their_transaction(
    store: &Arc<dyn Store>,
) {
    let store = store.as_ref();
    let now = 1_700_000_100_000;
    let owner = "key:fanout";
    subscribe(
        store,
        &sample_subscription("whk_fan_all", owner, EventType::VARIANTS, now),
        now,
    )
    .await;
    subscribe(
        store,
        &sample_subscription("whk_fan_done", owner, &[EventType::Completed], now),
        now,
    )
    .await;
    let mut disabled = sample_subscription("whk_fan_off", owner, EventType::VARIANTS, now);
    disabled.status = SubscriptionStatus::Disabled;
    subscribe(store, &disabled, now).await;
    subscribe(
        store,
        &sample_subscription("whk_fan_stranger", "key:stranger", EventType::VARIANTS, now),
        now,
    )
    .await;

    let next = order_with_three_events(store, owner, now).await;

    let mut claimed = store
        .claim_deliveries(now + 10, "lease-fanout", now + 60_010, 100)
        .await
        .unwrap();
    claimed.retain(|d| d.subscription.owner == owner);
    let mut pairs: Vec<(String, String)> = claimed
        .iter()
        .map(|d| (d.subscription.id.clone(), d.event_id.clone()))
        .collect();
    pairs.sort();
    assert_eq!(
        pairs,
        [
            ("whk_fan_all".to_owned(), "evt_ord_fanout_1".to_owned()),
            ("whk_fan_all".to_owned(), "evt_ord_fanout_2".to_owned()),
            ("whk_fan_all".to_owned(), "evt_ord_fanout_3".to_owned()),
            ("whk_fan_done".to_owned(), "evt_ord_fanout_3".to_owned()),
        ]
    );
    // The payload is the event's, serialized once when it was written.
    let completed = claimed
        .iter()
        .find(|d| d.event_id == "evt_ord_fanout_3")
        .unwrap();
    assert_eq!(
        completed.payload,
        swapd_core::webhooks::signing::event_payload(&event(&next, 3, EventType::Completed))
    );
    assert_eq!(completed.attempts, 0);
    // Settle them, so later checks see only their own deliveries.
    for delivery in claimed {
        settle(
            store,
            &delivery.delivery_id,
            "lease-fanout",
            &delivery.subscription.id,
            now + 20,
        )
        .await;
    }
}

async fn settle(
    store: &dyn Store,
    delivery_id: &str,
    lease: &str,
    subscription_id: &str,
    now: i64,
) {
    let recorded = store
        .record_attempt(&AttemptRecord {
            delivery_id: delivery_id.into(),
            lease_token: lease.into(),
            subscription_id: subscription_id.into(),
            attempt: 1,
            started_at_ms: now,
            finished_at_ms: now + 3,
            status_code: Some(200),
            latency_ms: 3,
            error: None,
            after: AfterAttempt {
                status: DeliveryStatus::Succeeded,
                next_attempt_at_ms: None,
                disable_subscription: None,
            },
        })
        .await
        .unwrap();
    assert!(recorded);
}

/// Queues `count` replay deliveries of one event for `subscription`, due at `now`.
async fn queue(
    store: &dyn Store,
    subscription: &Subscription,
    event_id: &str,
    count: usize,
    now: i64,
) -> Vec<String> {
    let deliveries: Vec<QueuedDelivery> = (0..count)
        .map(|i| QueuedDelivery {
            id: format!("dlv_{}_{i}", subscription.id),
            subscription_id: subscription.id.clone(),
            event_id: event_id.into(),
            owner: subscription.owner.clone(),
            created_at_ms: now,
        })
        .collect();
    let response = StoredResponse {
        status: 202,
        body: b"{}".to_vec(),
    };
    let key = format!("idem-queue-{}", subscription.id);
    let mut lease = String::new();
    let finish = finish_with(store, &subscription.owner, &key, &mut lease, &response, now).await;
    store
        .queue_deliveries(&deliveries, Some(finish))
        .await
        .unwrap();
    deliveries.into_iter().map(|d| d.id).collect()
}

pub async fn concurrent_claims_are_disjoint_and_leases_expire(store: &Arc<dyn Store>) {
    let now = 1_700_000_200_000;
    order_with_three_events(store.as_ref(), "key:fanout", now).await;
    let sub = sample_subscription("whk_claims", "key:claims", EventType::VARIANTS, now);
    subscribe(store.as_ref(), &sub, now).await;
    let queued = queue(store.as_ref(), &sub, "evt_ord_fanout_1", 40, now).await;

    // Four workers claim at once: every delivery goes to exactly one of them.
    let tasks: Vec<_> = (0..4)
        .map(|i| {
            let store = store.clone();
            tokio::spawn(async move {
                let mut mine = Vec::new();
                loop {
                    let batch = store
                        .claim_deliveries(now, &format!("lease-w{i}"), now + 60_000, 7)
                        .await
                        .unwrap();
                    if batch.is_empty() {
                        break mine;
                    }
                    mine.extend(batch.into_iter().map(|d| d.delivery_id));
                }
            })
        })
        .collect();
    let mut all = Vec::new();
    for task in tasks {
        all.extend(task.await.unwrap());
    }
    all.retain(|id| id.starts_with("dlv_whk_claims_"));
    all.sort();
    let mut expected = queued.clone();
    expected.sort();
    assert_eq!(all, expected, "each delivery claimed exactly once");

    // Held leases keep deliveries from others; expired ones let them be taken over.
    let during: Vec<_> = store
        .claim_deliveries(now + 59_999, "lease-late", now + 120_000, 100)
        .await
        .unwrap();
    assert!(
        during
            .iter()
            .all(|d| !d.delivery_id.starts_with("dlv_whk_claims_"))
    );
    let after: Vec<_> = store
        .claim_deliveries(now + 60_000, "lease-takeover", now + 120_000, 100)
        .await
        .unwrap()
        .into_iter()
        .filter(|d| d.delivery_id.starts_with("dlv_whk_claims_"))
        .collect();
    assert_eq!(after.len(), 40);
    // The first worker's lease is gone: its result is not recorded.
    let stale = store
        .record_attempt(&AttemptRecord {
            delivery_id: queued[0].clone(),
            lease_token: "lease-w0".into(),
            subscription_id: sub.id.clone(),
            attempt: 1,
            started_at_ms: now,
            finished_at_ms: now,
            status_code: Some(200),
            latency_ms: 1,
            error: None,
            after: AfterAttempt {
                status: DeliveryStatus::Succeeded,
                next_attempt_at_ms: None,
                disable_subscription: None,
            },
        })
        .await
        .unwrap();
    assert!(!stale);
    for delivery in after {
        settle(
            store.as_ref(),
            &delivery.delivery_id,
            "lease-takeover",
            &sub.id,
            now + 60_001,
        )
        .await;
    }
}

pub async fn attempts_are_recorded_with_their_lease_and_can_disable_a_subscription(
    store: &Arc<dyn Store>,
) {
    let store = store.as_ref();
    let now = 1_700_000_300_000;
    order_with_three_events(store, "key:fanout", now).await;
    let sub = sample_subscription("whk_attempts", "key:attempts", EventType::VARIANTS, now);
    subscribe(store, &sub, now).await;
    let ids = queue(store, &sub, "evt_ord_fanout_2", 1, now).await;
    let claimed = store
        .claim_deliveries(now, "lease-a1", now + 60_000, 100)
        .await
        .unwrap();
    assert!(claimed.iter().any(|d| d.delivery_id == ids[0]));
    let failed = AttemptRecord {
        delivery_id: ids[0].clone(),
        lease_token: "lease-a1".into(),
        subscription_id: sub.id.clone(),
        attempt: 1,
        started_at_ms: now,
        finished_at_ms: now + 40,
        status_code: Some(500),
        latency_ms: 40,
        error: Some("HTTP 500".into()),
        after: AfterAttempt {
            status: DeliveryStatus::Pending,
            next_attempt_at_ms: Some(now + 5_000),
            disable_subscription: None,
        },
    };
    assert!(store.record_attempt(&failed).await.unwrap());
    assert!(
        !store.record_attempt(&failed).await.unwrap(),
        "the lease was released"
    );
    let stored = store
        .subscription(&sub.id, &sub.owner)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(stored.failing_since_ms, Some(now));
    // Not due before its next attempt.
    let early = store
        .claim_deliveries(now + 4_999, "lease-a2", now + 70_000, 100)
        .await
        .unwrap();
    assert!(early.iter().all(|d| d.delivery_id != ids[0]));
    let again = store
        .claim_deliveries(now + 5_000, "lease-a2", now + 70_000, 100)
        .await
        .unwrap();
    let again = again.iter().find(|d| d.delivery_id == ids[0]).unwrap();
    assert_eq!(again.attempts, 1);
    let gone = AttemptRecord {
        lease_token: "lease-a2".into(),
        attempt: 2,
        started_at_ms: now + 5_000,
        finished_at_ms: now + 5_010,
        status_code: Some(410),
        after: AfterAttempt {
            status: DeliveryStatus::Failed,
            next_attempt_at_ms: None,
            disable_subscription: Some("the receiver answered 410 Gone".into()),
        },
        ..failed.clone()
    };
    assert!(store.record_attempt(&gone).await.unwrap());
    let stored = store
        .subscription(&sub.id, &sub.owner)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(stored.status, SubscriptionStatus::Disabled);
    assert_eq!(
        stored.disabled_reason.as_deref(),
        Some("the receiver answered 410 Gone")
    );
    assert_eq!(stored.version, 2);

    let log = store.deliveries(&sub.id, &sub.owner, 10).await.unwrap();
    assert_eq!(log.len(), 1);
    assert_eq!(log[0].status, DeliveryStatus::Failed);
    assert_eq!(log[0].attempts, 2);
    assert_eq!(log[0].last_status_code, Some(410));
    assert_eq!(
        log[0].log.iter().map(|a| a.status_code).collect::<Vec<_>>(),
        [Some(500), Some(410)]
    );
    assert_eq!(log[0].log[0].next_attempt_at_ms, Some(now + 5_000));
    assert!(
        store
            .deliveries(&sub.id, "key:other", 10)
            .await
            .unwrap()
            .is_empty()
    );
    // New events no longer fan out to the disabled subscription.
    let order = sample_order("ord_after_410", "key:attempts", now);
    let response = StoredResponse {
        status: 201,
        body: b"{}".to_vec(),
    };
    let mut lease = String::new();
    let finish = finish_with(
        store,
        "key:attempts",
        "idem-after-410",
        &mut lease,
        &response,
        now,
    )
    .await;
    store
        .create_order(
            &order,
            &[event(&order, 1, EventType::Created)],
            None,
            finish,
        )
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        store
            .deliveries(&sub.id, &sub.owner, 10)
            .await
            .unwrap()
            .len(),
        1
    );
}

pub async fn replays_select_owned_events_and_queue_deliveries(store: &Arc<dyn Store>) {
    let store = store.as_ref();
    let owner = "key:fanout";
    order_with_three_events(store, owner, 1_700_000_100_000).await;
    let one = store
        .replay_events(
            owner,
            &ReplaySelection::Event("evt_ord_fanout_2".into()),
            EventType::VARIANTS,
        )
        .await
        .unwrap();
    assert_eq!(
        one,
        [("evt_ord_fanout_2".to_owned(), EventType::AwaitingDeposit)]
    );
    assert!(
        store
            .replay_events(
                "key:stranger",
                &ReplaySelection::Event("evt_ord_fanout_2".into()),
                EventType::VARIANTS
            )
            .await
            .unwrap()
            .is_empty()
    );
    let window = |since_ms, until_ms, limit| ReplaySelection::Window {
        since_ms,
        until_ms,
        limit,
    };
    let t = 1_700_000_100_000;
    let all = store
        .replay_events(owner, &window(t, t + 10, 100), EventType::VARIANTS)
        .await
        .unwrap();
    assert_eq!(
        all.iter().map(|(id, _)| id.as_str()).collect::<Vec<_>>(),
        ["evt_ord_fanout_1", "evt_ord_fanout_2", "evt_ord_fanout_3"]
    );
    let limited = store
        .replay_events(owner, &window(t, t + 10, 2), EventType::VARIANTS)
        .await
        .unwrap();
    assert_eq!(limited.len(), 2);
    let only_completed = store
        .replay_events(owner, &window(t, t + 10, 100), &[EventType::Completed])
        .await
        .unwrap();
    assert_eq!(
        only_completed,
        [("evt_ord_fanout_3".to_owned(), EventType::Completed)]
    );
    assert!(
        store
            .replay_events(owner, &window(t + 6, t + 10, 100), EventType::VARIANTS)
            .await
            .unwrap()
            .is_empty()
    );
}

pub async fn x402_settlements_happen_once_and_payments_buy_one_call(store: &Arc<dyn Store>) {
    let settlement = X402Settlement {
        payer: "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266".into(),
        nonce: format!("0x{}", "3b".repeat(32)),
        amount: "50000".into(),
        pay_to: "0x70997970C51812dc3A010C7d01b50e0d17dc79C8".into(),
        asset: "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913".into(),
        network: "eip155:8453".into(),
        transaction: format!("0x{}", "ab".repeat(32)),
        settled_at_ms: 1_700_000_000_000,
    };
    assert_eq!(
        store
            .x402_settlement(&settlement.payer, &settlement.nonce)
            .await
            .unwrap(),
        None
    );
    // Ten concurrent settlements of one authorization: one is recorded.
    let tasks: Vec<_> = (0..10)
        .map(|_| {
            let (store, settlement) = (store.clone(), settlement.clone());
            tokio::spawn(async move { store.record_x402_settlement(&settlement).await.unwrap() })
        })
        .collect();
    let mut recorded = 0;
    for task in tasks {
        recorded += usize::from(task.await.unwrap());
    }
    assert_eq!(recorded, 1);
    assert_eq!(
        store
            .x402_settlement(&settlement.payer, &settlement.nonce)
            .await
            .unwrap(),
        Some(settlement.clone())
    );

    let now = 1_700_000_000_000;
    let presented = |key: &'static str| Presented {
        resource: "https://swapd.example/api/x402/orders",
        idempotency_key: Some(key),
    };
    let tasks: Vec<_> = (0..10)
        .map(|_| {
            let store = store.clone();
            tokio::spawn(async move {
                store
                    .begin_purchase("0xpayer", "0xnonce", presented("idem-1"), "node-a", now)
                    .await
                    .unwrap()
            })
        })
        .collect();
    let mut settling = 0;
    for task in tasks {
        match task.await.unwrap() {
            PurchaseStep::Settle => settling += 1,
            PurchaseStep::InProgress { .. } => {}
            other => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!(settling, 1, "one payment, one settlement at a time");
    let begin = |nonce: &'static str, key: &'static str, holder: &'static str, at: i64| {
        let store = store.clone();
        async move {
            store
                .begin_purchase("0xpayer", nonce, presented(key), holder, at)
                .await
                .unwrap()
        }
    };
    // Its settlement confirmed, the call is owed to the same request only, until served.
    store
        .purchase_settled("0xpayer", "0xnonce", "0xtx")
        .await
        .unwrap();
    store.release_purchase("0xpayer", "0xnonce").await.unwrap();
    assert_eq!(
        begin("0xnonce", "idem-2", "node-a", now).await,
        PurchaseStep::Used
    );
    assert_eq!(
        begin("0xnonce", "idem-1", "node-a", now).await,
        PurchaseStep::Serve {
            transaction: "0xtx".into()
        }
    );
    store.purchase_served("0xpayer", "0xnonce").await.unwrap();
    assert_eq!(
        begin("0xnonce", "idem-1", "node-a", now).await,
        PurchaseStep::Used
    );
    // The console lists what was received, newest first.
    let received = store.recent_purchases(10).await.unwrap();
    let served = received.iter().find(|p| p.nonce == "0xnonce").unwrap();
    assert_eq!(served.payer, "0xpayer");
    assert_eq!(served.state, "served");
    assert_eq!(served.transaction.as_deref(), Some("0xtx"));
    assert_eq!(store.recent_purchases(1).await.unwrap().len(), 1);

    // A refused payment moved nothing: forgotten, it may be presented again.
    assert_eq!(
        begin("0xother", "idem-3", "node-a", now).await,
        PurchaseStep::Settle
    );
    store.forget_purchase("0xpayer", "0xother").await.unwrap();
    assert_eq!(
        begin("0xother", "idem-3", "node-a", now).await,
        PurchaseStep::Settle
    );
    // Its node died mid-settlement: released at its restart, the next attempt settles again.
    assert!(matches!(
        begin("0xother", "idem-3", "node-b", now).await,
        PurchaseStep::InProgress { .. }
    ));
    assert_eq!(store.release_claims_of("node-a").await.unwrap(), 1);
    assert_eq!(
        begin("0xother", "idem-3", "node-b", now).await,
        PurchaseStep::Resettle
    );
    // Without a restart, once its lease is over.
    assert_eq!(
        begin("0xother", "idem-3", "node-a", now + PURCHASE_LEASE_MS).await,
        PurchaseStep::Resettle
    );
}

pub async fn siwx_nonces_are_used_once(store: &Arc<dyn Store>) {
    let now = 1_700_000_000_000;
    let expires = now + 300_000;
    assert!(!store.siwx_nonce_used("n-live").await.unwrap());
    let tasks: Vec<_> = (0..10)
        .map(|_| {
            let store = store.clone();
            tokio::spawn(async move { store.use_siwx_nonce("n-live", expires, now).await.unwrap() })
        })
        .collect();
    let mut used = 0;
    for task in tasks {
        used += usize::from(task.await.unwrap());
    }
    assert_eq!(used, 1, "one proof uses a nonce");
    assert!(store.siwx_nonce_used("n-live").await.unwrap());
    assert!(!store.siwx_nonce_used("n-other").await.unwrap());
}

pub async fn windows_admit_their_limit_and_refusals_count_nothing(store: &Arc<dyn Store>) {
    let hour = 3_600_000;
    let now = 1_700_000_100_000;
    let tasks: Vec<_> = (0..12)
        .map(|_| {
            let store = store.clone();
            tokio::spawn(async move { store.consume_window("w:paid", hour, 5, now).await.unwrap() })
        })
        .collect();
    let mut allowed = 0;
    for task in tasks {
        let decision = task.await.unwrap();
        assert_eq!(decision.limit, 5);
        assert_eq!(decision.resets_at_ms, now - now % hour + hour);
        allowed += usize::from(decision.allowed);
    }
    assert_eq!(allowed, 5);
    let refused = store.consume_window("w:paid", hour, 5, now).await.unwrap();
    assert!(!refused.allowed);
    assert_eq!((refused.used, refused.remaining()), (5, 0));
    // Another key, and the next window, start afresh.
    assert!(
        store
            .consume_window("w:other", hour, 5, now)
            .await
            .unwrap()
            .allowed
    );
    let next = store
        .consume_window("w:paid", hour, 5, now + hour)
        .await
        .unwrap();
    assert!(next.allowed);
    assert_eq!((next.used, next.remaining()), (1, 4));
}

pub async fn jobs_are_claimed_once_taken_over_after_their_lease_and_finished_by_the_holder(
    store: &Arc<dyn Store>,
) {
    let now = 1_700_000_000_000;
    let owner = "wallet:0xjobs";
    let response = StoredResponse {
        status: 202,
        body: b"{}".to_vec(),
    };
    for i in 0..6 {
        let job = Job {
            id: format!("job_conformance_{i}"),
            owner: owner.into(),
            request: JobRequest::PairDepth {
                from_ccy: "BTC".into(),
                to_ccy: "ETH".into(),
                steps: 4,
            },
            status: JobStatus::Queued,
            result: None,
            error: None,
            attempts: 0,
            created_at_ms: now + i,
            started_at_ms: None,
            finished_at_ms: None,
        };
        let key = format!("idem-job-{i}");
        let mut lease = String::new();
        let finish = finish_with(store.as_ref(), owner, &key, &mut lease, &response, now).await;
        store.insert_job(&job, finish).await.unwrap();
    }
    assert_eq!(
        store
            .job("job_conformance_0", owner)
            .await
            .unwrap()
            .unwrap()
            .status,
        JobStatus::Queued
    );
    assert!(
        store
            .job("job_conformance_0", "wallet:other")
            .await
            .unwrap()
            .is_none()
    );

    // Three workers claim at once: each job goes to one of them.
    let tasks: Vec<_> = (0..3)
        .map(|w| {
            let store = store.clone();
            tokio::spawn(async move {
                store
                    .claim_jobs(now + 10, &format!("jl-{w}"), now + 60_010, 10)
                    .await
                    .unwrap()
            })
        })
        .collect();
    let mut claimed = Vec::new();
    for task in tasks {
        claimed.extend(task.await.unwrap());
    }
    let mut ids: Vec<String> = claimed
        .iter()
        .filter(|j| j.owner == owner)
        .map(|j| j.id.clone())
        .collect();
    ids.sort();
    assert_eq!(ids.len(), 6);
    ids.dedup();
    assert_eq!(ids.len(), 6, "no job claimed twice");
    let job = claimed
        .iter()
        .find(|j| j.id == "job_conformance_0")
        .unwrap();
    assert_eq!((job.status, job.attempts), (JobStatus::Running, 1));
    assert_eq!(job.started_at_ms, Some(now + 10));

    // Nothing more while leases hold; after they end, the jobs are taken over.
    let held = store
        .claim_jobs(now + 60_009, "jl-late", now + 120_000, 10)
        .await
        .unwrap();
    assert!(held.iter().all(|j| j.owner != owner));
    let taken = store
        .claim_jobs(now + 60_010, "jl-new", now + 120_010, 10)
        .await
        .unwrap();
    let taken: Vec<&Job> = taken.iter().filter(|j| j.owner == owner).collect();
    assert_eq!(taken.len(), 6);
    assert!(
        taken
            .iter()
            .all(|j| j.attempts == 2 && j.started_at_ms == Some(now + 10))
    );
    // Only the lease holder finishes, once.
    let failed = JobOutcome::Failed(JobError {
        code: "timeout".into(),
        message: "too slow".into(),
    });
    assert!(
        !store
            .finish_job("job_conformance_0", "jl-0", &failed, now + 70_000)
            .await
            .unwrap()
    );
    assert!(
        store
            .finish_job("job_conformance_0", "jl-new", &failed, now + 70_000)
            .await
            .unwrap()
    );
    assert!(
        !store
            .finish_job("job_conformance_0", "jl-new", &failed, now + 70_001)
            .await
            .unwrap()
    );
    let finished = store
        .job("job_conformance_0", owner)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(finished.status, JobStatus::Failed);
    assert_eq!(finished.error.unwrap().code, "timeout");
    assert_eq!(finished.finished_at_ms, Some(now + 70_000));
    // A finished job is never claimed again.
    let later = store
        .claim_jobs(now + 500_000, "jl-end", now + 600_000, 10)
        .await
        .unwrap();
    assert!(later.iter().all(|j| j.id != "job_conformance_0"));
}

pub async fn served_rates_come_back_by_pair_and_window(store: &Arc<dyn Store>) {
    let store = store.as_ref();
    let observation = |pair: &str, at: i64, rate: &str| RateObservation {
        pair: pair.into(),
        observed_at_ms: at,
        rate: rate.into(),
        provider: "atlas".into(),
    };
    store
        .record_rates(&[
            observation("BTC/ETH", 300, "31.5"),
            observation("BTC/ETH", 100, "31.2"),
            observation("BTC/ETH", 200, "31.3"),
            observation("ETH/BTC", 150, "0.03"),
            observation("BTC/ETH", 400, "31.9"),
        ])
        .await
        .unwrap();
    store.record_rates(&[]).await.unwrap();
    let rates: Vec<String> = store
        .rates("BTC/ETH", 100, 400, 10)
        .await
        .unwrap()
        .into_iter()
        .map(|o| o.rate)
        .collect();
    assert_eq!(
        rates,
        ["31.2", "31.3", "31.5"],
        "oldest first, until excluded"
    );
    assert_eq!(store.rates("BTC/ETH", 0, 1_000, 2).await.unwrap().len(), 2);
}
