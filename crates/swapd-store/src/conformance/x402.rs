//! x402 settlements, SIWX nonces and windows.

use super::*;

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
