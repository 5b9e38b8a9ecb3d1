//! The behaviour every [`Store`] implementation must show: one check per function, run as one
//! test per backend by [`conformance_tests!`] (`tests/conformance.rs`), on SQLite and on
//! PostgreSQL; a backend that differs from the other fails here.

use std::sync::Arc;
use strum::VariantArray;

use swapd_core::api_keys::{ApiKey, ApiKeyPolicy, KeyStatus, RateLimits};
use swapd_core::idempotency::{Begin, IDEMPOTENCY_TTL_MS, LEASE_MS, StoredResponse};
use swapd_core::ids::{JobId, OrderId};
use swapd_core::market::routes::{CreateTokenRecord, RedeemError, RouteQuote, hash_create_token};
use swapd_core::market::{Direction, ExecutionType, RateType};
use swapd_core::market_intel::{Job, JobOutcome, JobPayment, JobPaymentState, JobRequest};
use swapd_core::notify::Email;
use swapd_core::offchain::order::{EventType, Order, OrderEvent, OrderStatus};
use swapd_core::onchain::plan::{ExecutionPlan, ExecutionReport, ExecutionStatus};
use swapd_core::owner::Owner;
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

use crate::test_support::{amount, currency, sample_order};

/// Text as the typed value a store method takes (an id, an owner): the tests' shorthand.
pub(crate) fn parsed<T: std::str::FromStr>(text: &str) -> T
where
    T::Err: std::fmt::Debug,
{
    text.parse().unwrap()
}
use crate::{Backend, migrations};

/// One test per check for a backend: `conformance_tests!(fresh)` in a test module, where
/// `fresh().await` opens an empty store of that backend with whatever must outlive it (its
/// directory, its schema), or `None` when the backend is not available here. Each check gets a
/// store of its own, migrated, so no check sees rows another left behind and a failure hides no
/// other.
#[macro_export]
macro_rules! conformance_tests {
    ($fresh:path) => {
        $crate::conformance_tests!(@each $fresh; migrations_apply_once_and_match_the_embedded_list, ping_answers, api_keys_round_trip_exactly, duplicate_api_key_ids_conflict, api_keys_list_oldest_first, revocation_is_idempotent_and_keeps_the_first_time, nonces_are_single_use_per_key_until_purged, expired_rows_are_purged_in_steps_of_at_most_the_limit, console_logouts_end_one_session_or_every_earlier_one_until_purged, nonce_batches_ignore_duplicates_and_live_nonces_reload, rate_decisions_match_the_pure_function_and_refusals_consume_nothing, concurrent_rate_consumption_admits_exactly_the_quota, idempotency_records_follow_the_plan, keys_taken_at_commit_yield_to_live_records_only, concurrent_first_attempts_execute_once, a_restarted_node_releases_only_its_own_claims, route_quotes_are_visible_to_their_owner_only, create_tokens_are_single_use_owner_bound_and_expire, concurrent_redemptions_succeed_once, orders_are_created_with_their_events_and_token_atomically, order_updates_are_compare_and_set, outcomes_are_written_with_the_change_that_ends_a_swap, affiliates_are_unique_listed_and_disabled, fee_ledger_rows_are_written_with_the_order_and_its_completion, due_orders_are_claimed_earliest_first_until_their_lease_ends, a_reschedule_moves_the_next_look_alone_at_the_version_read, a_save_under_an_ended_lease_is_refused, concurrent_order_claims_are_disjoint, sandbox_transfers_happen_once_per_key, sandbox_exchanges_open_once_and_update_by_compare_and_set, sandbox_deposits_commit_with_their_idempotency_record, notifications_are_leased_until_marked, execution_plans_are_one_per_resolve_key_and_owner_bound, execution_plan_updates_are_compare_and_set, due_execution_plans_are_claimed_earliest_first_until_their_lease_ends, a_plan_save_under_an_ended_lease_is_refused, subscriptions_are_owner_bound_and_compare_and_set, the_subscription_cap_holds_under_concurrent_inserts, events_fan_out_to_matching_active_subscriptions_in_their_transaction, old_events_are_purged_with_their_deliveries, concurrent_claims_are_disjoint_and_leases_expire, attempts_are_recorded_with_their_lease_and_can_disable_a_subscription, replays_select_owned_events_and_queue_deliveries, x402_settlements_happen_once_and_payments_buy_one_call, siwx_nonces_are_used_once, windows_admit_their_limit_and_refusals_count_nothing, jobs_are_claimed_once_taken_over_after_their_lease_and_finished_by_the_holder, commits_ring_the_bells_of_the_work_they_make, served_rates_come_back_by_pair_and_window);
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

mod affiliates;
mod idempotency;
mod jobs;
mod keys;
mod maintenance;
mod orders;
mod outcomes;
mod plans;
mod quotes;
mod sandbox;
mod webhooks;
mod x402;

pub use affiliates::*;
pub use idempotency::*;
pub use jobs::*;
pub use keys::*;
pub use maintenance::*;
pub use orders::*;
pub use outcomes::*;
pub use plans::*;
pub use quotes::*;
pub use sandbox::*;
pub use webhooks::*;
pub use x402::*;

pub(crate) fn event(order: &Order, sequence: i64, event_type: EventType) -> OrderEvent {
    OrderEvent {
        id: parsed(&format!("evt_{}_{sequence}", order.id)),
        order_id: order.id.clone(),
        owner: order.owner.clone(),
        sequence,
        event_type,
        data: serde_json::json!({"status": order.status.as_str()}),
        created_at_ms: order.updated_at_ms,
        notify_email: order.email.clone(),
    }
}

pub(crate) async fn claim(store: &dyn Store, owner: &str, key: &str, now: i64) -> String {
    match store
        .begin_idempotent(owner, key, "fp", "lease-o", "node-a", now)
        .await
        .unwrap()
    {
        Begin::Execute { lease_token } => lease_token,
        other => panic!("fresh key executes, got {other:?}"),
    }
}

pub(crate) fn sample_subscription(
    id: &str,
    owner: &str,
    events: &[EventType],
    now: i64,
) -> Subscription {
    Subscription {
        id: parsed(id),
        owner: parsed(owner),
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

pub(crate) async fn finish_with<'a>(
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

pub(crate) async fn subscribe(store: &dyn Store, subscription: &Subscription, now: i64) {
    let response = StoredResponse {
        status: 201,
        body: b"{}".to_vec(),
    };
    let key = format!("idem-{}", subscription.id);
    let owner = subscription.owner.scope();
    let mut lease = String::new();
    let finish = finish_with(store, &owner, &key, &mut lease, &response, now).await;
    assert!(
        store
            .insert_subscription(subscription, finish)
            .await
            .unwrap()
    );
}

/// Creates `order` with its `order.created` event, the write completing the fresh
/// Idempotency-Key `key` of its owner.
pub(crate) async fn create_with_created_event(
    store: &dyn Store,
    order: &Order,
    key: &str,
    now: i64,
) {
    let owner = order.owner.scope();
    let response = StoredResponse {
        status: 201,
        body: b"{}".to_vec(),
    };
    let mut lease = String::new();
    let finish = finish_with(store, &owner, key, &mut lease, &response, now).await;
    store
        .create_order(order, &[event(order, 1, EventType::Created)], None, finish)
        .await
        .unwrap()
        .unwrap();
}

/// The order `ord_fanout` of `owner`, created at `now` with its events 1 (created) and 2
/// (awaiting deposit), then completed at `now + 5` with event 3. Returns the completed order.
pub(crate) async fn order_with_three_events(store: &dyn Store, owner: &str, now: i64) -> Order {
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
