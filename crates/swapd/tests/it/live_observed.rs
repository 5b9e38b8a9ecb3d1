//! Best execution by evidence in live mode (docs/market.md, "Ranking"): two desks in their
//! recorded wire formats, ChangeNOW quoting 1 % better than FixedFloat but refunding half of
//! its exchanges; after twenty of each, the routes rank by what arrived.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use swapd_core::Clock;
use swapd_types::Permission::{OrdersCreate, OrdersRead, PricesRead};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

use crate::support::{Live, Options, TestKey, TestServer, text};

const CN_KEY: &str = "cn-observed-key";
const FF_KEY: &str = "ff-observed-key";
const FF_SECRET: &str = "ff-observed-secret";
const PAYIN: &str = "bc1q0elzn0s46p3jyg3d7d0pkpdwldy6ggsygjz228";
const PAYOUT: &str = "TAzsQ9Gx8eqFNFSKbeXrbi45CuVPHzA8wr";
const REFUND: &str = "bc1qxy2kgdygjrsqtzq2n0yrf2493p83kkfjhx0wlh";
/// ChangeNOW's quote for 0.5 BTC: 1 % more than FixedFloat's recorded price (18 847.102).
const CN_OUTPUT: f64 = 19_035.57;
const PAIR: &str = "fromCcy=BTC&toCcy=USDTTRC&amount=0.5&type=float";

fn recorded(desk: &str, name: &str) -> Vec<u8> {
    std::fs::read(format!(
        "{}/../swapd-desks/fixtures/{desk}/{name}",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap()
}

/// ChangeNOW's exchanges: opened one by one, each in the status the test gives it.
#[derive(Clone, Default)]
struct ChangeNowBook {
    opened: Arc<AtomicUsize>,
    statuses: Arc<Mutex<HashMap<String, &'static str>>>,
}

impl ChangeNowBook {
    fn set_all(&self, status: impl Fn(usize) -> &'static str) {
        let mut statuses = self.statuses.lock().unwrap();
        for (id, current) in statuses.iter_mut() {
            let n: usize = id.trim_start_matches("cn-").parse().unwrap();
            *current = status(n);
        }
    }
}

struct ChangeNowCreate(ChangeNowBook);

impl Respond for ChangeNowCreate {
    fn respond(&self, _request: &Request) -> ResponseTemplate {
        let n = self.0.opened.fetch_add(1, Ordering::SeqCst);
        let id = format!("cn-{n}");
        self.0
            .statuses
            .lock()
            .unwrap()
            .insert(id.clone(), "waiting");
        ResponseTemplate::new(200).set_body_json(json!({
            "id": id, "payinAddress": PAYIN, "payinExtraId": "",
            "fromAmount": 0.5, "toAmount": CN_OUTPUT
        }))
    }
}

struct ChangeNowExchange(ChangeNowBook);

impl Respond for ChangeNowExchange {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let id = request
            .url
            .query_pairs()
            .find(|(k, _)| k == "id")
            .map(|(_, v)| v.into_owned())
            .unwrap_or_default();
        let Some(status) = self.0.statuses.lock().unwrap().get(&id).copied() else {
            return ResponseTemplate::new(404);
        };
        let deposited = !matches!(status, "new" | "waiting");
        let (finished, refunded) = (status == "finished", status == "refunded");
        let when = |yes: bool, value: Value| if yes { value } else { Value::Null };
        let hash = |n: u8| format!("{n:02x}").repeat(32);
        ResponseTemplate::new(200).set_body_json(json!({
            "id": id, "status": status,
            "fromCurrency": "btc", "fromNetwork": "btc",
            "toCurrency": "usdt", "toNetwork": "trx",
            "expectedAmountFrom": 0.5, "expectedAmountTo": CN_OUTPUT,
            "amountFrom": when(deposited, json!(0.5)),
            "amountTo": when(finished, json!(CN_OUTPUT)),
            "payinAddress": PAYIN, "payoutAddress": PAYOUT, "payinExtraId": null,
            "payinHash": when(deposited, json!(hash(0x9b))),
            "payoutHash": when(finished, json!(hash(0x5c))),
            "refundHash": when(refunded, json!(hash(0x4a))),
            "refundAmount": when(refunded, json!(0.5))
        }))
    }
}

async fn fake_changenow(book: &ChangeNowBook) -> MockServer {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path("/v2/exchange/currencies"))
        .respond_with(
            ResponseTemplate::new(200)
                .set_body_raw(recorded("changenow", "currencies.json"), "application/json"),
        )
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .and(path("/v2/exchange/range"))
        .respond_with(ResponseTemplate::new(200).set_body_json(
            json!({"fromCurrency": "btc", "toCurrency": "usdt", "minAmount": 0.0005, "maxAmount": null}),
        ))
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .and(path("/v2/exchange/estimated-amount"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "fromAmount": 0.5, "toAmount": CN_OUTPUT, "rateId": null,
            "withdrawalFee": 1.5, "flow": "standard", "type": "direct"
        })))
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path("/v2/exchange"))
        .respond_with(ChangeNowCreate(book.clone()))
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .and(path("/v2/exchange/by-id"))
        .respond_with(ChangeNowExchange(book.clone()))
        .mount(&server)
        .await;
    server
}

/// FixedFloat's orders, opened one by one from its recorded answers; every one is done when
/// the test says so.
#[derive(Clone, Default)]
struct FixedFloatBook {
    opened: Arc<AtomicUsize>,
    done: Arc<Mutex<bool>>,
}

/// A recorded FixedFloat order answer, as order `n`.
fn fixedfloat_order(state: &str, n: usize) -> Value {
    let mut answer: Value =
        serde_json::from_slice(&recorded("fixedfloat", &format!("order-{state}.json"))).unwrap();
    answer["data"]["id"] = json!(format!("FF{n:04}"));
    answer["data"]["token"] = json!(format!("token-{n:04}"));
    answer
}

struct FixedFloatCreate(FixedFloatBook);

impl Respond for FixedFloatCreate {
    fn respond(&self, _request: &Request) -> ResponseTemplate {
        let n = self.0.opened.fetch_add(1, Ordering::SeqCst);
        ResponseTemplate::new(200).set_body_json(fixedfloat_order("new", n))
    }
}

struct FixedFloatOrder(FixedFloatBook);

impl Respond for FixedFloatOrder {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let asked: Value = serde_json::from_slice(&request.body).unwrap();
        let n: usize = text(&asked["id"]).trim_start_matches("FF").parse().unwrap();
        let state = if *self.0.done.lock().unwrap() {
            "done"
        } else {
            "new"
        };
        ResponseTemplate::new(200).set_body_json(fixedfloat_order(state, n))
    }
}

async fn fake_fixedfloat(book: &FixedFloatBook) -> MockServer {
    let server = MockServer::start().await;
    for (name, file) in [("ccies", "ccies.json"), ("price", "price.json")] {
        Mock::given(method("POST"))
            .and(path(format!("/api/v2/{name}")))
            .respond_with(
                ResponseTemplate::new(200)
                    .set_body_raw(recorded("fixedfloat", file), "application/json"),
            )
            .mount(&server)
            .await;
    }
    Mock::given(method("POST"))
        .and(path("/api/v2/create"))
        .respond_with(FixedFloatCreate(book.clone()))
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path("/api/v2/order"))
        .respond_with(FixedFloatOrder(book.clone()))
        .mount(&server)
        .await;
    server
}

async fn live_server(
    changenow: &MockServer,
    fixedfloat: &MockServer,
    store: Option<Arc<dyn swapd_core::Store>>,
) -> TestServer {
    let mut providers = swapd::config::Config::default().providers;
    providers.live = vec!["changenow".into(), "fixedfloat".into()];
    providers.changenow.base_url = format!("{}/v2/", changenow.uri()).parse().unwrap();
    providers.changenow.api_key = Some(CN_KEY.parse().unwrap());
    providers.fixedfloat.base_url = format!("{}/api/v2/", fixedfloat.uri()).parse().unwrap();
    providers.fixedfloat.api_key = Some(FF_KEY.parse().unwrap());
    providers.fixedfloat.api_secret = Some(FF_SECRET.parse().unwrap());
    TestServer::start_with(Options {
        live: Some(Live {
            providers,
            chains: Default::default(),
        }),
        store,
        ip_limits: (0, swapd_api::ip_limits::DEFAULT_AUTH_FAILURES_PER_MINUTE),
        ..Options::default()
    })
    .await
}

async fn partner(server: &TestServer) -> TestKey {
    let limits = swapd_core::api_keys::RateLimits {
        per_minute: 10_000,
        per_hour: 100_000,
        weight_per_hour: 1_000_000,
    };
    server
        .key_with(&[PricesRead, OrdersCreate, OrdersRead], &[], &[], limits)
        .await
}

/// An order on `provider`'s card for the pair: its id.
async fn open(server: &TestServer, key: &TestKey, provider: &str) -> String {
    let routes = server
        .get(
            key,
            "/api/v3/routes",
            &format!("{PAIR}&provider={provider}"),
        )
        .await;
    let card = routes.data(200)["routes"][0].clone();
    assert_eq!(card["isAvailable"], true, "{card}");
    let resolved = server
        .post(
            key,
            "/api/v3/routes/resolve",
            &json!({"routeQuoteId": card["routeQuoteId"]}),
        )
        .await;
    let token = resolved.data(200)["createToken"].clone();
    let created = server
        .post(
            key,
            "/api/v3/orders",
            &json!({"createToken": token, "toAddress": PAYOUT, "refundAddress": REFUND}),
        )
        .await;
    let created = created.data(201).clone();
    assert_eq!(created["provider"], provider);
    text(&created["orderId"]).to_owned()
}

fn ranked(routes: &Value) -> Vec<String> {
    routes["routes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["isAvailable"] == true)
        .map(|c| text(&c["executionProvider"]).to_owned())
        .collect()
}

#[tokio::test]
async fn a_desk_that_quotes_better_but_refunds_half_ranks_below_a_reliable_one() {
    let (cn_book, ff_book) = (ChangeNowBook::default(), FixedFloatBook::default());
    let (changenow, fixedfloat) = (
        fake_changenow(&cn_book).await,
        fake_fixedfloat(&ff_book).await,
    );
    let server = live_server(&changenow, &fixedfloat, None).await;
    let key = partner(&server).await;
    let routes = server.get(&key, "/api/v3/routes", PAIR).await;
    assert_eq!(ranked(routes.data(200)), ["changenow", "fixedfloat"]);

    let mut ids = Vec::new();
    for _ in 0..20 {
        ids.push(open(&server, &key, "changenow").await);
        ids.push(open(&server, &key, "fixedfloat").await);
    }
    // ChangeNOW refunds every other exchange; FixedFloat completes each one.
    cn_book.set_all(|n| if n % 2 == 0 { "finished" } else { "refunded" });
    *ff_book.done.lock().unwrap() = true;
    for _ in 0..10 {
        server.clock.advance_ms(10_000);
        server.engine.run_due().await;
    }
    let mut ended = HashMap::<String, usize>::new();
    for id in &ids {
        let resp = server.get(&key, &format!("/api/v3/orders/{id}"), "").await;
        let order = resp.data(200);
        *ended
            .entry(format!(
                "{} {}",
                text(&order["provider"]),
                text(&order["status"])
            ))
            .or_default() += 1;
    }
    assert_eq!(ended["changenow completed"], 10, "{ended:?}");
    assert_eq!(ended["changenow refunded"], 10, "{ended:?}");
    assert_eq!(ended["fixedfloat completed"], 20, "{ended:?}");

    server
        .state
        .observed
        .refresh(server.state.store.as_ref(), server.clock.now_ms())
        .await
        .unwrap();
    let sorted = |sort: &'static str| {
        let (server, key) = (&server, &key);
        async move {
            let resp = server
                .get(key, "/api/v3/routes", &format!("{PAIR}&sort={sort}"))
                .await;
            resp.data(200).clone()
        }
    };
    let best = sorted("best").await;
    assert_eq!(ranked(&best), ["fixedfloat", "changenow"], "{best}");
    let changenow_card = &best["routes"][1];
    assert_eq!(changenow_card["observed"]["sampleSize"], 20);
    assert_eq!(changenow_card["observed"]["successRate"], "0.5");
    // What arrived is what ChangeNOW reported paying: its quote.
    assert_eq!(changenow_card["observed"]["deliveredVsQuotedBps"], 0);
    assert_eq!(best["routes"][0]["observed"]["successRate"], "1");
    assert_eq!(ranked(&sorted("output").await), ["changenow", "fixedfloat"]);
    assert_eq!(
        ranked(&sorted("reliable").await),
        ["fixedfloat", "changenow"]
    );
    // Both deliver in the same observed time here: `fastest` falls back on `best`.
    assert_eq!(
        ranked(&sorted("fastest").await),
        ["fixedfloat", "changenow"]
    );

    // A restarted node (the same database) ranks the same from its start.
    let store = server.state.store.clone();
    let restarted = live_server(&changenow, &fixedfloat, Some(store)).await;
    let key = partner(&restarted).await;
    let routes = restarted.get(&key, "/api/v3/routes", PAIR).await;
    assert_eq!(ranked(routes.data(200)), ["fixedfloat", "changenow"]);
    restarted.stop().await;
    server.stop().await;
}
