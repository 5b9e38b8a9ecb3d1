//! Market data and routing on `/api/v3`: catalog, tokens, quotes, routes and resolution
//! against a running server with the sandbox providers.

use crate::support::text;
use std::collections::BTreeSet;
use std::time::Duration;

use crate::support::{Options, Resp, TestServer};
use serde_json::{Value, json};
use swapd_core::api_keys::RateLimits;
use swapd_core::market::routes::{RedeemError, hash_create_token};
use swapd_sandbox::{Fault, PROVIDER_IDS};
use swapd_types::Permission::{OrdersCreate, PricesRead};

#[tokio::test]
async fn catalog_lists_currencies_with_their_networks_and_limits() {
    let server = TestServer::start().await;
    let key = server.key(&[PricesRead]).await;
    let resp = server.get(&key, "/api/v3/currencies", "").await;
    let catalog = resp.data(200);
    assert_eq!(catalog["schemaVersion"], 1);
    assert_eq!(catalog["degraded"], false);
    assert_eq!(catalog["reason"], Value::Null);
    assert_eq!(catalog["source"], "live");
    let currencies = catalog["currencies"].as_array().unwrap();
    assert!(currencies.len() >= 20);
    assert_eq!(catalog["count"], currencies.len());
    let by_code = |code: &str| {
        currencies
            .iter()
            .find(|c| c["code"] == code)
            .unwrap()
            .clone()
    };
    let networks: BTreeSet<&str> = currencies.iter().map(|c| text(&c["network"])).collect();
    for network in [
        "BTC", "ETH", "SOL", "TRX", "XRP", "LTC", "BSC", "BASE", "ARBITRUM", "POLYGON",
    ] {
        assert!(networks.contains(network), "{network}");
    }
    let xrp = by_code("XRP");
    assert_eq!(xrp["tagRequired"], true);
    assert_eq!(xrp["tagName"], "destination tag");
    assert_eq!(xrp["chainNamespace"], "xrpl");
    let usdt = by_code("USDTTRC");
    assert_eq!(
        usdt["contractAddress"],
        "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t"
    );
    assert_eq!(usdt["tagRequired"], false);
    let usdc_base = by_code("USDCBASE");
    assert_eq!(usdc_base["chainId"], 8453);
    assert_eq!(usdc_base["decimals"], 6);
    let btc = by_code("BTC");
    assert_eq!(btc["precision"], 8);
    assert_eq!(btc["contractAddress"], Value::Null);
    for currency in currencies {
        let min: f64 = text(&currency["min"]).parse().unwrap();
        let max: f64 = text(&currency["max"]).parse().unwrap();
        assert!(min > 0.0 && min < max, "{currency}");
        assert_eq!(currency["send"], true);
        assert_eq!(currency["receive"], true);
    }

    server
        .get(&key, "/api/v3/currencies", "x=1")
        .await
        .expect(400, "validation_failed");
}

#[tokio::test]
async fn catalog_serves_last_good_answers_when_a_refresh_fails() {
    let server = TestServer::start().await;
    let key = server.key(&[PricesRead]).await;
    let live = server.get(&key, "/api/v3/currencies", "").await;
    let live_count = live.data(200)["count"].clone();

    server
        .faults
        .set("atlas", Fault::Fail("maintenance window".into()));
    server.clock.advance_ms(61_000);
    let resp = server.get(&key, "/api/v3/currencies", "").await;
    let catalog = resp.data(200);
    assert_eq!(catalog["degraded"], true);
    assert_eq!(catalog["source"], "cache");
    assert!(text(&catalog["reason"]).contains("atlas: maintenance window"));
    assert_eq!(catalog["count"], live_count);
    // XRP and TRX come from atlas alone: still listed from its last good answer.
    assert!(
        catalog["currencies"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["code"] == "XRP")
    );

    server.faults.clear("atlas");
    server.clock.advance_ms(11_000);
    let resp = server.get(&key, "/api/v3/currencies", "").await;
    assert_eq!(resp.data(200)["source"], "live");
    assert_eq!(resp.data(200)["degraded"], false);
}

#[tokio::test]
async fn catalog_starts_from_the_shipped_snapshot_when_no_provider_answers() {
    let server = TestServer::start().await;
    for id in PROVIDER_IDS {
        server.faults.set(id, Fault::Fail("unreachable".into()));
    }
    let key = server.key(&[PricesRead]).await;
    let resp = server.get(&key, "/api/v3/currencies", "").await;
    let catalog = resp.data(200);
    assert_eq!(catalog["source"], "snapshot");
    assert_eq!(catalog["degraded"], true);
    assert!(text(&catalog["reason"]).contains("unreachable"));
    assert!(catalog["count"].as_u64().unwrap() >= 20);
}

#[tokio::test]
async fn token_endpoints_serve_the_shipped_list() {
    let server = TestServer::start().await;
    let key = server.key(&[PricesRead]).await;

    let resp = server
        .get(&key, "/api/v3/tokens/popular", "chain=BASE")
        .await;
    let tokens = resp.data(200)["tokens"].as_array().unwrap().clone();
    assert!(!tokens.is_empty());
    assert!(
        tokens
            .iter()
            .all(|t| t["chain"] == "BASE" && t["chainId"] == 8453)
    );
    let usdc = tokens.iter().find(|t| t["symbol"] == "USDC").unwrap();
    assert_eq!(
        usdc["address"],
        "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913"
    );
    assert_eq!(usdc["currencyCode"], "USDCBASE");
    // Chain ids and CAIP-2 ids name the same chain.
    let by_id = server
        .get(&key, "/api/v3/tokens/popular", "chain=eip155%3A8453")
        .await;
    assert_eq!(
        by_id.data(200)["tokens"].as_array().unwrap().len(),
        tokens.len()
    );
    server
        .get(&key, "/api/v3/tokens/popular", "chain=DOGE")
        .await
        .expect(400, "validation_failed");
    let all = server.get(&key, "/api/v3/tokens/popular", "").await;
    assert!(all.data(200)["count"].as_u64().unwrap() > tokens.len() as u64);

    let resp = server
        .get(&key, "/api/v3/tokens/search", "q=usdc&chain=solana")
        .await;
    let found = &resp.data(200)["tokens"];
    assert_eq!(
        found[0]["address"],
        "EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v"
    );
    let resp = server
        .get(&key, "/api/v3/tokens/search", "q=wrapped&limit=2")
        .await;
    assert_eq!(resp.data(200)["count"], 2);
    server
        .get(&key, "/api/v3/tokens/search", "")
        .await
        .expect(400, "validation_failed");
    server
        .get(&key, "/api/v3/tokens/search", "q=usdc&limit=0")
        .await
        .expect(400, "validation_failed");

    // EVM addresses match in any case; a bad checksum does not matter for a lookup.
    for address in [
        "0xA0b86991c6218b36c1d19D4a2e9Eb0cE3606eB48",
        "0xa0b86991c6218b36c1d19d4a2e9eb0ce3606eb48",
        "0xA0B86991C6218B36C1D19D4A2E9EB0CE3606EB48",
    ] {
        let resp = server
            .get(
                &key,
                "/api/v3/tokens/by-address",
                &format!("chain=ETH&address={address}"),
            )
            .await;
        assert_eq!(resp.data(200)["symbol"], "USDC");
        assert_eq!(
            resp.data(200)["address"],
            "0xA0b86991c6218b36c1d19D4a2e9Eb0cE3606eB48"
        );
    }
    // Solana mints match exactly.
    let resp = server
        .get(
            &key,
            "/api/v3/tokens/by-address",
            "chain=SOL&address=JUPyiwrYJFskUPiHa7hkeR8VUtAeFoSYbKedZNsDvCN",
        )
        .await;
    assert_eq!(resp.data(200)["symbol"], "JUP");
    let lower = server
        .get(
            &key,
            "/api/v3/tokens/by-address",
            "chain=SOL&address=jupyiwryjfskupiha7hker8vutaefoSYbkedznsdvcn",
        )
        .await;
    assert_ne!(lower.status, 200, "{}", lower.body);
    server
        .get(
            &key,
            "/api/v3/tokens/by-address",
            "chain=ETH&address=0x0000000000000000000000000000000000000001",
        )
        .await
        .expect(404, "not_found");
    server
        .get(
            &key,
            "/api/v3/tokens/by-address",
            "chain=ETH&address=0x1234",
        )
        .await
        .expect(400, "address_invalid");
    server
        .get(&key, "/api/v3/tokens/by-address", "chain=ETH")
        .await
        .expect(400, "validation_failed");

    let logo = server
        .get(
            &key,
            "/api/v3/tokens/logo",
            "chain=BASE&address=0x833589fcd6edb6e08f4c7c32d4f71b54bda02913",
        )
        .await;
    let image = text(&logo.data(200)["image"]).to_owned();
    assert!(image.starts_with("data:image/svg+xml;base64,"));
    assert_eq!(logo.data(200)["symbol"], "USDC");
    assert_eq!(logo.data(200)["generated"], true);
    use base64::Engine;
    let svg = base64::engine::general_purpose::STANDARD
        .decode(image.trim_start_matches("data:image/svg+xml;base64,"))
        .unwrap();
    assert!(String::from_utf8(svg).unwrap().contains(">USDC</text>"));
    let again = server
        .get(
            &key,
            "/api/v3/tokens/logo",
            "chain=8453&address=0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913",
        )
        .await;
    assert_eq!(
        text(&again.data(200)["image"]),
        image,
        "deterministic, case-insensitive"
    );
    let unknown = server
        .get(
            &key,
            "/api/v3/tokens/logo",
            "chain=BASE&address=0x00000000000000000000000000000000000000aa",
        )
        .await;
    assert_ne!(text(&unknown.data(200)["image"]), image);
}

fn quote_body(from: &str, to: &str, amount: &str, direction: &str, rate: &str) -> Value {
    json!({"fromCcy": from, "toCcy": to, "amount": amount, "direction": direction, "type": rate})
}

#[tokio::test]
async fn quotes_price_fixed_and_float_and_reverse_exactly() {
    let server = TestServer::start().await;
    let key = server.key(&[PricesRead]).await;
    let fixed = server
        .post(
            &key,
            "/api/v3/quotes",
            &quote_body("BTC", "USDTTRC", "0.05", "from", "fixed"),
        )
        .await;
    let fixed = fixed.data(200).clone();
    assert!(text(&fixed["quoteId"]).starts_with("qte_"));
    assert_eq!(fixed["fromAmount"], "0.05");
    assert_eq!(fixed["direction"], "from");
    assert_eq!(fixed["type"], "fixed");
    assert_eq!(fixed["networkFee"], "1");
    assert_eq!(fixed["expiresAt"], server.now_secs() + 120);
    for field in ["toAmount", "rate", "min", "max", "provider"] {
        assert!(fixed[field].is_string(), "{field}");
    }
    let float = server
        .post(
            &key,
            "/api/v3/quotes",
            &quote_body("BTC", "USDTTRC", "0.05", "from", "float"),
        )
        .await;
    let to_fixed: f64 = text(&fixed["toAmount"]).parse().unwrap();
    let to_float: f64 = text(&float.data(200)["toAmount"]).parse().unwrap();
    assert!(
        to_float > to_fixed,
        "float {to_float} should beat fixed {to_fixed}"
    );

    let reverse = server
        .post(
            &key,
            "/api/v3/quotes",
            &quote_body("BTC", "USDTTRC", text(&fixed["toAmount"]), "to", "fixed"),
        )
        .await;
    assert_eq!(reverse.data(200)["fromAmount"], "0.05");
    assert_eq!(reverse.data(200)["toAmount"], fixed["toAmount"]);
    assert_eq!(reverse.data(200)["direction"], "to");

    // Defaults: direction from, type fixed.
    let defaults = server
        .post(
            &key,
            "/api/v3/quotes",
            &json!({"fromCcy": "BTC", "toCcy": "USDTTRC", "amount": "0.05"}),
        )
        .await;
    assert_eq!(defaults.data(200)["toAmount"], fixed["toAmount"]);
    assert_eq!(defaults.data(200)["type"], "fixed");
}

/// Quoting `to` the output of a `from` quote gives back the original amount: exactly when one
/// unit of output is worth less than one of input, and otherwise an input that buys the same
/// output (never more than the original).
#[tokio::test]
async fn reverse_quotes_round_trip_forward_ones() {
    let server = TestServer::start().await;
    let limits = RateLimits {
        per_minute: 10_000,
        per_hour: 100_000,
        weight_per_hour: 1_000_000,
    };
    let key = server.key_with(&[PricesRead], &[], &[], limits).await;
    // (from, to, whole-amount range, input precision, whether one output unit is worth less
    // than one input unit, which makes the round trip exact)
    let pairs = [
        ("USDTTRC", "BTC", 100u64, 90_000u64, 6u32, false),
        ("BTC", "USDTTRC", 0, 2, 8, true),
        ("ETH", "SOL", 0, 25, 8, false),
        ("SOL", "USDCSOL", 1, 400, 6, true),
        ("XRP", "USDCSOL", 10, 40_000, 6, false),
        ("USDCETH", "DAIETH", 20, 90_000, 6, false),
    ];
    let mut seed: u64 = 0x5eed;
    let mut checked = 0;
    for (from, to, low, high, precision, exact) in pairs {
        for _ in 0..6 {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let whole = low + (seed >> 33) % (high - low);
            let fraction = (seed >> 7) % 10u64.pow(precision);
            let amount = format!("{whole}.{fraction:0width$}", width = precision as usize);
            let amount = amount
                .trim_end_matches('0')
                .trim_end_matches('.')
                .to_owned();
            for rate in ["fixed", "float"] {
                let forward = server
                    .post(
                        &key,
                        "/api/v3/quotes",
                        &quote_body(from, to, &amount, "from", rate),
                    )
                    .await;
                if forward.status == 422 {
                    continue; // outside the providers' limits
                }
                let forward = forward.data(200).clone();
                let body = quote_body(from, to, text(&forward["toAmount"]), "to", rate);
                let routes_constraint = json!({"providers": [forward["provider"]]});
                let mut body = body;
                body["routeConstraints"] = routes_constraint;
                let reverse = server.post(&key, "/api/v3/quotes", &body).await;
                let reverse = reverse.data(200);
                assert_eq!(reverse["toAmount"], forward["toAmount"]);
                let back = text(&reverse["fromAmount"]);
                let sent: f64 = amount.parse().unwrap();
                let got: f64 = back.parse().unwrap();
                assert!(got <= sent, "{from}->{to} {amount}: reverse asks {back}");
                // The reverse input buys the same output forward.
                let check = server
                    .post(&key, "/api/v3/quotes", &{
                        let mut b = quote_body(from, to, back, "from", rate);
                        b["routeConstraints"] = json!({"providers": [forward["provider"]]});
                        b
                    })
                    .await;
                assert_eq!(
                    check.data(200)["toAmount"],
                    forward["toAmount"],
                    "{from}->{to} {amount}"
                );
                checked += 1;
                if exact {
                    assert_eq!(back, amount, "{from}->{to}");
                }
            }
        }
    }
    assert!(
        checked >= 60,
        "only {checked} of 72 cases were within the limits"
    );
}

#[tokio::test]
async fn quote_errors_name_the_problem() {
    let server = TestServer::start().await;
    let key = server.key(&[PricesRead]).await;
    let quote = |body: Value| {
        let server = &server;
        let key = &key;
        async move { server.post(key, "/api/v3/quotes", &body).await }
    };
    quote(quote_body("BTC", "DOGE", "1", "from", "fixed"))
        .await
        .expect(422, "pair_unsupported");
    let onchain_only = quote(quote_body("JUPSOL", "USDCSOL", "100", "from", "fixed")).await;
    onchain_only.expect(422, "pair_unsupported");
    assert!(
        onchain_only.message().contains("GET /routes"),
        "{}",
        onchain_only.message()
    );
    quote(quote_body("BTC", "BTC", "1", "from", "fixed"))
        .await
        .expect(422, "pair_unsupported");

    let range = quote(quote_body("BTC", "ETH", "500", "from", "fixed")).await;
    range.expect(422, "amount_out_of_range");
    let message = range.message().to_owned();
    let numbers: Vec<f64> = message
        .split_whitespace()
        .filter_map(|w| w.parse().ok())
        .collect();
    assert_eq!(numbers.len(), 2, "{message}");
    assert!(
        numbers[0] < numbers[1] && message.ends_with("BTC"),
        "{message}"
    );
    quote(quote_body("BTC", "ETH", "0.00001", "from", "fixed"))
        .await
        .expect(422, "amount_out_of_range");

    for amount in ["0.000000001", "1e3", "-1", "0", "", "1.", " 1"] {
        quote(quote_body("BTC", "ETH", amount, "from", "fixed"))
            .await
            .expect(400, "amount_invalid");
    }
    quote(json!({"fromCcy": "BTC", "toCcy": "ETH", "amount": 1}))
        .await
        .expect(400, "validation_failed");
    quote(json!({"fromCcy": "BTC", "toCcy": "ETH", "amount": "1", "quoteId": "x"}))
        .await
        .expect(400, "validation_failed");
    quote(json!({"fromCcy": "BTC", "toCcy": "ETH", "amount": "1", "direction": "sideways"}))
        .await
        .expect(400, "validation_failed");
    quote(json!({"fromCcy": "BTC", "toCcy": "ETH", "amount": "0.1", "refundAddress": "0xabc"}))
        .await
        .expect(400, "address_invalid");
    let ok = quote(json!({"fromCcy": "BTC", "toCcy": "ETH", "amount": "0.1", "refundAddress": "bc1qar0srrr7xfkvy5l643lydnw9re59gtzzwf5mdq"})).await;
    assert_eq!(ok.status, 200, "{}", ok.body);
    quote(json!({"fromCcy": "BTC", "toCcy": "ETH", "amount": "0.1", "routeConstraints": {"providers": ["nope"]}})).await.expect(400, "validation_failed");
    let only = quote(json!({"fromCcy": "BTC", "toCcy": "ETH", "amount": "0.1", "routeConstraints": {"providers": ["borealis"]}})).await;
    assert_eq!(only.data(200)["provider"], "borealis");
    let excluded = quote(json!({"fromCcy": "BTC", "toCcy": "ETH", "amount": "0.1", "routeConstraints": {"excludeProviders": ["borealis", "atlas"]}})).await;
    excluded.expect(422, "pair_unsupported");

    for id in ["atlas", "borealis"] {
        server.faults.set(id, Fault::Fail("down".into()));
    }
    quote(quote_body("BTC", "ETH", "0.1", "from", "fixed"))
        .await
        .expect(502, "provider_error");

    let orders_only = server.key(&[OrdersCreate]).await;
    server
        .post(
            &orders_only,
            "/api/v3/quotes",
            &quote_body("BTC", "ETH", "0.1", "from", "fixed"),
        )
        .await
        .expect(403, "permission_denied");
}

const CARD_FIELDS: [&str; 19] = [
    "routeQuoteId",
    "executionType",
    "executionProvider",
    "walletRequired",
    "isAvailable",
    "unavailableReason",
    "unavailableDetail",
    "fromCcy",
    "toCcy",
    "fromAmount",
    "expectedOutputAmount",
    "minOutputAmount",
    "rate",
    "type",
    "fees",
    "gasless",
    "estimatedDurationSeconds",
    "expiresAt",
    "observed",
];

fn assert_card_shape(card: &Value) {
    let keys: BTreeSet<&str> = card
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    let expected = BTreeSet::from(CARD_FIELDS);
    assert_eq!(keys, expected, "no provider payload leaks into a card");
}

fn cards(resp: &Resp) -> Vec<Value> {
    resp.data(200)["routes"].as_array().unwrap().clone()
}

fn card<'a>(cards: &'a [Value], provider: &str) -> &'a Value {
    cards
        .iter()
        .find(|c| c["executionProvider"] == provider)
        .unwrap_or_else(|| panic!("no {provider} card in {cards:?}"))
}

#[tokio::test]
async fn routes_rank_offchain_and_onchain_cards() {
    let server = TestServer::start().await;
    let key = server.key(&[PricesRead]).await;
    let resp = server
        .get(
            &key,
            "/api/v3/routes",
            "fromCcy=USDCETH&toCcy=ETH&amount=5000",
        )
        .await;
    let list = cards(&resp);
    assert_eq!(resp.data(200)["count"], list.len());
    let providers: BTreeSet<&str> = list.iter().map(|c| text(&c["executionProvider"])).collect();
    assert_eq!(providers, BTreeSet::from(["atlas", "borealis", "meridian"]));
    let outputs: Vec<f64> = list
        .iter()
        .map(|c| text(&c["expectedOutputAmount"]).parse().unwrap())
        .collect();
    assert!(
        outputs.windows(2).all(|w| w[0] >= w[1]),
        "best first: {outputs:?}"
    );
    for c in &list {
        assert_card_shape(c);
        assert_eq!(c["isAvailable"], true);
        assert!(text(&c["routeQuoteId"]).starts_with("rqq_"));
        assert!(c["expiresAt"].as_i64().unwrap() > server.now_secs());
        assert_eq!(c["fromAmount"], "5000");
        let expected: f64 = text(&c["expectedOutputAmount"]).parse().unwrap();
        let min: f64 = text(&c["minOutputAmount"]).parse().unwrap();
        assert!(min <= expected && min > 0.0);
    }
    let dex = card(&list, "meridian");
    assert_eq!(dex["executionType"], "onchain");
    assert_eq!(dex["walletRequired"], true);
    assert_eq!(dex["fees"][0]["kind"], "network");
    assert_eq!(dex["fees"][0]["currency"], "ETH");
    let desk = card(&list, "atlas");
    assert_eq!(desk["executionType"], "offchain");
    assert_eq!(desk["walletRequired"], false);
    assert_eq!(desk["type"], "fixed");
    assert_eq!(desk["minOutputAmount"], desk["expectedOutputAmount"]);

    // Reverse routes rank by the least input.
    let resp = server
        .get(
            &key,
            "/api/v3/routes",
            "fromCcy=USDCETH&toCcy=ETH&amount=1&direction=to&type=float",
        )
        .await;
    let inputs: Vec<f64> = cards(&resp)
        .iter()
        .map(|c| text(&c["fromAmount"]).parse().unwrap())
        .collect();
    assert!(inputs.windows(2).all(|w| w[0] <= w[1]), "{inputs:?}");
    assert!(
        cards(&resp)
            .iter()
            .all(|c| c["expectedOutputAmount"] == "1")
    );

    let only = server
        .get(
            &key,
            "/api/v3/routes",
            "fromCcy=USDCETH&toCcy=ETH&amount=5000&provider=meridian",
        )
        .await;
    assert_eq!(cards(&only).len(), 1);
    // A provider chosen explicitly explains why it has no route.
    let explained = server
        .get(
            &key,
            "/api/v3/routes",
            "fromCcy=USDCETH&toCcy=ETH&amount=5000&provider=sunfish",
        )
        .await;
    assert_eq!(
        cards(&explained)[0]["unavailableReason"],
        "pair_unsupported"
    );
    server
        .get(
            &key,
            "/api/v3/routes",
            "fromCcy=USDCETH&toCcy=ETH&amount=5000&provider=nope",
        )
        .await
        .expect(400, "validation_failed");

    // Solana DEX and onchain-only assets.
    let sol = server
        .get(&key, "/api/v3/routes", "fromCcy=SOL&toCcy=JUPSOL&amount=10")
        .await;
    let list = cards(&sol);
    assert_eq!(list.len(), 1);
    assert_eq!(list[0]["executionProvider"], "sunfish");

    // Out of range shows on the card, not as a failed request.
    let big = server
        .get(&key, "/api/v3/routes", "fromCcy=BTC&toCcy=ETH&amount=2")
        .await;
    let list = cards(&big);
    assert_eq!(
        card(&list, "atlas")["unavailableReason"],
        "amount_out_of_range"
    );
    assert_eq!(card(&list, "borealis")["isAvailable"], true);
    assert_eq!(list[0]["executionProvider"], "borealis");
}

#[tokio::test]
async fn routes_validate_input() {
    let server = TestServer::start().await;
    let key = server.key(&[PricesRead]).await;
    let routes = |query: &'static str| {
        let server = &server;
        let key = &key;
        async move { server.get(key, "/api/v3/routes", query).await }
    };
    routes("toCcy=ETH&amount=1")
        .await
        .expect(400, "validation_failed");
    routes("fromCcy=BTC&toCcy=ETH")
        .await
        .expect(400, "validation_failed");
    routes("fromCcy=BTC&toCcy=ETH&amount=abc")
        .await
        .expect(400, "amount_invalid");
    routes("fromCcy=BTC&toCcy=ETH&amount=1&direction=up")
        .await
        .expect(400, "validation_failed");
    routes("fromCcy=BTC&toCcy=ETH&amount=1&type=best")
        .await
        .expect(400, "validation_failed");
    routes("fromCcy=BTC&toCcy=ETH&amount=1&colour=red")
        .await
        .expect(400, "validation_failed");
    routes("fromCcy=BTC&toCcy=ETH&amount=1&amount=2")
        .await
        .expect(400, "duplicate_parameter");
    routes("fromCcy=BTC&toCcy=FOO&amount=1")
        .await
        .expect(422, "pair_unsupported");
    routes("fromCcy=TRX&toCcy=JUPSOL&amount=100")
        .await
        .expect(422, "pair_unsupported");
    routes("fromCcy=USDCBASE&toCcy=ETHBASE&amount=1&walletChainNamespace=cosmos")
        .await
        .expect(400, "validation_failed");
    routes("fromCcy=USDCBASE&toCcy=ETHBASE&amount=1&walletAddress=0x12")
        .await
        .expect(400, "address_invalid");
    routes("fromCcy=USDCBASE&toCcy=ETHBASE&amount=1&walletAddress=0x52908400098527886E0F7030069857D2E4169EE7&walletChainNamespace=solana")
        .await
        .expect(400, "address_invalid");
}

const EVM_WALLET: &str = "0x52908400098527886E0F7030069857D2E4169EE7";
const SOL_RECIPIENT: &str = "9WzDXwBbmkg8ZTbNMqUxvQRAyrZzDsGYdLVL9zYtAWWM";

#[tokio::test]
async fn bridge_routes_need_a_recipient_across_namespaces() {
    let server = TestServer::start().await;
    let key = server.key(&[PricesRead]).await;
    let base = "fromCcy=USDCBASE&toCcy=USDCSOL&amount=250";

    let missing = server
        .get(
            &key,
            "/api/v3/routes",
            &format!("{base}&walletAddress={EVM_WALLET}&walletChainNamespace=eip155"),
        )
        .await;
    missing.expect(422, "recipient_required");
    server
        .get(
            &key,
            "/api/v3/routes",
            &format!("{base}&walletAddress={EVM_WALLET}&recipientAddress={EVM_WALLET}"),
        )
        .await
        .expect(400, "address_invalid");

    let resp = server.get(&key, "/api/v3/routes", &format!(
            "{base}&walletAddress={EVM_WALLET}&recipientAddress={SOL_RECIPIENT}&provider=arcbridge"
        ))
    .await;
    let list = cards(&resp);
    assert_eq!(list.len(), 1);
    let bridge = &list[0];
    assert_card_shape(bridge);
    assert_eq!(bridge["executionType"], "onchain");
    assert_eq!(bridge["walletRequired"], true);
    assert_eq!(bridge["isAvailable"], true);
    assert_eq!(bridge["gasless"], true);
    assert!(text(&bridge["routeQuoteId"]).starts_with("rqq_"));
    let expected: f64 = text(&bridge["expectedOutputAmount"]).parse().unwrap();
    assert!(expected > 0.0 && expected < 250.0);
    assert!(
        bridge["fees"]
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f["kind"] == "provider")
    );

    // Without a wallet the signer is unknown: the card says what it needs.
    let resp = server.get(&key, "/api/v3/routes", base).await;
    let list = cards(&resp);
    assert_eq!(
        card(&list, "arcbridge")["unavailableReason"],
        "recipient_required"
    );
    assert_eq!(card(&list, "atlas")["isAvailable"], true);

    // A Solana signer cannot sign a route from Base.
    let resp = server
        .get(
            &key,
            "/api/v3/routes",
            &format!("fromCcy=USDCBASE&toCcy=ETHBASE&amount=100&walletAddress={SOL_RECIPIENT}"),
        )
        .await;
    assert_eq!(
        card(&cards(&resp), "meridian")["unavailableReason"],
        "wallet_unsupported"
    );

    // EVM to EVM needs no recipient.
    let resp = server
        .get(
            &key,
            "/api/v3/routes",
            &format!(
                "fromCcy=ETH&toCcy=ETHARB&amount=1&walletAddress={EVM_WALLET}&provider=arcbridge"
            ),
        )
        .await;
    assert_eq!(cards(&resp)[0]["isAvailable"], true);
    assert_eq!(cards(&resp)[0]["gasless"], false);
}

#[tokio::test]
async fn a_stalled_provider_becomes_an_unavailable_card() {
    let server = TestServer::start_with(Options {
        provider_deadline: Duration::from_millis(300),
        ..Options::default()
    })
    .await;
    let key = server.key(&[PricesRead]).await;
    // A stalled provider never answers: the response can only arrive because its deadline
    // ended the wait.
    server.faults.set("meridian", Fault::Stall);
    server
        .faults
        .set("borealis", Fault::Fail("maintenance".into()));
    let resp = server
        .get(
            &key,
            "/api/v3/routes",
            "fromCcy=USDCETH&toCcy=ETH&amount=5000",
        )
        .await;
    let list = cards(&resp);
    let stalled = card(&list, "meridian");
    assert_card_shape(stalled);
    assert_eq!(stalled["isAvailable"], false);
    assert_eq!(stalled["unavailableReason"], "provider_unavailable");
    assert!(text(&stalled["unavailableDetail"]).contains("300 ms"));
    assert_eq!(stalled["routeQuoteId"], Value::Null);
    assert_eq!(stalled["expectedOutputAmount"], Value::Null);
    assert_eq!(card(&list, "borealis")["unavailableDetail"], "maintenance");
    assert_eq!(list[0]["executionProvider"], "atlas");
    assert_eq!(list[0]["isAvailable"], true);
}

#[tokio::test]
async fn resolve_turns_an_offchain_card_into_a_create_token() {
    let server = TestServer::start().await;
    let key = server.key(&[PricesRead, OrdersCreate]).await;
    let resp = server
        .get(
            &key,
            "/api/v3/routes",
            "fromCcy=BTC&toCcy=USDTTRC&amount=0.1",
        )
        .await;
    let list = cards(&resp);
    let atlas = card(&list, "atlas").clone();
    let id = text(&atlas["routeQuoteId"]).to_owned();

    let body = serde_json::to_vec(&json!({"routeQuoteId": id})).unwrap();
    let request = server.sign(&key, "POST", "/api/v3/routes/resolve", "", &body);
    let resolved = server.send(&request).await;
    let token = resolved.data(200).clone();
    let create_token = text(&token["createToken"]).to_owned();
    assert!(swapd_core::market::routes::is_create_token(&create_token));
    assert_eq!(token["expiresAt"], server.now_secs() + 600);
    assert_eq!(token["routeQuoteId"], id.as_str());
    assert_eq!(token["fromCcy"], "BTC");
    assert_eq!(token["toCcy"], "USDTTRC");
    assert_eq!(token["fromAmount"], atlas["fromAmount"]);
    assert_eq!(token["toAmount"], atlas["expectedOutputAmount"]);
    assert_eq!(token["rate"], atlas["rate"]);
    assert_eq!(token["type"], "fixed");
    assert_eq!(token["provider"], "atlas");

    // A retry with the same Idempotency-Key gets the same token, not a second one.
    let retry = server
        .send(
            &server
                .sign(&key, "POST", "/api/v3/routes/resolve", "", &body)
                .set("Idempotency-Key", &request.get("Idempotency-Key")),
        )
        .await;
    assert_eq!(retry.header("idempotent-replayed"), Some("true"));
    assert_eq!(retry.data(200)["createToken"], create_token.as_str());

    // The token is bound to its key, single use, and expires.
    let store = &server.state.store;
    let hash = hash_create_token(&create_token);
    let owner = key.owner();
    assert_eq!(
        store
            .redeem_create_token(
                &hash,
                &crate::support::parsed("key:key_other"),
                server.now_secs() * 1000
            )
            .await
            .unwrap(),
        Err(RedeemError::NotFound)
    );
    let second = server
        .post(&key, "/api/v3/routes/resolve", &json!({"routeQuoteId": id}))
        .await;
    let second_hash = hash_create_token(text(&second.data(200)["createToken"]));
    assert_eq!(
        store
            .redeem_create_token(&second_hash, &owner, server.now_secs() * 1000 + 600_000)
            .await
            .unwrap(),
        Err(RedeemError::Expired)
    );
    let redeemed = store
        .redeem_create_token(&hash, &owner, server.now_secs() * 1000)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(redeemed.route.id, id.as_str());
    assert_eq!(
        store
            .redeem_create_token(&hash, &owner, server.now_secs() * 1000)
            .await
            .unwrap(),
        Err(RedeemError::Used)
    );
}

#[tokio::test]
async fn resolve_refuses_foreign_onchain_expired_and_unknown_routes() {
    let server = TestServer::start().await;
    let key = server.key(&[PricesRead, OrdersCreate]).await;
    let other = server.key(&[PricesRead, OrdersCreate]).await;
    let resp = server
        .get(
            &key,
            "/api/v3/routes",
            "fromCcy=USDCETH&toCcy=ETH&amount=5000",
        )
        .await;
    let list = cards(&resp);
    let offchain = text(&card(&list, "atlas")["routeQuoteId"]).to_owned();
    let onchain = text(&card(&list, "meridian")["routeQuoteId"]).to_owned();

    // BOLA: another key gets the same answer as for an id that never existed.
    let foreign = server
        .post(
            &other,
            "/api/v3/routes/resolve",
            &json!({"routeQuoteId": offchain}),
        )
        .await;
    foreign.expect(404, "route_not_found");
    let missing = server
        .post(
            &key,
            "/api/v3/routes/resolve",
            &json!({"routeQuoteId": "rqq_00000000000000000000000000000000"}),
        )
        .await;
    missing.expect(404, "route_not_found");
    assert_eq!(foreign.body, missing.body);
    server
        .post(
            &key,
            "/api/v3/routes/resolve",
            &json!({"routeQuoteId": "not-an-id"}),
        )
        .await
        .expect(404, "route_not_found");
    server
        .post(&key, "/api/v3/routes/resolve", &json!({}))
        .await
        .expect(400, "validation_failed");

    let resp = server
        .post(
            &key,
            "/api/v3/routes/resolve",
            &json!({"routeQuoteId": onchain}),
        )
        .await;
    resp.expect(422, "route_unavailable");
    assert!(resp.message().contains("/onchain/routes/resolve"));

    server.clock.advance_ms(120_000);
    server
        .post(
            &key,
            "/api/v3/routes/resolve",
            &json!({"routeQuoteId": offchain}),
        )
        .await
        .expect(410, "quote_expired");

    let prices_only = server.key(&[PricesRead]).await;
    server
        .post(
            &prices_only,
            "/api/v3/routes/resolve",
            &json!({"routeQuoteId": offchain}),
        )
        .await
        .expect(403, "permission_denied");
}

/// The `min` and `max` a quote shows are the amounts the same request accepts: the maximum is
/// quoted, and a satoshi more is refused naming the same limits.
#[tokio::test]
async fn the_limits_a_quote_shows_are_the_limits_enforced() {
    let server = TestServer::start().await;
    let key = server.key(&[PricesRead]).await;
    for rate_type in ["fixed", "float"] {
        let quote = |amount: String| {
            let (server, key) = (&server, &key);
            async move {
                server.post(key, "/api/v3/quotes", &json!({"fromCcy": "BTC", "toCcy": "ETH", "amount": amount, "type": rate_type}))
                .await
            }
        };
        let shown = quote("0.05".into()).await;
        let (min, max) = (
            text(&shown.data(200)["min"]).to_owned(),
            text(&shown.data(200)["max"]).to_owned(),
        );
        for (limit, outside) in [(&max, satoshis(&max, 1)), (&min, satoshis(&min, -1))] {
            let at_limit = quote(limit.clone()).await;
            assert_eq!(
                at_limit.status, 200,
                "{rate_type}: {limit}: {}",
                at_limit.body
            );
            let refused = quote(outside).await;
            refused.expect(422, "amount_out_of_range");
            assert!(
                text(&refused.body["error"]["message"])
                    .contains(&format!("between {min} and {max} BTC")),
                "{rate_type}: {}",
                refused.body
            );
        }
    }
}

/// `amount` (BTC, at most 8 decimals) plus `delta` satoshis, exactly.
fn satoshis(amount: &str, delta: i128) -> String {
    let (whole, fraction) = amount.split_once('.').unwrap_or((amount, ""));
    let units: i128 = format!("{whole}{fraction:0<8}").parse().unwrap();
    let units = units + delta;
    format!("{}.{:08}", units / 100_000_000, units % 100_000_000)
}
