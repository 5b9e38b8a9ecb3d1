//! Offchain order creation and reads on `/api/v3` against a running server with the sandbox
//! providers.

use crate::support::text;
use crate::support::{TestKey, TestServer};
use serde_json::{Value, json};
use swapd_core::address::Network;
use swapd_core::offchain::order::EventType;
use swapd_types::Permission::{OrdersCreate, OrdersRead, PricesRead};

const BTC_ADDRESS: &str = "bc1qar0srrr7xfkvy5l643lydnw9re59gtzzwf5mdq";
const TRON_ADDRESS: &str = "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t";
const EVM_ADDRESS: &str = "0x52908400098527886E0F7030069857D2E4169EE7";
const XRP_ADDRESS: &str = "rHb9CJAWyB4rj91VRWn96DkukG4bwdtyTh";

async fn full_key(server: &TestServer) -> TestKey {
    server.key(&[PricesRead, OrdersCreate, OrdersRead]).await
}

#[tokio::test]
async fn a_full_input_creates_an_order_awaiting_its_deposit() {
    let server = TestServer::start().await;
    let key = full_key(&server).await;
    // An affiliate code names a registered affiliate (docs/fees.md); the order keeps it.
    let affiliate =
        swapd_core::affiliates::Affiliate::new("partner-7", "Partner 7", 2_500, "0xabc", 0)
            .unwrap();
    server
        .state
        .store
        .insert_affiliate(&affiliate)
        .await
        .unwrap();
    let body = json!({"fromCcy": "BTC", "toCcy": "USDTTRC", "amount": "0.05", "toAddress": TRON_ADDRESS,
        "refundAddress": BTC_ADDRESS, "email": "ops@example.com", "affiliateCode": "partner-7"});
    let request = server.sign(
        &key,
        "POST",
        "/api/v3/orders",
        "",
        &serde_json::to_vec(&body).unwrap(),
    );
    let created = server.send(&request).await;
    let order = created.data(201);
    let id = text(&order["orderId"]).to_owned();
    assert!(swapd_types::ids::is_valid_id(&id, "ord_"));
    assert_eq!(order["status"], "awaiting_deposit");
    assert_eq!(order["type"], "fixed");
    assert_eq!(order["direction"], "from");
    assert_eq!(order["from"]["code"], "BTC");
    assert_eq!(order["from"]["amount"], "0.05");
    assert_eq!(order["from"]["received"], json!([]));
    assert_eq!(order["from"]["depositTag"], Value::Null);
    Network::Bitcoin
        .validate_address(text(&order["from"]["depositAddress"]))
        .unwrap();
    assert_eq!(order["to"]["address"], TRON_ADDRESS);
    assert_eq!(order["to"]["txId"], Value::Null);
    assert_eq!(order["refund"]["address"], BTC_ADDRESS);
    assert_eq!(order["emergency"], Value::Null);
    assert_eq!(order["emailAttached"], true);
    assert_eq!(order["affiliateCode"], "partner-7");
    assert_eq!(order["createdAt"], server.now_secs());
    assert_eq!(order["expiresAt"], server.now_secs() + 30 * 60);
    // The best desk for the pair, at the amount a quote gives.
    let quote = server
        .post(
            &key,
            "/api/v3/quotes",
            &json!({"fromCcy": "BTC", "toCcy": "USDTTRC", "amount": "0.05"}),
        )
        .await;
    let quote = quote.data(200);
    assert_eq!(order["provider"], quote["provider"]);
    assert_eq!(order["to"]["amount"], quote["toAmount"]);
    assert_eq!(order["rate"], quote["rate"]);

    // Reusing the Idempotency-Key answers the same order with 200.
    let replay = server
        .send(
            &server
                .sign(
                    &key,
                    "POST",
                    "/api/v3/orders",
                    "",
                    &serde_json::to_vec(&body).unwrap(),
                )
                .set("Idempotency-Key", &request.get("Idempotency-Key")),
        )
        .await;
    assert_eq!(replay.header("idempotent-replayed"), Some("true"));
    assert_eq!(replay.data(200), order);

    let read = server.get(&key, &format!("/api/v3/orders/{id}"), "").await;
    assert_eq!(read.data(200), order);
    let status = server
        .get(&key, &format!("/api/v3/orders/{id}/status"), "")
        .await;
    assert_eq!(status.data(200)["status"], "awaiting_deposit");

    // Both entries are in the outbox, in order, with the order's view.
    let events = server
        .state
        .store
        .order_events(&crate::support::parsed(&id))
        .await
        .unwrap();
    let kinds: Vec<_> = events.iter().map(|e| (e.sequence, e.event_type)).collect();
    assert_eq!(
        kinds,
        [(1, EventType::Created), (2, EventType::AwaitingDeposit)]
    );
    assert_eq!(events[0].data["status"], "new");
    assert_eq!(events[0].data["previousStatus"], Value::Null);
    assert_eq!(events[1].data["status"], "awaiting_deposit");
    assert_eq!(events[1].data["previousStatus"], "new");
    assert_eq!(events[1].data["orderId"], id.as_str());
}

#[tokio::test]
async fn reverse_and_float_orders_and_memo_networks() {
    let server = TestServer::start().await;
    let key = full_key(&server).await;
    let reverse = server
        .post(
            &key,
            "/api/v3/orders",
            &json!({"fromCcy": "BTC", "toCcy": "USDTTRC", "amount": "2500",
        "direction": "to", "type": "float", "toAddress": TRON_ADDRESS}),
        )
        .await;
    let order = reverse.data(201);
    assert_eq!(order["to"]["amount"], "2500");
    assert_eq!(order["direction"], "to");
    assert_eq!(order["type"], "float");
    assert_eq!(order["expiresAt"], server.now_secs() + 60 * 60);

    // Paying out to XRP needs the destination tag.
    server
        .post(
            &key,
            "/api/v3/orders",
            &json!({"fromCcy": "BTC", "toCcy": "XRP", "amount": "0.05", "toAddress": XRP_ADDRESS}),
        )
        .await
        .expect(400, "tag_required");
    let tagged = server
        .post(
            &key,
            "/api/v3/orders",
            &json!({"fromCcy": "BTC", "toCcy": "XRP", "amount": "0.05",
        "toAddress": XRP_ADDRESS, "tag": "12345"}),
        )
        .await;
    assert_eq!(tagged.data(201)["to"]["tag"], "12345");
    // Depositing XRP: the deposit carries a tag of its own.
    let from_xrp = server
        .post(
            &key,
            "/api/v3/orders",
            &json!({"fromCcy": "XRP", "toCcy": "BTC", "amount": "1000", "toAddress": BTC_ADDRESS}),
        )
        .await;
    let order = from_xrp.data(201);
    Network::Xrp
        .validate_address(text(&order["from"]["depositAddress"]))
        .unwrap();
    let tag = text(&order["from"]["depositTag"]);
    assert!(tag.parse::<u32>().is_ok(), "{tag}");
}

#[tokio::test]
async fn bad_input_is_refused_and_creates_nothing() {
    let server = TestServer::start().await;
    let key = full_key(&server).await;
    let base =
        json!({"fromCcy": "BTC", "toCcy": "USDTTRC", "amount": "0.05", "toAddress": TRON_ADDRESS});
    let with = |field: &str, value: Value| {
        let mut body = base.clone();
        body[field] = value;
        body
    };
    let cases = [
        (with("quoteId", json!("qte_0")), 400, "validation_failed"),
        (
            with("toAddress", json!(BTC_ADDRESS)),
            400,
            "address_invalid",
        ),
        (
            with("refundAddress", json!(TRON_ADDRESS)),
            400,
            "address_invalid",
        ),
        (with("tag", json!("1")), 400, "validation_failed"),
        (
            with("email", json!("not-an-email")),
            400,
            "validation_failed",
        ),
        (
            with("affiliateCode", json!("has space")),
            400,
            "validation_failed",
        ),
        (with("amount", json!("0.000000001")), 400, "amount_invalid"),
        (with("amount", json!(0.05)), 400, "validation_failed"),
        (with("amount", json!("500")), 422, "amount_out_of_range"),
        (with("toCcy", json!("DOGE")), 422, "pair_unsupported"),
        (
            json!({"fromCcy": "BTC", "amount": "0.05", "toAddress": TRON_ADDRESS}),
            400,
            "validation_failed",
        ),
        (
            json!({"fromCcy": "BTC", "toCcy": "USDTTRC", "amount": "0.05"}),
            400,
            "validation_failed",
        ),
    ];
    for (body, status, code) in cases {
        let resp = server.post(&key, "/api/v3/orders", &body).await;
        assert_eq!(
            (resp.status, resp.code()),
            (status, code),
            "{body}: {}",
            resp.body
        );
    }
    let reads_only = server.key(&[OrdersRead]).await;
    server
        .post(&reads_only, "/api/v3/orders", &base)
        .await
        .expect(403, "permission_denied");
}

async fn resolved_token(server: &TestServer, key: &TestKey) -> (Value, String) {
    let query = "fromCcy=BTC&toCcy=USDCETH&amount=0.05&provider=borealis";
    let routes = server
        .send(&server.sign(key, "GET", "/api/v3/routes", query, b""))
        .await;
    let card = routes.data(200)["routes"][0].clone();
    let resolved = server
        .post(
            key,
            "/api/v3/routes/resolve",
            &json!({"routeQuoteId": card["routeQuoteId"]}),
        )
        .await;
    let token = text(&resolved.data(200)["createToken"]).to_owned();
    (card, token)
}

#[tokio::test]
async fn a_create_token_locks_the_route_once_for_its_key() {
    let server = TestServer::start().await;
    let key = full_key(&server).await;
    let other = full_key(&server).await;
    let (card, token) = resolved_token(&server, &key).await;

    // Another key cannot use it: the same answer as for a token that does not exist.
    let foreign = server
        .post(
            &other,
            "/api/v3/orders",
            &json!({"createToken": token, "toAddress": EVM_ADDRESS}),
        )
        .await;
    foreign.expect(404, "not_found");
    let unknown = server
        .post(
            &other,
            "/api/v3/orders",
            &json!({"createToken": format!("ctk_{}", "0".repeat(64)), "toAddress": EVM_ADDRESS}),
        )
        .await;
    assert_eq!(foreign.body, unknown.body);
    server
        .post(
            &key,
            "/api/v3/orders",
            &json!({"createToken": "ctk_short", "toAddress": EVM_ADDRESS}),
        )
        .await
        .expect(404, "not_found");
    server
        .post(
            &key,
            "/api/v3/orders",
            &json!({"createToken": token, "amount": "1", "toAddress": EVM_ADDRESS}),
        )
        .await
        .expect(400, "validation_failed");

    // The market moves; the token's terms do not.
    server.clock.advance_ms(5 * 60 * 1000);
    let created = server
        .post(
            &key,
            "/api/v3/orders",
            &json!({"createToken": token, "toAddress": EVM_ADDRESS}),
        )
        .await;
    let order = created.data(201);
    assert_eq!(order["provider"], "borealis");
    assert_eq!(order["from"]["amount"], card["fromAmount"]);
    assert_eq!(order["to"]["amount"], card["expectedOutputAmount"]);
    assert_eq!(order["rate"], card["rate"]);
    assert_eq!(order["type"], "fixed");

    server
        .post(
            &key,
            "/api/v3/orders",
            &json!({"createToken": token, "toAddress": EVM_ADDRESS}),
        )
        .await
        .expect(409, "create_token_used");

    let (_, late) = resolved_token(&server, &key).await;
    server.clock.advance_ms(10 * 60 * 1000);
    server
        .post(
            &key,
            "/api/v3/orders",
            &json!({"createToken": late, "toAddress": EVM_ADDRESS}),
        )
        .await
        .expect(410, "create_token_expired");
}

#[tokio::test]
async fn orders_are_readable_by_their_creator_only() {
    let server = TestServer::start().await;
    let key = full_key(&server).await;
    let other = full_key(&server).await;
    let created = server.post(&key, "/api/v3/orders", &json!({"fromCcy": "BTC", "toCcy": "USDTTRC", "amount": "0.05", "toAddress": TRON_ADDRESS}))
    .await;
    let id = text(&created.data(201)["orderId"]).to_owned();

    for path in [
        format!("/api/v3/orders/{id}"),
        format!("/api/v3/orders/{id}/status"),
    ] {
        let foreign = server.get(&other, &path, "").await;
        foreign.expect(404, "order_not_found");
        let missing = server
            .get(
                &key,
                &path.replace(&id, "ord_00000000000000000000000000000000"),
                "",
            )
            .await;
        assert_eq!(foreign.body, missing.body);
    }
    server
        .get(&key, "/api/v3/orders/not-an-id", "")
        .await
        .expect(404, "order_not_found");
    let creator_only = server.key(&[OrdersCreate]).await;
    server
        .get(&creator_only, &format!("/api/v3/orders/{id}"), "")
        .await
        .expect(403, "permission_denied");
}

/// Decodes a `data:image/png;base64,` QR image back to its text with rqrr.
fn decode_qr(data_uri: &str) -> String {
    use base64::Engine;
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(
            data_uri
                .strip_prefix("data:image/png;base64,")
                .expect("a PNG data URI"),
        )
        .unwrap();
    let decoder = png::Decoder::new(std::io::Cursor::new(bytes));
    let mut reader = decoder.read_info().unwrap();
    let mut pixels = vec![0; reader.output_buffer_size().unwrap()];
    let frame = reader.next_frame(&mut pixels).unwrap();
    let (width, height) = (frame.width as usize, frame.height as usize);
    let mut image =
        rqrr::PreparedImage::prepare_from_greyscale(width, height, |x, y| pixels[y * width + x]);
    let grids = image.detect_grids();
    assert_eq!(grids.len(), 1);
    grids[0].decode().unwrap().1
}

#[tokio::test]
async fn deposit_qr_codes_decode_to_wallet_uris() {
    let server = TestServer::start().await;
    let key = full_key(&server).await;
    let cases = [
        (
            json!({"fromCcy": "BTC", "toCcy": "USDTTRC", "amount": "0.05", "toAddress": TRON_ADDRESS}),
            "bitcoin:",
            "?amount=0.05",
        ),
        (
            json!({"fromCcy": "XRP", "toCcy": "BTC", "amount": "1000", "toAddress": BTC_ADDRESS}),
            "xrpl:",
            "&amount=1000",
        ),
        (
            json!({"fromCcy": "USDCBASE", "toCcy": "BTC", "amount": "250", "toAddress": BTC_ADDRESS}),
            "ethereum:0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913@8453/transfer?address=",
            "&uint256=250000000",
        ),
        (
            json!({"fromCcy": "USDCSOL", "toCcy": "BTC", "amount": "250", "toAddress": BTC_ADDRESS}),
            "solana:",
            "?amount=250&spl-token=EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v",
        ),
    ];
    for (body, prefix, amount_part) in cases.clone() {
        let order = server
            .post(&key, "/api/v3/orders", &body)
            .await
            .data(201)
            .clone();
        let id = text(&order["orderId"]);
        let address = text(&order["from"]["depositAddress"]);
        let qr = server
            .get(&key, &format!("/api/v3/orders/{id}/qr"), "")
            .await
            .data(200)
            .clone();
        let codes = qr["qr"].as_array().unwrap();
        assert_eq!(codes.len(), 2);
        let (plain, with_amount) = (&codes[0], &codes[1]);
        assert_eq!(
            (plain["kind"].as_str(), plain["checked"].as_bool()),
            (Some("address"), Some(false))
        );
        assert_eq!(
            (
                with_amount["kind"].as_str(),
                with_amount["checked"].as_bool()
            ),
            (Some("amount"), Some(true))
        );
        for code in codes {
            let payload = text(&code["payload"]);
            assert!(payload.starts_with(prefix), "{payload}");
            assert!(payload.contains(address), "{payload}");
            if let Some(tag) = order["from"]["depositTag"].as_str() {
                assert!(
                    payload.contains(&format!("dt={tag}")),
                    "the memo is in the QR: {payload}"
                );
            }
            assert_eq!(decode_qr(text(&code["image"])), payload);
            assert!(text(&code["svg"]).starts_with("data:image/svg+xml;base64,"));
        }
        assert!(
            text(&with_amount["payload"]).ends_with(amount_part),
            "{}",
            with_amount["payload"]
        );
        assert!(!text(&plain["payload"]).contains("amount"));
    }
    let other = full_key(&server).await;
    let order = server
        .post(&key, "/api/v3/orders", &cases[0].0)
        .await
        .data(201)
        .clone();
    server
        .get(
            &other,
            &format!("/api/v3/orders/{}/qr", text(&order["orderId"])),
            "",
        )
        .await
        .expect(404, "order_not_found");
}
