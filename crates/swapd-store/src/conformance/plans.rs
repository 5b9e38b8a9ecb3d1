//! Onchain execution plans.

use super::*;

pub(crate) fn sample_plan(id: &str, owner: &str, resolve_key: &str, now: i64) -> ExecutionPlan {
    ExecutionPlan {
        id: parsed(id),
        owner: parsed(owner),
        route_quote_id: parsed("rqq_00000000000000000000000000000001"),
        resolve_key: resolve_key.into(),
        provider: "meridian".into(),
        wallet_address: "0x1111111111111111111111111111111111111111".into(),
        recipient: None,
        from: currency("ETH"),
        to: currency("USDCETH"),
        from_amount: amount("1", "ETH"),
        expected_output: amount("3000", "USDCETH"),
        min_output: amount("2985", "USDCETH"),
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
        store
            .execution_plan(&parsed("ocx_one"), &parsed("key:plans"))
            .await
            .unwrap(),
        Some(plan.clone())
    );
    assert_eq!(
        store
            .execution_plan_for(&parsed("key:plans"), "rk-1")
            .await
            .unwrap(),
        Some(plan.clone())
    );
    // Another owner sees nothing, by id or by resolve key.
    assert_eq!(
        store
            .execution_plan(&parsed("ocx_one"), &parsed("key:other"))
            .await
            .unwrap(),
        None
    );
    assert_eq!(
        store
            .execution_plan_for(&parsed("key:other"), "rk-1")
            .await
            .unwrap(),
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
        store
            .execution_plan(&parsed("ocx_twin"), &parsed("key:plans"))
            .await
            .unwrap(),
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
        .execution_plan(&parsed("ocx_cas"), &parsed("key:plancas"))
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
            .filter(|p| p.owner.scope() == "key:due")
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

/// Fencing, as for orders: a tracker whose lease ended and was given to another writes nothing.
pub async fn a_plan_save_under_an_ended_lease_is_refused(store: &Arc<dyn Store>) {
    let store = store.as_ref();
    let now = 1_900_000_100_000;
    let mut plan = sample_plan("ocx_fenced", "key:fenced", "ocx_fenced", now);
    plan.next_check_at_ms = Some(now);
    let lease = claim(store, "key:fenced", "idem-ocx-fenced", now).await;
    store
        .insert_execution_plan(
            &plan,
            IdempotentFinish {
                principal: "key:fenced",
                key: "idem-ocx-fenced",
                hold: KeyHold::Lease(&lease),
                response: &StoredResponse {
                    status: 200,
                    body: b"{}".to_vec(),
                },
            },
        )
        .await
        .unwrap();
    let claim_at = |at: i64| async move {
        let mut claimed = store
            .claim_due_execution_plans(at, at + 60_000, 10)
            .await
            .unwrap();
        claimed.retain(|p| p.id.as_str() == "ocx_fenced");
        claimed.pop().expect("the plan is due")
    };
    let first = claim_at(now).await;
    let second = claim_at(now + 60_000).await;
    assert_eq!(second.version, first.version + 1);
    let late = |mut held: ExecutionPlan| {
        held.reschedule(now + 999_000);
        held
    };
    assert!(
        !store
            .update_execution_plan(&late(first.clone()), None)
            .await
            .unwrap()
    );
    assert!(
        store
            .update_execution_plan(&late(second), None)
            .await
            .unwrap()
    );
    let read = store
        .execution_plan(&first.id, &first.owner)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(read.version, first.version + 2);
}
