//! Orders from deposit to payout: the sandbox chain, the lifecycle engine and the outbox,
//! driven by a manual clock.

use crate::support::text;
use crate::support::{BLOCK_MS, EMERGENCY_WINDOW_MS, Resp, TestKey, TestServer};
use serde_json::{Value, json};
use swapd_core::offchain::order::EventType;
use swapd_types::Permission::{
    NotificationsWrite, OrdersCreate, OrdersRead, OrdersUpdate, PricesRead,
};

pub(crate) const BTC_ADDRESS: &str = "bc1qar0srrr7xfkvy5l643lydnw9re59gtzzwf5mdq";
pub(crate) const TRON_ADDRESS: &str = "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t";

pub(crate) async fn order(server: &TestServer, key: &TestKey, id: &str) -> Value {
    let path = format!("/api/v3/orders/{id}");
    server.get(key, &path, "").await.data(200).clone()
}

pub(crate) async fn create(server: &TestServer, key: &TestKey, body: Value) -> Value {
    let resp = server.post(key, "/api/v3/orders", &body).await;
    resp.data(201).clone()
}

pub(crate) async fn deposit(server: &TestServer, key: &TestKey, id: &str, amount: &str) -> Value {
    let resp = server
        .post(
            key,
            &format!("/api/v3/sandbox/orders/{id}/deposit"),
            &json!({"amount": amount}),
        )
        .await;
    resp.data(202).clone()
}

/// Lets `blocks` sandbox blocks pass and runs one engine pass.
pub(crate) async fn step(server: &TestServer, blocks: i64) {
    server.clock.advance_ms(blocks * BLOCK_MS);
    server.engine.run_due().await;
}

async fn event_types(server: &TestServer, id: &str) -> Vec<EventType> {
    let events = server
        .state
        .store
        .order_events(&crate::support::parsed(id))
        .await
        .unwrap();
    let sequences: Vec<i64> = events.iter().map(|e| e.sequence).collect();
    assert_eq!(
        sequences,
        (1..=events.len() as i64).collect::<Vec<_>>(),
        "gapless sequence"
    );
    events.iter().map(|e| e.event_type).collect()
}

pub(crate) async fn key(server: &TestServer) -> TestKey {
    server.key(&[PricesRead, OrdersCreate, OrdersRead]).await
}

#[tokio::test]
async fn a_fixed_order_runs_from_deposit_to_payout() {
    let server = TestServer::start().await;
    let key = key(&server).await;
    let created = create(
        &server,
        &key,
        json!({"fromCcy": "BTC", "toCcy": "USDTTRC", "amount": "0.05", "toAddress": TRON_ADDRESS}),
    )
    .await;
    let id = text(&created["orderId"]).to_owned();
    // Opening the exchange wrote nothing at the desk: it records its book at its first look.
    let exchange = format!("{}-{id}", text(&created["provider"]));
    let book = || server.state.store.sandbox_exchange(&exchange);
    assert!(book().await.unwrap().is_none());

    let sent = deposit(&server, &key, &id, "0.05").await;
    assert_eq!(sent["address"], created["from"]["depositAddress"]);
    step(&server, 0).await;
    let recorded = book().await.unwrap().expect("recorded at the first look");
    assert_eq!(
        recorded.deposit_address,
        text(&created["from"]["depositAddress"])
    );
    assert_eq!(recorded.to_address.as_str(), TRON_ADDRESS);
    assert_eq!(
        recorded.from_amount.to_string(),
        text(&created["from"]["amount"])
    );
    let seen = order(&server, &key, &id).await;
    assert_eq!(seen["status"], "confirming");
    assert_eq!(seen["from"]["received"][0]["txId"], sent["txId"]);
    assert_eq!(seen["from"]["received"][0]["confirmations"], 0);
    assert_eq!(seen["from"]["received"][0]["requiredConfirmations"], 2);

    step(&server, 1).await;
    assert_eq!(
        order(&server, &key, &id).await["from"]["received"][0]["confirmations"],
        1
    );
    step(&server, 1).await;
    let done = order(&server, &key, &id).await;
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(
        done["to"]["amount"], created["to"]["amount"],
        "the locked terms are paid"
    );
    let tx = text(&done["to"]["txId"]).to_owned();

    let transfers = server.state.store.sandbox_transfers().await.unwrap();
    let payouts: Vec<_> = transfers
        .iter()
        .filter(|t| t.key == format!("payout:{id}"))
        .collect();
    assert_eq!(payouts.len(), 1);
    assert_eq!(payouts[0].tx_id, tx);
    assert_eq!(payouts[0].address, TRON_ADDRESS);
    assert_eq!(payouts[0].amount, text(&created["to"]["amount"]));

    use EventType::*;
    assert_eq!(
        event_types(&server, &id).await,
        [
            Created,
            AwaitingDeposit,
            Updated,
            Updated,
            Updated,
            ExchangeStarted,
            WithdrawStarted,
            Completed
        ]
    );
    // Finished orders are not looked at again.
    step(&server, 10).await;
    assert_eq!(event_types(&server, &id).await.len(), 8);
}

#[tokio::test]
async fn quiet_looks_move_the_next_look_without_writing_the_order_again() {
    let server = TestServer::start().await;
    let key = key(&server).await;
    let created = create(
        &server,
        &key,
        json!({"fromCcy": "BTC", "toCcy": "USDTTRC", "amount": "0.05", "toAddress": TRON_ADDRESS}),
    )
    .await;
    let id = text(&created["orderId"]).to_owned();
    let stored = || async {
        server
            .state
            .store
            .order_for_page(&crate::support::parsed(&id))
            .await
            .unwrap()
            .unwrap()
    };
    let opened = stored().await;
    let events = event_types(&server, &id).await;
    // The first look a poll interval (1 s here) after the order opened (no deposit can be
    // there before), and two more, each a poll interval after the one before; in between the
    // order is not due: each look set its next one, not the claim's lease.
    assert_eq!(
        server.engine.run_due().await,
        0,
        "not due before its first look"
    );
    server.clock.advance_ms(1_000);
    assert_eq!(server.engine.run_due().await, 1);
    for _ in 0..2 {
        assert_eq!(
            server.engine.run_due().await,
            0,
            "not due before its next look"
        );
        server.clock.advance_ms(1_000);
        assert_eq!(server.engine.run_due().await, 1, "due at its next look");
    }
    // Nothing was written but the time of the next look, and the version each of the three
    // claims moved (so that a save under an ended lease is refused: docs/reliability.md).
    let now = stored().await;
    assert_eq!(
        now.next_check_at_ms,
        Some(swapd_core::Clock::now_ms(server.clock.as_ref()) + 1_000)
    );
    assert_eq!(now.version, opened.version + 3);
    assert_eq!(
        swapd_core::offchain::order::Order {
            next_check_at_ms: opened.next_check_at_ms,
            version: opened.version,
            ..now
        },
        opened
    );
    assert_eq!(event_types(&server, &id).await, events);

    // A sandbox deposit makes the order due at once (it reads the next look rescheduled, not
    // the one its body was last written with), and the look writes the news as before.
    deposit(&server, &key, &id, "0.05").await;
    assert_eq!(server.engine.run_due().await, 1);
    assert!(stored().await.version > opened.version);
    assert_eq!(order(&server, &key, &id).await["status"], "confirming");
}

/// More orders due than one claim takes (100) are all looked at in one pass, not a batch a poll
/// interval.
#[tokio::test]
async fn a_pass_looks_at_every_due_order_batch_after_batch() {
    let server = TestServer::start().await;
    let key = key(&server).await;
    let body =
        json!({"fromCcy": "BTC", "toCcy": "USDTTRC", "amount": "0.05", "toAddress": TRON_ADDRESS});
    for _ in 0..101 {
        create(&server, &key, body.clone()).await;
    }
    server.clock.advance_ms(1_000);
    assert_eq!(server.engine.run_due().await, 101);
    assert_eq!(server.engine.run_due().await, 0, "each looked at once");
}

/// The engine follows the order's desk through the desk port: while the desk cannot be asked,
/// the order waits where it is (never failed for it, no event); once the desk answers again it
/// carries on from what the desk did meanwhile, with every event once.
#[tokio::test]
async fn an_order_whose_desk_is_down_for_a_while_loses_nothing() {
    use swapd_sandbox::Fault;
    let server = TestServer::start().await;
    let key = key(&server).await;
    let created = create(
        &server,
        &key,
        json!({"fromCcy": "BTC", "toCcy": "USDTTRC", "amount": "0.05", "toAddress": TRON_ADDRESS}),
    )
    .await;
    let id = text(&created["orderId"]).to_owned();
    let desk = text(&created["provider"]).to_owned();
    deposit(&server, &key, &id, "0.05").await;
    server
        .faults
        .set(&desk, Fault::Fail("desk down for the test".into()));
    for _ in 0..5 {
        step(&server, 10).await;
        let waiting = order(&server, &key, &id).await;
        assert_eq!(waiting["status"], "awaiting_deposit", "{waiting}");
    }
    assert_eq!(event_types(&server, &id).await.len(), 2);

    server.faults.clear(&desk);
    step(&server, 10).await;
    let done = order(&server, &key, &id).await;
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(done["to"]["amount"], created["to"]["amount"]);
    use EventType::*;
    assert_eq!(
        event_types(&server, &id).await,
        [
            Created,
            AwaitingDeposit,
            Updated,
            ExchangeStarted,
            WithdrawStarted,
            Completed
        ]
    );
    let payouts = server
        .state
        .store
        .sandbox_transfers()
        .await
        .unwrap()
        .into_iter()
        .filter(|t| t.key == format!("payout:{id}"))
        .count();
    assert_eq!(payouts, 1);
}

#[tokio::test]
async fn float_and_reverse_orders_pay_what_arrived() {
    let server = TestServer::start().await;
    let key = key(&server).await;
    let float = create(&server, &key, json!({"fromCcy": "SOL", "toCcy": "USDCSOL", "amount": "10", "type": "float", "toAddress": "9WzDXwBbmkg8ZTbNMqUxvQRAyrZzDsGYdLVL9zYtAWWM"})).await;
    let id = text(&float["orderId"]).to_owned();
    deposit(&server, &key, &id, "12").await;
    step(&server, 0).await;
    step(&server, 1).await;
    let done = order(&server, &key, &id).await;
    assert_eq!(done["status"], "completed", "{done}");
    // A float order exchanges whatever arrived within limits, at the rate of the moment.
    let quote = server
        .post(
            &key,
            "/api/v3/quotes",
            &json!({"fromCcy": "SOL", "toCcy": "USDCSOL", "amount": "12", "type": "float",
        "routeConstraints": {"providers": [done["provider"]]}}),
        )
        .await;
    assert_eq!(done["to"]["amount"], quote.body["data"]["toAmount"]);

    let reverse = create(&server, &key, json!({"fromCcy": "BTC", "toCcy": "USDTTRC", "amount": "1000", "direction": "to", "toAddress": TRON_ADDRESS})).await;
    let id = text(&reverse["orderId"]).to_owned();
    deposit(&server, &key, &id, text(&reverse["from"]["amount"])).await;
    step(&server, 0).await;
    step(&server, 2).await;
    let done = order(&server, &key, &id).await;
    assert_eq!(done["status"], "completed");
    assert_eq!(done["to"]["amount"], "1000");
}

/// Order lifetimes are settings: with `orders.fixed_lifetime_secs = 5` and
/// `orders.float_lifetime_secs = 9`, new orders expire in seconds.
#[tokio::test]
async fn order_lifetimes_come_from_the_configuration() {
    let server = TestServer::start_with(crate::support::Options {
        order_lifetime_secs: (5, 9),
        ..crate::support::Options::default()
    })
    .await;
    let key = key(&server).await;
    let fixed = create(
        &server,
        &key,
        json!({"fromCcy": "BTC", "toCcy": "USDTTRC", "amount": "0.05", "toAddress": TRON_ADDRESS}),
    )
    .await;
    assert_eq!(fixed["expiresAt"], server.now_secs() + 5);
    let float = create(&server, &key, json!({"fromCcy": "BTC", "toCcy": "USDTTRC", "amount": "0.05", "type": "float", "toAddress": TRON_ADDRESS})).await;
    assert_eq!(float["expiresAt"], server.now_secs() + 9);
    server.clock.advance_ms(5_000);
    server.engine.run_due().await;
    let id = |order: &Value| text(&order["orderId"]).to_owned();
    assert_eq!(order(&server, &key, &id(&fixed)).await["status"], "expired");
    assert_eq!(
        order(&server, &key, &id(&float)).await["status"],
        "awaiting_deposit"
    );
    server.clock.advance_ms(4_000);
    server.engine.run_due().await;
    assert_eq!(order(&server, &key, &id(&float)).await["status"], "expired");
}

#[tokio::test]
async fn unpaid_orders_expire_and_late_deposits_are_refunded_after_the_window() {
    let server = TestServer::start().await;
    let key = key(&server).await;
    let created = create(&server, &key, json!({"fromCcy": "BTC", "toCcy": "USDTTRC", "amount": "0.05", "toAddress": TRON_ADDRESS, "refundAddress": BTC_ADDRESS})).await;
    let id = text(&created["orderId"]).to_owned();
    server.clock.advance_ms(30 * 60 * 1000);
    server.engine.run_due().await;
    assert_eq!(order(&server, &key, &id).await["status"], "expired");

    deposit(&server, &key, &id, "0.05").await;
    step(&server, 0).await;
    step(&server, 2).await;
    let held = order(&server, &key, &id).await;
    assert_eq!(held["status"], "emergency", "{held}");
    assert_eq!(held["emergency"]["reasons"], json!(["EXPIRED"]));
    assert_eq!(
        held["emergency"]["allowedChoices"],
        json!(["EXCHANGE", "REFUND"])
    );
    assert_eq!(held["emergency"]["choice"], Value::Null);

    // No choice within the window: the refund address gets the deposit back.
    server.clock.advance_ms(EMERGENCY_WINDOW_MS);
    server.engine.run_due().await;
    let refunded = order(&server, &key, &id).await;
    assert_eq!(refunded["status"], "refunded", "{refunded}");
    assert_eq!(refunded["refund"]["amount"], "0.05");
    assert_eq!(refunded["emergency"]["choice"], "REFUND");
    let refunds: Vec<_> = server
        .state
        .store
        .sandbox_transfers()
        .await
        .unwrap()
        .into_iter()
        .filter(|t| t.key == format!("refund:{id}"))
        .collect();
    assert_eq!(refunds.len(), 1);
    assert_eq!(refunds[0].address, BTC_ADDRESS);
    assert_eq!(refunded["refund"]["txId"], refunds[0].tx_id.as_str());
    use EventType::*;
    let types = event_types(&server, &id).await;
    assert_eq!(types[2], Expired);
    assert!(types.contains(&Emergency));
    assert_eq!(types.last(), Some(&Updated));
}

#[tokio::test]
async fn deposits_outside_the_limits_are_refunded_at_once() {
    let server = TestServer::start().await;
    let key = key(&server).await;
    let created = create(&server, &key, json!({"fromCcy": "BTC", "toCcy": "USDTTRC", "amount": "0.05", "toAddress": TRON_ADDRESS, "refundAddress": BTC_ADDRESS})).await;
    let id = text(&created["orderId"]).to_owned();
    deposit(&server, &key, &id, "0.00001").await;
    step(&server, 0).await;
    step(&server, 2).await;
    let done = order(&server, &key, &id).await;
    assert_eq!(done["status"], "refunded", "{done}");
    assert_eq!(done["emergency"]["reasons"], json!(["LESS", "LIMIT"]));
    assert_eq!(done["emergency"]["allowedChoices"], json!(["REFUND"]));
    assert_eq!(done["to"]["txId"], Value::Null);

    // Without a refund address the order waits for one.
    let created = create(
        &server,
        &key,
        json!({"fromCcy": "BTC", "toCcy": "USDTTRC", "amount": "0.05", "toAddress": TRON_ADDRESS}),
    )
    .await;
    let id = text(&created["orderId"]).to_owned();
    deposit(&server, &key, &id, "0.04").await;
    step(&server, 0).await;
    step(&server, 2).await;
    let held = order(&server, &key, &id).await;
    assert_eq!(held["status"], "emergency");
    assert_eq!(held["emergency"]["reasons"], json!(["LESS"]));
    server.clock.advance_ms(EMERGENCY_WINDOW_MS);
    server.engine.run_due().await;
    assert_eq!(order(&server, &key, &id).await["status"], "emergency");
}

/// A payout that was sent but whose state change was lost (the process died in between) is
/// sent again under the same key: the chain answers with the first transfer, nothing more.
#[tokio::test]
async fn a_repeated_payout_after_a_lost_commit_pays_once() {
    let server = TestServer::start().await;
    let key = key(&server).await;
    let created = create(
        &server,
        &key,
        json!({"fromCcy": "BTC", "toCcy": "USDTTRC", "amount": "0.05", "toAddress": TRON_ADDRESS}),
    )
    .await;
    let id = text(&created["orderId"]).to_owned();
    deposit(&server, &key, &id, "0.05").await;
    step(&server, 0).await;
    server.clock.advance_ms(2 * BLOCK_MS);
    // Run the engine only up to withdrawing: pricing happens, the payout is next.
    let stored = server
        .state
        .store
        .order(&crate::support::parsed(&id), &key.owner())
        .await
        .unwrap()
        .unwrap();
    let chain = swapd_sandbox::SandboxChain::new(server.state.store.clone(), BLOCK_MS);
    // The first attempt sent the payout, then died before saving.
    let first_tx = chain
        .transfer(
            &format!("payout:{id}"),
            "USDTTRC",
            TRON_ADDRESS,
            None,
            text(&created["to"]["amount"]),
            0,
        )
        .await
        .unwrap();
    assert_eq!(stored.status.as_str(), "confirming");
    server.engine.run_due().await;
    let done = order(&server, &key, &id).await;
    assert_eq!(done["status"], "completed");
    assert_eq!(done["to"]["txId"], first_tx.as_str());
    let payouts = server
        .state
        .store
        .sandbox_transfers()
        .await
        .unwrap()
        .into_iter()
        .filter(|t| t.key == format!("payout:{id}"))
        .count();
    assert_eq!(payouts, 1);
}

#[tokio::test]
async fn sandbox_deposits_are_for_the_owner_only() {
    let server = TestServer::start().await;
    let key = key(&server).await;
    let other = server.key(&[OrdersCreate, OrdersRead]).await;
    let created = create(
        &server,
        &key,
        json!({"fromCcy": "BTC", "toCcy": "USDTTRC", "amount": "0.05", "toAddress": TRON_ADDRESS}),
    )
    .await;
    let id = text(&created["orderId"]).to_owned();
    server
        .post(
            &other,
            &format!("/api/v3/sandbox/orders/{id}/deposit"),
            &json!({"amount": "0.05"}),
        )
        .await
        .expect(404, "order_not_found");
    server
        .post(
            &key,
            &format!("/api/v3/sandbox/orders/{id}/deposit"),
            &json!({"amount": "0.000000001"}),
        )
        .await
        .expect(400, "amount_invalid");
    server
        .post(
            &key,
            &format!("/api/v3/sandbox/orders/{id}/deposit"),
            &json!({"amount": "0"}),
        )
        .await
        .expect(400, "amount_invalid");
    assert!(
        server
            .state
            .store
            .sandbox_deposits(text(&created["from"]["depositAddress"]), None)
            .await
            .unwrap()
            .is_empty()
    );
}

pub(crate) async fn held(
    server: &TestServer,
    key: &TestKey,
    amount: &str,
    refund: Option<&str>,
) -> String {
    let mut body =
        json!({"fromCcy": "BTC", "toCcy": "USDTTRC", "amount": "0.05", "toAddress": TRON_ADDRESS});
    if let Some(address) = refund {
        body["refundAddress"] = json!(address);
    }
    let created = create(server, key, body).await;
    let id = text(&created["orderId"]).to_owned();
    deposit(server, key, &id, amount).await;
    step(server, 0).await;
    step(server, 2).await;
    id
}

async fn choose(server: &TestServer, key: &TestKey, id: &str, body: Value) -> Resp {
    server
        .post(key, &format!("/api/v3/orders/{id}/emergency"), &body)
        .await
}

#[tokio::test]
async fn emergency_choices_follow_the_allowed_list() {
    let server = TestServer::start().await;
    let key = server
        .key(&[PricesRead, OrdersCreate, OrdersRead, OrdersUpdate])
        .await;

    // LESS: both choices; EXCHANGE continues at the market rate for what arrived.
    let id = held(&server, &key, "0.04", None).await;
    let order_now = order(&server, &key, &id).await;
    assert_eq!(order_now["emergency"]["reasons"], json!(["LESS"]));
    let chosen = choose(&server, &key, &id, json!({"choice": "EXCHANGE"})).await;
    assert_eq!(chosen.status, 200, "{}", chosen.body);
    assert_eq!(chosen.body["data"]["status"], "exchanging");
    assert_eq!(chosen.body["data"]["emergency"]["choice"], "EXCHANGE");
    server.engine.run_due().await;
    let done = order(&server, &key, &id).await;
    assert_eq!(done["status"], "completed");
    let quote = server
        .post(
            &key,
            "/api/v3/quotes",
            &json!({"fromCcy": "BTC", "toCcy": "USDTTRC", "amount": "0.04", "type": "float",
        "routeConstraints": {"providers": [done["provider"]]}}),
        )
        .await;
    assert_eq!(done["to"]["amount"], quote.body["data"]["toAmount"]);
    // The same choice again changes nothing; another one is a conflict.
    let again = choose(&server, &key, &id, json!({"choice": "EXCHANGE"})).await;
    assert_eq!(again.status, 200);
    assert_eq!(again.body["data"]["status"], "completed");
    choose(
        &server,
        &key,
        &id,
        json!({"choice": "REFUND", "refundAddress": BTC_ADDRESS}),
    )
    .await
    .expect(409, "order_state_conflict");

    // LIMIT: only REFUND, and a refund needs an address.
    let id = held(&server, &key, "0.00001", None).await;
    assert_eq!(
        order(&server, &key, &id).await["emergency"]["allowedChoices"],
        json!(["REFUND"])
    );
    choose(&server, &key, &id, json!({"choice": "EXCHANGE"}))
        .await
        .expect(409, "choice_not_allowed");
    choose(&server, &key, &id, json!({"choice": "REFUND"}))
        .await
        .expect(400, "validation_failed");
    choose(
        &server,
        &key,
        &id,
        json!({"choice": "REFUND", "refundAddress": TRON_ADDRESS}),
    )
    .await
    .expect(400, "address_invalid");
    choose(&server, &key, &id, json!({"choice": "MAYBE"}))
        .await
        .expect(400, "validation_failed");
    let refunding = choose(
        &server,
        &key,
        &id,
        json!({"choice": "REFUND", "refundAddress": BTC_ADDRESS}),
    )
    .await;
    assert_eq!(
        refunding.body["data"]["status"], "refunding",
        "{}",
        refunding.body
    );
    server.engine.run_due().await;
    let refunded = order(&server, &key, &id).await;
    assert_eq!(refunded["status"], "refunded");
    assert_eq!(refunded["refund"]["amount"], "0.00001");
    assert_eq!(refunded["refund"]["address"], BTC_ADDRESS);

    // MORE, refunded in full.
    let id = held(&server, &key, "0.06", Some(BTC_ADDRESS)).await;
    assert_eq!(
        order(&server, &key, &id).await["emergency"]["reasons"],
        json!(["MORE"])
    );
    let refunding = choose(&server, &key, &id, json!({"choice": "REFUND"})).await;
    assert_eq!(refunding.body["data"]["status"], "refunding");
    server.engine.run_due().await;
    assert_eq!(order(&server, &key, &id).await["refund"]["amount"], "0.06");

    // Not in an emergency.
    let created = create(
        &server,
        &key,
        json!({"fromCcy": "BTC", "toCcy": "USDTTRC", "amount": "0.05", "toAddress": TRON_ADDRESS}),
    )
    .await;
    let fresh = text(&created["orderId"]).to_owned();
    choose(&server, &key, &fresh, json!({"choice": "EXCHANGE"}))
        .await
        .expect(409, "order_state_conflict");

    let other = server.key(&[OrdersUpdate]).await;
    choose(&server, &other, &id, json!({"choice": "REFUND"}))
        .await
        .expect(404, "order_not_found");
    let no_update = server.key(&[OrdersCreate, OrdersRead]).await;
    choose(&server, &no_update, &id, json!({"choice": "REFUND"}))
        .await
        .expect(403, "permission_denied");
}

#[tokio::test]
async fn refunds_are_for_deposits_not_yet_exchanged() {
    let server = TestServer::start().await;
    let key = server
        .key(&[PricesRead, OrdersCreate, OrdersRead, OrdersUpdate])
        .await;
    let refund = |id: String, body: Value| {
        let server = &server;
        let key = &key;
        async move {
            server
                .post(key, &format!("/api/v3/orders/{id}/refund"), &body)
                .await
        }
    };
    let created = create(
        &server,
        &key,
        json!({"fromCcy": "BTC", "toCcy": "USDTTRC", "amount": "0.05", "toAddress": TRON_ADDRESS}),
    )
    .await;
    let id = text(&created["orderId"]).to_owned();
    refund(id.clone(), json!({"refundAddress": BTC_ADDRESS}))
        .await
        .expect(409, "order_not_refundable");

    // Seen but not confirmed: can still go back.
    deposit(&server, &key, &id, "0.05").await;
    step(&server, 0).await;
    assert_eq!(order(&server, &key, &id).await["status"], "confirming");
    refund(id.clone(), json!({}))
        .await
        .expect(400, "validation_failed");
    let refunding = refund(id.clone(), json!({"refundAddress": BTC_ADDRESS})).await;
    assert_eq!(refunding.status, 200, "{}", refunding.body);
    assert_eq!(refunding.body["data"]["status"], "refunding");
    step(&server, 2).await;
    let done = order(&server, &key, &id).await;
    assert_eq!(done["status"], "refunded");
    assert_eq!(done["to"]["txId"], Value::Null, "never paid out");
    refund(id.clone(), json!({"refundAddress": BTC_ADDRESS}))
        .await
        .expect(409, "order_not_refundable");

    // Completed orders are not refundable.
    let created = create(
        &server,
        &key,
        json!({"fromCcy": "BTC", "toCcy": "USDTTRC", "amount": "0.05", "toAddress": TRON_ADDRESS}),
    )
    .await;
    let id = text(&created["orderId"]).to_owned();
    deposit(&server, &key, &id, "0.05").await;
    step(&server, 0).await;
    step(&server, 2).await;
    refund(id.clone(), json!({"refundAddress": BTC_ADDRESS}))
        .await
        .expect(409, "order_not_refundable");
    let other = server.key(&[OrdersUpdate]).await;
    server
        .post(
            &other,
            &format!("/api/v3/orders/{id}/refund"),
            &json!({"refundAddress": BTC_ADDRESS}),
        )
        .await
        .expect(404, "order_not_found");
}

/// The subjects of the `.eml` files written so far, sorted.
fn mailed_subjects(server: &TestServer) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(&server.mail_dir) else {
        return Vec::new();
    };
    let mut subjects: Vec<String> = entries
        .map(|e| std::fs::read_to_string(e.unwrap().path()).unwrap())
        .map(|text| {
            assert!(text.contains("To: ops@example.com"), "{text}");
            text.lines()
                .find_map(|l| l.strip_prefix("Subject: "))
                .unwrap()
                .to_owned()
        })
        .collect();
    subjects.sort();
    subjects
}

#[tokio::test]
async fn status_changes_are_emailed_after_an_address_is_attached() {
    let server = TestServer::start().await;
    let key = server
        .key(&[PricesRead, OrdersCreate, OrdersRead, NotificationsWrite])
        .await;
    let created = create(
        &server,
        &key,
        json!({"fromCcy": "BTC", "toCcy": "USDTTRC", "amount": "0.05", "toAddress": TRON_ADDRESS}),
    )
    .await;
    let id = text(&created["orderId"]).to_owned();
    assert_eq!(created["emailAttached"], false);
    server.notifier.run_pending().await;
    assert!(mailed_subjects(&server).is_empty(), "no address, no e-mail");

    let attach = |email: &'static str| {
        let server = &server;
        let key = &key;
        let id = id.clone();
        async move {
            server
                .post(
                    key,
                    &format!("/api/v3/orders/{id}/notifications/email"),
                    &json!({"email": email}),
                )
                .await
        }
    };
    attach("not-an-address")
        .await
        .expect(400, "validation_failed");
    // An address the mailer's own parser refuses is refused here too, not retried forever.
    attach("<script>alert(1)</script>@evil.com")
        .await
        .expect(400, "validation_failed");
    let attached = attach("ops@example.com").await;
    assert_eq!(attached.status, 200, "{}", attached.body);
    assert_eq!(attached.body["data"]["emailAttached"], true);
    // Attaching the same address again changes nothing.
    let again = attach("ops@example.com").await;
    assert_eq!(again.body["data"], attached.body["data"]);
    assert_eq!(event_types(&server, &id).await.len(), 3);

    deposit(&server, &key, &id, "0.05").await;
    step(&server, 0).await;
    step(&server, 2).await;
    assert_eq!(order(&server, &key, &id).await["status"], "completed");
    assert_eq!(server.notifier.run_pending().await, 4);
    assert_eq!(
        mailed_subjects(&server),
        [
            format!("Order {id} is completed"),
            format!("Order {id} is confirming"),
            format!("Order {id} is exchanging"),
            format!("Order {id} is withdrawing"),
        ]
    );
    // Sent once: nothing is pending afterwards.
    assert_eq!(server.notifier.run_pending().await, 0);

    let other = server.key(&[NotificationsWrite]).await;
    server
        .post(
            &other,
            &format!("/api/v3/orders/{id}/notifications/email"),
            &json!({"email": "x@example.com"}),
        )
        .await
        .expect(404, "order_not_found");
    server
        .post(
            &key,
            &format!("/api/v3/orders/{id}/notifications/email"),
            &json!({"email": "x@example.com", "cc": "y"}),
        )
        .await
        .expect(400, "validation_failed");
    let no_permission = server.key(&[OrdersRead]).await;
    server
        .post(
            &no_permission,
            &format!("/api/v3/orders/{id}/notifications/email"),
            &json!({"email": "x@example.com"}),
        )
        .await
        .expect(403, "permission_denied");
}

#[tokio::test]
async fn an_address_given_at_creation_gets_every_status_email() {
    let server = TestServer::start().await;
    let key = key(&server).await;
    let created = create(&server, &key, json!({"fromCcy": "BTC", "toCcy": "USDTTRC", "amount": "0.05", "toAddress": TRON_ADDRESS, "email": "ops@example.com"})).await;
    let id = text(&created["orderId"]).to_owned();
    server.clock.advance_ms(30 * 60 * 1000);
    server.engine.run_due().await;
    server.notifier.run_pending().await;
    assert_eq!(
        mailed_subjects(&server),
        [
            format!("Order {id} is awaiting deposit"),
            format!("Order {id} is expired"),
            format!("Order {id} is new"),
        ]
    );
}

#[tokio::test]
async fn a_deposit_after_the_first_is_sent_back() {
    let server = TestServer::start().await;
    let key = key(&server).await;
    let created = create(&server, &key, json!({"fromCcy": "BTC", "toCcy": "USDTTRC", "amount": "0.05", "toAddress": TRON_ADDRESS, "refundAddress": BTC_ADDRESS})).await;
    let id = text(&created["orderId"]).to_owned();
    deposit(&server, &key, &id, "0.05").await;
    step(&server, 0).await;
    step(&server, 2).await;
    assert_eq!(order(&server, &key, &id).await["status"], "completed");

    // The same address receives again after the order finished.
    let extra = deposit(&server, &key, &id, "0.01").await;
    step(&server, 0).await;
    let seen = order(&server, &key, &id).await;
    assert_eq!(seen["status"], "completed");
    assert_eq!(seen["from"]["received"][1]["txId"], extra["txId"]);
    assert_eq!(seen["from"]["received"][1]["refundTxId"], Value::Null);
    step(&server, 2).await;
    let done = order(&server, &key, &id).await;
    let key_name = format!("refund:{id}:{}", text(&extra["txId"]));
    let refunds: Vec<_> = server
        .state
        .store
        .sandbox_transfers()
        .await
        .unwrap()
        .into_iter()
        .filter(|t| t.key == key_name)
        .collect();
    assert_eq!(refunds.len(), 1);
    assert_eq!(refunds[0].amount, "0.01");
    assert_eq!(refunds[0].address, BTC_ADDRESS);
    assert_eq!(
        done["from"]["received"][1]["refundTxId"],
        refunds[0].tx_id.as_str()
    );
    assert_eq!(done["status"], "completed");
    assert_eq!(
        done["to"]["txId"],
        order(&server, &key, &id).await["to"]["txId"],
        "the payout is untouched"
    );
    // Nothing else happens afterwards.
    let events = event_types(&server, &id).await.len();
    step(&server, 5).await;
    assert_eq!(event_types(&server, &id).await.len(), events);
}

/// Every emergency case with each choice: (deposit, late, reasons, choice, expected outcome).
#[tokio::test]
async fn every_emergency_case_allows_exactly_its_choices() {
    let server = TestServer::start().await;
    let key = server
        .key(&[PricesRead, OrdersCreate, OrdersRead, OrdersUpdate])
        .await;
    let cases: [(&str, bool, Value, &str, Option<&str>); 10] = [
        (
            "0.04",
            false,
            json!(["LESS"]),
            "EXCHANGE",
            Some("completed"),
        ),
        ("0.04", false, json!(["LESS"]), "REFUND", Some("refunded")),
        (
            "0.06",
            false,
            json!(["MORE"]),
            "EXCHANGE",
            Some("completed"),
        ),
        ("0.06", false, json!(["MORE"]), "REFUND", Some("refunded")),
        (
            "0.05",
            true,
            json!(["EXPIRED"]),
            "EXCHANGE",
            Some("completed"),
        ),
        ("0.05", true, json!(["EXPIRED"]), "REFUND", Some("refunded")),
        ("0.00001", false, json!(["LESS", "LIMIT"]), "EXCHANGE", None),
        (
            "0.00001",
            false,
            json!(["LESS", "LIMIT"]),
            "REFUND",
            Some("refunded"),
        ),
        ("5", false, json!(["MORE", "LIMIT"]), "EXCHANGE", None),
        (
            "5",
            false,
            json!(["MORE", "LIMIT"]),
            "REFUND",
            Some("refunded"),
        ),
    ];
    for (amount, late, reasons, choice, outcome) in cases {
        let created = create(&server, &key, json!({"fromCcy": "BTC", "toCcy": "USDTTRC", "amount": "0.05", "toAddress": TRON_ADDRESS})).await;
        let id = text(&created["orderId"]).to_owned();
        if late {
            server.clock.advance_ms(30 * 60 * 1000);
            server.engine.run_due().await;
        }
        deposit(&server, &key, &id, amount).await;
        step(&server, 0).await;
        step(&server, 2).await;
        let held = order(&server, &key, &id).await;
        assert_eq!(held["status"], "emergency", "{amount} late={late}: {held}");
        assert_eq!(
            held["emergency"]["reasons"], reasons,
            "{amount} late={late}"
        );
        let body = json!({"choice": choice, "refundAddress": BTC_ADDRESS});
        let resp = server
            .post(&key, &format!("/api/v3/orders/{id}/emergency"), &body)
            .await;
        match outcome {
            None => {
                resp.expect(409, "choice_not_allowed");
                assert_eq!(order(&server, &key, &id).await["status"], "emergency");
            }
            Some(outcome) => {
                assert_eq!(resp.status, 200, "{amount} {choice}: {}", resp.body);
                server.engine.run_due().await;
                let done = order(&server, &key, &id).await;
                assert_eq!(
                    done["status"], outcome,
                    "{amount} late={late} {choice}: {done}"
                );
                if outcome == "refunded" {
                    assert_eq!(done["refund"]["amount"], amount);
                    assert_eq!(done["to"]["txId"], Value::Null);
                } else {
                    assert!(done["to"]["txId"].is_string());
                    assert_eq!(done["refund"]["txId"], Value::Null);
                }
            }
        }
    }
}

/// The sandbox chain refuses to pay well-known burn addresses: a payout or refund to one fails
/// the order for good, with `order.failed`.
#[tokio::test]
async fn a_refused_payout_or_refund_fails_the_order() {
    let server = TestServer::start().await;
    let key = key(&server).await;
    let burn_tron = "T9yD14Nj9j7xAB4dbGeiX9h8unkKHxuWwb";
    let created = create(
        &server,
        &key,
        json!({"fromCcy": "BTC", "toCcy": "USDTTRC", "amount": "0.05", "toAddress": burn_tron}),
    )
    .await;
    let id = text(&created["orderId"]).to_owned();
    deposit(&server, &key, &id, "0.05").await;
    step(&server, 0).await;
    step(&server, 2).await;
    let failed = order(&server, &key, &id).await;
    assert_eq!(failed["status"], "failed", "{failed}");
    assert!(text(&failed["failureReason"]).contains("burn address"));
    assert_eq!(failed["to"]["txId"], Value::Null);
    assert_eq!(
        event_types(&server, &id).await.last(),
        Some(&EventType::Failed)
    );
    assert!(
        server
            .state
            .store
            .sandbox_transfers()
            .await
            .unwrap()
            .iter()
            .all(|t| t.address != burn_tron)
    );
    // Failed is final.
    step(&server, 5).await;
    assert_eq!(
        event_types(&server, &id).await.last(),
        Some(&EventType::Failed)
    );

    let burn_btc = "1BitcoinEaterAddressDontSendf59kuE";
    let created = create(&server, &key, json!({"fromCcy": "BTC", "toCcy": "USDTTRC", "amount": "0.05", "toAddress": TRON_ADDRESS, "refundAddress": burn_btc})).await;
    let id = text(&created["orderId"]).to_owned();
    deposit(&server, &key, &id, "0.00001").await;
    step(&server, 0).await;
    step(&server, 2).await;
    let failed = order(&server, &key, &id).await;
    assert_eq!(failed["status"], "failed", "{failed}");
    assert_eq!(failed["refund"]["txId"], Value::Null);
}

/// A mail server that is down.
struct MailServerDown;

#[async_trait::async_trait]
impl swapd_core::notify::Mailer for MailServerDown {
    async fn send(
        &self,
        _mail: &swapd_core::notify::Mail,
    ) -> Result<(), swapd_core::notify::MailError> {
        Err(swapd_core::notify::MailError("connection refused".into()))
    }
}

#[tokio::test]
async fn a_status_email_is_tried_a_bounded_number_of_times_then_shown_failed() {
    use swapd_core::notify::MAX_MAIL_ATTEMPTS;
    let server = TestServer::start().await;
    let key = key(&server).await;
    let created = create(
        &server,
        &key,
        json!({"fromCcy": "BTC", "toCcy": "USDTTRC", "amount": "0.05",
        "toAddress": TRON_ADDRESS, "email": "ops@example.com"}),
    )
    .await;
    let id = text(&created["orderId"]).to_owned();
    deposit(&server, &key, &id, "0.05").await;
    step(&server, 0).await;
    let store = server.state.store.clone();
    let pending = store
        .order_mails(&crate::support::parsed(&id))
        .await
        .unwrap();
    assert!(!pending.is_empty(), "a status change with an e-mail");

    let down = swapd_worker::Notifier::new(
        store.clone(),
        std::sync::Arc::new(MailServerDown),
        server.clock.clone(),
    );
    for _ in 0..MAX_MAIL_ATTEMPTS {
        down.run_pending().await;
        server.clock.advance_ms(swapd_worker::LEASE_MS + 1);
    }
    down.run_pending().await;
    let mails = store
        .order_mails(&crate::support::parsed(&id))
        .await
        .unwrap();
    for mail in &mails {
        assert_eq!(mail.attempts, MAX_MAIL_ATTEMPTS, "{mail:?}");
        assert!(
            mail.failed_at_ms.is_some() && mail.sent_at_ms.is_none(),
            "{mail:?}"
        );
    }
    // Failed: not tried again, also not by a notifier whose mail server works.
    server.clock.advance_ms(swapd_worker::LEASE_MS + 1);
    assert_eq!(server.notifier.run_pending().await, 0);
    assert_eq!(
        store
            .order_mails(&crate::support::parsed(&id))
            .await
            .unwrap(),
        mails
    );

    // An address stored before addresses were checked this way fails at once, unsent.
    let mut order = store
        .order_for_page(&crate::support::parsed(&id))
        .await
        .unwrap()
        .unwrap();
    order.email = Some(swapd_core::notify::Email::stored(
        "<script>alert(1)</script>@evil.com".into(),
    ));
    order.version += 1;
    assert!(store.update_order(&order, &[], None).await.unwrap());
    step(&server, 2).await;
    assert_eq!(server.notifier.run_pending().await, 0);
    let later = store
        .order_mails(&crate::support::parsed(&id))
        .await
        .unwrap();
    assert!(
        later.len() > mails.len(),
        "the later status changes have their e-mail"
    );
    for mail in &later[mails.len()..] {
        assert_eq!(mail.attempts, 1, "{mail:?}");
        assert!(mail.failed_at_ms.is_some(), "{mail:?}");
    }
    assert!(
        mailed_subjects(&server).is_empty(),
        "{:?}",
        mailed_subjects(&server)
    );
}
