//! Live mode against a local fake desk that answers in ChangeNOW's wire format: the market
//! quotes through it, `POST /orders` opens the exchange there (with the fixed rate's `rateId`),
//! and the order engine follows the exchange the test moves through its statuses, through a
//! spell where the desk does not answer, to `completed`, with every event, webhook delivery and
//! e-mail once.

use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use swapd_core::Clock;
use swapd_core::offchain::order::EventType;
use swapd_types::Permission::{OrdersCreate, OrdersRead, OrdersUpdate, PricesRead, WebhooksWrite};
use wiremock::matchers::{body_partial_json, header, method, path, query_param};
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

use crate::support::{Live, Options, Resp, TestKey, TestServer};

const PAYIN: &str = "bc1qar0srrr7xfkvy5l643lydnw9re59gtzzwf5mdq";
const PAYOUT: &str = "0x57f1887a8BF19b14fC0dF6Fd9B2acc9Af147eA85";
const REFUND: &str = "bc1qxy2kgdygjrsqtzq2n0yrf2493p83kkfjhx0wlh";
const PAYIN_HASH: &str = "9b0fc92260312ce44e74ef369f5c66bbb85848f2eddd5a7a1cde251e54ccfdd5";
const PAYOUT_HASH: &str = "0x5c504ed432cb51138bcf09aa5e8a410dd4a1e204ef84bfed1be16dfba1b22060";
const API_KEY: &str = "cn-test-key";

/// The exchange at the fake desk, as the test moves it: its ChangeNOW status, or `None` while
/// the desk answers 503.
#[derive(Clone)]
struct Exchange(Arc<Mutex<Option<&'static str>>>);

impl Exchange {
    fn set(&self, status: Option<&'static str>) {
        *self.0.lock().unwrap() = status;
    }
}

impl Respond for Exchange {
    fn respond(&self, _request: &Request) -> ResponseTemplate {
        let Some(status) = *self.0.lock().unwrap() else {
            return ResponseTemplate::new(503);
        };
        let deposited = !matches!(status, "new" | "waiting");
        let finished = status == "finished";
        let when = |yes: bool, value: Value| if yes { value } else { Value::Null };
        ResponseTemplate::new(200).set_body_json(json!({
            "id": "cn-e2e-1",
            "status": status,
            "fromCurrency": "btc", "fromNetwork": "btc",
            "toCurrency": "usdt", "toNetwork": "eth",
            "expectedAmountFrom": 0.1,
            "expectedAmountTo": 4312.55,
            "amountFrom": when(deposited, json!(0.1)),
            "amountTo": when(finished, json!(4312.549871)),
            "payinAddress": PAYIN,
            "payoutAddress": PAYOUT,
            "payinExtraId": null,
            "payinHash": when(deposited, json!(PAYIN_HASH)),
            "payoutHash": when(finished, json!(PAYOUT_HASH)),
            "refundHash": null,
            "refundAmount": null
        }))
    }
}

fn fixture(name: &str) -> Vec<u8> {
    std::fs::read(format!(
        "{}/../swapd-desks/fixtures/changenow/{name}",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap()
}

/// A fake ChangeNOW: its currencies, a range, fixed and float estimates, one exchange to open
/// (only with the fixed estimate's `rateId` for a fixed rate) and the exchange the test moves.
async fn fake_changenow(exchange: &Exchange) -> MockServer {
    let server = fake_changenow_without_create(exchange).await;
    Mock::given(method("POST"))
        .and(path("/v2/exchange"))
        .and(header("x-changenow-api-key", API_KEY))
        .and(body_partial_json(
            json!({"address": PAYOUT, "refundAddress": REFUND}),
        ))
        .respond_with(ResponseTemplate::new(200).set_body_json(opened_exchange()))
        .expect(1)
        .named("one exchange opened")
        .mount(&server)
        .await;
    server
}

/// ChangeNOW's answer to the create.
fn opened_exchange() -> Value {
    json!({
        "id": "cn-e2e-1", "payinAddress": PAYIN, "payinExtraId": "",
        "fromAmount": 0.1, "toAmount": 4312.55
    })
}

/// The fake ChangeNOW without its create, for tests that answer it their own way.
async fn fake_changenow_without_create(exchange: &Exchange) -> MockServer {
    let server = MockServer::start().await;
    let keyed = || header("x-changenow-api-key", API_KEY);
    Mock::given(method("GET"))
        .and(path("/v2/exchange/currencies"))
        .and(keyed())
        .respond_with(
            ResponseTemplate::new(200).set_body_raw(fixture("currencies.json"), "application/json"),
        )
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .and(path("/v2/exchange/range"))
        .and(keyed())
        .respond_with(ResponseTemplate::new(200).set_body_json(
            json!({"fromCurrency": "btc", "toCurrency": "usdt", "minAmount": 0.0005, "maxAmount": null}),
        ))
        .mount(&server)
        .await;
    for (flow, rate_id) in [
        ("fixed-rate", json!("rate-e2e-1")),
        ("standard", Value::Null),
    ] {
        Mock::given(method("GET"))
            .and(path("/v2/exchange/estimated-amount"))
            .and(query_param("flow", flow))
            .and(keyed())
            .respond_with(ResponseTemplate::new(200).set_body_json(json!({
                "fromAmount": 0.1, "toAmount": 4312.55, "rateId": rate_id,
                "withdrawalFee": 1.5, "flow": flow, "type": "direct"
            })))
            .mount(&server)
            .await;
    }
    Mock::given(method("GET"))
        .and(path("/v2/exchange/by-id"))
        .and(query_param("id", "cn-e2e-1"))
        .and(keyed())
        .respond_with(exchange.clone())
        .mount(&server)
        .await;
    server
}

async fn live_server(desk: &MockServer) -> TestServer {
    live_server_with(desk, |_| {}).await
}

/// A live server in front of `desk`, its ChangeNOW settings changed by `set`.
async fn live_server_with(
    desk: &MockServer,
    set: impl FnOnce(&mut swapd::config::DeskConfig),
) -> TestServer {
    let mut providers = swapd::config::Config::default().providers;
    providers.live = vec!["changenow".into()];
    providers.changenow.base_url = format!("{}/v2/", desk.uri()).parse().unwrap();
    providers.changenow.api_key = Some(API_KEY.parse().unwrap());
    providers.changenow.timeout_ms = 2_000;
    set(&mut providers.changenow);
    TestServer::start_with(Options {
        live: Some(Live {
            providers,
            chains: Default::default(),
        }),
        ..Options::default()
    })
    .await
}

/// The body of a float order of 0.1 BTC to USDT on Ethereum, paid out to PAYOUT, refunded to
/// REFUND.
fn float_order() -> Vec<u8> {
    serde_json::to_vec(
        &json!({"fromCcy": "BTC", "toCcy": "USDTETH", "amount": "0.1",
        "type": "float", "toAddress": PAYOUT, "refundAddress": REFUND}),
    )
    .unwrap()
}

/// That order, created by `key`.
async fn create_float_order(server: &TestServer, key: &TestKey) -> Resp {
    server
        .send(&server.sign(key, "POST", "/api/v3/orders", "", &float_order()))
        .await
}

async fn order(server: &TestServer, key: &TestKey, id: &str) -> Value {
    let resp = server
        .send(&server.sign(key, "GET", &format!("/api/v3/orders/{id}"), "", b""))
        .await;
    assert_eq!(resp.status, 200, "{}", resp.body);
    resp.body["data"].clone()
}

/// One engine pass a little later (past any retry delay).
async fn pass(server: &TestServer) {
    server.clock.advance_ms(10_000);
    server.engine.run_due().await;
}

/// The state readiness shows for `provider`.
async fn readiness(server: &TestServer, provider: &str) -> Value {
    let body: Value = reqwest::get(format!("{}/readyz", server.base))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let providers = body["data"]["providers"].as_array().unwrap().clone();
    providers
        .into_iter()
        .find(|p| p["id"] == provider)
        .unwrap_or_else(|| panic!("{body}"))
}

async fn event_types(server: &TestServer, id: &str) -> Vec<EventType> {
    let events = server
        .state
        .store
        .order_events(&crate::support::parsed(id))
        .await
        .unwrap();
    events.iter().map(|e| e.event_type).collect()
}

/// ChangeNOW's commission is inside its amounts: with its percent set in `[fees]`, an order
/// shows it as the service fee (and no second deduction), and a partner's markup is left out.
/// Once the exchange finished, the commission ChangeNOW reports for it
/// (`partnerInfo.commission` in `GET /v2/exchanges`, under the private key) is the realized row.
#[tokio::test]
async fn changenows_account_commission_is_shown_as_the_service_fee_and_realized_from_its_report() {
    let exchange = Exchange(Arc::new(Mutex::new(Some("waiting"))));
    let desk = fake_changenow(&exchange).await;
    Mock::given(method("GET"))
        .and(path("/v2/exchanges"))
        .and(query_param("requestId", "cn-e2e-1"))
        .and(header("x-changenow-api-key", "cn-private-key"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({"count": 1, "exchanges": [{
            "createdAt": "2026-11-26T12:00:05.000Z", "updatedAt": "2026-11-26T12:09:05.000Z",
            "exchangeId": "cn-e2e-1", "requestId": "cn-e2e-1", "status": "finished",
            "validUntil": null, "flow": "standard",
            "payin": {"currency": "btc", "address": PAYIN, "extraId": null, "amount": 0.1,
                      "expectedAmount": 0.1, "hash": PAYIN_HASH},
            "payout": {"currency": "usdt", "address": PAYOUT, "extraId": null, "hash": PAYOUT_HASH},
            "refund": {"currency": "btc", "address": null, "extra_id": null, "hash": null},
            "partnerInfo": {"commission": {"currency": "usdt", "amount": 21.4, "percent": 0.5},
                            "userId": null, "payload": null}
        }]})))
        .mount(&desk)
        .await;
    let mut providers = swapd::config::Config::default().providers;
    providers.live = vec!["changenow".into()];
    providers.changenow.base_url = format!("{}/v2/", desk.uri()).parse().unwrap();
    providers.changenow.api_key = Some(API_KEY.parse().unwrap());
    providers.changenow.private_api_key = Some("cn-private-key".parse().unwrap());
    let server = TestServer::start_with(Options {
        live: Some(Live {
            providers,
            chains: Default::default(),
        }),
        fees: swapd::config::FeesConfig {
            service_bps: 50,
            ..Default::default()
        },
        ..Options::default()
    })
    .await;
    let key = server
        .key_with_markup(
            &[PricesRead, OrdersCreate, OrdersRead],
            &[],
            &[],
            Default::default(),
            20,
        )
        .await;
    let created = create_float_order(&server, &key).await;
    assert_eq!(created.status, 201, "{}", created.body);
    let created = created.body["data"].clone();
    let fees = created["fees"].as_array().unwrap();
    let service = fees
        .iter()
        .find(|f| f["kind"] == "service")
        .expect("{fees:?}");
    assert_eq!(service["bps"], "50");
    assert!(fees.iter().all(|f| f["kind"] != "partner"), "{fees:?}");
    // The output is ChangeNOW's own: nothing more was taken from it.
    let baseline = {
        let other = fake_changenow(&Exchange(Arc::new(Mutex::new(Some("waiting"))))).await;
        let plain = live_server(&other).await;
        let key = plain.key(&[PricesRead, OrdersCreate, OrdersRead]).await;
        let created = create_float_order(&plain, &key).await;
        created.body["data"]["to"]["amount"].clone()
    };
    assert_eq!(created["to"]["amount"], baseline);

    // Finished: the realized service fee is what ChangeNOW reports it took.
    exchange.set(Some("finished"));
    pass(&server).await;
    let id = created["orderId"].as_str().unwrap();
    assert_eq!(order(&server, &key, id).await["status"], "completed");
    let rows = server
        .state
        .store
        .fee_ledger(Some(&key.owner()), 0, i64::MAX, 100)
        .await
        .unwrap();
    let row = |stage: &str| {
        rows.iter()
            .find(|row| row.party.as_str() == "service" && row.stage.as_str() == stage)
            .map(|row| (row.amount.to_string(), row.currency.code.to_owned()))
            .unwrap_or_else(|| panic!("no {stage} service row in {rows:?}"))
    };
    assert_eq!(
        row("expected"),
        (
            service["amount"].as_str().unwrap().to_owned(),
            "USDTETH".to_owned()
        )
    );
    assert_eq!(row("realized"), ("21.4".to_owned(), "USDTETH".to_owned()));
    // 21.4 against the 21.67 expected is off by more than the default tolerance (100 bps):
    // reconciliation flags it.
    let reconciler = swapd_worker::Reconciler::new(
        server.state.store.clone(),
        server.clock.clone(),
        swapd::config::FeesConfig::default().rules(),
    );
    assert_eq!(reconciler.run().await, Some(1));
}

#[tokio::test]
async fn fixed_and_float_orders_run_at_a_live_desk_through_an_outage_to_completed() {
    for rate_type in ["fixed", "float"] {
        let exchange = Exchange(Arc::new(Mutex::new(Some("waiting"))));
        let desk = fake_changenow(&exchange).await;
        let server = live_server(&desk).await;
        let key = server
            .key(&[
                PricesRead,
                OrdersCreate,
                OrdersRead,
                OrdersUpdate,
                WebhooksWrite,
            ])
            .await;
        let receiver = MockServer::start().await;
        Mock::given(method("POST"))
            .respond_with(ResponseTemplate::new(204))
            .mount(&receiver)
            .await;
        let all: Vec<&str> = {
            use strum::VariantArray;
            EventType::VARIANTS.iter().map(|e| e.as_str()).collect()
        };
        let subscribed = server
            .post(
                &key,
                "/api/v3/webhooks",
                &json!({"url": format!("{}/hooks", receiver.uri()), "events": all}),
            )
            .await;
        assert_eq!(subscribed.status, 201, "{}", subscribed.body);

        let created = server
            .post(
                &key,
                "/api/v3/orders",
                &json!({"fromCcy": "BTC", "toCcy": "USDTETH", "amount": "0.1", "type": rate_type,
                    "toAddress": PAYOUT, "refundAddress": REFUND, "email": "ops@example.com"}),
            )
            .await;
        assert_eq!(created.status, 201, "{}", created.body);
        let created = created.body["data"].clone();
        assert_eq!(created["provider"], "changenow");
        assert_eq!(
            created["from"]["depositAddress"], PAYIN,
            "the desk's address"
        );
        let id = created["orderId"].as_str().unwrap().to_owned();
        // The fixed rate was opened with the estimate's rateId, the float one without.
        let opened: Vec<Value> = desk
            .received_requests()
            .await
            .unwrap()
            .iter()
            .filter(|r| r.url.path() == "/v2/exchange")
            .map(|r| serde_json::from_slice(&r.body).unwrap())
            .collect();
        assert_eq!(opened.len(), 1);
        match rate_type {
            "fixed" => assert_eq!(opened[0]["rateId"], "rate-e2e-1", "{}", opened[0]),
            _ => assert_eq!(opened[0]["rateId"], "", "{}", opened[0]),
        }

        pass(&server).await;
        assert_eq!(
            order(&server, &key, &id).await["status"],
            "awaiting_deposit"
        );

        // The desk is down for a while: the order waits, nothing is written.
        exchange.set(None);
        for _ in 0..2 {
            pass(&server).await;
        }
        assert_eq!(
            order(&server, &key, &id).await["status"],
            "awaiting_deposit"
        );
        assert_eq!(event_types(&server, &id).await.len(), 2);
        let degraded = readiness(&server, "changenow").await;
        assert_eq!(degraded["state"], "degraded", "{degraded}");
        // Readiness is public: in live mode it gives the stable code, not the failure's words.
        assert_eq!(
            degraded["lastFailure"], "provider_unavailable",
            "{degraded}"
        );

        exchange.set(Some("confirming"));
        pass(&server).await;
        let confirming = order(&server, &key, &id).await;
        assert_eq!(confirming["status"], "confirming", "{confirming}");
        assert_eq!(confirming["from"]["received"][0]["txId"], PAYIN_HASH);
        assert_eq!(readiness(&server, "changenow").await["state"], "up");

        // ChangeNOW takes no refunds or emergency answers through its API: refused, unchanged.
        let refused = server
            .post(&key, &format!("/api/v3/orders/{id}/refund"), &json!({}))
            .await;
        refused.expect(409, "desk_action_unsupported");
        assert_eq!(order(&server, &key, &id).await["status"], "confirming");

        // The desk finished between two looks: every status is still reported, once.
        exchange.set(Some("finished"));
        pass(&server).await;
        let done = order(&server, &key, &id).await;
        assert_eq!(done["status"], "completed", "{done}");
        assert_eq!(done["to"]["txId"], PAYOUT_HASH);
        assert_eq!(
            done["to"]["amount"], "4312.549871",
            "what the desk paid out"
        );
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
        pass(&server).await;
        assert_eq!(
            event_types(&server, &id).await.len(),
            6,
            "finished orders rest"
        );

        // Every event is delivered to the partner's webhook, once, in order.
        while server.dispatcher.run_due().await > 0 {}
        let mut delivered: Vec<Value> = receiver
            .received_requests()
            .await
            .unwrap()
            .iter()
            .map(|r| serde_json::from_slice(&r.body).unwrap())
            .collect();
        delivered.sort_by_key(|body| body["sequence"].as_i64());
        let types: Vec<&str> = delivered
            .iter()
            .map(|body| body["type"].as_str().unwrap())
            .collect();
        assert_eq!(
            types,
            [
                "order.created",
                "order.awaiting_deposit",
                "order.updated",
                "order.exchange_started",
                "order.withdraw_started",
                "order.completed"
            ]
        );
        assert_eq!(delivered[5]["data"]["order"]["to"]["txId"], PAYOUT_HASH);

        // Every status (from the creation on) is e-mailed, once.
        server.notifier.run_pending().await;
        server.notifier.run_pending().await;
        let mails = std::fs::read_dir(&server.mail_dir).unwrap().count();
        assert_eq!(mails, 6, "{rate_type}");
    }
}

const FF_KEY: &str = "ff-test-key";
const FF_SECRET: &str = "ff-test-secret";

/// Answers only requests signed as FixedFloat checks them: `X-API-KEY` is the key and
/// `X-API-SIGN` the HMAC-SHA256 of the exact body bytes under the secret.
struct SignedForFixedFloat;

impl wiremock::Match for SignedForFixedFloat {
    fn matches(&self, request: &Request) -> bool {
        let header = |name: &str| {
            request
                .headers
                .get(name)
                .and_then(|v| v.to_str().ok())
                .unwrap_or_default()
                .to_owned()
        };
        let body = String::from_utf8_lossy(&request.body);
        header("x-api-key") == FF_KEY
            && header("x-api-sign") == swapd_desks::fixedfloat::signature(FF_SECRET, &body)
    }
}

/// The FixedFloat order as the test moves it: the recorded answer of its current state.
#[derive(Clone)]
struct FixedFloatOrder(Arc<Mutex<&'static str>>);

impl Respond for FixedFloatOrder {
    fn respond(&self, _request: &Request) -> ResponseTemplate {
        let state = *self.0.lock().unwrap();
        ResponseTemplate::new(200).set_body_raw(
            std::fs::read(format!(
                "{}/../swapd-desks/fixtures/fixedfloat/order-{state}.json",
                env!("CARGO_MANIFEST_DIR")
            ))
            .unwrap(),
            "application/json",
        )
    }
}

async fn fake_fixedfloat(order: &FixedFloatOrder) -> MockServer {
    let server = MockServer::start().await;
    let recorded = |name: &str| {
        std::fs::read(format!(
            "{}/../swapd-desks/fixtures/fixedfloat/{name}",
            env!("CARGO_MANIFEST_DIR")
        ))
        .unwrap()
    };
    for (method_name, file) in [
        ("ccies", "ccies.json"),
        ("price", "price.json"),
        ("create", "order-new.json"),
        ("emergency", "emergency-accepted.json"),
    ] {
        Mock::given(method("POST"))
            .and(path(format!("/api/v2/{method_name}")))
            .and(SignedForFixedFloat)
            .respond_with(
                ResponseTemplate::new(200).set_body_raw(recorded(file), "application/json"),
            )
            .mount(&server)
            .await;
    }
    Mock::given(method("POST"))
        .and(path("/api/v2/order"))
        .and(SignedForFixedFloat)
        .and(body_partial_json(
            json!({"id": "ZG3Y2F", "token": "1LBH03tPYoU2RNBEXBNcl0B6cxrHM5VXloOyTjcd"}),
        ))
        .respond_with(order.clone())
        .mount(&server)
        .await;
    // Anything unsigned, or signed with another secret, is refused as FixedFloat refuses it.
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(401))
        .mount(&server)
        .await;
    server
}

#[tokio::test]
async fn a_fixedfloat_emergency_answered_with_refund_is_passed_on_and_followed_to_refunded() {
    let order_state = FixedFloatOrder(Arc::new(Mutex::new("new")));
    let desk = fake_fixedfloat(&order_state).await;
    let mut providers = swapd::config::Config::default().providers;
    providers.live = vec!["fixedfloat".into()];
    providers.fixedfloat.base_url = format!("{}/api/v2/", desk.uri()).parse().unwrap();
    providers.fixedfloat.api_key = Some(FF_KEY.parse().unwrap());
    providers.fixedfloat.api_secret = Some(FF_SECRET.parse().unwrap());
    let server = TestServer::start_with(Options {
        live: Some(Live {
            providers,
            chains: Default::default(),
        }),
        ..Options::default()
    })
    .await;
    let key = server
        .key(&[PricesRead, OrdersCreate, OrdersRead, OrdersUpdate])
        .await;
    let created = server
        .post(
            &key,
            "/api/v3/orders",
            &json!({"fromCcy": "BTC", "toCcy": "USDTTRC", "amount": "0.5", "type": "float",
                "toAddress": "TAzsQ9Gx8eqFNFSKbeXrbi45CuVPHzA8wr"}),
        )
        .await;
    assert_eq!(created.status, 201, "{}", created.body);
    let id = created.body["data"]["orderId"].as_str().unwrap().to_owned();
    assert_eq!(created.body["data"]["provider"], "fixedfloat");
    // The order's token is a secret: stored sealed, never shown.
    assert!(!created.body.to_string().contains("1LBH03tPYoU2"));
    let stored = server
        .state
        .store
        .order(&crate::support::parsed(&id), &key.owner())
        .await
        .unwrap()
        .unwrap();
    assert!(!stored.desk_token.unwrap().contains("1LBH03tPYoU2"));

    for (state, status) in [("new", "awaiting_deposit"), ("pending", "confirming")] {
        *order_state.0.lock().unwrap() = state;
        pass(&server).await;
        assert_eq!(order(&server, &key, &id).await["status"], status, "{state}");
    }
    // Less than the minimum arrived: FixedFloat holds it; without a refund address the order
    // waits for the customer.
    *order_state.0.lock().unwrap() = "emergency";
    pass(&server).await;
    let held = order(&server, &key, &id).await;
    assert_eq!(held["status"], "emergency", "{held}");
    assert_eq!(held["emergency"]["allowedChoices"], json!(["REFUND"]));

    let answered = server
        .post(
            &key,
            &format!("/api/v3/orders/{id}/emergency"),
            &json!({"choice": "REFUND", "refundAddress": REFUND}),
        )
        .await;
    assert_eq!(answered.status, 200, "{}", answered.body);
    assert_eq!(answered.body["data"]["status"], "refunding");
    pass(&server).await;
    let choices: Vec<Value> = desk
        .received_requests()
        .await
        .unwrap()
        .iter()
        .filter(|r| r.url.path() == "/api/v2/emergency")
        .map(|r| serde_json::from_slice(&r.body).unwrap())
        .collect();
    assert_eq!(choices.len(), 1, "passed on once: {choices:?}");
    assert_eq!(choices[0]["choice"], "REFUND");
    assert_eq!(choices[0]["address"], REFUND);

    for state in ["refunding", "refunded"] {
        *order_state.0.lock().unwrap() = state;
        pass(&server).await;
    }
    let refunded = order(&server, &key, &id).await;
    assert_eq!(refunded["status"], "refunded", "{refunded}");
    assert_eq!(
        refunded["refund"]["txId"],
        "a0b1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b1"
    );
    use EventType::*;
    assert_eq!(
        event_types(&server, &id).await,
        [
            Created,
            AwaitingDeposit,
            Updated,
            Emergency,
            Updated,
            Updated
        ]
    );
}

#[tokio::test]
async fn engines_on_several_nodes_ask_the_desk_once_per_look() {
    let exchange = Exchange(Arc::new(Mutex::new(Some("waiting"))));
    let desk = fake_changenow(&exchange).await;
    let server = live_server(&desk).await;
    let key = server.key(&[PricesRead, OrdersCreate, OrdersRead]).await;
    let created = create_float_order(&server, &key).await;
    assert_eq!(created.status, 201, "{}", created.body);
    // A second worker node's engine on the same database.
    let state = &server.state;
    let other = swapd_worker::OrderEngine::new(
        state.store.clone(),
        state.market.clone(),
        state.clock.clone(),
        server.master.clone(),
        *server.engine.rules(),
    );
    let reads = || async {
        desk.received_requests()
            .await
            .unwrap()
            .iter()
            .filter(|r| r.url.path() == "/v2/exchange/by-id")
            .count()
    };
    for look in 1..=3 {
        server.clock.advance_ms(10_000);
        let (a, b) = tokio::join!(server.engine.run_due(), other.run_due());
        assert_eq!(a + b, 1, "the order was claimed by one engine");
        assert_eq!(reads().await, look, "one read of the exchange per look");
    }
}

/// ChangeNOW's create, answered slowly: each create's body is kept, the exchange is opened
/// at once (it shows in the partner's list), and the answer comes after `delay`.
#[derive(Clone)]
struct SlowCreate {
    bodies: Arc<Mutex<Vec<Value>>>,
    delay: std::time::Duration,
}

impl SlowCreate {
    fn new(delay_ms: u64) -> Self {
        Self {
            bodies: Arc::default(),
            delay: std::time::Duration::from_millis(delay_ms),
        }
    }

    fn creates(&self) -> usize {
        self.bodies.lock().unwrap().len()
    }
}

impl Respond for SlowCreate {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let body: Value = serde_json::from_slice(&request.body).unwrap();
        self.bodies.lock().unwrap().push(body);
        ResponseTemplate::new(200)
            .set_body_json(opened_exchange())
            .set_delay(self.delay)
    }
}

/// `GET /v2/exchanges` under the private key: the exchanges the slow creates opened, as
/// ChangeNOW lists them (with each create's `payload`), after another order's exchange to the
/// same address.
struct PartnerList(SlowCreate);

impl Respond for PartnerList {
    fn respond(&self, _request: &Request) -> ResponseTemplate {
        let item = |id: &str, payload: &Value| {
            json!({
                "createdAt": "2026-11-26T12:00:05.000Z", "updatedAt": "2026-11-26T12:00:05.000Z",
                "exchangeId": id, "requestId": format!("req-{id}"), "status": "waiting",
                "validUntil": null, "flow": "standard",
                "payin": {"currency": "btc", "address": if id == "cn-e2e-1" { PAYIN } else { "bc1q-other" },
                          "extraId": null, "amount": null, "expectedAmount": 0.1, "hash": null},
                "payout": {"currency": "usdt", "address": PAYOUT, "extraId": null, "hash": null},
                "refund": {"currency": "btc", "address": REFUND, "extra_id": null, "hash": null},
                "partnerInfo": {"commission": null, "userId": null, "payload": payload}
            })
        };
        let mut exchanges = vec![item(
            "cn-other",
            &json!({"swapdReference": "ord_someone_else"}),
        )];
        for body in self.0.bodies.lock().unwrap().iter() {
            exchanges.push(item("cn-e2e-1", &body["payload"]));
        }
        ResponseTemplate::new(200)
            .set_body_json(json!({"count": exchanges.len(), "exchanges": exchanges}))
    }
}

#[tokio::test]
async fn retries_of_one_idempotency_key_while_the_desks_create_is_slow_open_one_exchange() {
    let exchange = Exchange(Arc::new(Mutex::new(Some("waiting"))));
    let desk = fake_changenow_without_create(&exchange).await;
    let create = SlowCreate::new(2_500);
    Mock::given(method("POST"))
        .and(path("/v2/exchange"))
        .respond_with(create.clone())
        .mount(&desk)
        .await;
    let server = live_server_with(&desk, |changenow| changenow.timeout_ms = 10_000).await;
    let key = server.key(&[OrdersCreate, OrdersRead]).await;
    let idempotency_key = swapd_client::new_idempotency_key();
    let body = float_order();
    let attempt = || {
        server
            .sign(&key, "POST", "/api/v3/orders", "", &body)
            .set("Idempotency-Key", &idempotency_key)
    };

    // The client gives up while the desk is still opening the exchange...
    let gave_up = server
        .send_within(&attempt(), std::time::Duration::from_millis(300))
        .await;
    assert_eq!(gave_up, None, "the first attempt is still at the desk");
    // ...and retries at once, several times concurrently: each is held back, none reaches
    // the desk.
    let requests = [attempt(), attempt(), attempt(), attempt()];
    let (a, b, c, d) = tokio::join!(
        server.send(&requests[0]),
        server.send(&requests[1]),
        server.send(&requests[2]),
        server.send(&requests[3]),
    );
    for retry in [&a, &b, &c, &d] {
        retry.expect(409, "idempotency_key_in_use");
        assert!(
            retry.headers.contains_key("retry-after"),
            "{:?}",
            retry.headers
        );
    }
    // Once the first attempt is done, a retry gets its answer.
    let mut answer = None;
    for _ in 0..100 {
        let retry = server.send(&attempt()).await;
        if retry.status != 409 {
            answer = Some(retry);
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    let answer = answer.expect("the first attempt's answer");
    assert_eq!(answer.status, 200, "{}", answer.body);
    assert_eq!(answer.headers["idempotent-replayed"], "true");
    let id = answer.body["data"]["orderId"].as_str().unwrap().to_owned();
    assert_eq!(
        order(&server, &key, &id).await["from"]["depositAddress"],
        PAYIN
    );
    assert_eq!(
        create.creates(),
        1,
        "exactly one exchange opened at the desk"
    );
}

#[tokio::test]
async fn a_create_answered_after_swapds_timeout_is_found_in_the_partner_list_and_adopted() {
    let exchange = Exchange(Arc::new(Mutex::new(Some("waiting"))));
    let desk = fake_changenow_without_create(&exchange).await;
    // The desk opens the exchange but answers after swapd's own 300 ms timeout.
    let create = SlowCreate::new(1_500);
    Mock::given(method("POST"))
        .and(path("/v2/exchange"))
        .and(header("x-changenow-api-key", API_KEY))
        .respond_with(create.clone())
        .mount(&desk)
        .await;
    Mock::given(method("GET"))
        .and(path("/v2/exchanges"))
        .and(header("x-changenow-api-key", "cn-private-key"))
        .and(query_param("payoutAddress", PAYOUT))
        .respond_with(PartnerList(create.clone()))
        .mount(&desk)
        .await;
    let server = live_server_with(&desk, |changenow| {
        changenow.timeout_ms = 300;
        changenow.private_api_key = Some("cn-private-key".parse().unwrap());
        changenow.payload_reference = true;
    })
    .await;
    let key = server.key(&[OrdersCreate, OrdersRead]).await;
    let created = create_float_order(&server, &key).await;
    assert_eq!(created.status, 201, "{}", created.body);
    let order = &created.body["data"];
    let id = order["orderId"].as_str().unwrap();
    // The create carried swapd's reference; the lookup found the exchange by it (not the
    // other order's one to the same address) and the order is on it.
    let sent = create.bodies.lock().unwrap().clone();
    assert_eq!(sent.len(), 1, "one create");
    assert_eq!(sent[0]["payload"]["swapdReference"], id);
    assert_eq!(order["from"]["depositAddress"], PAYIN);
    let stored = server
        .state
        .store
        .order_for_page(&crate::support::parsed(id))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(stored.provider_ref, "cn-e2e-1");
    let looked_up = desk
        .received_requests()
        .await
        .unwrap()
        .into_iter()
        .filter(|r| r.url.path() == "/v2/exchanges")
        .count();
    assert!(looked_up >= 1);
}

#[tokio::test]
async fn a_create_answered_after_swapds_timeout_without_a_private_key_opens_no_order() {
    let exchange = Exchange(Arc::new(Mutex::new(Some("waiting"))));
    let desk = fake_changenow_without_create(&exchange).await;
    let create = SlowCreate::new(1_500);
    Mock::given(method("POST"))
        .and(path("/v2/exchange"))
        .respond_with(create.clone())
        .mount(&desk)
        .await;
    let server = live_server_with(&desk, |changenow| changenow.timeout_ms = 300).await;
    let key = server.key(&[OrdersCreate, OrdersRead]).await;
    let created = create_float_order(&server, &key).await;
    // Today's documented behaviour: nothing is stored, the client is told to retry; no
    // payload was sent (the account's partner field is not known to be on).
    assert!(created.status >= 500, "{}", created.body);
    assert!(create.bodies.lock().unwrap()[0].get("payload").is_none());
}

#[tokio::test]
async fn the_engine_backs_off_while_a_desk_fails_and_returns_to_its_cadence_after() {
    let exchange = Exchange(Arc::new(Mutex::new(Some("waiting"))));
    let desk = fake_changenow(&exchange).await;
    let server = live_server(&desk).await;
    let key = server.key(&[OrdersCreate, OrdersRead]).await;
    let created = create_float_order(&server, &key).await;
    assert_eq!(created.status, 201, "{}", created.body);
    let id = created.body["data"]["orderId"].as_str().unwrap().to_owned();
    let poll = 1_000; // the test server's orders.poll_interval_ms
    let stored = || async {
        server
            .state
            .store
            .order_for_page(&crate::support::parsed(&id))
            .await
            .unwrap()
            .unwrap()
    };
    // One look at the scheduled time; the wait until the next.
    let look = || async {
        let due = stored().await.next_check_at_ms.unwrap();
        let now = server.clock.now_ms();
        if due > now {
            server.clock.advance_ms(due - now);
        }
        server.engine.run_due().await;
        let order = stored().await;
        (
            order.next_check_at_ms.unwrap() - server.clock.now_ms(),
            order.desk_failures,
        )
    };
    assert_eq!(look().await, (poll, 0), "the normal cadence");

    // The desk answers 503: the waits grow, each within the upper half of its doubling,
    // and never before the breaker lets the desk be asked again.
    exchange.set(None);
    let mut waits = Vec::new();
    for failures in 1..=8u32 {
        let (wait, counted) = look().await;
        assert_eq!(counted, failures);
        let full = (poll << failures).min(60_000);
        assert!(
            wait >= full / 2 && wait <= full.max(swapd_core::market::breaker::OPEN_FOR_MS),
            "failure {failures}: waited {wait} ms, doubling to {full}"
        );
        waits.push(wait);
    }
    assert!(waits[0] < waits[3] && waits[3] <= waits[7], "{waits:?}");
    assert!(
        *waits.last().unwrap() <= 60_000,
        "capped at the quiet interval: {waits:?}"
    );
    // While failing, the desk was asked once per look (the transport's own retries aside),
    // not at the normal cadence.
    let asked = desk
        .received_requests()
        .await
        .unwrap()
        .iter()
        .filter(|r| r.url.path() == "/v2/exchange/by-id")
        .count();
    assert!(asked <= 3 * 9, "{asked} reads");

    // The first good answer brings the normal cadence back.
    exchange.set(Some("waiting"));
    let (wait, failures) = look().await;
    assert_eq!(failures, 0);
    assert_eq!(wait, poll, "back to the poll interval");
    let health = readiness(&server, "changenow").await;
    assert_eq!(health["state"], "up", "{health}");
}
