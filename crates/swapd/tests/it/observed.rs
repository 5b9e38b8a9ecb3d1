//! Best execution by evidence (docs/market.md, "Observed figures", "Ranking"): swaps run
//! through the sandbox desks, each behaving as the test sets it, and the routes, quotes and
//! scorecards that follow from how they ended.

use std::collections::BTreeMap;

use serde_json::{Value, json};
use swapd::config::{MarketConfig, SandboxConfig, SandboxProfile};
use swapd_core::Clock;
use swapd_sandbox::Behaviour;

use crate::lifecycle::{BTC_ADDRESS, deposit, order, step};
use crate::support::{Options, TestKey, TestServer, text};

const ETH_PAYOUT: &str = "0x52908400098527886E0F7030069857D2E4169EE7";
/// A float BTC → USDT (Ethereum) swap, which both sandbox desks trade; atlas quotes it a
/// little better than borealis.
const PAIR: &str = "fromCcy=BTC&toCcy=USDTETH&amount=0.05&type=float";

/// atlas refunds half of its swaps at once; borealis delivers every one, in about ten minutes.
fn behaviours() -> SandboxConfig {
    let punctual = Behaviour::PUNCTUAL;
    SandboxConfig {
        profile: SandboxProfile::Punctual,
        behaviour: BTreeMap::from([
            (
                "atlas".to_owned(),
                Behaviour {
                    refund_bps: 5_000,
                    ..punctual
                },
            ),
            (
                "borealis".to_owned(),
                Behaviour {
                    float_drift_bps: -200,
                    median_secs: 600,
                    p90_secs: 900,
                    ..punctual
                },
            ),
        ]),
    }
}

/// A partner busy enough for forty swaps a minute.
async fn key(server: &TestServer) -> TestKey {
    use swapd_types::Permission::{OrdersCreate, OrdersRead, PricesRead};
    let limits = swapd_core::api_keys::RateLimits {
        per_minute: 10_000,
        per_hour: 100_000,
        weight_per_hour: 1_000_000,
    };
    server
        .key_with(&[PricesRead, OrdersCreate, OrdersRead], &[], &[], limits)
        .await
}

async fn server_with(options: Options) -> TestServer {
    TestServer::start_with(Options {
        sandbox: behaviours(),
        // The test reads all its orders again after every step: no per-address budget.
        ip_limits: (0, swapd_api::ip_limits::DEFAULT_AUTH_FAILURES_PER_MINUTE),
        ..options
    })
    .await
}

/// The usable card of `provider` for [`PAIR`].
async fn card(server: &TestServer, key: &TestKey, provider: &str) -> Value {
    let query = format!("{PAIR}&provider={provider}");
    let routes = server.get(key, "/api/v3/routes", &query).await;
    let card = routes.data(200)["routes"][0].clone();
    assert_eq!(card["isAvailable"], true, "{card}");
    card
}

/// Opens an order on `provider`'s card and has the sandbox deposit what it asks: its id.
async fn swap(server: &TestServer, key: &TestKey, provider: &str) -> String {
    let card = card(server, key, provider).await;
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
            &json!({"createToken": token, "toAddress": ETH_PAYOUT, "refundAddress": BTC_ADDRESS}),
        )
        .await;
    let created = created.data(201).clone();
    let id = text(&created["orderId"]).to_owned();
    deposit(server, key, &id, text(&created["from"]["amount"])).await;
    id
}

/// Moves the sandbox on until every order in `ids` ended; how each ended.
async fn until_ended(server: &TestServer, key: &TestKey, ids: &[String]) -> Vec<String> {
    for _ in 0..60 {
        step(server, 30).await;
        let mut ended = Vec::new();
        for id in ids {
            let status = text(&order(server, key, id).await["status"]).to_owned();
            if matches!(status.as_str(), "completed" | "refunded" | "failed") {
                ended.push(status);
            }
        }
        if ended.len() == ids.len() {
            return ended;
        }
    }
    panic!("the swaps did not end");
}

/// Twenty swaps through each desk, ended, and the figures made anew.
async fn twenty_each(server: &TestServer, key: &TestKey) {
    let mut ids = Vec::new();
    for _ in 0..20 {
        ids.push(swap(server, key, "atlas").await);
        ids.push(swap(server, key, "borealis").await);
    }
    let ended = until_ended(server, key, &ids).await;
    let refunded = ended.iter().filter(|s| *s == "refunded").count();
    assert!(refunded > 0, "atlas refunds some: {ended:?}");
    refresh(server).await;
}

async fn refresh(server: &TestServer) {
    server
        .state
        .observed
        .refresh(server.state.store.as_ref(), server.clock.now_ms())
        .await
        .unwrap();
}

fn providers(routes: &Value) -> Vec<&str> {
    routes["routes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["isAvailable"] == true && c["executionType"] == "offchain")
        .map(|c| text(&c["executionProvider"]))
        .collect()
}

#[tokio::test]
async fn best_ranks_by_what_arrives_and_output_by_what_is_quoted() {
    let server = server_with(Options::default()).await;
    let key = key(&server).await;

    // Before any outcome: no figures, and `best` is the quotes' order.
    let routes = server.get(&key, "/api/v3/routes", PAIR).await;
    let routes = routes.data(200);
    assert_eq!(routes["sort"], "best");
    assert_eq!(providers(routes), ["atlas", "borealis"]);
    assert!(routes["routes"][0]["observed"].is_null());

    // An order that expires without a deposit is the user's: it counts against nobody.
    let card = card(&server, &key, "atlas").await;
    let token = server
        .post(
            &key,
            "/api/v3/routes/resolve",
            &json!({"routeQuoteId": card["routeQuoteId"]}),
        )
        .await
        .data(200)["createToken"]
        .clone();
    let abandoned = server
        .post(
            &key,
            "/api/v3/orders",
            &json!({"createToken": token, "toAddress": ETH_PAYOUT}),
        )
        .await;
    let abandoned = text(&abandoned.data(201)["orderId"]).to_owned();
    step(&server, 2 * 3600).await;
    assert_eq!(order(&server, &key, &abandoned).await["status"], "expired");

    twenty_each(&server, &key).await;

    let sorted = |sort: &'static str| {
        let server = &server;
        let key = &key;
        async move {
            let resp = server
                .get(key, "/api/v3/routes", &format!("{PAIR}&sort={sort}"))
                .await;
            resp.data(200).clone()
        }
    };
    let best = sorted("best").await;
    assert_eq!(providers(&best), ["borealis", "atlas"], "{best}");
    let atlas = best["routes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["executionProvider"] == "atlas")
        .unwrap();
    let observed = &atlas["observed"];
    assert_eq!(
        observed["sampleSize"], 20,
        "the expired order is not counted"
    );
    assert_eq!(observed["scope"], "pair");
    let rate = |text: &str| swapd_core::amount::Amount::parse(text, 4).unwrap();
    assert!(
        rate(crate::support::text(&observed["successRate"])) < rate("0.9"),
        "{observed}"
    );

    // borealis delivers 2 % under its float estimates and takes about ten minutes.
    let borealis = &best["routes"][0];
    let observed = &borealis["observed"];
    assert_eq!(observed["successRate"], "1");
    let drift = observed["deliveredVsQuotedBps"].as_i64().unwrap();
    assert!((-260..=-140).contains(&drift), "{observed}");
    let p50 = observed["p50Seconds"].as_u64().unwrap();
    assert!((300..=1_200).contains(&p50), "{observed}");
    assert_eq!(borealis["estimatedDurationSeconds"], observed["p50Seconds"]);

    assert_eq!(providers(&sorted("output").await), ["atlas", "borealis"]);
    assert_eq!(providers(&sorted("reliable").await), ["borealis", "atlas"]);
    assert_eq!(providers(&sorted("fastest").await), ["atlas", "borealis"]);
    let refused = server
        .get(&key, "/api/v3/routes", &format!("{PAIR}&sort=cheapest"))
        .await;
    refused.expect(400, "validation_failed");
    assert!(
        refused
            .message()
            .contains("`best`, `output`, `fastest`, `reliable`"),
        "{}",
        refused.message()
    );

    // The legacy quote and an order without a createToken take the best offer.
    let quote = server
        .post(
            &key,
            "/api/v3/quotes",
            &json!({"fromCcy": "BTC", "toCcy": "USDTETH", "amount": "0.05", "type": "float"}),
        )
        .await;
    let quote = quote.data(200);
    assert_eq!(quote["provider"], "borealis");
    assert_eq!(quote["observed"]["sampleSize"], 20);
    let direct = server
        .post(
            &key,
            "/api/v3/orders",
            &json!({"fromCcy": "BTC", "toCcy": "USDTETH", "amount": "0.05", "type": "float", "toAddress": ETH_PAYOUT}),
        )
        .await;
    assert_eq!(direct.data(201)["provider"], "borealis");

    // The scorecards say the same, over every partner's swaps.
    let cards = server.get(&key, "/api/v3/providers", "").await;
    let cards = cards.data(200);
    assert_eq!(cards["windowDays"], 30);
    assert_eq!(cards["minSamples"], 20);
    let scorecard = |id: &str| {
        cards["providers"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["provider"] == id)
            .unwrap()
            .clone()
    };
    let atlas = scorecard("atlas");
    assert_eq!(atlas["availability"], "up");
    assert_eq!(atlas["observed"]["sampleSize"], 20);
    assert_eq!(atlas["pairs"][0]["fromCcy"], "BTC");
    assert_eq!(atlas["pairs"][0]["toCcy"], "USDTETH");
    assert!(scorecard("meridian")["observed"].is_null());
    server.stop().await;
}

#[tokio::test]
async fn nodes_on_one_database_see_the_same_figures_after_a_restart() {
    let Some(url) = swapd_store::test_support::postgres_url() else {
        return;
    };
    let schema = swapd_store::test_support::PgTestSchema::create(&url).await;
    let store = swapd_store::open(&schema.database_url(), &Default::default())
        .await
        .unwrap();
    let few = || MarketConfig {
        observed_min_samples: 2,
        ..MarketConfig::default()
    };
    let first = server_with(Options {
        store: Some(store.clone()),
        market: few(),
        ..Options::default()
    })
    .await;
    let partner = key(&first).await;
    let mut ids = Vec::new();
    for _ in 0..3 {
        ids.push(swap(&first, &partner, "borealis").await);
    }
    until_ended(&first, &partner, &ids).await;
    refresh(&first).await;
    let seen = first.get(&partner, "/api/v3/providers", "").await;
    let figures = |cards: &Value| {
        cards["providers"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["provider"] == "borealis")
            .unwrap()["observed"]
            .clone()
    };
    let before = figures(seen.data(200));
    assert_eq!(before["sampleSize"], 3, "{before}");
    first.stop().await;

    // Another node on the same database (or this one, restarted) shows them from its start.
    let second = server_with(Options {
        store: Some(store.clone()),
        market: few(),
        ..Options::default()
    })
    .await;
    let partner = key(&second).await;
    let cards = second.get(&partner, "/api/v3/providers", "").await;
    assert_eq!(figures(cards.data(200)), before);
    second.stop().await;
    store.close().await;
}
