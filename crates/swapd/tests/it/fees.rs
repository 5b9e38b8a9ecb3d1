//! Fees in sandbox quotes and routes (docs/fees.md): the operator's service fee and a partner's
//! markup carried by the providers, shown per party, the output after them, and ranked by it.

use alloy_primitives::U256;
use serde_json::Value;
use swapd_core::amount::Amount;
use swapd_types::Permission;

use crate::support::{Options, TestKey, TestServer};

/// A sandbox server whose operator takes `service_bps`.
async fn fee_server(service_bps: u32) -> TestServer {
    TestServer::start_with(Options {
        fees: swapd::config::FeesConfig {
            service_bps,
            ..Default::default()
        },
        ..Options::default()
    })
    .await
}

/// A partner's key carrying `markup_bps`.
async fn partner(server: &TestServer, markup_bps: u32) -> TestKey {
    server
        .key_with_markup(
            &[Permission::PricesRead, Permission::OrdersCreate],
            &[],
            &[],
            Default::default(),
            markup_bps,
        )
        .await
}

/// What `key` is answered, the data of a success.
async fn data(
    server: &TestServer,
    key: &TestKey,
    method: &str,
    path: &str,
    query: &str,
    body: Value,
) -> Value {
    let body = if body.is_null() {
        Vec::new()
    } else {
        serde_json::to_vec(&body).unwrap()
    };
    let resp = server.call(key, method, path, query, &body).await;
    assert_eq!(resp.status, 200, "{}", resp.body);
    resp.body["data"].clone()
}

/// An ETH amount, at ETH's precision in the catalog (the scale fees are computed at).
fn amount(text: &Value) -> Amount {
    let precision = swapd_core::market::currencies::currency("ETH")
        .unwrap()
        .precision;
    Amount::parse(text.as_str().unwrap(), precision).unwrap()
}

/// `GET /routes` for 0.1 BTC to ETH, as `key` asks it.
async fn btc_eth_routes(server: &TestServer, key: &TestKey) -> Value {
    let query = "fromCcy=BTC&toCcy=ETH&amount=0.1";
    data(server, key, "GET", "/api/v3/routes", query, Value::Null).await
}

/// `POST /quotes` with `body`, as `key` asks it.
async fn quote(server: &TestServer, key: &TestKey, body: Value) -> Value {
    data(server, key, "POST", "/api/v3/quotes", "", body).await
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
    let server = fee_server(30).await;
    let partner = partner(&server, 20).await;
    let routes = btc_eth_routes(&server, &partner).await;
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

    let quote = quote(
        &server,
        &partner,
        serde_json::json!({"fromCcy": "BTC", "toCcy": "ETH", "amount": "0.1"}),
    )
    .await;
    let fees = quote["fees"].as_array().unwrap();
    let gross = amount(&quote["toAmount"])
        + amount(&party(fees, "service").unwrap()["amount"])
        + amount(&party(fees, "partner").unwrap()["amount"]);
    assert_eq!(
        amount(&party(fees, "service").unwrap()["amount"]),
        share(gross, 30)
    );

    // A key without a markup pays the service fee only.
    let plain = self::partner(&server, 0).await;
    let routes = btc_eth_routes(&server, &plain).await;
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
    let server = fee_server(45).await;
    let partner = partner(&server, 25).await;
    let quote = quote(
        &server,
        &partner,
        serde_json::json!({"fromCcy": "BTC", "toCcy": "ETH", "amount": "2", "direction": "to"}),
    )
    .await;
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
    let server = fee_server(0).await;
    let partner = partner(&server, 0).await;
    let routes = btc_eth_routes(&server, &partner).await;
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
    use swapd_types::Permission::{OrdersCreate, OrdersRead, PricesRead};

    let server = TestServer::start_with(Options {
        fees: swapd::config::FeesConfig {
            service_bps: 30,
            ..Default::default()
        },
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
    use crate::lifecycle::{deposit, order, step};
    use swapd_core::affiliates::Affiliate;
    use swapd_types::Permission::{OrdersCreate, OrdersRead, PricesRead};

    let server = TestServer::start_with(Options {
        fees: swapd::config::FeesConfig {
            service_bps: 30,
            ..Default::default()
        },
        ..Options::default()
    })
    .await;
    let now = swapd_core::Clock::now_ms(server.clock.as_ref());
    let store = &server.state.store;
    store
        .insert_affiliate(&Affiliate::new("wallet-app", "Wallet App", 2_500, "0xabc", now).unwrap())
        .await
        .unwrap();
    // A partner with a markup, whose user comes with an affiliate's code.
    let key = server
        .key_with_markup(
            &[PricesRead, OrdersCreate, OrdersRead],
            &[],
            &[],
            Default::default(),
            40,
        )
        .await;
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

    let resolved = server
        .post(
            &key,
            "/api/v3/routes/resolve",
            &serde_json::json!({"routeQuoteId": coded["routeQuoteId"]}),
        )
        .await;
    assert_eq!(resolved.status, 200, "{}", resolved.body);
    let token = resolved.body["data"]["createToken"].clone();
    let other_code = server.post(&key, "/api/v3/orders", &serde_json::json!({"createToken": token, "toAddress": crate::lifecycle::TRON_ADDRESS, "affiliateCode": "someone-else"}))
    .await;
    assert_eq!(other_code.status, 400, "{}", other_code.body);
    let created = server
        .post(
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
    let seen: Vec<(&str, String)> = rows
        .iter()
        .map(|r| (r.stage.as_str(), r.amount.to_string()))
        .collect();
    let amount = affiliate["amount"].as_str().unwrap().to_owned();
    assert_eq!(seen, [("expected", amount.clone()), ("realized", amount)]);
    // The partner's earnings: its markup, expected and realized, exactly; another key's
    // earnings hold nothing of it.
    let markup = party(&fees, "partner").unwrap()["amount"].clone();
    let earnings = server
        .send(&server.sign(&key, "GET", "/api/v3/earnings", "", b""))
        .await;
    assert_eq!(earnings.status, 200, "{}", earnings.body);
    let totals = &earnings.body["data"]["totals"];
    assert_eq!(
        totals,
        &serde_json::json!([{"currency": "USDTTRC", "expected": markup, "realized": markup}])
    );
    let other = server.key(&[OrdersRead]).await;
    let nothing = server
        .send(&server.sign(&other, "GET", "/api/v3/earnings", "", b""))
        .await;
    assert_eq!(nothing.body["data"]["rows"], serde_json::json!([]));

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
