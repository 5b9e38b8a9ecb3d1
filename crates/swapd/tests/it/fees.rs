//! Fees in sandbox quotes and routes (docs/fees.md): the operator's service fee and a partner's
//! markup carried by the providers, shown per party, the output after them, and ranked by it.

use alloy_primitives::U256;
use serde_json::Value;
use swapd::app::{App, Roles, Runtime};
use swapd_client::{BusinessClient, Call, Credentials, Surface};
use swapd_core::amount::Amount;
use swapd_types::Permission;
use tokio_util::sync::CancellationToken;

struct Server {
    base: String,
    runtime: Runtime,
    shutdown: CancellationToken,
    _dir: tempfile::TempDir,
}

impl Server {
    async fn start(service_bps: u32) -> Server {
        let dir = tempfile::tempdir().unwrap();
        let mut config = crate::local_config(dir.path());
        config.fees.service_bps = service_bps;
        let app = App::build(Runtime::open(config.clone()).await.unwrap(), Roles::ALL)
            .await
            .unwrap();
        let base = format!("http://{}", app.local_addr().unwrap());
        let shutdown = CancellationToken::new();
        tokio::spawn(app.run_until_stopped(shutdown.clone()));
        let runtime = Runtime::open(config).await.unwrap();
        Server {
            base,
            runtime,
            shutdown,
            _dir: dir,
        }
    }

    /// A client whose key carries `markup_bps`.
    async fn partner(&self, markup_bps: u32) -> BusinessClient {
        let policy = swapd_core::api_keys::ApiKeyPolicy::new(
            "fees",
            [Permission::PricesRead, Permission::OrdersCreate],
            &[],
            &[],
            Default::default(),
        )
        .unwrap()
        .with_markup_bps(markup_bps);
        let issued = swapd_core::api_keys::ApiKey::issue(
            policy,
            &self.runtime.master_key,
            swapd_core::Clock::now_ms(self.runtime.clock.as_ref()),
        );
        self.runtime
            .store
            .insert_api_key(&issued.key)
            .await
            .unwrap();
        BusinessClient::new(&self.base, Credentials::new(issued.key.id, issued.secret)).unwrap()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.shutdown.cancel();
    }
}

/// An ETH amount, at ETH's precision in the catalog (the scale fees are computed at).
fn amount(text: &Value) -> Amount {
    let precision = swapd_core::market::currencies::currency("ETH")
        .unwrap()
        .precision;
    Amount::parse(text.as_str().unwrap(), precision).unwrap()
}

/// `GET /routes` for 0.1 BTC to ETH, as `client`'s key asks it.
async fn btc_eth_routes(client: &BusinessClient) -> Value {
    client
        .call(
            Call::get("/routes")
                .param("fromCcy", "BTC")
                .param("toCcy", "ETH")
                .param("amount", "0.1"),
        )
        .await
        .unwrap()
        .data
}

/// The party fee of `kind` in `fees`, if any.
fn party<'a>(fees: &'a [Value], kind: &str) -> Option<&'a Value> {
    fees.iter().find(|fee| fee["kind"] == kind)
}

/// `gross × bps / 10 000`, rounded down: what a party's fee must be.
fn share(gross: Amount, bps: u32) -> Amount {
    gross.mul_div(
        U256::from(bps),
        U256::from(10_000u32),
        swapd_core::amount::Rounding::Down,
    )
}

#[tokio::test]
async fn routes_and_quotes_show_the_service_fee_and_the_markup_and_the_output_after_them() {
    let server = Server::start(30).await;
    let partner = server.partner(20).await;
    let routes = btc_eth_routes(&partner).await;
    let cards: Vec<&Value> = routes["routes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|card| card["isAvailable"] == true)
        .collect();
    assert!(cards.len() >= 2, "{routes}");
    for card in &cards {
        let fees = card["fees"].as_array().unwrap();
        let service = party(fees, "service").expect("a service fee");
        let markup = party(fees, "partner").expect("the partner's markup");
        assert_eq!(service["bps"], "30");
        assert_eq!(markup["bps"], "20");
        assert_eq!(service["currency"], "ETH");
        assert!(party(fees, "affiliate").is_none(), "no code, no affiliate");
        // The output shown is what is left after the fees; each is its rate of the output
        // before them, rounded down.
        let expected = amount(&card["expectedOutputAmount"]);
        let gross = expected + amount(&service["amount"]) + amount(&markup["amount"]);
        assert_eq!(amount(&service["amount"]), share(gross, 30), "{card}");
        assert_eq!(amount(&markup["amount"]), share(gross, 20), "{card}");
    }
    let outputs: Vec<Amount> = cards
        .iter()
        .map(|card| amount(&card["expectedOutputAmount"]))
        .collect();
    assert!(
        outputs.windows(2).all(|pair| pair[0] >= pair[1]),
        "ranked by the output after fees: {outputs:?}"
    );

    let quote = partner
        .call(
            Call::post(
                "/quotes",
                &serde_json::json!({"fromCcy": "BTC", "toCcy": "ETH", "amount": "0.1"}),
            )
            .unwrap(),
        )
        .await
        .unwrap()
        .data;
    let fees = quote["fees"].as_array().unwrap();
    let gross = amount(&quote["toAmount"])
        + amount(&party(fees, "service").unwrap()["amount"])
        + amount(&party(fees, "partner").unwrap()["amount"]);
    assert_eq!(
        amount(&party(fees, "service").unwrap()["amount"]),
        share(gross, 30)
    );

    // A key without a markup pays the service fee only.
    let plain = server.partner(0).await;
    let routes = btc_eth_routes(&plain).await;
    for card in routes["routes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["isAvailable"] == true)
    {
        let fees = card["fees"].as_array().unwrap();
        assert!(party(fees, "service").is_some());
        assert!(party(fees, "partner").is_none(), "{card}");
    }
}

#[tokio::test]
async fn a_reverse_quote_delivers_at_least_the_amount_asked_after_fees() {
    let server = Server::start(45).await;
    let partner = server.partner(25).await;
    let quote = partner
        .call(
            Call::post(
                "/quotes",
                &serde_json::json!({"fromCcy": "BTC", "toCcy": "ETH", "amount": "2", "direction": "to"}),
            )
            .unwrap(),
        )
        .await
        .unwrap()
        .data;
    assert!(
        amount(&quote["toAmount"]) >= amount(&serde_json::json!("2")),
        "{quote}"
    );
    let fees = quote["fees"].as_array().unwrap();
    assert_eq!(party(fees, "service").unwrap()["bps"], "45");
    assert_eq!(party(fees, "partner").unwrap()["bps"], "25");
}

#[tokio::test]
async fn without_fees_configured_nothing_is_taken() {
    let server = Server::start(0).await;
    let partner = server.partner(0).await;
    let routes = btc_eth_routes(&partner).await;
    for card in routes["routes"].as_array().unwrap() {
        for fee in card["fees"].as_array().unwrap() {
            assert!(
                ["network", "provider"].contains(&fee["kind"].as_str().unwrap()),
                "{fee}"
            );
        }
    }
}

/// A partner with a markup orders, the order completes, and its earnings show the markup
/// expected at creation and realized at completion, exactly the order's fee; another key sees
/// nothing.
#[tokio::test]
async fn a_partners_markup_is_in_the_ledger_and_its_earnings_only() {
    use crate::lifecycle::{create, deposit, order, step};
    use crate::support::{Options, TestServer};
    use swapd_types::Permission::{OrdersCreate, OrdersRead, PricesRead};

    let server = TestServer::start_with(Options {
        service_bps: 30,
        ..Options::default()
    })
    .await;
    let permissions = [PricesRead, OrdersCreate, OrdersRead];
    let partner = server
        .key_with_markup(&permissions, &[], &[], Default::default(), 40)
        .await;
    let created = create(
        &server,
        &partner,
        serde_json::json!({"fromCcy": "BTC", "toCcy": "USDTTRC", "amount": "0.05", "toAddress": crate::lifecycle::TRON_ADDRESS}),
    )
    .await;
    let id = created["orderId"].as_str().unwrap().to_owned();
    let fees = created["fees"].as_array().unwrap();
    let markup = party(fees, "partner")
        .expect("the order keeps its quote's markup")
        .clone();
    assert_eq!(markup["bps"], "40");
    assert!(party(fees, "service").is_some());

    let earnings = |key| {
        let server = &server;
        async move {
            let resp = server
                .send(&server.sign(key, "GET", "/api/v3/earnings", "", b""))
                .await;
            assert_eq!(resp.status, 200, "{}", resp.body);
            resp.body["data"].clone()
        }
    };
    let before = earnings(&partner).await;
    assert_eq!(before["rows"].as_array().unwrap().len(), 1, "{before}");
    assert_eq!(before["rows"][0]["stage"], "expected");
    assert_eq!(before["rows"][0]["orderId"], id.as_str());
    assert_eq!(before["totals"][0]["currency"], "USDTTRC");
    assert_eq!(before["totals"][0]["expected"], markup["amount"]);
    assert_eq!(before["totals"][0]["realized"], "0");

    deposit(&server, &partner, &id, "0.05").await;
    step(&server, 0).await;
    step(&server, 1).await;
    step(&server, 1).await;
    assert_eq!(order(&server, &partner, &id).await["status"], "completed");
    let after = earnings(&partner).await;
    assert_eq!(after["totals"][0]["expected"], markup["amount"], "{after}");
    assert_eq!(after["totals"][0]["realized"], markup["amount"], "{after}");
    let stages: Vec<&str> = after["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|row| row["stage"].as_str().unwrap())
        .collect();
    assert_eq!(stages, ["expected", "realized"]);
    assert_eq!(after["days"].as_array().unwrap().len(), 1);

    let other = server.key(&permissions).await;
    let theirs = earnings(&other).await;
    assert_eq!(
        theirs["rows"],
        serde_json::json!([]),
        "another key sees nothing"
    );
    assert_eq!(theirs["totals"], serde_json::json!([]));

    let bad = server
        .send(&server.sign(&partner, "GET", "/api/v3/earnings", "since=10&until=5", b""))
        .await;
    assert_eq!(bad.status, 400);
    assert_eq!(bad.body["error"]["code"], "validation_failed");
}

/// An affiliate's code takes its share out of the service fee: the user receives the same with
/// or without it; the order made from the routes keeps the code, and the affiliate's rows are
/// in the ledger; unknown and disabled codes are refused.
#[tokio::test]
async fn an_affiliate_share_is_carved_out_of_the_service_fee_and_follows_the_order() {
    use crate::lifecycle::{deposit, order, post, step};
    use crate::support::{Options, TestServer};
    use swapd_core::affiliates::Affiliate;
    use swapd_types::Permission::{OrdersCreate, OrdersRead, PricesRead};

    let server = TestServer::start_with(Options {
        service_bps: 30,
        ..Options::default()
    })
    .await;
    let now = swapd_core::Clock::now_ms(server.clock.as_ref());
    let store = &server.state.store;
    store
        .insert_affiliate(&Affiliate::new("wallet-app", "Wallet App", 2_500, "0xabc", now).unwrap())
        .await
        .unwrap();
    let key = server.key(&[PricesRead, OrdersCreate, OrdersRead]).await;
    let routes = |query: &'static str| {
        let (server, key) = (&server, &key);
        async move {
            server
                .send(&server.sign(key, "GET", "/api/v3/routes", query, b""))
                .await
        }
    };
    let plain = routes("fromCcy=BTC&toCcy=USDTTRC&amount=0.05").await;
    let coded = routes("fromCcy=BTC&toCcy=USDTTRC&amount=0.05&affiliateCode=wallet-app").await;
    assert_eq!(coded.status, 200, "{}", coded.body);
    let card = |resp: &crate::support::Resp| resp.body["data"]["routes"][0].clone();
    let (plain, coded) = (card(&plain), card(&coded));
    assert_eq!(plain["executionProvider"], coded["executionProvider"]);
    assert_eq!(
        plain["expectedOutputAmount"], coded["expectedOutputAmount"],
        "the user receives the same with or without a code"
    );
    let fees = coded["fees"].as_array().unwrap().clone();
    assert_eq!(party(&fees, "service").unwrap()["bps"], "22.5");
    assert_eq!(party(&fees, "affiliate").unwrap()["bps"], "7.5");

    let resolved = post(
        &server,
        &key,
        "/api/v3/routes/resolve",
        &serde_json::json!({"routeQuoteId": coded["routeQuoteId"]}),
    )
    .await;
    assert_eq!(resolved.status, 200, "{}", resolved.body);
    let token = resolved.body["data"]["createToken"].clone();
    let other_code = post(
        &server,
        &key,
        "/api/v3/orders",
        &serde_json::json!({"createToken": token, "toAddress": crate::lifecycle::TRON_ADDRESS, "affiliateCode": "someone-else"}),
    )
    .await;
    assert_eq!(other_code.status, 400, "{}", other_code.body);
    let created = post(
        &server,
        &key,
        "/api/v3/orders",
        &serde_json::json!({"createToken": token, "toAddress": crate::lifecycle::TRON_ADDRESS}),
    )
    .await;
    assert_eq!(created.status, 201, "{}", created.body);
    let created = created.body["data"].clone();
    assert_eq!(
        created["affiliateCode"], "wallet-app",
        "the order takes the routes' code"
    );
    let id = created["orderId"].as_str().unwrap().to_owned();
    deposit(
        &server,
        &key,
        &id,
        created["from"]["amount"].as_str().unwrap(),
    )
    .await;
    step(&server, 0).await;
    step(&server, 1).await;
    step(&server, 1).await;
    assert_eq!(order(&server, &key, &id).await["status"], "completed");
    let rows = store
        .affiliate_ledger("wallet-app", 0, i64::MAX, 100)
        .await
        .unwrap();
    let affiliate = party(&fees, "affiliate").unwrap();
    let seen: Vec<(&str, &str)> = rows
        .iter()
        .map(|r| (r.stage.as_str(), r.amount.as_str()))
        .collect();
    let amount = affiliate["amount"].as_str().unwrap();
    assert_eq!(seen, [("expected", amount), ("realized", amount)]);

    let unknown = routes("fromCcy=BTC&toCcy=USDTTRC&amount=0.05&affiliateCode=nobody").await;
    assert_eq!(unknown.status, 422, "{}", unknown.body);
    assert_eq!(unknown.body["error"]["code"], "affiliate_unknown");
    store
        .set_affiliate_active("wallet-app", false)
        .await
        .unwrap();
    let disabled = routes("fromCcy=BTC&toCcy=USDTTRC&amount=0.05&affiliateCode=wallet-app").await;
    assert_eq!(disabled.body["error"]["code"], "affiliate_unknown");
}
