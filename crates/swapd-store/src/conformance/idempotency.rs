//! Idempotency records.

use super::*;

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
            .purge_expired(later + IDEMPOTENCY_TTL_MS, u32::MAX)
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
