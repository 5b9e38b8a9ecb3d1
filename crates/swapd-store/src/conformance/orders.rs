//! Orders, their outbox events, fee ledger rows and status e-mails.

use super::*;

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
        store
            .order(&parsed("ord_plain"), &parsed("key:one"))
            .await
            .unwrap(),
        Some(order.clone())
    );
    assert_eq!(
        store
            .order(&parsed("ord_plain"), &parsed("key:two"))
            .await
            .unwrap(),
        None
    );
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
            owner: Some(parsed("key:two")),
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
        owner: Some(parsed("key:one")),
        status: Some(order.status),
        created_from_ms: Some(now),
        created_until_ms: Some(now + 1),
        ..all.clone()
    };
    assert_eq!(search(hit).await.len(), 1);
    // The hosted page reads it whoever owns it (it checks the page token itself).
    assert_eq!(
        store.order_for_page(&parsed("ord_plain")).await.unwrap(),
        Some(order.clone())
    );
    assert_eq!(
        store.order_for_page(&parsed("ord_missing")).await.unwrap(),
        None
    );
    assert_eq!(
        store.order_events(&parsed("ord_plain")).await.unwrap(),
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
    assert_eq!(
        store
            .order(&parsed("ord_foreign"), &parsed("key:two"))
            .await
            .unwrap(),
        None
    );
    assert!(
        store
            .order_events(&parsed("ord_foreign"))
            .await
            .unwrap()
            .is_empty()
    );

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
        store
            .order(&parsed("ord_token_again"), &parsed("key:one"))
            .await
            .unwrap(),
        None
    );
}

pub async fn fee_ledger_rows_are_written_with_the_order_and_its_completion(store: &Arc<dyn Store>) {
    use swapd_core::fees::Party;
    use swapd_core::fees::entry::Fee;
    use swapd_core::fees::ledger::Stage;
    let now = 1_700_000_000_000;
    let fee = |kind: &str, bps: Option<&str>, text: &str| Fee {
        kind: kind.parse().unwrap(),
        rate: bps.map(|bps| swapd_core::fees::Rate::parse(bps).unwrap()),
        amount: amount(text, "ETH"),
        currency: currency("ETH"),
    };
    let mut order = sample_order("ord_fees", "key:shop", now);
    order.fees = vec![
        fee("network", None, "0.001"),
        fee("service", Some("30"), "0.003"),
        fee("partner", Some("12.5"), "0.00125"),
    ];
    create_with_created_event(store.as_ref(), &order, "idem-fees", now).await;
    let rows = store
        .fee_ledger(Some(&parsed("key:shop")), now, now + 1, 100)
        .await
        .unwrap();
    let texts: Vec<(String, Option<String>)> = rows
        .iter()
        .map(|r| (r.amount.to_string(), r.bps.map(|bps| bps.to_string())))
        .collect();
    let seen: Vec<(Party, Stage, &str, Option<&str>)> = rows
        .iter()
        .zip(&texts)
        .map(|(r, (amount, bps))| (r.party, r.stage, amount.as_str(), bps.as_deref()))
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
            .fee_ledger(Some(&parsed("key:shop")), now, now + 100, 100)
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
        .fee_ledger(Some(&parsed("key:shop")), now, now + 100, 100)
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
            .fee_ledger(Some(&parsed("key:shop")), now + 1, now + 100, 100)
            .await
            .unwrap()
            .len(),
        2
    );
    assert!(
        store
            .fee_ledger(Some(&parsed("key:other")), 0, i64::MAX, 100)
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
            .fee_ledger(Some(&parsed("key:shop")), 0, i64::MAX, 1)
            .await
            .unwrap()
            .len(),
        1
    );
}

pub async fn order_updates_are_compare_and_set(store: &Arc<dyn Store>) {
    let now = 1_700_000_000_000;
    let order = sample_order("ord_cas", "key:cas", now);
    create_with_created_event(store.as_ref(), &order, "idem-cas", now).await;

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
    let stored = store
        .order(&parsed("ord_cas"), &parsed("key:cas"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        (stored.version, stored.status),
        (2, OrderStatus::Confirming)
    );
    let events = store.order_events(&parsed("ord_cas")).await.unwrap();
    assert_eq!(
        events.iter().map(|e| e.sequence).collect::<Vec<_>>(),
        [1, 2]
    );
}

pub async fn due_orders_are_claimed_earliest_first_until_their_lease_ends(store: &Arc<dyn Store>) {
    let store = store.as_ref();
    let now = 1_800_000_000_000;
    for (id, at) in [
        ("ord_due_late", now + 5),
        ("ord_due_early", now + 1),
        ("ord_due_never", now + 10_000),
    ] {
        let mut order = sample_order(id, "key:due", now);
        order.next_check_at_ms = Some(at);
        create_with_created_event(store, &order, id, now).await;
    }
    let claimed = |at: i64, until: i64| async move {
        store
            .claim_due_orders(at, until, 10)
            .await
            .unwrap()
            .into_iter()
            .map(|o| o.id)
            .filter(|id| id.as_str().starts_with("ord_due"))
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
    // The engine's save sets the real next check (at the version its claim read); a finished
    // order (no next check) is never due.
    let mut early = store
        .order(&parsed("ord_due_early"), &parsed("key:due"))
        .await
        .unwrap()
        .unwrap();
    early.version += 1;
    early.next_check_at_ms = None;
    assert!(store.update_order(&early, &[], None).await.unwrap());
    let mut late = store
        .order(&parsed("ord_due_late"), &parsed("key:due"))
        .await
        .unwrap()
        .unwrap();
    late.version += 1;
    late.next_check_at_ms = Some(now + 1_500);
    assert!(store.update_order(&late, &[], None).await.unwrap());
    assert_eq!(claimed(now + 1_500, now + 3_000).await, ["ord_due_late"]);
}

/// Fencing: an engine whose lease ended (it was cut off, or slow) and was given to another
/// writes nothing when it comes back, whatever its clock says; the new holder's saves land.
pub async fn a_save_under_an_ended_lease_is_refused(store: &Arc<dyn Store>) {
    let store = store.as_ref();
    let now = 1_800_000_200_000;
    let mut order = sample_order("ord_fenced", "key:fenced", now);
    order.next_check_at_ms = Some(now);
    create_with_created_event(store, &order, "idem-fenced", now).await;
    let claim = |at: i64| async move {
        let mut claimed = store.claim_due_orders(at, at + 60_000, 10).await.unwrap();
        claimed.retain(|o| o.id.as_str() == "ord_fenced");
        claimed.pop().expect("the order is due")
    };
    let first = claim(now).await;
    let second = claim(now + 60_000).await;
    assert_eq!(second.version, first.version + 1);

    let late = |mut held: Order| {
        held.version += 1;
        held.next_check_at_ms = Some(now + 999_000);
        held
    };
    assert!(
        !store
            .update_order(&late(first.clone()), &[], None)
            .await
            .unwrap()
    );
    assert!(
        !store
            .reschedule_order(&first.id, first.version, now + 999_000)
            .await
            .unwrap()
    );
    assert!(store.update_order(&late(second), &[], None).await.unwrap());
    let read = store.order(&first.id, &first.owner).await.unwrap().unwrap();
    assert_eq!(read.version, first.version + 2);
}

pub async fn concurrent_order_claims_are_disjoint(store: &Arc<dyn Store>) {
    let store = store.as_ref();
    let now = 1_800_000_000_000;
    for n in 0..12 {
        let id = format!("ord_race_{n:02}");
        let mut order = sample_order(&id, "key:race", now);
        order.next_check_at_ms = Some(now + n);
        create_with_created_event(store, &order, &id, now).await;
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
    let mut all: Vec<OrderId> = a.iter().chain(&b).chain(&c).cloned().collect();
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

pub async fn notifications_are_leased_until_marked(store: &Arc<dyn Store>) {
    let store = store.as_ref();
    let now = 1_900_000_000_000;
    let response = StoredResponse {
        status: 201,
        body: b"{}".to_vec(),
    };
    let mut order = sample_order("ord_mail", "key:mail", now);
    order.email = Email::parse("ops@example.com");
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
        store.order_events(&parsed("ord_mail")).await.unwrap()[0]
            .notify_email
            .as_ref()
            .map(Email::as_str),
        Some("ops@example.com")
    );
    store.mark_notified(&events[0].id, now).await.unwrap();
    // The lease ended without the second being marked (its notifier died): claimed again.
    assert_eq!(claimed(now + 60_000).await, [events[1].id.clone()]);
}

pub async fn a_reschedule_moves_the_next_look_alone_at_the_version_read(store: &Arc<dyn Store>) {
    let store = store.as_ref();
    let now = 1_800_000_100_000;
    let order = sample_order("ord_resched", "key:resched", now);
    create_with_created_event(store, &order, "idem-resched", now).await;
    let due = |at: i64| async move {
        store
            .claim_due_orders(at, at + 1, 10)
            .await
            .unwrap()
            .into_iter()
            .filter(|o| o.id.as_str() == "ord_resched")
            .collect::<Vec<_>>()
    };
    assert!(
        store
            .reschedule_order(&order.id, order.version, now + 5_000)
            .await
            .unwrap()
    );
    let read = store.order(&order.id, &order.owner).await.unwrap().unwrap();
    assert_eq!(
        read.next_check_at_ms,
        Some(now + 5_000),
        "read with its next look"
    );
    assert!(
        due(now + 4_999).await.is_empty(),
        "not due before its new time"
    );
    let claimed = due(now + 5_000).await;
    assert_eq!(claimed.len(), 1, "due at its new time");
    // Nothing else changed but the claim's: its lease (the next look) and the version it moves
    // (fencing off saves from before it), and that is how the order reads.
    assert_eq!(claimed[0].version, order.version + 1);
    let read = store.order(&order.id, &order.owner).await.unwrap().unwrap();
    assert_eq!(read.next_check_at_ms, Some(now + 5_001));
    assert_eq!(
        Order {
            next_check_at_ms: order.next_check_at_ms,
            version: order.version,
            ..read.clone()
        },
        order
    );
    assert_eq!(read.version, claimed[0].version);
    // At a version it is no longer at: nothing is written.
    let mut moved = read.clone();
    moved.version += 1;
    moved.next_check_at_ms = Some(now + 20_000);
    assert!(store.update_order(&moved, &[], None).await.unwrap());
    assert!(
        !store
            .reschedule_order(&order.id, order.version, now + 6_000)
            .await
            .unwrap()
    );
    assert!(due(now + 19_999).await.is_empty());
    assert_eq!(due(now + 20_000).await.len(), 1);
}
