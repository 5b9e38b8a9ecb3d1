//! The x402 API against a running server: 402 challenges, payments signed here with a local
//! key (alloy's signer, EIP-3009) and settled by the ledger facilitator, Sign-In-With-X proofs
//! for EVM and Solana wallets, wallet-bound orders and plans, idempotent replays without a
//! second charge, one execution per payment under concurrency, limits, and the HTTP facilitator
//! (docs/x402.md).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::support::x402::{
    idempotency, pay, pay_as, pay_solana, payment_header, prove_evm, prove_solana, required, send,
    sign_evm, siwx_payload,
};
use crate::support::{Options, PAY_TO, Resp, TestServer, way_to_pay};
use alloy_signer_local::PrivateKeySigner;
use axum::http::StatusCode;
use serde_json::{Value, json};
use swapd_sandbox::{Fault, PROVIDER_IDS};
use swapd_x402::wire::{self, SettleResponse};

const USDC_BASE: &str = "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913";
const TRON_PAYOUT: &str = "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t";

fn order_body() -> Value {
    json!({"fromCcy": "BTC", "toCcy": "USDTTRC", "amount": "0.05", "toAddress": TRON_PAYOUT})
}

#[tokio::test]
async fn the_readiness_document_is_free_and_names_prices_and_rules() {
    let server = TestServer::start().await;
    let resp = send(&server, "GET", "/api/x402", None, &[]).await;
    assert_eq!(resp.status, 200, "{}", resp.body);
    let doc = &resp.body["data"];
    assert_eq!(doc["x402Version"], 2);
    assert_eq!(doc["priceUsd"], "0.05");
    assert_eq!(doc["payment"]["amount"], "50000");
    assert_eq!(doc["payment"]["network"], "eip155:8453");
    assert_eq!(doc["payment"]["asset"], USDC_BASE);
    assert_eq!(doc["payment"]["payTo"], PAY_TO);
    assert_eq!(doc["facilitator"], "ledger");
    assert_eq!(
        doc["siwx"]["domain"],
        server.base.trim_start_matches("http://")
    );
    let routes = doc["routes"].as_array().unwrap();
    assert_eq!(routes.len(), 21);
    let access = |path: &str, method: &str| {
        routes
            .iter()
            .find(|r| r["path"] == path && r["method"] == method)
            .unwrap()["access"]
            .clone()
    };
    assert_eq!(access("/api/x402/currencies", "GET"), "paid");
    assert_eq!(access("/api/x402/providers", "GET"), "paid");
    assert_eq!(access("/api/x402/orders", "POST"), "paid_wallet");
    assert_eq!(access("/api/x402/orders/{orderId}", "GET"), "wallet_read");
    assert_eq!(access("/api/x402/routes", "GET"), "paid");
    server.stop().await;
}

#[tokio::test]
async fn a_paid_call_is_402_then_paid_settled_once_and_answered_with_payment_response() {
    let server = TestServer::start().await;
    let payer = PrivateKeySigner::random();
    // Case 82: no payment, 402 with our requirements.
    let unpaid = send(&server, "GET", "/api/x402/currencies", None, &[]).await;
    unpaid.expect(402, "payment_required");
    assert_eq!(unpaid.header("cache-control"), Some("no-store"));
    let challenge = required(&unpaid);
    assert_eq!(challenge.x402_version, 2);
    assert_eq!(
        challenge.resource.url,
        format!("{}/api/x402/currencies", server.base)
    );
    let accepts = &challenge.accepts[0];
    assert_eq!(
        (
            accepts.scheme.as_str(),
            accepts.network.as_str(),
            accepts.amount.as_str()
        ),
        ("exact", "eip155:8453", "50000")
    );
    assert_eq!(
        (accepts.asset.as_str(), accepts.pay_to.as_str()),
        (USDC_BASE, PAY_TO)
    );
    assert_eq!(accepts.extra["name"], "USD Coin");
    assert_eq!(accepts.extra["version"], "2");
    assert!(
        !challenge.extensions.contains_key("sign-in-with-x"),
        "a paid-only route asks for no wallet proof"
    );
    assert_eq!(
        challenge.extensions["payment-identifier"],
        wire::payment_identifier_declaration(),
        "paid routes take a payment identifier, not required"
    );
    assert_eq!(
        challenge.extensions["bazaar"]["info"]["input"],
        json!({"type": "http", "method": "GET", "queryParams": {}})
    );
    // The same request is asked the same; another query is described as sent.
    let again = send(&server, "GET", "/api/x402/currencies", None, &[]).await;
    assert_eq!(
        again.header("payment-required"),
        unpaid.header("payment-required")
    );
    for q in ["usdc", "weth"] {
        let search = send(
            &server,
            "GET",
            &format!("/api/x402/tokens/search?q={q}"),
            None,
            &[],
        )
        .await;
        assert_eq!(
            required(&search).extensions["bazaar"]["info"]["input"]["queryParams"],
            json!({"q": q})
        );
    }

    let payment = pay(&challenge, &payer, server.now_secs());
    let paid = send(
        &server,
        "GET",
        "/api/x402/currencies",
        None,
        &[payment_header(&payment)],
    )
    .await;
    assert_eq!(paid.status, 200, "{}", paid.body);
    assert!(paid.body["data"]["count"].as_u64().unwrap() >= 20);
    let settled: SettleResponse =
        wire::decode_header(paid.header("payment-response").unwrap()).unwrap();
    assert!(settled.success);
    assert_eq!(
        settled.payer.as_deref(),
        Some(payer.address().to_checksum(None).as_str())
    );
    assert_eq!(settled.network, "eip155:8453");
    assert_eq!(settled.transaction.len(), 66);
    // The ledger recorded it.
    let nonce = payment.payload["authorization"]["nonce"].as_str().unwrap();
    let record = server
        .state
        .store
        .x402_settlement(&payer.address().to_checksum(None), nonce)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        (record.amount.as_str(), record.pay_to.as_str()),
        ("50000", PAY_TO)
    );

    // Case 87: the same payment again buys nothing more.
    send(
        &server,
        "GET",
        "/api/x402/currencies",
        None,
        &[payment_header(&payment)],
    )
    .await
    .expect(409, "payment_already_used");
    // For another request: refused as made for another resource, or, when the payment names
    // none, as already used.
    let resp = send(
        &server,
        "GET",
        "/api/x402/tokens/popular",
        None,
        &[payment_header(&payment)],
    )
    .await;
    resp.expect(402, "payment_invalid");
    assert_eq!(required(&resp).error.as_deref(), Some("resource_mismatch"));
    let mut anywhere = payment.clone();
    anywhere.resource = None;
    send(
        &server,
        "GET",
        "/api/x402/tokens/popular",
        None,
        &[payment_header(&anywhere)],
    )
    .await
    .expect(409, "payment_already_used");
    server.stop().await;
}

/// `payment` naming `id` in its `payment-identifier` extension, as `@x402/extensions`'
/// `appendPaymentIdentifierToExtensions` writes it.
fn identified(mut payment: wire::PaymentPayload, id: &str) -> wire::PaymentPayload {
    payment.extensions[wire::PAYMENT_IDENTIFIER_EXTENSION]["info"]["id"] = json!(id);
    payment
}

/// A payment by `payer` for creating the order `body`, under the payment identifier `id`.
async fn pay_order_under(
    server: &TestServer,
    body: &Value,
    payer: &PrivateKeySigner,
    id: &str,
) -> wire::PaymentPayload {
    let challenge = send(
        server,
        "POST",
        "/api/x402/orders",
        Some(body),
        &[idempotency("x402-pid-0")],
    )
    .await;
    identified(pay(&required(&challenge), payer, server.now_secs()), id)
}

/// `POST /api/x402/orders` of `body` with `key` as its Idempotency-Key, paid by `payment`.
async fn post_order(
    server: &TestServer,
    body: &Value,
    key: &str,
    payment: &wire::PaymentPayload,
) -> Resp {
    send(
        server,
        "POST",
        "/api/x402/orders",
        Some(body),
        &[idempotency(key), payment_header(payment)],
    )
    .await
}

fn settled_nonce(payment: &wire::PaymentPayload) -> &str {
    payment.payload["authorization"]["nonce"].as_str().unwrap()
}

#[tokio::test]
async fn a_payment_identifier_answers_a_call_sent_again_once_without_a_second_settlement() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("swapd.db").display());
    let store_options = swapd_store::StoreOptions::default();
    let open = || swapd_store::open(&url, &store_options);
    let master = swapd_core::secrets::MasterKey::generate();
    let node = |store| Options {
        store: Some(store),
        master: Some(master.clone()),
        ..Options::default()
    };
    let server = TestServer::start_with(node(open().await.unwrap())).await;
    let payer = PrivateKeySigner::random();
    let payer_address = payer.address().to_checksum(None);
    let body = order_body();
    let id = "pay_4f1c0e7a9b2d4e6f8a0b1c2d3e4f5a6b";
    let first = pay_order_under(&server, &body, &payer, id).await;
    let created = post_order(&server, &body, "x402-pid-1", &first).await;
    assert_eq!(created.status, 201, "{}", created.body);
    let receipt = created.header("payment-response").unwrap().to_owned();
    let order_id = created.body["data"]["orderId"].clone();

    // The reply was lost and the node restarted; the agent signs a new payment for the same
    // call under the same id (and a new Idempotency-Key): the first answer, nothing settled.
    server.stop().await;
    let server = TestServer::start_with(node(open().await.unwrap())).await;
    let again = pay_order_under(&server, &body, &payer, id).await;
    let replayed = post_order(&server, &body, "x402-pid-2", &again).await;
    assert_eq!(replayed.status, 200, "{}", replayed.body);
    assert_eq!(replayed.header("idempotent-replayed"), Some("true"));
    assert_eq!(replayed.body["data"]["orderId"], order_id);
    assert_eq!(replayed.header("payment-response"), Some(receipt.as_str()));
    let store = server.state.store.clone();
    let settlement = |payment: &wire::PaymentPayload| {
        let store = store.clone();
        let (payer, nonce) = (payer_address.clone(), settled_nonce(payment).to_owned());
        async move { store.x402_settlement(&payer, &nonce).await.unwrap() }
    };
    assert!(settlement(&first).await.is_some());
    assert!(
        settlement(&again).await.is_none(),
        "the second payment was not settled"
    );
    // The unsettled payment still buys one call of its own, without the id.
    let mut unused = again.clone();
    unused.extensions.remove(wire::PAYMENT_IDENTIFIER_EXTENSION);
    assert_eq!(
        post_order(&server, &body, "x402-pid-3", &unused)
            .await
            .status,
        201
    );

    // The same id for another request, or another way of paying: 409, nothing settled.
    let other_body =
        json!({"fromCcy": "BTC", "toCcy": "USDTTRC", "amount": "0.06", "toAddress": TRON_PAYOUT});
    let other = pay_order_under(&server, &other_body, &payer, id).await;
    post_order(&server, &other_body, "x402-pid-4", &other)
        .await
        .expect(409, "payment_identifier_conflict");
    assert!(settlement(&other).await.is_none());

    // Ids are the payer's own: another wallet's call under the same id is its own.
    let stranger = PrivateKeySigner::random();
    let theirs = pay_order_under(&server, &body, &stranger, id).await;
    let their_order = post_order(&server, &body, "x402-pid-1", &theirs).await;
    assert_eq!(their_order.status, 201, "{}", their_order.body);
    assert_ne!(their_order.body["data"]["orderId"], order_id);

    // A malformed id is refused before anything is verified.
    let short = pay_order_under(&server, &body, &payer, "too_short").await;
    post_order(&server, &body, "x402-pid-5", &short)
        .await
        .expect(400, "invalid_payment_payload");
    assert!(settlement(&short).await.is_none());

    // A paid read answers again the same way.
    let read = required(&send(&server, "GET", "/api/x402/currencies", None, &[]).await);
    let read_id = "pay_read_0123456789abcdef";
    let paid_read = identified(pay(&read, &payer, server.now_secs()), read_id);
    let first_read = send(
        &server,
        "GET",
        "/api/x402/currencies",
        None,
        &[payment_header(&paid_read)],
    )
    .await;
    assert_eq!(first_read.status, 200);
    let read_again = identified(pay(&read, &payer, server.now_secs()), read_id);
    let second_read = send(
        &server,
        "GET",
        "/api/x402/currencies",
        None,
        &[payment_header(&read_again)],
    )
    .await;
    assert_eq!(second_read.status, 200);
    assert_eq!(second_read.body, first_read.body);
    assert_eq!(
        second_read.header("payment-response"),
        first_read.header("payment-response")
    );
    assert!(settlement(&read_again).await.is_none());
    server.stop().await;
}

#[tokio::test]
async fn bad_payments_are_refused_before_anything_is_settled() {
    let server = TestServer::start().await;
    let payer = PrivateKeySigner::random();
    let challenge = required(&send(&server, "GET", "/api/x402/tokens/popular", None, &[]).await);
    let now = server.now_secs();
    let path = "/api/x402/tokens/popular";
    // Case 83: malformed headers: 400, with the requirements again.
    for header in ["not base64!", "e30=", &"A".repeat(9 * 1024)] {
        let resp = send(
            &server,
            "GET",
            path,
            None,
            &[("PAYMENT-SIGNATURE", header.to_owned())],
        )
        .await;
        resp.expect(400, "invalid_payment_payload");
        assert!(resp.header("payment-required").is_some());
    }
    let reason = |resp: &Resp| required(resp).error.unwrap();
    // Case 84: requirements other than ours.
    let mut cheaper = pay(&challenge, &payer, now);
    cheaper.accepted.amount = "1".into();
    let resp = send(&server, "GET", path, None, &[payment_header(&cheaper)]).await;
    resp.expect(402, "payment_invalid");
    assert_eq!(reason(&resp), "No matching payment requirements");
    let mut elsewhere = challenge.clone();
    elsewhere.accepts[0].pay_to = payer.address().to_checksum(None);
    let resp = send(
        &server,
        "GET",
        path,
        None,
        &[payment_header(&pay(&elsewhere, &payer, now))],
    )
    .await;
    resp.expect(402, "payment_invalid");
    // Case 85: expired and not-yet-valid windows.
    let stale = pay(&challenge, &payer, now - 400);
    let resp = send(&server, "GET", path, None, &[payment_header(&stale)]).await;
    resp.expect(402, "payment_invalid");
    assert_eq!(
        reason(&resp),
        "invalid_exact_evm_payload_authorization_valid_before"
    );
    // Case 86: signed by someone other than `from`.
    let mut forged = pay(&challenge, &PrivateKeySigner::random(), now);
    forged.payload["authorization"]["from"] = payer.address().to_checksum(None).into();
    let resp = send(&server, "GET", path, None, &[payment_header(&forged)]).await;
    resp.expect(402, "payment_invalid");
    assert_eq!(reason(&resp), "invalid_exact_evm_signature");
    // A payment made for another request (its resource URL).
    let other = required(&send(&server, "GET", "/api/x402/currencies", None, &[]).await);
    let resp = send(
        &server,
        "GET",
        path,
        None,
        &[payment_header(&pay(&other, &payer, now))],
    )
    .await;
    resp.expect(402, "payment_invalid");
    assert_eq!(reason(&resp), "resource_mismatch");
    // A payment of version 1.
    let mut v1 = pay(&challenge, &payer, now);
    v1.x402_version = 1;
    send(&server, "GET", path, None, &[payment_header(&v1)])
        .await
        .expect(402, "payment_invalid");
    // None of them settled anything: a good payment still works for this request.
    let good = pay(&challenge, &payer, now);
    let resp = send(&server, "GET", path, None, &[payment_header(&good)]).await;
    assert_eq!(resp.status, 200, "{}", resp.body);
    server.stop().await;
}

#[tokio::test]
async fn orders_belong_to_the_paying_wallet_and_replays_are_not_charged_again() {
    let server = TestServer::start().await;
    let payer = PrivateKeySigner::random();
    let stranger = PrivateKeySigner::random();
    let body = order_body();
    let key = idempotency("x402-order-1");
    let unpaid = send(
        &server,
        "POST",
        "/api/x402/orders",
        Some(&body),
        std::slice::from_ref(&key),
    )
    .await;
    unpaid.expect(402, "payment_required");
    let challenge = required(&unpaid);
    assert_eq!(challenge.accepts.len(), 1);
    let siwx = &challenge.extensions["sign-in-with-x"];
    assert_eq!(
        siwx["info"]["domain"],
        server.base.trim_start_matches("http://")
    );
    assert_eq!(
        siwx["info"]["uri"],
        format!("{}/api/x402/orders", server.base)
    );
    assert_eq!(siwx["supportedChains"][0]["chainId"], "eip155:8453");
    assert_eq!(siwx["supportedChains"][1]["type"], "ed25519");

    let payment = pay(&challenge, &payer, server.now_secs());
    let created = send(
        &server,
        "POST",
        "/api/x402/orders",
        Some(&body),
        &[key.clone(), payment_header(&payment)],
    )
    .await;
    assert_eq!(created.status, 201, "{}", created.body);
    assert!(created.header("payment-response").is_some());
    let order_id = created.body["data"]["orderId"].as_str().unwrap().to_owned();
    let owner = format!("wallet:{}", payer.address().to_checksum(None));
    assert!(
        server
            .state
            .store
            .order(
                &crate::support::parsed(&order_id),
                &crate::support::parsed(&owner)
            )
            .await
            .unwrap()
            .is_some()
    );

    // The same request and payment again: the stored answer, no second charge.
    let replayed = send(
        &server,
        "POST",
        "/api/x402/orders",
        Some(&body),
        &[key.clone(), payment_header(&payment)],
    )
    .await;
    assert_eq!(replayed.status, 200);
    assert_eq!(replayed.header("idempotent-replayed"), Some("true"));
    assert_eq!(replayed.body["data"]["orderId"], order_id);
    assert!(
        replayed.header("payment-response").is_none(),
        "nothing was charged"
    );
    // A mutation without an Idempotency-Key is refused before any charge.
    let fresh = pay(&challenge, &payer, server.now_secs());
    send(
        &server,
        "POST",
        "/api/x402/orders",
        Some(&body),
        &[payment_header(&fresh)],
    )
    .await
    .expect(400, "idempotency_key_missing");
    let reuse = post_order(&server, &body, "x402-order-2", &fresh).await;
    assert_eq!(
        reuse.status, 201,
        "the payment was not used by the refused request: {}",
        reuse.body
    );

    // Reading it: free, but only with a proof of the owning wallet.
    let path = format!("/api/x402/orders/{order_id}");
    let anonymous = send(&server, "GET", &path, None, &[]).await;
    anonymous.expect(402, "payment_required");
    let read_challenge = required(&anonymous);
    assert!(read_challenge.accepts.is_empty(), "reads are not charged");
    let proof = prove_evm(&read_challenge, &payer);
    let read = send(&server, "GET", &path, None, std::slice::from_ref(&proof)).await;
    assert_eq!(read.status, 200, "{}", read.body);
    assert_eq!(read.body["data"]["orderId"], order_id);
    // A read does not use the proof up; another wallet's proof sees nothing.
    assert_eq!(
        send(&server, "GET", &path, None, &[proof]).await.status,
        200
    );
    let theirs = prove_evm(
        &required(&send(&server, "GET", &path, None, &[]).await),
        &stranger,
    );
    send(&server, "GET", &path, None, &[theirs])
        .await
        .expect(404, "order_not_found");
    let solana = ed25519_dalek::SigningKey::from_bytes(&[7u8; 32]);
    let solana_proof = prove_solana(
        &required(&send(&server, "GET", &path, None, &[]).await),
        &solana,
    );
    send(&server, "GET", &path, None, &[solana_proof])
        .await
        .expect(404, "order_not_found");
    // Exactly the two orders were paid for: two settlements.
    let qr = prove_evm(
        &required(&send(&server, "GET", &format!("{path}/qr"), None, &[]).await),
        &payer,
    );
    assert_eq!(
        send(&server, "GET", &format!("{path}/qr"), None, &[qr])
            .await
            .status,
        200
    );
    server.stop().await;
}

#[tokio::test]
async fn a_solana_wallet_signs_in_and_owns_what_it_creates() {
    let server = TestServer::start().await;
    let payer = PrivateKeySigner::random();
    let solana = ed25519_dalek::SigningKey::from_bytes(&[9u8; 32]);
    let body = order_body();
    let challenge = required(
        &send(
            &server,
            "POST",
            "/api/x402/orders",
            Some(&body),
            &[idempotency("solana-order-1")],
        )
        .await,
    );
    // Paid by an EVM payer, signed in as the Solana wallet: the order is the Solana wallet's.
    let proof = prove_solana(&challenge, &solana);
    let payment = pay(&challenge, &payer, server.now_secs());
    let created = send(
        &server,
        "POST",
        "/api/x402/orders",
        Some(&body),
        &[
            idempotency("solana-order-1"),
            proof.clone(),
            payment_header(&payment),
        ],
    )
    .await;
    assert_eq!(created.status, 201, "{}", created.body);
    let order_id = created.body["data"]["orderId"].as_str().unwrap().to_owned();
    let owner = format!(
        "wallet:{}",
        bs58::encode(solana.verifying_key().to_bytes()).into_string()
    );
    assert!(
        server
            .state
            .store
            .order(
                &crate::support::parsed(&order_id),
                &crate::support::parsed(&owner)
            )
            .await
            .unwrap()
            .is_some()
    );
    // A mutation consumed the proof's nonce: the same proof is refused next time.
    let again = pay(&challenge, &payer, server.now_secs());
    let resp = send(
        &server,
        "POST",
        "/api/x402/orders",
        Some(&body),
        &[idempotency("solana-order-2"), proof, payment_header(&again)],
    )
    .await;
    resp.expect(401, "siwx_invalid");
    assert!(
        resp.message().contains("invalid_siwx_nonce"),
        "{}",
        resp.message()
    );
    assert!(
        resp.header("payment-required").is_some(),
        "a new challenge to sign"
    );
    let path = format!("/api/x402/orders/{order_id}");
    let read = prove_solana(
        &required(&send(&server, "GET", &path, None, &[]).await),
        &solana,
    );
    assert_eq!(send(&server, "GET", &path, None, &[read]).await.status, 200);
    server.stop().await;
}

#[tokio::test]
async fn challenges_are_stateless_and_only_a_mutation_records_its_nonce() {
    let server = TestServer::start().await;
    let wallet = PrivateKeySigner::random();
    let path = "/api/x402/orders/ord_0123456789abcdef0123456789abcdef";
    let store = server.state.store.clone();
    let proof = |nonce: &str, c: &swapd_x402::wire::PaymentRequired| {
        let mut payload = siwx_payload(
            c,
            "eip155:8453",
            "eip191",
            wallet.address().to_checksum(None),
        );
        payload.nonce = nonce.to_owned();
        sign_evm(&mut payload, &wallet);
        wire::encode_header(&payload)
    };
    let c = required(&send(&server, "GET", path, None, &[]).await);
    let read_with = |nonce: String| {
        let header = proof(&nonce, &c);
        let server = &server;
        async move { send(server, "GET", path, None, &[("SIGN-IN-WITH-X", header)]).await }
    };
    let nonce = c.extensions["sign-in-with-x"]["info"]["nonce"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(nonce.len(), 64);
    // Nothing was recorded for the challenge, yet its nonce proves: the read reaches the
    // handler (no such order: 404), and reading does not use the nonce up.
    assert!(!store.siwx_nonce_used(&nonce).await.unwrap());
    for _ in 0..2 {
        read_with(nonce.clone())
            .await
            .expect(404, "order_not_found");
    }
    assert!(!store.siwx_nonce_used(&nonce).await.unwrap());
    // A nonce whose expiry was stretched is not ours any more.
    let mut stretched = nonce.clone().into_bytes();
    stretched[9] = if stretched[9] == b'f' { b'e' } else { b'f' };
    let stretched = String::from_utf8(stretched).unwrap();
    let refused = read_with(stretched).await;
    refused.expect(401, "siwx_invalid");
    assert!(refused.message().contains("invalid_siwx_nonce"));
    // Once a proof used it (a mutation does), every later proof with it is refused.
    assert!(store.use_siwx_nonce(&nonce, i64::MAX, 0).await.unwrap());
    let reused = read_with(nonce.clone()).await;
    reused.expect(401, "siwx_invalid");
    server.stop().await;
}

#[tokio::test]
async fn siwx_proofs_are_refused_with_the_matching_code() {
    let server = TestServer::start().await;
    let wallet = PrivateKeySigner::random();
    let path = "/api/x402/orders/ord_0123456789abcdef0123456789abcdef";
    let challenge = || async { required(&send(&server, "GET", path, None, &[]).await) };
    let refused = |resp: Resp, reason: &str| {
        resp.expect(401, "siwx_invalid");
        assert!(
            resp.message().contains(reason),
            "{} lacks {reason}",
            resp.message()
        );
    };
    // Case 91: wrong domain, wrong chain, unknown nonce, other signer, too old.
    let c = challenge().await;
    let mut elsewhere = siwx_payload(
        &c,
        "eip155:8453",
        "eip191",
        wallet.address().to_checksum(None),
    );
    elsewhere.domain = "evil.example.com".into();
    sign_evm(&mut elsewhere, &wallet);
    refused(
        send(
            &server,
            "GET",
            path,
            None,
            &[("SIGN-IN-WITH-X", wire::encode_header(&elsewhere))],
        )
        .await,
        "invalid_siwx_domain_mismatch",
    );
    let c = challenge().await;
    let mut chain = siwx_payload(&c, "eip155:1", "eip191", wallet.address().to_checksum(None));
    sign_evm(&mut chain, &wallet);
    refused(
        send(
            &server,
            "GET",
            path,
            None,
            &[("SIGN-IN-WITH-X", wire::encode_header(&chain))],
        )
        .await,
        "invalid_siwx_unsupported_chain",
    );
    let c = challenge().await;
    let mut unknown = siwx_payload(
        &c,
        "eip155:8453",
        "eip191",
        wallet.address().to_checksum(None),
    );
    unknown.nonce = "00000000000000000000000000000000".into();
    sign_evm(&mut unknown, &wallet);
    refused(
        send(
            &server,
            "GET",
            path,
            None,
            &[("SIGN-IN-WITH-X", wire::encode_header(&unknown))],
        )
        .await,
        "invalid_siwx_nonce",
    );
    let c = challenge().await;
    let mut impostor = siwx_payload(
        &c,
        "eip155:8453",
        "eip191",
        wallet.address().to_checksum(None),
    );
    sign_evm(&mut impostor, &PrivateKeySigner::random());
    refused(
        send(
            &server,
            "GET",
            path,
            None,
            &[("SIGN-IN-WITH-X", wire::encode_header(&impostor))],
        )
        .await,
        "invalid_siwx_signature",
    );
    let c = challenge().await;
    let old = prove_evm(&c, &wallet);
    server.clock.advance_ms(6 * 60 * 1000);
    refused(
        send(&server, "GET", path, None, &[old]).await,
        "invalid_siwx_issued_at_too_old",
    );
    send(
        &server,
        "GET",
        path,
        None,
        &[("SIGN-IN-WITH-X", "%%%".into())],
    )
    .await
    .expect(400, "invalid_siwx_payload");
    // A valid proof of a wallet that owns nothing: 404.
    let fresh = prove_evm(&challenge().await, &wallet);
    send(&server, "GET", path, None, &[fresh])
        .await
        .expect(404, "order_not_found");
    server.stop().await;
}

#[tokio::test]
async fn ten_concurrent_requests_with_one_payment_settle_and_execute_once() {
    let server = Arc::new(TestServer::start().await);
    let payer = PrivateKeySigner::random();
    let body = order_body();
    let challenge = required(
        &send(
            &server,
            "POST",
            "/api/x402/orders",
            Some(&body),
            &[idempotency("burst-order")],
        )
        .await,
    );
    let payment = pay(&challenge, &payer, server.now_secs());
    // Case 88: the same paid request ten times at once.
    let tasks: Vec<_> = (0..10)
        .map(|_| {
            let (server, body, payment) = (server.clone(), body.clone(), payment.clone());
            tokio::spawn(async move { post_order(&server, &body, "burst-order", &payment).await })
        })
        .collect();
    let mut created = 0;
    for task in tasks {
        let resp = task.await.unwrap();
        match resp.status {
            201 => created += 1,
            200 => assert_eq!(resp.header("idempotent-replayed"), Some("true")),
            409 => assert!(
                ["idempotency_key_in_use", "payment_already_used"].contains(&resp.code()),
                "{}",
                resp.body
            ),
            other => panic!("unexpected {other}: {}", resp.body),
        }
    }
    assert_eq!(created, 1, "one execution");
    let nonce = payment.payload["authorization"]["nonce"].as_str().unwrap();
    assert!(
        server
            .state
            .store
            .x402_settlement(&payer.address().to_checksum(None), nonce)
            .await
            .unwrap()
            .is_some()
    );
    // And without an Idempotency-Key: one answer, nine refusals, one settlement.
    let catalog = required(&send(&server, "GET", "/api/x402/currencies", None, &[]).await);
    let payment = pay(&catalog, &payer, server.now_secs());
    let tasks: Vec<_> = (0..10)
        .map(|_| {
            let (server, payment) = (server.clone(), payment.clone());
            tokio::spawn(async move {
                send(
                    &server,
                    "GET",
                    "/api/x402/currencies",
                    None,
                    &[payment_header(&payment)],
                )
                .await
                .status
            })
        })
        .collect();
    let mut statuses = Vec::new();
    for task in tasks {
        statuses.push(task.await.unwrap());
    }
    statuses.sort();
    assert_eq!(statuses, [200, 409, 409, 409, 409, 409, 409, 409, 409, 409]);
    Arc::into_inner(server).unwrap().stop().await;
}

#[tokio::test]
async fn limits_are_counted_before_anything_is_verified() {
    let server = TestServer::start().await;
    // 60 paid attempts (requests with PAYMENT-SIGNATURE) per hour per client and route,
    // malformed ones included.
    let junk_payment = || async {
        let payment = [("PAYMENT-SIGNATURE", "junk".to_owned())];
        send(&server, "GET", "/api/x402/currencies", None, &payment).await
    };
    for i in 0..60 {
        let resp = junk_payment().await;
        assert_eq!(resp.status, 400, "attempt {i}");
        assert_eq!(resp.header("x-ratelimit-limit"), Some("60"));
        assert_eq!(
            resp.header("x-ratelimit-remaining"),
            Some((59 - i).to_string().as_str())
        );
        assert_eq!(
            resp.header("x-ratelimit-resource"),
            Some("x402-paid-attempts-hour")
        );
    }
    let limited = junk_payment().await;
    limited.expect(429, "paid_attempts_exceeded");
    assert!(limited.header("retry-after").is_some());
    // Asking the price is not a paid attempt: the challenge still comes, uncounted.
    for _ in 0..3 {
        let challenge = send(&server, "GET", "/api/x402/currencies", None, &[]).await;
        challenge.expect(402, "payment_required");
        assert_eq!(challenge.header("x-ratelimit-resource"), None);
    }
    // Another route has its own count.
    assert_eq!(
        send(&server, "GET", "/api/x402/tokens/popular", None, &[])
            .await
            .status,
        402
    );
    // 30 wallet-bound reads per minute per client, route and resource.
    let path = "/api/x402/orders/ord_0123456789abcdef0123456789abcdef";
    for _ in 0..30 {
        assert_eq!(send(&server, "GET", path, None, &[]).await.status, 402);
    }
    send(&server, "GET", path, None, &[])
        .await
        .expect(429, "wallet_reads_exceeded");
    let other = "/api/x402/orders/ord_fedcba9876543210fedcba9876543210";
    assert_eq!(
        send(&server, "GET", other, None, &[]).await.status,
        402,
        "another resource"
    );
    server.clock.advance_ms(60_000);
    assert_eq!(
        send(&server, "GET", path, None, &[]).await.status,
        402,
        "a new minute"
    );
    server.stop().await;
}

#[tokio::test]
async fn onchain_plans_act_for_the_proven_wallet() {
    let server = TestServer::start().await;
    let wallet = PrivateKeySigner::random();
    let address = wallet.address().to_checksum(None);
    let query =
        format!("/api/x402/routes?fromCcy=ETH&toCcy=USDCETH&amount=0.5&walletAddress={address}");
    let challenge = required(&send(&server, "GET", &query, None, &[]).await);
    let routes = send(
        &server,
        "GET",
        &query,
        None,
        &[payment_header(&pay(&challenge, &wallet, server.now_secs()))],
    )
    .await;
    assert_eq!(routes.status, 200, "{}", routes.body);
    let card = routes.body["data"]["routes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["executionProvider"] == "meridian")
        .unwrap()
        .clone();
    // The card was discovered by the payer's wallet scope; resolving it needs the same wallet.
    let resolve = |wallet_address: &str| json!({"routeQuoteId": card["routeQuoteId"], "walletAddress": wallet_address});
    let body = resolve(&address);
    let challenge = required(
        &send(
            &server,
            "POST",
            "/api/x402/onchain/routes/resolve",
            Some(&body),
            &[idempotency("plan-resolve-1")],
        )
        .await,
    );
    let other = resolve("0x0000000000000000000000000000000000000001");
    send(
        &server,
        "POST",
        "/api/x402/onchain/routes/resolve",
        Some(&other),
        &[
            idempotency("plan-mismatch"),
            payment_header(&pay(&challenge, &wallet, server.now_secs())),
        ],
    )
    .await
    .expect(403, "wallet_mismatch");
    let resp = send(
        &server,
        "POST",
        "/api/x402/onchain/routes/resolve",
        Some(&body),
        &[
            idempotency("plan-resolve-1"),
            payment_header(&pay(&challenge, &wallet, server.now_secs())),
        ],
    )
    .await;
    assert_eq!(resp.status, 200, "{}", resp.body);
    let plan_id = resp.body["data"]["executionPlanId"]
        .as_str()
        .unwrap()
        .to_owned();
    let token = resp.body["data"]["executionAccessToken"]
        .as_str()
        .unwrap()
        .to_owned();
    // Status: free, with the proof and the token; neither replaces the other.
    let path = format!("/api/x402/onchain/executions/{plan_id}");
    let read_challenge = required(&send(&server, "GET", &path, None, &[]).await);
    let proof = prove_evm(&read_challenge, &wallet);
    send(&server, "GET", &path, None, std::slice::from_ref(&proof))
        .await
        .expect(401, "execution_token_missing");
    send(
        &server,
        "GET",
        &path,
        None,
        &[("X-Onchain-Execution-Access-Token", token.clone())],
    )
    .await
    .expect(402, "payment_required");
    let status = send(
        &server,
        "GET",
        &path,
        None,
        &[proof, ("X-Onchain-Execution-Access-Token", token.clone())],
    )
    .await;
    assert_eq!(status.status, 200, "{}", status.body);
    assert_eq!(status.body["data"]["status"], "awaiting_user");
    // Another wallet's proof with the right token: the plan is not theirs.
    let theirs = prove_evm(
        &required(&send(&server, "GET", &path, None, &[]).await),
        &PrivateKeySigner::random(),
    );
    send(
        &server,
        "GET",
        &path,
        None,
        &[theirs, ("X-Onchain-Execution-Access-Token", token)],
    )
    .await
    .expect(404, "execution_not_found");
    server.stop().await;
}

/// A stand-in facilitator over HTTP: answers as told, and counts settlements.
async fn stub_facilitator(behaviour: &'static str, settles: Arc<AtomicUsize>) -> String {
    use axum::routing::{get, post};
    let used = Arc::new(std::sync::Mutex::new(
        std::collections::HashSet::<String>::new(),
    ));
    let app = axum::Router::new()
        .route(
            "/supported",
            get(|| async { axum::Json(json!({"kinds": [{"x402Version": 2, "scheme": "exact", "network": "eip155:8453"}], "extensions": [], "signers": {}})) }),
        )
        .route(
            "/verify",
            post(move |axum::Json(body): axum::Json<Value>| async move {
                assert_eq!(body["paymentRequirements"]["payTo"], PAY_TO, "our requirements");
                match behaviour {
                    "invalid" => (StatusCode::BAD_REQUEST, axum::Json(json!({"isValid": false, "invalidReason": "insufficient_funds", "payer": ""}))).into_response(),
                    "broken" => (StatusCode::INTERNAL_SERVER_ERROR, "upstream exploded").into_response(),
                    "slow" => {
                        tokio::time::sleep(std::time::Duration::from_secs(3)).await;
                        axum::Json(json!({"isValid": true})).into_response()
                    }
                    _ => axum::Json(json!({"isValid": true, "payer": body["paymentPayload"]["payload"]["authorization"]["from"]})).into_response(),
                }
            }),
        )
        .route(
            "/settle",
            post(move |axum::Json(body): axum::Json<Value>| {
                let settles = settles.clone();
                let used = used.clone();
                async move {
                    let count = settles.fetch_add(1, Ordering::SeqCst) + 1;
                    let authorization = &body["paymentPayload"]["payload"]["authorization"];
                    let nonce = authorization["nonce"].as_str().unwrap_or_default().to_owned();
                    // The chain: an authorization is used once.
                    if !used.lock().unwrap().insert(nonce) {
                        return axum::Json(json!({"success": false, "errorReason": "invalid_exact_evm_nonce_already_used", "errorMessage": "FiatTokenV2: authorization is used or canceled", "transaction": "", "network": "eip155:8453"}));
                    }
                    match behaviour {
                        // Longer than the client's timeout: it settles, and nobody is told.
                        "slow_settle" => tokio::time::sleep(std::time::Duration::from_secs(3)).await,
                        "refuse_once" if count == 1 => {
                            used.lock().unwrap().clear();
                            return axum::Json(json!({"success": false, "errorReason": "invalid_exact_evm_insufficient_balance", "errorMessage": "upstream says: wallet 0xabc has 0 USDC", "transaction": "", "network": "eip155:8453"}));
                        }
                        _ => {}
                    }
                    axum::Json(json!({"success": true, "transaction": format!("0x{}", "ee".repeat(32)), "network": "eip155:8453", "payer": authorization["from"]}))
                }
            }),
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    url
}

use axum::response::IntoResponse;

#[tokio::test]
async fn the_http_facilitator_is_read_whatever_its_status_and_failures_execute_nothing() {
    let payer = PrivateKeySigner::random();
    for (behaviour, status, code) in [
        ("ok", 200, ""),
        ("invalid", 402, "payment_invalid"),
        ("broken", 502, "facilitator_error"),
        ("slow", 503, "service_unavailable"),
    ] {
        let settles = Arc::new(AtomicUsize::new(0));
        let url = stub_facilitator(behaviour, settles.clone()).await;
        let facilitator = swapd_x402::HttpFacilitator::new(
            &url,
            swapd_x402::Timeouts::all(std::time::Duration::from_millis(500)),
        )
        .unwrap();
        swapd_x402::facilitator::check_supported(&facilitator, "exact", "eip155:8453")
            .await
            .unwrap();
        let server = TestServer::start_with(Options {
            facilitator: Some(Arc::new(facilitator)),
            ..Options::default()
        })
        .await;
        let challenge = required(&send(&server, "GET", "/api/x402/currencies", None, &[]).await);
        let resp = send(
            &server,
            "GET",
            "/api/x402/currencies",
            None,
            &[payment_header(&pay(&challenge, &payer, server.now_secs()))],
        )
        .await;
        assert_eq!(resp.status, status, "{behaviour}: {}", resp.body);
        if status == 200 {
            assert_eq!(settles.load(Ordering::SeqCst), 1);
            assert!(resp.header("payment-response").is_some());
        } else {
            resp.expect(status, code);
            assert_eq!(
                settles.load(Ordering::SeqCst),
                0,
                "{behaviour}: nothing settled"
            );
            assert!(resp.body["data"].is_null(), "{behaviour}: nothing executed");
        }
        if behaviour == "invalid" {
            assert_eq!(required(&resp).error.as_deref(), Some("insufficient_funds"));
        }
        server.stop().await;
    }
}

/// A server whose facilitator is the stub behaving as `behaviour`, with a 500 ms limit.
async fn with_stub(behaviour: &'static str) -> (TestServer, Arc<AtomicUsize>) {
    let settles = Arc::new(AtomicUsize::new(0));
    let url = stub_facilitator(behaviour, settles.clone()).await;
    let facilitator = swapd_x402::HttpFacilitator::new(
        &url,
        swapd_x402::Timeouts::all(std::time::Duration::from_millis(500)),
    )
    .unwrap();
    let server = TestServer::start_with(Options {
        facilitator: Some(Arc::new(facilitator)),
        ..Options::default()
    })
    .await;
    (server, settles)
}

/// A settlement confirmed only after swapd stopped waiting: the call is not run then, and the
/// same payment sent again settles "again" (the chain says it is used: by that settlement),
/// runs the call once, and is spent.
#[tokio::test]
async fn a_settlement_confirmed_late_is_finished_by_the_same_payment() {
    let payer = PrivateKeySigner::random();
    let (server, settles) = with_stub("slow_settle").await;
    let unpaid = send(
        &server,
        "POST",
        "/api/x402/orders",
        Some(&order_body()),
        &[],
    )
    .await;
    let payment = payment_header(&pay(&required(&unpaid), &payer, server.now_secs()));
    let attempt = |key: &'static str| {
        let headers = [payment.clone(), idempotency(key)];
        let server = &server;
        async move {
            send(
                server,
                "POST",
                "/api/x402/orders",
                Some(&order_body()),
                &headers,
            )
            .await
        }
    };
    let timed_out = attempt("settle-late-1").await;
    timed_out.expect(503, "service_unavailable");
    assert!(timed_out.body["data"].is_null(), "nothing executed");
    assert!(
        timed_out.body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("same PAYMENT-SIGNATURE"),
        "{}",
        timed_out.body
    );
    assert_eq!(settles.load(Ordering::SeqCst), 1, "the settlement was sent");

    let served = attempt("settle-late-1").await;
    assert_eq!(served.status, 201, "{}", served.body);
    assert!(served.body["data"]["orderId"].is_string());
    assert!(served.header("payment-response").is_some());
    assert_eq!(
        settles.load(Ordering::SeqCst),
        2,
        "asked once more, settled once"
    );
    // Spent now: the same request replays its answer, another is refused.
    let replayed = attempt("settle-late-1").await;
    assert_eq!(replayed.status, 200);
    assert_eq!(replayed.body["data"], served.body["data"]);
    attempt("settle-late-2")
        .await
        .expect(409, "payment_already_used");
    assert_eq!(settles.load(Ordering::SeqCst), 2);
    server.stop().await;
}

/// A settlement the facilitator refuses moved no money: the payment is free again, and the
/// client sees the x402 reason code, never the facilitator's words.
#[tokio::test]
async fn a_refused_settlement_releases_the_payment() {
    let payer = PrivateKeySigner::random();
    let (server, settles) = with_stub("refuse_once").await;
    let challenge = required(&send(&server, "GET", "/api/x402/currencies", None, &[]).await);
    let payment = payment_header(&pay(&challenge, &payer, server.now_secs()));
    let refused = send(
        &server,
        "GET",
        "/api/x402/currencies",
        None,
        std::slice::from_ref(&payment),
    )
    .await;
    refused.expect(402, "payment_failed");
    let answer: SettleResponse =
        wire::decode_header(refused.header("payment-response").unwrap()).unwrap();
    assert_eq!(
        answer.error_reason.as_deref(),
        Some("invalid_exact_evm_insufficient_balance")
    );
    assert_eq!(answer.error_message, None);
    let everything = format!("{} {:?}", refused.body, refused.headers);
    assert!(!everything.contains("upstream says"), "{everything}");

    let paid = send(&server, "GET", "/api/x402/currencies", None, &[payment]).await;
    assert_eq!(paid.status, 200, "{}", paid.body);
    assert_eq!(settles.load(Ordering::SeqCst), 2);
    server.stop().await;
}

/// A call that fails after its payment settled (every provider down) leaves the call owed:
/// the same payment runs it again, without a second settlement.
#[tokio::test]
async fn a_paid_call_that_fails_is_run_again_by_the_same_payment() {
    let server = TestServer::start().await;
    let payer = PrivateKeySigner::random();
    let body = json!({"fromCcy": "BTC", "toCcy": "USDTTRC", "amount": "0.05"});
    let unpaid = send(&server, "POST", "/api/x402/quotes", Some(&body), &[]).await;
    let payment = payment_header(&pay(&required(&unpaid), &payer, server.now_secs()));
    let headers = [payment, idempotency("quote-owed-1")];
    for id in PROVIDER_IDS {
        server.faults.set(id, Fault::Fail("unreachable".into()));
    }
    let failed = send(&server, "POST", "/api/x402/quotes", Some(&body), &headers).await;
    failed.expect(502, "provider_error");
    assert!(failed.header("payment-response").is_some(), "it was paid");
    for id in PROVIDER_IDS {
        server.faults.clear(id);
    }
    // The ledger facilitator settles a payment once: a second settlement would be refused.
    let served = send(&server, "POST", "/api/x402/quotes", Some(&body), &headers).await;
    assert_eq!(served.status, 200, "{}", served.body);
    assert!(served.body["data"]["toAmount"].is_string());
    let again = send(
        &server,
        "POST",
        "/api/x402/quotes",
        Some(&body),
        &[headers[0].clone(), idempotency("quote-owed-2")],
    )
    .await;
    again.expect(409, "payment_already_used");
    server.stop().await;
}

#[tokio::test]
async fn facilitators_that_cannot_settle_our_network_are_refused_at_start() {
    let url = stub_facilitator("ok", Arc::default()).await;
    let facilitator = swapd_x402::HttpFacilitator::new(
        &url,
        swapd_x402::Timeouts::all(std::time::Duration::from_secs(1)),
    )
    .unwrap();
    let problem = swapd_x402::facilitator::check_supported(&facilitator, "exact", "eip155:1")
        .await
        .unwrap_err();
    assert!(
        problem.contains("eip155:1") && problem.contains("eip155:8453"),
        "{problem}"
    );
    // A testnet-only facilitator for a mainnet.
    let dir = tempfile::tempdir().unwrap();
    let store = swapd_store::open(
        &format!("sqlite://{}", dir.path().join("x.db").display()),
        &swapd_store::StoreOptions::default(),
    )
    .await
    .unwrap();
    let ledger = swapd_api::x402::LedgerFacilitator::new(
        store,
        Arc::new(swapd_core::ManualClock::new(0)),
        "eip155:84532",
    );
    let problem = swapd_x402::facilitator::check_supported(&ledger, "exact", "eip155:8453")
        .await
        .unwrap_err();
    assert!(problem.contains("only testnets"), "{problem}");
    let unreachable = swapd_x402::HttpFacilitator::new(
        "http://127.0.0.1:9/",
        swapd_x402::Timeouts::all(std::time::Duration::from_millis(300)),
    )
    .unwrap();
    assert!(
        swapd_x402::facilitator::check_supported(&unreachable, "exact", "eip155:8453")
            .await
            .is_err()
    );
}

/// `[[x402.accepts]]`: every way to pay is offered in order at one price, a payment is matched
/// against the way it names and settled by that way's facilitator, and a way no facilitator
/// settles is left out, said so in the readiness document (docs/x402.md, "Ways to pay").
#[tokio::test]
async fn several_ways_to_pay_are_offered_in_order_and_each_settles_by_its_own_facilitator() {
    // Settles only Base: Arbitrum, sent to it, is left out.
    let base_only = stub_facilitator("ok", Arc::default()).await;
    let way = |network: &str, facilitator_url: Option<&str>| swapd::config::X402Accept {
        pay_to: Some(PAY_TO.parse().unwrap()),
        facilitator_url: facilitator_url.map(|url| url.parse().unwrap()),
        ..way_to_pay(network, swapd_x402::Scheme::Exact)
    };
    let server = TestServer::start_with(Options {
        x402_accepts: vec![
            way("eip155:8453", None),
            way("eip155:42161", Some(&base_only)),
            way("eip155:137", None),
        ],
        ..Options::default()
    })
    .await;

    let readiness = send(&server, "GET", "/api/x402", None, &[]).await.body;
    let doc = &readiness["data"];
    let offered: Vec<(&str, &str)> = doc["accepts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|way| {
            (
                way["network"].as_str().unwrap(),
                way["facilitator"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        offered,
        [("eip155:8453", "ledger"), ("eip155:137", "ledger")]
    );
    assert_eq!(doc["payment"]["network"], "eip155:8453", "the first way");
    let left_out = doc["leftOut"].as_array().unwrap();
    assert_eq!(left_out.len(), 1, "{left_out:?}");
    assert_eq!(
        (&left_out[0]["network"], &left_out[0]["scheme"]),
        (&json!("eip155:42161"), &json!("exact"))
    );
    let reason = left_out[0]["reason"].as_str().unwrap();
    assert!(
        reason.contains("http facilitator") && reason.contains("eip155:8453"),
        "{reason}"
    );
    assert!(
        doc["siwx"]["chains"]
            .as_array()
            .unwrap()
            .contains(&json!("eip155:137"))
    );

    let unpaid = send(&server, "GET", "/api/x402/currencies", None, &[]).await;
    let challenge = required(&unpaid);
    let ways: Vec<(&str, &str, &str)> = challenge
        .accepts
        .iter()
        .map(|r| (r.network.as_str(), r.asset.as_str(), r.amount.as_str()))
        .collect();
    assert_eq!(
        ways,
        [
            ("eip155:8453", USDC_BASE, "50000"),
            (
                "eip155:137",
                "0x3c499c542cEF5E3811e1192ce70d8cC03d5c3359",
                "50000"
            ),
        ]
    );

    // Paid on Polygon: settled there, and said so.
    let payer = PrivateKeySigner::random();
    let on_polygon = pay_as(&challenge.accepts[1], &challenge, &payer, server.now_secs());
    let paid = send(
        &server,
        "GET",
        "/api/x402/currencies",
        None,
        &[payment_header(&on_polygon)],
    )
    .await;
    assert_eq!(paid.status, 200, "{}", paid.body);
    let settled: SettleResponse =
        wire::decode_header(paid.header("payment-response").unwrap()).unwrap();
    assert_eq!(settled.network, "eip155:137");
    let record = server
        .state
        .store
        .x402_settlement(
            &payer.address().to_checksum(None),
            on_polygon.payload["authorization"]["nonce"]
                .as_str()
                .unwrap(),
        )
        .await
        .unwrap()
        .unwrap();
    assert_eq!(record.network, "eip155:137");
    assert_eq!(record.asset, "0x3c499c542cEF5E3811e1192ce70d8cC03d5c3359");

    // A way that is not offered (left out, here) buys nothing, and nothing settles.
    let mut arbitrum = challenge.accepts[0].clone();
    arbitrum.network = "eip155:42161".into();
    arbitrum.asset = "0xaf88d065e77c8cC2239327C5EDb3A432268e5831".into();
    let refused = send(
        &server,
        "GET",
        "/api/x402/currencies",
        None,
        &[payment_header(&pay_as(
            &arbitrum,
            &challenge,
            &payer,
            server.now_secs(),
        ))],
    )
    .await;
    refused.expect(402, "payment_invalid");
    assert_eq!(
        required(&refused).error.as_deref(),
        Some("No matching payment requirements")
    );
    server.stop().await;
}

/// `exact` on Solana beside Base (the sandbox's default ways to pay): the ledger verifies the
/// transaction as the scheme's MUST list says and settles it once, keyed by its message's hash;
/// the transfer's authority owns what it bought (docs/x402.md, "Paying on Solana").
#[tokio::test]
async fn a_call_paid_on_solana_is_settled_once_and_belongs_to_the_paying_wallet() {
    let way = |network| way_to_pay(network, swapd_x402::Scheme::Exact);
    let server = TestServer::start_with(Options {
        x402_accepts: vec![
            way("eip155:8453"),
            way(swapd_x402::exact_svm::SOLANA_MAINNET),
        ],
        ..Options::default()
    })
    .await;
    let body = order_body();
    let asked = send(
        &server,
        "POST",
        "/api/x402/orders",
        Some(&body),
        &[idempotency("sol-order-1")],
    )
    .await;
    let challenge = required(&asked);
    assert_eq!(challenge.accepts.len(), 2);
    assert_eq!(challenge.accepts[0].network, "eip155:8453", "Base first");
    let on_solana = &challenge.accepts[1];
    assert_eq!(on_solana.network, swapd_x402::exact_svm::SOLANA_MAINNET);
    assert_eq!(
        on_solana.asset,
        "EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v"
    );
    assert_eq!(
        (on_solana.amount.as_str(), on_solana.max_timeout_seconds),
        ("50000", 60)
    );
    let ledger = &server.state.x402.accepts.options()[1];
    let supported = ledger.facilitator.supported().await.unwrap();
    assert_eq!(
        on_solana.extra["feePayer"],
        supported.kinds[0].extra["feePayer"]
    );
    assert!(swapd_x402::exact_svm::pubkey(on_solana.pay_to.as_str()).is_some());
    assert!(on_solana.extra["recentBlockhash"].is_string());

    let wallet = ed25519_dalek::SigningKey::from_bytes(&rand::random());
    let wallet_address = bs58::encode(wallet.verifying_key().to_bytes()).into_string();
    let payment = pay_solana(on_solana, &challenge, &wallet);
    let created = send(
        &server,
        "POST",
        "/api/x402/orders",
        Some(&body),
        &[idempotency("sol-order-1"), payment_header(&payment)],
    )
    .await;
    assert_eq!(created.status, 201, "{}", created.body);
    let settled: SettleResponse =
        wire::decode_header(created.header("payment-response").unwrap()).unwrap();
    assert!(settled.success);
    assert_eq!(settled.network, swapd_x402::exact_svm::SOLANA_MAINNET);
    assert_eq!(settled.payer.as_deref(), Some(wallet_address.as_str()));
    assert_eq!(
        bs58::decode(&settled.transaction).into_vec().unwrap().len(),
        64,
        "a base58 signature"
    );
    let (payer, message_hash) = swapd_x402::exact_svm::payer(&payment).unwrap();
    let record = server
        .state
        .store
        .x402_settlement(&payer, &message_hash)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        (
            record.amount.as_str(),
            record.network.as_str(),
            record.transaction.as_str()
        ),
        (
            "50000",
            swapd_x402::exact_svm::SOLANA_MAINNET,
            settled.transaction.as_str()
        )
    );

    // The paying wallet owns the order: it reads it with its own SIWX proof.
    let order_id = created.body["data"]["orderId"].as_str().unwrap().to_owned();
    let path = format!("/api/x402/orders/{order_id}");
    let read_challenge = required(&send(&server, "GET", &path, None, &[]).await);
    let read = send(
        &server,
        "GET",
        &path,
        None,
        &[prove_solana(&read_challenge, &wallet)],
    )
    .await;
    assert_eq!(read.status, 200, "{}", read.body);

    // The same transaction buys nothing more, and the ledger would not settle it twice.
    send(
        &server,
        "POST",
        "/api/x402/orders",
        Some(&body),
        &[idempotency("sol-order-2"), payment_header(&payment)],
    )
    .await
    .expect(409, "payment_already_used");
    let again = ledger
        .facilitator
        .settle(&payment, ledger.requirements())
        .await
        .unwrap();
    assert!(!again.success);
    assert_eq!(
        again.error_reason.as_deref(),
        Some("invalid_exact_svm_duplicate_settlement")
    );

    // A transfer of another amount, presented as our way to pay: the facilitator refuses it,
    // and nothing settles.
    let mut dearer = on_solana.clone();
    dearer.amount = "50001".into();
    let mut overpaid = pay_solana(&dearer, &challenge, &wallet);
    overpaid.accepted = on_solana.clone();
    let refused = send(
        &server,
        "POST",
        "/api/x402/orders",
        Some(&body),
        &[idempotency("sol-order-3"), payment_header(&overpaid)],
    )
    .await;
    refused.expect(402, "payment_invalid");
    assert_eq!(
        required(&refused).error.as_deref(),
        Some("invalid_exact_svm_payload_amount_mismatch")
    );
    // Signed by someone else than the transfer's authority: refused before the facilitator.
    let mut forged =
        swapd_x402::exact_svm::transaction(&pay_solana(on_solana, &challenge, &wallet)).unwrap();
    forged.signatures[1] = [1; 64];
    let mut forged_payment = payment.clone();
    forged_payment.payload = json!({"transaction": base64::Engine::encode(&base64::engine::general_purpose::STANDARD, forged.encode())});
    let refused = send(
        &server,
        "POST",
        "/api/x402/orders",
        Some(&body),
        &[idempotency("sol-order-4"), payment_header(&forged_payment)],
    )
    .await;
    refused.expect(402, "payment_invalid");
    assert_eq!(
        required(&refused).error.as_deref(),
        Some("invalid_exact_svm_payload_signature")
    );
    server.stop().await;
}

/// Solana through an HTTP facilitator: offered only when the facilitator names its fee payer
/// and `[chains.SOL]` finds `payTo`'s USDC token account (a payment cannot create it); left
/// out, and said why, otherwise.
#[tokio::test]
async fn solana_is_offered_only_when_pay_tos_token_account_exists() {
    use axum::routing::{get, post};
    const OWNER: &str = "2wKupLR9q6wXYppw8Gr2NvWxKBUqm4PPJKkQfoxHDBg4";
    const FEE_PAYER: &str = "EwWqGE4ZFKLofuestmU4LDdK7XM1N4ALgdZccwYugwGd";
    // The token account the Associated Token program derives for OWNER and USDC.
    const ATA: &str = "3XZXfFJHF5ox3yPop16oqYfSWxLpkjsEuvTe2S67G2rj";
    let serve = |app: axum::Router| async move {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        url
    };
    let facilitator = |fee_payer: Option<&'static str>| {
        axum::Router::new().route(
            "/supported",
            get(move || async move {
                let extra = fee_payer.map_or(json!({}), |key| json!({"feePayer": key}));
                axum::Json(json!({"kinds": [{"x402Version": 2, "scheme": "exact", "network": swapd_x402::exact_svm::SOLANA_MAINNET, "extra": extra}]}))
            }),
        )
    };
    let asked = Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let existing = |accounts: &'static [&'static str],
                    asked: Arc<std::sync::Mutex<Vec<String>>>| {
        axum::Router::new().route(
            "/",
            post(move |axum::Json(call): axum::Json<Value>| async move {
                let address = call["params"][0].as_str().unwrap_or_default().to_owned();
                asked.lock().unwrap().push(address.clone());
                let value = accounts.contains(&address.as_str()).then(|| json!({"data": ["", "base64"], "executable": false, "lamports": 2039280, "owner": "TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA", "rentEpoch": 0, "space": 165}));
                axum::Json(json!({"jsonrpc": "2.0", "id": call["id"], "result": {"context": {"slot": 1}, "value": value}}))
            }),
        )
    };
    let with_fee_payer = serve(facilitator(Some(FEE_PAYER))).await;
    let without_fee_payer = serve(facilitator(None)).await;
    let node_with_ata = serve(existing(&[ATA], asked.clone())).await;
    let node_without = serve(existing(&[], Arc::default())).await;

    let surface = |facilitator_url: String, node: Option<String>| async move {
        let dir = tempfile::tempdir().unwrap();
        let mut config = crate::local_config(dir.path());
        config.x402.accepts = vec![
            way_to_pay("eip155:8453", swapd_x402::Scheme::Exact),
            swapd::config::X402Accept {
                pay_to: Some(OWNER.parse().unwrap()),
                facilitator_url: Some(facilitator_url.parse().unwrap()),
                ..way_to_pay(
                    swapd_x402::exact_svm::SOLANA_MAINNET,
                    swapd_x402::Scheme::Exact,
                )
            },
        ];
        if let Some(node) = node {
            config.chains.insert(
                "SOL".into(),
                swapd::config::ChainConfig {
                    rpc_url: node.parse().unwrap(),
                    confirmations: None,
                    timeout_ms: 2_000,
                },
            );
        }
        let runtime = swapd::app::Runtime::open(config).await.unwrap();
        runtime.x402_surface("http://127.0.0.1:1").await.unwrap()
    };
    let networks = |x402: &swapd_api::x402::X402| -> Vec<String> {
        x402.accepts
            .options()
            .iter()
            .map(|option| option.pricing.network.clone())
            .collect()
    };

    let offered = surface(with_fee_payer.clone(), Some(node_with_ata)).await;
    assert_eq!(
        networks(&offered),
        ["eip155:8453", swapd_x402::exact_svm::SOLANA_MAINNET]
    );
    assert!(offered.left_out.is_empty());
    let solana = offered.accepts.options()[1].requirements();
    assert_eq!(solana.extra["feePayer"], FEE_PAYER, "from the facilitator");
    assert!(
        !solana.extra.contains_key("recentBlockhash"),
        "clients of a real chain ask their node"
    );
    assert_eq!(solana.pay_to, OWNER);
    assert_eq!(asked.lock().unwrap().as_slice(), [ATA.to_owned()]);

    for (facilitator_url, node, reason) in [
        (
            with_fee_payer.clone(),
            Some(node_without),
            "has no token account",
        ),
        (with_fee_payer, None, "no [chains.SOL] node"),
        (without_fee_payer, None, "names no feePayer"),
    ] {
        let x402 = surface(facilitator_url, node).await;
        assert_eq!(networks(&x402), ["eip155:8453"], "{reason}");
        assert_eq!(x402.left_out.len(), 1);
        assert_eq!(
            x402.left_out[0].network,
            swapd_x402::exact_svm::SOLANA_MAINNET
        );
        assert!(
            x402.left_out[0].reason.contains(reason),
            "{}",
            x402.left_out[0].reason
        );
    }
}

#[tokio::test]
async fn without_an_access_token_secret_order_and_onchain_routes_are_disabled() {
    let server = TestServer::start_with(Options {
        x402_wallet_routes: false,
        ..Options::default()
    })
    .await;
    let payer = PrivateKeySigner::random();
    for (method, path) in [
        ("POST", "/api/x402/orders"),
        (
            "GET",
            "/api/x402/orders/ord_0123456789abcdef0123456789abcdef",
        ),
        ("POST", "/api/x402/onchain/routes/resolve"),
        (
            "GET",
            "/api/x402/onchain/executions/ocx_0123456789abcdef0123456789abcdef",
        ),
    ] {
        let resp = send(
            &server,
            method,
            path,
            Some(&order_body()),
            &[idempotency("disabled-route")],
        )
        .await;
        resp.expect(503, "service_unavailable");
        assert!(
            resp.message().contains("access_token_secret"),
            "{}",
            resp.message()
        );
    }
    let doc = send(&server, "GET", "/api/x402", None, &[]).await;
    let routes = doc.body["data"]["routes"].as_array().unwrap().clone();
    let enabled =
        |path: &str| routes.iter().find(|r| r["path"] == path).unwrap()["enabled"].clone();
    assert_eq!(enabled("/api/x402/orders"), false);
    assert_eq!(enabled("/api/x402/currencies"), true);
    // Market data stays paid and open.
    let challenge = required(&send(&server, "GET", "/api/x402/currencies", None, &[]).await);
    let paid = send(
        &server,
        "GET",
        "/api/x402/currencies",
        None,
        &[payment_header(&pay(&challenge, &payer, server.now_secs()))],
    )
    .await;
    assert_eq!(paid.status, 200);
    server.stop().await;
}

/// A paid call whose body or query its handler would refuse costs nothing: the input is checked
/// before the payment is even looked at, and the payment stays good for the corrected request.
#[tokio::test]
async fn a_malformed_body_is_refused_before_anything_is_charged() {
    let server = TestServer::start().await;
    let payer = PrivateKeySigner::random();
    let unpaid = send(
        &server,
        "POST",
        "/api/x402/orders",
        Some(&order_body()),
        &[],
    )
    .await;
    let payment = pay(&required(&unpaid), &payer, server.now_secs());

    let mut incomplete = order_body();
    incomplete.as_object_mut().unwrap().remove("toAddress");
    let refused = send(
        &server,
        "POST",
        "/api/x402/orders",
        Some(&incomplete),
        &[payment_header(&payment), idempotency("malformed-1")],
    )
    .await;
    refused.expect(400, "validation_failed");
    assert!(refused.header("payment-response").is_none());
    let nonce = payment.payload["authorization"]["nonce"].as_str().unwrap();
    let payer_address = payer.address().to_checksum(None);
    let store = &server.state.store;
    assert!(
        store
            .x402_settlement(&payer_address, nonce)
            .await
            .unwrap()
            .is_none()
    );

    // Paid GETs: their query is checked the same way.
    send(
        &server,
        "GET",
        "/api/x402/routes?fromCcy=BTC&amount=1",
        None,
        &[],
    )
    .await
    .expect(400, "validation_failed");
    send(
        &server,
        "GET",
        "/api/x402/routes?fromCcy=BTC&toCcy=NOPE&amount=1",
        None,
        &[],
    )
    .await
    .expect(422, "pair_unsupported");
    send(&server, "GET", "/api/x402/currencies?verbose=1", None, &[])
        .await
        .expect(400, "validation_failed");
    send(
        &server,
        "GET",
        "/api/x402/routes?fromCcy=BTC&toCcy=ETH&amount=1",
        None,
        &[],
    )
    .await
    .expect(402, "payment_required");

    // Without any payment, the same refusal (not a 402 to pay for a request that would fail).
    let unknown = json!({"fromCcy": "BTC", "toCcy": "ETH", "kind": "pair_depth", "steps": 99});
    send(
        &server,
        "POST",
        "/api/x402/market-intel/jobs",
        Some(&unknown),
        &[],
    )
    .await
    .expect(400, "validation_failed");

    let paid = send(
        &server,
        "POST",
        "/api/x402/orders",
        Some(&order_body()),
        &[payment_header(&payment), idempotency("malformed-2")],
    )
    .await;
    assert_eq!(paid.status, 201, "{}", paid.body);
    assert!(
        store
            .x402_settlement(&payer_address, nonce)
            .await
            .unwrap()
            .is_some()
    );
    server.stop().await;
}

/// x402's Python MCP session sends optional fields as JSON `null` (`"extensions": null`): the
/// payment is the same payment, accepted and settled as when they are absent.
#[tokio::test]
async fn a_payment_whose_optional_fields_are_null_is_accepted() {
    let server = TestServer::start().await;
    let payer = PrivateKeySigner::random();
    let challenge = required(&send(&server, "GET", "/api/x402/currencies", None, &[]).await);
    let payment = pay(&challenge, &payer, server.now_secs());
    let mut json = serde_json::to_value(&payment).unwrap();
    json["extensions"] = serde_json::Value::Null;
    json["resource"] = serde_json::Value::Null;
    let header = base64::Engine::encode(
        &base64::engine::general_purpose::STANDARD,
        serde_json::to_vec(&json).unwrap(),
    );
    let paid = send(
        &server,
        "GET",
        "/api/x402/currencies",
        None,
        &[("PAYMENT-SIGNATURE", header)],
    )
    .await;
    assert_eq!(paid.status, 200, "{}", paid.body);
    let settled: SettleResponse =
        wire::decode_header(paid.header("payment-response").unwrap()).unwrap();
    assert!(settled.success);
    server.stop().await;
}
