//! The SDK's x402 client against a real server: it pays 402s by itself (EIP-3009 with a local
//! key), signs in with EVM and Solana wallets, and keeps the Idempotency-Key across its retry.

use serde_json::json;
use swapd::app::{Node, Roles, Runtime};
use swapd_client::x402::{PrivateKeySigner, SolanaKey, Wallet, X402Client};
use tokio_util::sync::CancellationToken;

#[tokio::test]
async fn the_sdk_pays_signs_in_and_reads_back_what_its_wallets_own() {
    let dir = tempfile::tempdir().unwrap();
    let app = Node::build(
        Runtime::open(crate::local_config(dir.path()))
            .await
            .unwrap(),
        Roles::ALL,
    )
    .await
    .unwrap();
    let base = format!("http://{}", app.local_addr().unwrap());
    let shutdown = CancellationToken::new();
    let server = tokio::spawn(app.run_until_stopped(shutdown.clone()));

    let payer = PrivateKeySigner::random();
    let paying = X402Client::new(&base).unwrap().paying_with(payer.clone());
    let catalog = paying.get("/api/x402/currencies", &[]).await.unwrap();
    assert!(catalog.answer.data["count"].as_u64().unwrap() >= 20);
    let settlement = catalog.settlement.expect("paid now");
    assert!(settlement.success);
    assert_eq!(settlement.payer.unwrap(), payer.address().to_checksum(None));

    // A paid order acts for the payer; the payer's wallet reads it back for free.
    let order = json!({"fromCcy": "BTC", "toCcy": "USDTTRC", "amount": "0.05",
                       "toAddress": "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t"});
    let created = paying.post("/api/x402/orders", &order).await.unwrap();
    assert_eq!(created.answer.status, 201);
    let id = created.answer.data["orderId"].as_str().unwrap().to_owned();
    let owner = X402Client::new(&base)
        .unwrap()
        .signed_in_as(Wallet::Evm(payer.clone()));
    let read = owner
        .get(&format!("/api/x402/orders/{id}"), &[])
        .await
        .unwrap();
    assert_eq!(read.answer.data["orderId"], id);
    assert!(read.settlement.is_none(), "reads are free");
    let stranger = X402Client::new(&base)
        .unwrap()
        .signed_in_as(Wallet::Evm(PrivateKeySigner::random()));
    let refused = stranger
        .get(&format!("/api/x402/orders/{id}"), &[])
        .await
        .unwrap_err();
    assert_eq!(refused.code(), Some(swapd_types::ErrorCode::OrderNotFound));

    // Paid by the EVM key, signed in as a Solana wallet: the order is the Solana wallet's.
    let solana = || Wallet::Solana(SolanaKey::from_bytes(&[5; 32]));
    let both = X402Client::new(&base)
        .unwrap()
        .paying_with(payer.clone())
        .signed_in_as(solana());
    let created = both.post("/api/x402/orders", &order).await.unwrap();
    let solana_order = created.answer.data["orderId"].as_str().unwrap().to_owned();
    let read = X402Client::new(&base)
        .unwrap()
        .signed_in_as(solana())
        .get(&format!("/api/x402/orders/{solana_order}"), &[])
        .await
        .unwrap();
    assert_eq!(read.answer.data["orderId"], solana_order);
    assert!(
        owner
            .get(&format!("/api/x402/orders/{solana_order}"), &[])
            .await
            .is_err()
    );

    // Without a payer, a paid call is refused by the client, and it never pays above its cap.
    let unpaid = X402Client::new(&base).unwrap();
    assert!(unpaid.get("/api/x402/currencies", &[]).await.is_err());
    let frugal = X402Client::new(&base)
        .unwrap()
        .paying_with(payer)
        .with_max_amount(alloy_primitives::U256::from(49_999u64));
    let too_dear = frugal.get("/api/x402/currencies", &[]).await.unwrap_err();
    assert!(too_dear.to_string().contains("more than"), "{too_dear}");

    // A client that knows a route's requirements pays with its first request, no 402 first.
    let url = format!("{base}/api/x402/currencies");
    let challenge = reqwest::get(&url).await.unwrap();
    assert_eq!(challenge.status(), 402);
    let required = swapd_client::x402::payment_required(
        challenge.headers()["payment-required"].to_str().unwrap(),
    )
    .expect("a PAYMENT-REQUIRED header");
    let payer = X402Client::new(&base)
        .unwrap()
        .paying_with(PrivateKeySigner::random());
    for _ in 0..2 {
        let paid = reqwest::Client::new()
            .get(&url)
            .header("PAYMENT-SIGNATURE", payer.payment_for(&required).unwrap())
            .send()
            .await
            .unwrap();
        assert_eq!(
            paid.status(),
            200,
            "each payment is fresh: it buys one call"
        );
        assert!(paid.headers().contains_key("payment-response"));
    }
    // The facilitator's time is on /metrics, per call.
    let metrics = reqwest::get(format!("{base}/metrics"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    for call in ["verify", "settle"] {
        assert!(
            metrics.contains(&format!(
                "x402_facilitator_duration_seconds_count{{call=\"{call}\"}}"
            )),
            "{metrics}"
        );
    }

    shutdown.cancel();
    server.await.unwrap().unwrap();
}
