//! Swap outcomes, written with the change that ends an order or a plan.

use swapd_core::market::observed::Ending;

use super::plans::sample_plan;
use super::*;

/// Creates `order` (awaiting its deposit) under a fresh Idempotency-Key.
async fn created(store: &dyn Store, order: &Order, now: i64) {
    let owner = order.owner.scope();
    let lease = claim(store, &owner, order.id.as_str(), now).await;
    let response = StoredResponse {
        status: 201,
        body: b"{}".to_vec(),
    };
    let finish = IdempotentFinish {
        principal: &owner,
        key: order.id.as_str(),
        hold: KeyHold::Lease(&lease),
        response: &response,
    };
    store
        .create_order(order, &[event(order, 1, EventType::Created)], None, finish)
        .await
        .unwrap()
        .unwrap();
}

/// `order` moved on to `status` at `at`, written.
async fn moved(store: &dyn Store, order: &mut Order, status: OrderStatus, at: i64) {
    order.version += 1;
    order.status = status;
    order.updated_at_ms = at;
    let events = [event(order, order.version, EventType::Updated)];
    assert!(store.update_order(order, &events, None).await.unwrap());
}

pub async fn outcomes_are_written_with_the_change_that_ends_a_swap(store: &Arc<dyn Store>) {
    let store = store.as_ref();
    let now = 1_700_000_000_000;

    // Completed: counted, with what arrived and how long the exchange took.
    let mut done = sample_order("ord_done", "key:outcomes", now);
    created(store, &done, now).await;
    moved(store, &mut done, OrderStatus::Confirming, now + 1_000).await;
    assert!(store.outcome_samples(0).await.unwrap().is_empty());
    done.exchange_started_at_ms = Some(now + 2_000);
    moved(store, &mut done, OrderStatus::Exchanging, now + 2_000).await;
    done.payout_amount = Some(amount("9500", "USDTTRC"));
    moved(store, &mut done, OrderStatus::Withdrawing, now + 50_000).await;
    moved(store, &mut done, OrderStatus::Completed, now + 62_000).await;

    // Expired without a deposit: the user's, not counted.
    let mut expired = sample_order("ord_expired", "key:outcomes", now);
    created(store, &expired, now).await;
    moved(store, &mut expired, OrderStatus::Expired, now + 3_600_000).await;

    let samples = store.outcome_samples(0).await.unwrap();
    assert_eq!(samples.len(), 1, "{samples:?}");
    let sample = &samples[0];
    assert_eq!((sample.from, sample.to), ("BTC", "USDTTRC"));
    assert!(sample.completed);
    assert_eq!(sample.duration_secs, Some(60));
    assert_eq!(sample.ended_at_ms, now + 62_000);
    // 9 500 delivered of 9 602.5 quoted: −106.7 bps, toward zero.
    assert_eq!(sample.delivered_vs_quoted_bps, Some(-106));
    let quoted = done.to_amount;

    let recent = store.recent_outcomes("atlas", 10).await.unwrap();
    let endings: Vec<_> = recent
        .iter()
        .map(|o| (o.source_id.as_str(), o.ending))
        .collect();
    assert_eq!(
        endings,
        [
            ("ord_expired", Ending::Expired),
            ("ord_done", Ending::Completed)
        ]
    );
    assert!(!recent[0].counted && recent[1].counted);
    assert_eq!(recent[1].delivered, Some(amount("9500", "USDTTRC")));
    assert_eq!(recent[1].quoted, quoted);

    // Written again with the same ending (an e-mail attached later): when it ended stays.
    done.email = Email::parse("later@example.com");
    moved(store, &mut done, OrderStatus::Completed, now + 90_000).await;
    let samples = store.outcome_samples(0).await.unwrap();
    assert_eq!(samples[0].ended_at_ms, now + 62_000);

    // A late deposit reopens the expired order, refunded in the end at the user's choice:
    // its one outcome says so.
    moved(store, &mut expired, OrderStatus::Emergency, now + 3_700_000).await;
    expired.emergency = Some(swapd_core::offchain::order::Emergency {
        reasons: vec![swapd_core::offchain::order::EmergencyReason::Expired],
        allowed: vec![swapd_core::offchain::order::Choice::Refund],
        choice: Some(swapd_core::offchain::order::Choice::Refund),
        deadline_ms: now + 3_800_000,
    });
    moved(store, &mut expired, OrderStatus::Refunding, now + 3_710_000).await;
    moved(store, &mut expired, OrderStatus::Refunded, now + 3_720_000).await;
    let recent = store.recent_outcomes("atlas", 10).await.unwrap();
    assert_eq!(recent.len(), 2);
    assert_eq!(recent[0].ending, Ending::Refunded);
    assert_eq!(recent[0].emergency.as_deref(), Some("refund"));
    assert!(!recent[0].counted);

    // A plan that is done: counted, from its report to its end.
    let mut plan = sample_plan("ocx_done", "key:outcomes", "rk-outcome", now);
    let lease = claim(store, "key:outcomes", "idem-plan", now).await;
    let response = StoredResponse {
        status: 200,
        body: b"{}".to_vec(),
    };
    let finish = IdempotentFinish {
        principal: "key:outcomes",
        key: "idem-plan",
        hold: KeyHold::Lease(&lease),
        response: &response,
    };
    store.insert_execution_plan(&plan, finish).await.unwrap();
    plan.version += 1;
    plan.status = ExecutionStatus::Done;
    plan.reported_at_ms = Some(now + 10_000);
    plan.received_amount = Some("2990".into());
    plan.updated_at_ms = now + 40_000;
    assert!(store.update_execution_plan(&plan, None).await.unwrap());
    let samples = store.outcome_samples(0).await.unwrap();
    let onchain = samples.iter().find(|s| s.provider == "meridian").unwrap();
    assert_eq!(onchain.duration_secs, Some(30));
    assert_eq!(onchain.delivered_vs_quoted_bps, Some(-33));

    // The window: only what ended since; the janitor forgets what ended before.
    assert_eq!(store.outcome_samples(now + 70_000).await.unwrap().len(), 0);
    assert_eq!(store.purge_outcomes(now + 70_000, 100).await.unwrap(), 2);
    let left = store.recent_outcomes("atlas", 10).await.unwrap();
    assert_eq!(left.len(), 1);
    assert_eq!(left[0].source_id, "ord_expired");
}
