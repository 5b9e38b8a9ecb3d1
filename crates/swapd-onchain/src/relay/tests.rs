//! Relay against its recorded wire format (docs/providers.md, "Relay"), served locally.

use std::sync::Arc;
use std::time::Duration;

use alloy_primitives::Address;
use serde_json::{Value, json};
use swapd_core::address::Network;
use swapd_core::amount::Amount;
use swapd_core::fees::entry::FeeKind;
use swapd_core::market::currencies::currency;
use swapd_core::market::provider::{Provider, ProviderError, QuoteRequest, Wallet};
use swapd_core::market::{Direction, RateType};
use swapd_core::onchain::plan::{
    ExecutionPlan, ExecutionReport, ExecutionStatus, Outcome, SignedStep,
};
use swapd_core::onchain::router::{OnchainRouter, PlanRequest, TrackRequest};
use swapd_core::onchain::signatures::typed_data_hash;
use swapd_types::onchain::PlanTransaction;
use wiremock::matchers::{body_json, body_partial_json, method, path, query_param};
use wiremock::{Mock, MockServer, ResponseTemplate};

use super::{Intent, Relay, RelayState};
use crate::Chains;
use crate::scripted::{ScriptedChain, paid_log};

const WALLET: &str = "0x03508bb71268bba25ecacc8f620e01866650532c";
const SOLANA_RECIPIENT: &str = "9WzDXwBbmkg8ZTbNMqUxvQRAyrZzDsGYdLVL9zYtAWWM";
const USDC_BASE: &str = "0x833589fcd6edb6e08f4c7c32d4f71b54bda02913";
const USDC_ARB: &str = "0xaf88d065e77c8cc2239327c5edb3a432268e5831";
const REQUEST_ID: &str = "0x92b99e6e1ee1deeb9531b5ad7f87091b3d71254b3176de9e8b5f6c6d0bd3a331";
const DEPOSIT: &str = "0x7e7e7e7e7e7e7e7e7e7e7e7e7e7e7e7e7e7e7e7e7e7e7e7e7e7e7e7e7e7e7e7e";
const FILL: &str = "0x5f5f5f5f5f5f5f5f5f5f5f5f5f5f5f5f5f5f5f5f5f5f5f5f5f5f5f5f5f5f5f5f";

async fn relay(server: &MockServer, chains: Chains) -> Relay {
    Relay::new(
        &server.uri(),
        None,
        "swapd",
        Duration::from_millis(500),
        chains,
    )
    .unwrap()
}

fn side(chain: u64, address: &str, decimals: u8, amount: &str, minimum: &str) -> Value {
    json!({"currency": {"chainId": chain, "address": address, "symbol": "USDC", "name": "USD Coin", "decimals": decimals,
                        "metadata": {"logoURI": "https://example.invalid/usdc.png", "verified": true, "isNative": false}},
           "amount": amount, "amountFormatted": "x", "amountUsd": "x", "minimumAmount": minimum})
}

/// The OpenAPI example's shape (from Relay's OpenAPI document): 25 USDC on Base → Arbitrum with `steps`.
fn quote(steps: Value) -> Value {
    json!({
        "steps": steps,
        "fees": {
            "gas": {"currency": {"chainId": 8453, "address": "0x0000000000000000000000000000000000000000", "symbol": "ETH", "decimals": 18},
                    "amount": "3000000000000", "amountFormatted": "0.000003", "amountUsd": "0.01", "minimumAmount": "3000000000000"},
            "relayer": {"currency": {"chainId": 8453, "address": USDC_BASE, "symbol": "USDC", "decimals": 6},
                        "amount": "50000", "amountFormatted": "0.05", "amountUsd": "0.05", "minimumAmount": "50000"}
        },
        "details": {
            "operation": "bridge", "sender": WALLET, "recipient": WALLET,
            "currencyIn": side(8453, USDC_BASE, 6, "25000000", "25000000"),
            "currencyOut": side(42161, USDC_ARB, 6, "24950000", "24900000"),
            "totalImpact": {"usd": "-0.05", "percent": "-0.2"}, "rate": "0.998",
            "timeEstimate": 10, "isFixedRate": false
        }
    })
}

fn transaction_steps() -> Value {
    json!([
        {"id": "approve", "action": "Approve", "description": "Approve USDC", "kind": "transaction", "requestId": REQUEST_ID,
         "items": [{"status": "incomplete", "data": {"from": WALLET, "to": USDC_BASE, "data": "0x095ea7b3AB", "value": "0", "chainId": 8453}}]},
        {"id": "deposit", "action": "Confirm transaction in your wallet", "description": "Depositing funds", "kind": "transaction",
         "requestId": REQUEST_ID,
         "items": [{"status": "incomplete",
                    "data": {"from": WALLET, "to": "0xf70da97812cb96acdf810712aa562db8dfa3dbef", "data": "0x00fad611", "value": "0",
                             "maxFeePerGas": "12205661344", "maxPriorityFeePerGas": "2037863396", "chainId": 8453, "gas": "120000"},
                    "check": {"endpoint": format!("/intents/status?requestId={REQUEST_ID}"), "method": "GET"}}]}
    ])
}

/// A permit to sign (no `EIP712Domain` in its types, as Relay sends it), posted to
/// `/execute/permits`.
pub fn permit_sign() -> Value {
    json!({
        "signatureKind": "eip712",
        "domain": {"name": "USD Coin", "version": "2", "chainId": 8453, "verifyingContract": USDC_BASE},
        "types": {"Permit": [{"name": "owner", "type": "address"}, {"name": "spender", "type": "address"},
                             {"name": "value", "type": "uint256"}, {"name": "nonce", "type": "uint256"},
                             {"name": "deadline", "type": "uint256"}]},
        "primaryType": "Permit",
        "value": {"owner": WALLET, "spender": "0xf70da97812cb96acdf810712aa562db8dfa3dbef", "value": "25000000",
                  "nonce": "0", "deadline": "1800000300"}
    })
}

fn signature_steps() -> Value {
    json!([
        {"id": "authorize", "action": "Sign", "description": "Sign a permit", "kind": "signature", "requestId": REQUEST_ID,
         "items": [{"status": "incomplete",
                    "data": {"sign": permit_sign(),
                             "post": {"endpoint": "/execute/permits", "method": "POST", "body": {"kind": "eip3009", "requestId": REQUEST_ID}}}}]}
    ])
}

fn request(from: &str, to: &str, amount: &str) -> QuoteRequest {
    let (from, to) = (currency(from).unwrap(), currency(to).unwrap());
    QuoteRequest {
        from,
        to,
        amount: Amount::parse(amount, from.precision).unwrap(),
        direction: Direction::From,
        rate_type: RateType::Float,
        wallet: Some(Wallet {
            namespace: "eip155",
            address: Some(WALLET.into()),
        }),
        recipient: None,
        fees: Default::default(),
        now_ms: 0,
    }
}

fn plan_request(min: &str) -> PlanRequest {
    let (from, to) = (currency("USDCBASE").unwrap(), currency("USDCARB").unwrap());
    PlanRequest {
        plan_id: "ocx_1".into(),
        from,
        to,
        from_amount: Amount::parse("25", 6).unwrap(),
        min_output: Amount::parse(min, 6).unwrap(),
        shown: swapd_core::onchain::router::ShownTerms {
            expected_output: Amount::parse(min, 6).unwrap(),
            min_output: Amount::parse(min, 6).unwrap(),
        },
        wallet_address: WALLET.into(),
        recipient: None,
        slippage_bps: 50,
        gasless: true,
        deadline_secs: 1_800_000_300,
        onchain_fees: Vec::new(),
    }
}

async fn quoting(answer: ResponseTemplate) -> MockServer {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/quote/v2"))
        .respond_with(answer)
        .mount(&server)
        .await;
    server
}

#[tokio::test]
async fn a_card_asks_for_exact_input_with_a_permit_for_tokens() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/quote/v2"))
        .and(body_json(json!({
            "user": WALLET, "originChainId": 8453, "destinationChainId": 42161,
            "originCurrency": "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913",
            "destinationCurrency": "0xaf88d065e77c8cC2239327C5EDb3A432268e5831",
            "amount": "25000000", "tradeType": "EXACT_INPUT", "refundTo": WALLET,
            "referrer": "swapd", "usePermit": true
        })))
        .respond_with(ResponseTemplate::new(200).set_body_json(quote(signature_steps())))
        .expect(1)
        .mount(&server)
        .await;
    let card = relay(&server, Chains::default())
        .await
        .quote(&request("USDCBASE", "USDCARB", "25"))
        .await
        .unwrap();
    assert_eq!(card.to_amount.to_string(), "24.95");
    assert_eq!(card.min_output.to_string(), "24.9");
    assert!(card.gasless, "a signature-only route");
    assert_eq!(card.estimated_duration_secs, 10);
    let fees: Vec<_> = card
        .fees
        .iter()
        .map(|fee| (fee.kind, fee.currency.code, fee.amount.to_string()))
        .collect();
    assert_eq!(
        fees,
        [
            (FeeKind::Network, "ETHBASE", "0.000003".to_owned()),
            (FeeKind::Provider, "USDCBASE", "0.05".to_owned())
        ]
    );
}

#[tokio::test]
async fn each_partys_fee_is_a_relay_app_fee_taken_from_the_input() {
    let server = MockServer::start().await;
    let app_fees = json!({"appFees": [
        {"recipient": crate::scripted::FEE_RECIPIENT, "fee": "30"},
        {"recipient": crate::scripted::PARTNER_RECIPIENT, "fee": "20"}
    ]});
    Mock::given(method("POST"))
        .and(path("/quote/v2"))
        .and(body_partial_json(app_fees))
        .respond_with(ResponseTemplate::new(200).set_body_json(quote(signature_steps())))
        .expect(2)
        .mount(&server)
        .await;
    let relay = relay(&server, Chains::default()).await;
    let card = relay
        .quote(&QuoteRequest {
            fees: crate::scripted::fee_policy(),
            ..request("USDCBASE", "USDCARB", "25")
        })
        .await
        .unwrap();
    // In bps of the input, in the input currency; one recipient per party.
    assert_eq!(
        crate::scripted::entries(&card.fees),
        [
            (
                "service".into(),
                "22.5".into(),
                "0.05625".into(),
                "USDCBASE".into()
            ),
            (
                "affiliate".into(),
                "7.5".into(),
                "0.01875".into(),
                "USDCBASE".into()
            ),
            (
                "partner".into(),
                "20".into(),
                "0.05".into(),
                "USDCBASE".into()
            ),
        ]
    );
    assert_eq!(
        card.to_amount.to_string(),
        "24.95",
        "Relay's output is after the fee"
    );
    let fees = card.onchain_fees.clone();
    assert_eq!(fees.len(), 2);
    relay
        .build_plan(&PlanRequest {
            onchain_fees: fees.clone(),
            ..plan_request("24.9")
        })
        .await
        .unwrap();
}

#[tokio::test]
async fn an_evm_signer_pays_a_solana_recipient_on_chain_792703809() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/quote/v2"))
        .and(body_partial_json(json!({
            "destinationChainId": 792703809, "recipient": SOLANA_RECIPIENT,
            "destinationCurrency": "EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v",
            "tradeType": "EXACT_OUTPUT", "amount": "24950000"
        })))
        .respond_with(ResponseTemplate::new(200).set_body_json({
            let mut body = quote(transaction_steps());
            body["details"]["currencyOut"] = side(
                792703809,
                "EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v",
                6,
                "24950000",
                "24900000",
            );
            body
        }))
        .expect(1)
        .mount(&server)
        .await;
    let relay = relay(&server, Chains::default()).await;
    let mut to_solana = request("USDCBASE", "USDCSOL", "24.95");
    to_solana.direction = Direction::To;
    assert!(matches!(
        relay.quote(&to_solana).await,
        Err(ProviderError::RecipientRequired(_))
    ));
    to_solana.recipient = Some(SOLANA_RECIPIENT.into());
    let card = relay.quote(&to_solana).await.unwrap();
    assert_eq!(card.from_amount.to_string(), "25");
    assert!(!card.gasless);
    // Routes from Solana are not offered.
    let mut from_solana = request("USDCSOL", "USDCBASE", "10");
    from_solana.wallet = None;
    from_solana.recipient = Some(WALLET.into());
    assert!(matches!(
        relay.quote(&from_solana).await,
        Err(ProviderError::PairUnsupported(_))
    ));
}

#[tokio::test]
async fn refusals_and_failures_are_swapds_errors_never_relays_words() {
    for (answer, code) in [
        (ResponseTemplate::new(400).set_body_json(json!({"message": "secret upstream detail", "errorCode": "AMOUNT_TOO_LOW"})), "amount_out_of_range"),
        (ResponseTemplate::new(400).set_body_json(json!({"message": "secret upstream detail", "errorCode": "NO_SWAP_ROUTES_FOUND"})), "pair_unsupported"),
        (ResponseTemplate::new(401).set_body_json(json!({"message": "secret upstream detail", "errorCode": "UNAUTHORIZED"})), "provider_unavailable"),
        (ResponseTemplate::new(500).set_body_json(json!({"message": "secret upstream detail", "errorCode": "INTERNAL", "requestId": "x"})), "provider_unavailable"),
        (ResponseTemplate::new(200).set_body_string("secret upstream detail"), "provider_unavailable"),
        (ResponseTemplate::new(200).set_delay(Duration::from_secs(2)).set_body_json(quote(signature_steps())), "provider_unavailable"),
    ] {
        let server = quoting(answer).await;
        let error = relay(&server, Chains::default())
            .await
            .quote(&request("USDCBASE", "USDCARB", "25"))
            .await
            .unwrap_err();
        assert_eq!(error.reason_code(), code, "{error}");
        assert!(!error.to_string().contains("secret"), "{error}");
    }
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/quote/v2"))
        .respond_with(ResponseTemplate::new(429).set_body_json(json!({"message": "slow down"})))
        .expect(3)
        .mount(&server)
        .await;
    let error = relay(&server, Chains::default())
        .await
        .quote(&request("USDCBASE", "USDCARB", "25"))
        .await
        .unwrap_err();
    assert_eq!(error.to_string(), "Relay is rate limiting swapd");
}

#[tokio::test]
async fn transaction_items_become_the_plans_transactions() {
    let server =
        quoting(ResponseTemplate::new(200).set_body_json(quote(transaction_steps()))).await;
    let built = relay(&server, Chains::default())
        .await
        .build_plan(&plan_request("24.9"))
        .await
        .unwrap();
    let ids: Vec<_> = built.steps.iter().map(|s| s.step_id.as_str()).collect();
    assert_eq!(ids, ["approve", "deposit"]);
    let Some(PlanTransaction::Evm { to, data, gas, .. }) = &built.steps[1].transaction else {
        panic!("a transaction");
    };
    assert_eq!(to, "0xf70da97812CB96acDF810712Aa562db8dfA3dbEF");
    assert_eq!(
        (data.as_str(), gas.as_deref().unwrap_or_default()),
        ("0x00fad611", "120000")
    );
    let state: RelayState = serde_json::from_value(built.provider_state.unwrap()).unwrap();
    assert_eq!(state.request_id, REQUEST_ID);
    assert!(state.posts.is_empty());

    let error = relay(&server, Chains::default())
        .await
        .build_plan(&plan_request("24.95"))
        .await
        .unwrap_err();
    assert!(error.to_string().contains("the price moved"), "{error}");
}

#[tokio::test]
async fn signature_items_become_eip712_steps_with_their_post() {
    let server = quoting(ResponseTemplate::new(200).set_body_json(quote(signature_steps()))).await;
    let built = relay(&server, Chains::default())
        .await
        .build_plan(&plan_request("24.9"))
        .await
        .unwrap();
    assert_eq!(built.steps.len(), 1);
    let signature = built.steps[0].signature.as_ref().unwrap();
    assert_eq!(signature.signature_id, "sig_authorize");
    assert_eq!(signature.purpose, "permit");
    let typed = &signature.typed_data;
    assert_eq!(typed["primaryType"], "Permit");
    assert_eq!(typed["message"]["value"], "25000000");
    // The domain type wallets expect, from the domain's own fields.
    assert_eq!(
        typed["types"]["EIP712Domain"],
        json!([{"name": "name", "type": "string"}, {"name": "version", "type": "string"},
               {"name": "chainId", "type": "uint256"}, {"name": "verifyingContract", "type": "address"}])
    );
    assert!(typed_data_hash(typed).is_some());
    let state: RelayState = serde_json::from_value(built.provider_state.unwrap()).unwrap();
    assert_eq!(state.posts[0].signature_id, "sig_authorize");
    assert_eq!(state.posts[0].post.endpoint, "/execute/permits");

    // Transactions and signatures in one route cannot be reported as one: refused.
    let mut mixed = transaction_steps();
    mixed
        .as_array_mut()
        .unwrap()
        .extend(signature_steps().as_array().unwrap().clone());
    let server = quoting(ResponseTemplate::new(200).set_body_json(quote(mixed))).await;
    assert!(matches!(
        relay(&server, Chains::default())
            .await
            .build_plan(&plan_request("24.9"))
            .await,
        Err(ProviderError::PairUnsupported(_))
    ));
    // EIP-191 messages are not EIP-712: refused.
    let mut eip191 = signature_steps();
    eip191[0]["items"][0]["data"]["sign"] = json!({"signatureKind": "eip191", "message": "hello"});
    let server = quoting(ResponseTemplate::new(200).set_body_json(quote(eip191))).await;
    assert!(
        relay(&server, Chains::default())
            .await
            .build_plan(&plan_request("24.9"))
            .await
            .is_err()
    );
}

#[test]
fn every_intent_status_maps_onto_an_execution_state() {
    let map = |status: &str| {
        super::intent(
            &serde_json::to_vec(&json!({"status": status, "inTxHashes": [DEPOSIT], "txHashes": [FILL],
                                         "updatedAt": 1717000000, "originChainId": 8453, "destinationChainId": 42161}))
            .unwrap(),
        )
    };
    assert_eq!(map("waiting").unwrap(), Intent::Waiting);
    assert_eq!(map("unknown").unwrap(), Intent::Waiting);
    assert_eq!(
        map("depositing").unwrap(),
        Intent::Pending("source_confirming")
    );
    assert_eq!(
        map("pending").unwrap(),
        Intent::Pending("awaiting_destination")
    );
    assert_eq!(
        map("submitted").unwrap(),
        Intent::Pending("awaiting_destination")
    );
    assert_eq!(map("delayed").unwrap(), Intent::Pending("delayed"));
    assert_eq!(map("success").unwrap(), Intent::Filled(vec![FILL.into()]));
    assert_eq!(map("refund").unwrap(), Intent::Refunded(vec![FILL.into()]));
    assert_eq!(
        map("refunded").unwrap(),
        Intent::Refunded(vec![FILL.into()])
    );
    assert_eq!(map("failure").unwrap(), Intent::Failed);
    assert!(map("teleported").is_err());
}

fn plan(report_signatures: bool) -> ExecutionPlan {
    ExecutionPlan {
        from_amount: crate::scripted::amount("25", "USDCBASE"),
        expected_output: crate::scripted::amount("24.95", "USDCARB"),
        min_output: crate::scripted::amount("24.9", "USDCARB"),
        gasless: report_signatures,
        provider_state: Some(json!({"requestId": REQUEST_ID, "posts": [
            {"signatureId": "sig_authorize", "post": {"endpoint": "/execute/permits", "method": "POST",
                                                      "body": {"kind": "eip3009", "requestId": REQUEST_ID}}}]})),
        ..crate::scripted::plan("relay", WALLET, "USDCBASE", "USDCARB")
    }
}

#[tokio::test]
async fn signatures_are_posted_where_relay_said_with_the_signature_as_a_query_parameter() {
    let server = MockServer::start().await;
    let signature = format!("0x{}1b", "ab".repeat(64));
    Mock::given(method("POST"))
        .and(path("/execute/permits"))
        .and(query_param("signature", signature.as_str()))
        .and(body_json(
            json!({"kind": "eip3009", "requestId": REQUEST_ID}),
        ))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({"message": "ok"})))
        .expect(1)
        .mount(&server)
        .await;
    let relay = relay(&server, Chains::default()).await;
    let signed = [SignedStep {
        signature_id: "sig_authorize".into(),
        purpose: "permit".into(),
        signature: signature.clone(),
    }];
    assert_eq!(
        relay.relay_signatures(&plan(true), &signed).await.unwrap(),
        None
    );
}

#[tokio::test]
async fn an_intent_is_followed_to_what_its_fill_paid_at_the_destination() {
    let server = MockServer::start().await;
    let (base, arbitrum) = (
        Arc::new(ScriptedChain::new(Network::Base)),
        Arc::new(ScriptedChain::new(Network::Arbitrum)),
    );
    let relay = relay(&server, Chains::new(vec![base.clone(), arbitrum.clone()])).await;
    let plan = plan(false);
    let report = ExecutionReport::TxHash {
        tx_hash: DEPOSIT.into(),
    };
    let track = |now_ms| {
        relay.track_execution(TrackRequest {
            plan: &plan,
            report: &report,
            reported_at_ms: 10_000,
            now_ms,
        })
    };
    let status = |status: &str| {
        Mock::given(method("GET"))
            .and(path("/intents/status/v3"))
            .and(query_param("requestId", REQUEST_ID))
            .respond_with(ResponseTemplate::new(200).set_body_json(
                json!({"status": status, "inTxHashes": [DEPOSIT], "txHashes": [FILL]}),
            ))
    };
    // Not on its chain yet: not asked at Relay.
    let tracked = track(20_000).await.unwrap();
    assert_eq!(tracked.substatus.as_deref(), Some("not_indexed"));
    assert!(server.received_requests().await.unwrap().is_empty());

    let wallet: Address = WALLET.parse().unwrap();
    base.mined(DEPOSIT, 10, true, wallet, Vec::new());
    base.set_head(20);
    status("pending").mount(&server).await;
    let tracked = track(21_000).await.unwrap();
    assert_eq!(
        (tracked.status, tracked.substatus.as_deref()),
        (ExecutionStatus::Pending, Some("awaiting_destination"))
    );

    server.reset().await;
    status("success").mount(&server).await;
    let tracked = track(22_000).await.unwrap();
    assert_eq!(
        tracked.substatus.as_deref(),
        Some("awaiting_destination"),
        "the node has no fill yet"
    );
    arbitrum.mined(
        FILL,
        300,
        true,
        Address::ZERO,
        vec![paid_log(USDC_ARB.parse().unwrap(), WALLET, 24_951_234)],
    );
    arbitrum.set_head(400);
    let tracked = track(23_000).await.unwrap();
    assert_eq!(tracked.outcome, Some(Outcome::Completed));
    assert_eq!(tracked.received_amount.as_deref(), Some("24.951234"));
    assert_eq!(tracked.received_token.as_deref(), Some("USDCARB"));
    let roles: Vec<_> = tracked
        .tx_hashes
        .iter()
        .map(|tx| (tx.role.as_str(), tx.chain.as_str()))
        .collect();
    assert_eq!(
        roles,
        [("source", "eip155:8453"), ("destination", "eip155:42161")]
    );

    server.reset().await;
    status("refund").mount(&server).await;
    let refunded = track(24_000).await.unwrap();
    assert_eq!(refunded.outcome, Some(Outcome::Refunded));
    assert_eq!(refunded.received_token.as_deref(), Some("USDCBASE"));
    server.reset().await;
    status("failure").mount(&server).await;
    assert_eq!(track(25_000).await.unwrap().status, ExecutionStatus::Failed);
}
