//! Route quotes, createTokens and served rates.

use super::*;

pub(crate) fn sample_route(id: &str, owner: &str, expires_at_ms: i64) -> RouteQuote {
    RouteQuote {
        affiliate_code: None,
        id: parsed(id),
        owner: parsed(owner),
        provider: "atlas".into(),
        execution_type: ExecutionType::Offchain,
        rate_type: RateType::Fixed,
        direction: Direction::From,
        from: currency("BTC"),
        to: currency("USDTTRC"),
        from_amount: amount("0.1", "BTC"),
        to_amount: amount("9602.5", "USDTTRC"),
        min_output: amount("9602.5", "USDTTRC"),
        rate: amount("96025", "USDTTRC"),
        min: amount("0.0001", "BTC"),
        max: Some(amount("1", "BTC")),
        fees: vec![swapd_core::fees::entry::Fee::cost(
            swapd_core::fees::entry::FeeKind::Network,
            amount("1", "USDTTRC"),
            currency("USDTTRC"),
        )],
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
            .route_quote(&parsed("rqq_a"), &parsed("key:one"))
            .await
            .unwrap()
            .as_ref(),
        Some(&quotes[0])
    );
    assert_eq!(
        store
            .route_quote(&parsed("rqq_a"), &parsed("key:two"))
            .await
            .unwrap(),
        None
    );
    assert_eq!(
        store
            .route_quote(&parsed("rqq_none"), &parsed("key:one"))
            .await
            .unwrap(),
        None
    );
    assert!(matches!(
        store.save_route_quotes(&quotes[..1]).await,
        Err(StoreError::Conflict(_))
    ));
    // Expired quotes are kept a while, so callers can be told they expired.
    store.purge_expired(now + 200_000, u32::MAX).await.unwrap();
    assert!(
        store
            .route_quote(&parsed("rqq_b"), &parsed("key:one"))
            .await
            .unwrap()
            .is_some()
    );
    store
        .purge_expired(now + 120_000 + EXPIRED_RETENTION_MS, u32::MAX)
        .await
        .unwrap();
    assert!(
        store
            .route_quote(&parsed("rqq_b"), &parsed("key:one"))
            .await
            .unwrap()
            .is_none()
    );
}

pub(crate) async fn issue(
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
        owner: parsed(owner),
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
            .redeem_create_token(&record.token_hash, &parsed("key:two"), now)
            .await
            .unwrap(),
        Err(RedeemError::NotFound)
    );
    assert_eq!(
        store
            .redeem_create_token("unknown", &parsed("key:one"), now)
            .await
            .unwrap(),
        Err(RedeemError::NotFound)
    );
    let redeemed = store
        .redeem_create_token(&record.token_hash, &parsed("key:one"), now + 1)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(redeemed.route, record.route);
    assert_eq!(redeemed.used_at_ms, Some(now + 1));
    assert_eq!(
        store
            .redeem_create_token(&record.token_hash, &parsed("key:one"), now + 2)
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
            .redeem_create_token(&expiring.token_hash, &parsed("key:one"), now + 600_000)
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
            .redeem_create_token(&record.token_hash, &parsed("key:one"), now)
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
            tokio::spawn(async move {
                store
                    .redeem_create_token(&hash, &parsed("key:race"), now)
                    .await
            })
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
