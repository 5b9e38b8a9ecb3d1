//! The sandbox chain and desks' books.

use super::*;

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
    let book = sample_order("ord_book", "desk:atlas", 1_700_000_000_000);
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
    let other = sample_order("ord_book", "desk:atlas", 1_700_000_000_999);
    assert_eq!(
        store
            .sandbox_open_exchange("atlas-ord_book", &other)
            .await
            .unwrap(),
        book
    );
    let mut moved = book.clone();
    moved.version += 1;
    moved.to_amount = amount("1.5", "USDTTRC");
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
