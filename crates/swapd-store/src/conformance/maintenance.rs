//! Migrations, liveness and the wake-up bells a commit rings.

use super::*;

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

/// Whether `work`'s bell of `bells` rings within a second.
async fn rings(bells: &swapd_core::wakeup::Bells, work: swapd_core::wakeup::Work) -> bool {
    tokio::time::timeout(std::time::Duration::from_secs(1), bells.rung(work))
        .await
        .is_ok()
}

const NOW: i64 = 1_700_000_000_000;

/// Creates an order of `owner` with two events (mailed to `email` when given), due for the
/// engine at its creation.
async fn create_ringing_order(store: &dyn Store, id: &str, owner: &str, email: Option<&str>) {
    create_order_due(store, id, owner, email, NOW).await;
}

/// Creates an order of `owner` with two events (mailed to `email` when given), due for the
/// engine at `due_at`.
async fn create_order_due(
    store: &dyn Store,
    id: &str,
    owner: &str,
    email: Option<&str>,
    due_at: i64,
) {
    let now = NOW;
    let mut order = sample_order(id, owner, now);
    order.email = email.and_then(Email::parse);
    order.next_check_at_ms = Some(due_at);
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
    // An order due later, of an owner with no subscription: nothing for the engine or the
    // dispatcher yet, so neither is woken.
    create_order_due(store, "ord_quiet", "key:quiet", None, NOW + 1_000).await;
    assert!(!rings(&bells, Work::Orders).await, "the order is due later");
    assert!(
        !rings(&bells, Work::Deliveries).await,
        "no subscription, no delivery queued"
    );
    subscribe(
        store,
        &sample_subscription(
            "whk_bell",
            "key:bell",
            &[EventType::Created, EventType::AwaitingDeposit],
            NOW,
        ),
        NOW,
    )
    .await;
    create_ringing_order(store, "ord_bell", "key:bell", Some("ops@example.com")).await;
    for work in [Work::Orders, Work::Deliveries, Work::Notifications] {
        assert!(rings(&bells, work).await, "{work:?} rang");
    }
    assert!(!rings(&bells, Work::Jobs).await, "no job was queued");
    // The engine's save of the order rings the engine (its next look may be due now).
    let mut order = store
        .order(&parsed("ord_bell"), &parsed("key:bell"))
        .await
        .unwrap()
        .unwrap();
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
        if rings(&bells, Work::Orders).await {
            heard = true;
            break;
        }
    }
    listening.abort();
    assert!(heard, "the other node heard the commit");
}

/// The listener's connection lost without a word (`lose`, once the listener has heard a first
/// announcement): it notices by its silence, listens anew, and hears the announcements after.
pub async fn announcements_are_heard_again_after_the_listener_is_lost_silently(
    writer: &Arc<dyn Store>,
    listener: &Arc<dyn Store>,
    lose: impl FnOnce(),
) {
    use swapd_core::wakeup::Work;
    let listening = tokio::spawn(
        listener
            .listen_for_work()
            .expect("a store shared by several nodes listens"),
    );
    let bells = listener.bells();
    let heard_within = |tries: usize, name: &'static str| {
        let bells = bells.clone();
        async move {
            for n in 0..tries {
                let id = format!("ord_{name}_{n}");
                create_ringing_order(writer.as_ref(), &id, "key:heard", None).await;
                if rings(&bells, Work::Orders).await {
                    return true;
                }
            }
            false
        }
    };
    assert!(
        heard_within(20, "first").await,
        "the listener heard a commit"
    );
    lose();
    // Announced until heard again (each try waits a second; no timing asserted).
    let again = heard_within(60, "again").await;
    listening.abort();
    assert!(
        again,
        "the listener heard commits again after its connection was lost"
    );
}
