//! Webhook subscriptions, deliveries, attempts and replays.

use super::*;

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
    assert_eq!(
        store.subscriptions(&parsed("key:cap")).await.unwrap().len(),
        cap
    );
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
        store
            .subscription(&parsed("whk_crud"), &parsed("key:hooks"))
            .await
            .unwrap(),
        Some(sub.clone())
    );
    assert_eq!(
        store
            .subscription(&parsed("whk_crud"), &parsed("key:other"))
            .await
            .unwrap(),
        None
    );
    assert_eq!(
        store.subscriptions(&parsed("key:hooks")).await.unwrap(),
        std::slice::from_ref(&sub)
    );
    assert!(
        store
            .subscriptions(&parsed("key:other"))
            .await
            .unwrap()
            .is_empty()
    );

    let mut next = sub.clone();
    next.version = 2;
    next.status = SubscriptionStatus::Disabled;
    next.previous_secret_sealed = Some("old".into());
    next.previous_secret_expires_at_ms = Some(now + 1);
    assert!(store.update_subscription(&next, None).await.unwrap());
    // A writer that read version 1 loses.
    assert!(!store.update_subscription(&next, None).await.unwrap());
    let mut foreign = next.clone();
    foreign.owner = parsed("key:other");
    foreign.version = 3;
    assert!(!store.update_subscription(&foreign, None).await.unwrap());
    assert_eq!(
        store
            .subscription(&parsed("whk_crud"), &parsed("key:hooks"))
            .await
            .unwrap(),
        Some(next)
    );
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
        .filter(|d| d.subscription.owner.scope() == owner)
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
    claimed.retain(|d| d.subscription.owner.scope() == owner);
    let mut pairs: Vec<(String, String)> = claimed
        .iter()
        .map(|d| (d.subscription.id.to_string(), d.event_id.clone()))
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
    // Each payload is byte for byte the one rendered from its event when it was written
    // (which the store kept until 2026-11-28; it now renders it again at delivery).
    let created = sample_order("ord_fanout", owner, now);
    let written = [
        event(&created, 1, EventType::Created),
        event(&created, 2, EventType::AwaitingDeposit),
        event(&next, 3, EventType::Completed),
    ];
    for delivery in &claimed {
        let event = written
            .iter()
            .find(|e| e.id.as_str() == delivery.event_id)
            .unwrap();
        assert_eq!(
            delivery.payload,
            swapd_core::webhooks::signing::event_payload(event),
            "{}",
            delivery.event_id
        );
    }
    let completed = claimed
        .iter()
        .find(|d| d.event_id == "evt_ord_fanout_3")
        .unwrap();
    assert_eq!(completed.attempts, 0);
    // Settle them, so later checks see only their own deliveries.
    for delivery in claimed {
        settle(
            store,
            &delivery.delivery_id,
            "lease-fanout",
            delivery.subscription.id.as_str(),
            now + 20,
        )
        .await;
    }
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
    let owner = subscription.owner.scope();
    let finish = finish_with(store, &owner, &key, &mut lease, &response, now).await;
    store
        .queue_deliveries(&deliveries, Some(finish))
        .await
        .unwrap();
    deliveries.into_iter().map(|d| d.id).collect()
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
            subscription_id: parsed(subscription_id),
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
            sub.id.as_str(),
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
            .deliveries(&sub.id, &parsed("key:other"), 10)
            .await
            .unwrap()
            .is_empty()
    );
    // New events no longer fan out to the disabled subscription.
    let order = sample_order("ord_after_410", "key:attempts", now);
    create_with_created_event(store, &order, "idem-after-410", now).await;
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
            &parsed(owner),
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
                &parsed("key:stranger"),
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
        .replay_events(&parsed(owner), &window(t, t + 10, 100), EventType::VARIANTS)
        .await
        .unwrap();
    assert_eq!(
        all.iter().map(|(id, _)| id.as_str()).collect::<Vec<_>>(),
        ["evt_ord_fanout_1", "evt_ord_fanout_2", "evt_ord_fanout_3"]
    );
    let limited = store
        .replay_events(&parsed(owner), &window(t, t + 10, 2), EventType::VARIANTS)
        .await
        .unwrap();
    assert_eq!(limited.len(), 2);
    let only_completed = store
        .replay_events(
            &parsed(owner),
            &window(t, t + 10, 100),
            &[EventType::Completed],
        )
        .await
        .unwrap();
    assert_eq!(
        only_completed,
        [("evt_ord_fanout_3".to_owned(), EventType::Completed)]
    );
    assert!(
        store
            .replay_events(
                &parsed(owner),
                &window(t + 6, t + 10, 100),
                EventType::VARIANTS
            )
            .await
            .unwrap()
            .is_empty()
    );
}
