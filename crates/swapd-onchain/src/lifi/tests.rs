//! LI.FI against its recorded wire format (docs/providers.md, "LI.FI"), served locally.

use std::sync::Arc;
use std::time::Duration;

use alloy_primitives::{Address, U256, address};
use alloy_sol_types::SolCall;
use serde_json::json;
use swapd_core::address::Network;
use swapd_core::amount::Amount;
use swapd_core::fees::entry::FeeKind;
use swapd_core::market::currencies::currency;
use swapd_core::market::provider::{Provider, ProviderError, QuoteRequest, Wallet};
use swapd_core::market::{Direction, RateType};
use swapd_core::onchain::plan::{ExecutionPlan, ExecutionReport, ExecutionStatus, Outcome};
use swapd_core::onchain::router::{OnchainRouter, PlanRequest, TrackRequest};
use swapd_types::onchain::{ExecutionTx, PlanTransaction};
use wiremock::matchers::{method, path, query_param};
use wiremock::{Mock, MockServer, ResponseTemplate};

use super::LiFi;
use crate::Chains;
use crate::approveCall;
use crate::scripted::{ScriptedChain, paid_log};

const WALLET: &str = "0x552008c0f6870c2f77e5cC1d2eb9bdff03e30Ea0";
const USDC_ETH: &str = "0xA0b86991c6218b36c1d19D4a2e9Eb0cE3606eB48";
const DIAMOND: &str = "0x1231DEB6f5749EF6cE6943a275A1D3E7486F4EaE";

/// The docs' quote (from LI.FI's documentation), for swapd's ETH → USDC on Ethereum.
fn quote_body(
    from_token: &str,
    from_decimals: u8,
    to_token: &str,
    to_decimals: u8,
    value: &str,
) -> serde_json::Value {
    json!({
        "id": "a8dc011a-f52d-4492-9e99-21de64b5453a",
        "type": "lifi",
        "tool": "1inch",
        "toolDetails": {"key": "1inch", "name": "1inch", "logoURI": "https://example.invalid/1inch.svg"},
        "action": {
            "fromChainId": 1, "toChainId": 1,
            "fromToken": {"address": from_token, "symbol": "X", "decimals": from_decimals, "chainId": 1, "name": "X", "priceUSD": "1"},
            "toToken": {"address": to_token, "symbol": "Y", "decimals": to_decimals, "chainId": 1, "name": "Y"},
            "fromAmount": "1000000000000000000",
            "slippage": 0.005,
            "fromAddress": WALLET,
            "toAddress": WALLET
        },
        "estimate": {
            "tool": "1inch",
            "fromAmount": "1000000000000000000",
            "toAmount": "2994123456",
            "toAmountMin": "2979152838",
            "approvalAddress": "0x1111111254fb6c44bac0bed2854e76f90643097d",
            "feeCosts": [],
            "gasCosts": [{"type": "SEND", "price": "24000000000", "estimate": "350000", "limit": "437500",
                          "amount": "8400000000000000", "amountUSD": "25.20",
                          "token": {"address": "0x0000000000000000000000000000000000000000", "symbol": "ETH", "decimals": 18, "chainId": 1, "name": "ETH"}}],
            "executionDuration": 30.5
        },
        "includedSteps": [],
        "transactionRequest": {
            "to": DIAMOND,
            "data": "0x4630A0D8ABCDEF",
            "value": value,
            "gasLimit": "0x55730",
            "gasPrice": "0x5d21dba00",
            "from": WALLET,
            "chainId": 1
        }
    })
}

fn eth_to_usdc() -> serde_json::Value {
    quote_body(
        "0x0000000000000000000000000000000000000000",
        18,
        &USDC_ETH.to_lowercase(),
        6,
        "0xde0b6b3a7640000",
    )
}

fn usdc_to_eth() -> serde_json::Value {
    let mut body = quote_body(
        USDC_ETH,
        6,
        "0x0000000000000000000000000000000000000000",
        18,
        "0x0",
    );
    body["estimate"]["fromAmount"] = "3000000000".into();
    body["estimate"]["toAmount"] = "1000000000000000000".into();
    body["estimate"]["toAmountMin"] = "995000000000000000".into();
    body
}

fn request(from: &str, to: &str, amount: &str, direction: Direction) -> QuoteRequest {
    let (from, to) = (currency(from).unwrap(), currency(to).unwrap());
    let precision = match direction {
        Direction::From => from.precision,
        Direction::To => to.precision,
    };
    QuoteRequest {
        from,
        to,
        amount: Amount::parse(amount, precision).unwrap(),
        direction,
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

fn plan_request(from: &str, to: &str, amount: &str, min: &str) -> PlanRequest {
    let (from, to) = (currency(from).unwrap(), currency(to).unwrap());
    PlanRequest {
        plan_id: "ocx_1".into(),
        from,
        to,
        from_amount: Amount::parse(amount, from.precision).unwrap(),
        min_output: Amount::parse(min, to.precision).unwrap(),
        shown: swapd_core::onchain::router::ShownTerms {
            expected_output: Amount::parse(min, to.precision).unwrap(),
            min_output: Amount::parse(min, to.precision).unwrap(),
        },
        wallet_address: WALLET.into(),
        recipient: None,
        slippage_bps: 50,
        gasless: false,
        deadline_secs: 1_800_000_000,
        onchain_fees: Vec::new(),
    }
}

async fn lifi(server: &MockServer, chains: Chains) -> LiFi {
    LiFi::new(
        &server.uri(),
        Some("lifi-key"),
        "swapd",
        Duration::from_millis(500),
        chains,
    )
    .unwrap()
}

async fn serving(route: &str, answer: ResponseTemplate) -> MockServer {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path(route))
        .respond_with(answer)
        .mount(&server)
        .await;
    server
}

#[tokio::test]
async fn the_operators_fee_is_lifis_integrator_fee_taken_from_the_input() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path("/quote"))
        .and(query_param("integrator", "swapd"))
        .and(query_param("fee", "0.003"))
        .respond_with(ResponseTemplate::new(200).set_body_json(eth_to_usdc()))
        .expect(1)
        .mount(&server)
        .await;
    let quote = lifi(&server, Chains::default())
        .await
        .quote(&QuoteRequest {
            fees: crate::scripted::fee_policy(),
            ..request("ETH", "USDCETH", "1", Direction::From)
        })
        .await
        .unwrap();
    // In the input currency, of the input; one integrator, so the partner's markup is left out.
    assert_eq!(
        crate::scripted::entries(&quote.fees),
        [
            (
                "service".into(),
                "22.5".into(),
                "0.00225".into(),
                "ETH".into()
            ),
            (
                "affiliate".into(),
                "7.5".into(),
                "0.00075".into(),
                "ETH".into()
            ),
        ]
    );
    assert_eq!(quote.to_amount.to_string(), "2994.123456");
    let fees = quote.onchain_fees.clone();
    let fee = &fees[0];
    assert_eq!((fee.bps, fee.recipient.as_str()), (30, ""));
    let query = super::plan_query(
        &PlanRequest {
            onchain_fees: fees.clone(),
            ..plan_request("ETH", "USDCETH", "1", "2979")
        },
        "swapd",
    )
    .unwrap();
    assert!(
        query.query.contains(&("fee", "0.003".into())),
        "{:?}",
        query.query
    );

    // Without an integrator name LI.FI pays no one: the fee is left out.
    let quote_without = super::card_query(
        &QuoteRequest {
            fees: crate::scripted::fee_policy(),
            ..request("ETH", "USDCETH", "1", Direction::From)
        },
        "",
    )
    .unwrap();
    assert!(!quote_without.query.iter().any(|(name, _)| *name == "fee"));
}

#[tokio::test]
async fn a_card_is_priced_from_the_quote_for_the_wallet() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path("/quote"))
        .and(query_param("fromChain", "1"))
        .and(query_param("toChain", "1"))
        .and(query_param(
            "fromToken",
            "0x0000000000000000000000000000000000000000",
        ))
        .and(query_param("toToken", USDC_ETH))
        .and(query_param("fromAmount", "1000000000000000000"))
        .and(query_param("fromAddress", WALLET))
        .and(query_param("slippage", "0.005"))
        .and(query_param("integrator", "swapd"))
        .and(query_param("skipSimulation", "true"))
        .and(wiremock::matchers::header("x-lifi-api-key", "lifi-key"))
        .respond_with(ResponseTemplate::new(200).set_body_json(eth_to_usdc()))
        .expect(1)
        .mount(&server)
        .await;
    let quote = lifi(&server, Chains::default())
        .await
        .quote(&request("ETH", "USDCETH", "1", Direction::From))
        .await
        .unwrap();
    assert_eq!(quote.from_amount.to_string(), "1");
    assert_eq!(quote.to_amount.to_string(), "2994.123456");
    assert_eq!(quote.min_output.to_string(), "2979.152838");
    assert_eq!(quote.rate_type, RateType::Float);
    assert_eq!(quote.estimated_duration_secs, 31);
    assert_eq!(quote.max, None);
    assert_eq!(quote.fees.len(), 1);
    assert_eq!(quote.fees[0].kind, FeeKind::Network);
    assert_eq!(quote.fees[0].currency.code, "ETH");
    assert_eq!(quote.fees[0].amount.to_string(), "0.0084");
}

#[tokio::test]
async fn a_fixed_output_is_asked_of_quote_to_amount() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path("/quote/toAmount"))
        .and(query_param("toAmount", "2994123456"))
        .respond_with(ResponseTemplate::new(200).set_body_json(eth_to_usdc()))
        .expect(1)
        .mount(&server)
        .await;
    let quote = lifi(&server, Chains::default())
        .await
        .quote(&request("ETH", "USDCETH", "2994.123456", Direction::To))
        .await
        .unwrap();
    assert_eq!(quote.from_amount.to_string(), "1");
}

#[tokio::test]
async fn cards_across_namespaces_need_a_recipient_and_the_source_chains_wallet() {
    let server = MockServer::start().await;
    let lifi = lifi(&server, Chains::default()).await;
    let to_solana = request("USDCBASE", "USDCSOL", "10", Direction::From);
    assert!(matches!(
        lifi.quote(&to_solana).await,
        Err(ProviderError::RecipientRequired(_))
    ));
    let mut solana_signer = request("USDCBASE", "USDCETH", "10", Direction::From);
    solana_signer.wallet = Some(Wallet {
        namespace: "solana",
        address: None,
    });
    assert!(matches!(
        lifi.quote(&solana_signer).await,
        Err(ProviderError::WalletUnsupported(_))
    ));
    let mut from_bitcoin = request("BTC", "ETH", "1", Direction::From);
    from_bitcoin.wallet = None;
    assert!(matches!(
        lifi.quote(&from_bitcoin).await,
        Err(ProviderError::PairUnsupported(_))
    ));
    assert!(server.received_requests().await.unwrap().is_empty());
}

#[tokio::test]
async fn refusals_and_failures_are_swapds_errors_never_lifis_words() {
    let no_route = json!({"message": "Unable to find a quote for the requested transfer.",
        "errors": [{"errorType": "NO_QUOTE", "code": "NO_POSSIBLE_ROUTE", "tool": "1inch", "message": "secret upstream detail"}]});
    let too_low = json!({"message": "amount too low", "code": 1011,
        "errors": [{"errorType": "NO_QUOTE", "code": "AMOUNT_TOO_LOW", "tool": "stargate", "message": "secret upstream detail"}]});
    let cases = [
        (
            ResponseTemplate::new(404).set_body_json(no_route),
            "pair_unsupported",
        ),
        (
            ResponseTemplate::new(404).set_body_json(too_low),
            "amount_out_of_range",
        ),
        (
            ResponseTemplate::new(400)
                .set_body_json(json!({"message": "secret upstream detail", "code": 1011})),
            "pair_unsupported",
        ),
        (
            ResponseTemplate::new(429)
                .set_body_json(json!({"message": "secret upstream detail", "code": 1005})),
            "provider_unavailable",
        ),
        (
            ResponseTemplate::new(503).set_body_string("secret upstream detail"),
            "provider_unavailable",
        ),
        (
            ResponseTemplate::new(200).set_body_string("{\"secret upstream detail\""),
            "provider_unavailable",
        ),
        (
            ResponseTemplate::new(200).set_body_json(json!({"tool": "x"})),
            "provider_unavailable",
        ),
        (
            ResponseTemplate::new(200)
                .set_delay(Duration::from_secs(2))
                .set_body_json(eth_to_usdc()),
            "provider_unavailable",
        ),
    ];
    for (answer, code) in cases {
        let server = serving("/quote", answer).await;
        let error = lifi(&server, Chains::default())
            .await
            .quote(&request("ETH", "USDCETH", "1", Direction::From))
            .await
            .unwrap_err();
        assert_eq!(error.reason_code(), code, "{error}");
        assert!(!error.to_string().contains("secret"), "{error}");
    }
}

#[tokio::test]
async fn rate_limits_and_server_errors_are_asked_again_a_bounded_number_of_times() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path("/quote"))
        .respond_with(ResponseTemplate::new(429).insert_header("retry-after", "0"))
        .expect(3)
        .mount(&server)
        .await;
    let error = lifi(&server, Chains::default())
        .await
        .quote(&request("ETH", "USDCETH", "1", Direction::From))
        .await
        .unwrap_err();
    assert_eq!(error.to_string(), "LI.FI is rate limiting swapd");
}

#[tokio::test]
async fn a_token_input_plan_approves_the_approval_address_then_sends_the_transaction_request() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path("/quote"))
        .and(query_param("fromAddress", WALLET))
        .and(query_param("fromAmount", "3000000000"))
        .and(query_param("slippage", "0.005"))
        .respond_with(ResponseTemplate::new(200).set_body_json(usdc_to_eth()))
        .expect(1)
        .mount(&server)
        .await;
    let steps = lifi(&server, Chains::default())
        .await
        .build_plan(&plan_request("USDCETH", "ETH", "3000", "0.99"))
        .await
        .unwrap()
        .steps;
    assert_eq!(steps.len(), 2);
    let Some(PlanTransaction::Evm {
        to,
        data,
        value,
        gas,
    }) = &steps[0].transaction
    else {
        panic!("an EVM approval");
    };
    assert_eq!(to, USDC_ETH);
    assert_eq!(
        (value.as_str(), gas.as_deref().unwrap_or_default()),
        ("0", "60000")
    );
    let approve = approveCall::abi_decode(&hex_bytes(data)).unwrap();
    assert_eq!(
        approve.spender,
        address!("1111111254fb6c44bac0bed2854e76f90643097d")
    );
    assert_eq!(approve.amount, U256::from(3_000_000_000u64));
    let Some(PlanTransaction::Evm {
        to,
        data,
        value,
        gas,
    }) = &steps[1].transaction
    else {
        panic!("an EVM transaction");
    };
    assert_eq!(to, DIAMOND);
    assert_eq!(data, "0x4630a0d8abcdef");
    // Hex quantities as exact decimal base units.
    assert_eq!(
        (value.as_str(), gas.as_deref().unwrap_or_default()),
        ("0", "350000")
    );
    assert_eq!(steps[1].chain, "eip155:1");
    assert_eq!(steps[1].chain_id, Some(1));
}

#[tokio::test]
async fn a_native_input_plan_sends_its_value_without_approval() {
    let server = serving(
        "/quote",
        ResponseTemplate::new(200).set_body_json(eth_to_usdc()),
    )
    .await;
    let steps = lifi(&server, Chains::default())
        .await
        .build_plan(&plan_request("ETH", "USDCETH", "1", "2979"))
        .await
        .unwrap()
        .steps;
    assert_eq!(steps.len(), 1);
    let Some(PlanTransaction::Evm { value, .. }) = &steps[0].transaction else {
        panic!("an EVM transaction");
    };
    assert_eq!(value, "1000000000000000000");
}

#[tokio::test]
async fn a_plan_whose_guaranteed_output_fell_below_the_cards_minimum_is_refused() {
    let server = serving(
        "/quote",
        ResponseTemplate::new(200).set_body_json(eth_to_usdc()),
    )
    .await;
    let error = lifi(&server, Chains::default())
        .await
        .build_plan(&plan_request("ETH", "USDCETH", "1", "2980"))
        .await
        .unwrap_err();
    assert!(error.to_string().contains("the price moved"), "{error}");

    let mut other_amount = eth_to_usdc();
    other_amount["estimate"]["fromAmount"] = "2".into();
    let mut bad_value = eth_to_usdc();
    bad_value["transactionRequest"]["value"] = "0xzz".into();
    let mut other_chain = eth_to_usdc();
    other_chain["transactionRequest"]["chainId"] = 8453.into();
    let mut other_token = eth_to_usdc();
    other_token["action"]["toToken"]["address"] =
        "0x0000000000000000000000000000000000000bad".into();
    for body in [other_amount, bad_value, other_chain, other_token] {
        let server = serving("/quote", ResponseTemplate::new(200).set_body_json(body)).await;
        let error = lifi(&server, Chains::default())
            .await
            .build_plan(&plan_request("ETH", "USDCETH", "1", "2979"))
            .await
            .unwrap_err();
        assert_eq!(error.reason_code(), "provider_unavailable", "{error}");
    }
}

fn hex_bytes(text: &str) -> Vec<u8> {
    let hex = text.strip_prefix("0x").unwrap();
    (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
        .collect()
}

fn status_body(status: &str, substatus: Option<&str>) -> serde_json::Value {
    json!({
        "transactionId": "0x0959ee0fbb37a868752d7ae40b25dbfa3b7d72f499fa8386fd5f4105b18b62bd",
        "sending": {"txHash": format!("0x{}", "aa".repeat(32)), "amount": "25000000", "chainId": 8453,
                    "token": {"address": "0x833589fcd6edb6e08f4c7c32d4f71b54bda02913", "symbol": "USDC", "decimals": 6}},
        "receiving": {"txHash": format!("0x{}", "bb".repeat(32)), "amount": "24950000", "chainId": 42161,
                      "token": {"address": "0xaf88d065e77c8cc2239327c5edb3a432268e5831", "symbol": "USDC", "decimals": 6}},
        "tool": "across",
        "status": status,
        "substatus": substatus,
        "substatusMessage": "secret upstream detail"
    })
}

fn source() -> ExecutionTx {
    ExecutionTx {
        role: "source".into(),
        chain: "eip155:8453".into(),
        tx_hash: format!("0x{}", "aa".repeat(32)),
    }
}

#[test]
fn every_status_and_substatus_maps_onto_an_execution_state() {
    let (from, to) = (currency("USDCBASE").unwrap(), currency("USDCARB").unwrap());
    let map = |status: &str, substatus: Option<&str>| {
        let body = serde_json::to_vec(&status_body(status, substatus)).unwrap();
        super::tracked(&body, from, to, &source())
    };
    assert_eq!(map("NOT_FOUND", None).unwrap(), None);
    assert!(map("INVALID", None).is_err());
    assert!(map("SOMETHING_NEW", None).is_err());
    for (substatus, ours) in [
        ("WAIT_SOURCE_CONFIRMATIONS", "source_confirming"),
        ("WAIT_DESTINATION_TRANSACTION", "awaiting_destination"),
        ("BRIDGE_NOT_AVAILABLE", "delayed"),
        ("CHAIN_NOT_AVAILABLE", "delayed"),
        ("REFUND_IN_PROGRESS", "refund_in_progress"),
        ("UNKNOWN_ERROR", "delayed"),
        ("INTENT_AWAITING_FUNDS", "awaiting_destination"),
        ("INTENT_EXECUTING", "awaiting_destination"),
    ] {
        let tracked = map("PENDING", Some(substatus)).unwrap().unwrap();
        assert_eq!(tracked.status, ExecutionStatus::Pending);
        assert_eq!(tracked.substatus.as_deref(), Some(ours), "{substatus}");
    }
    let done = map("DONE", Some("COMPLETED")).unwrap().unwrap();
    assert_eq!(done.status, ExecutionStatus::Done);
    assert_eq!(done.outcome, Some(Outcome::Completed));
    assert_eq!(done.received_amount.as_deref(), Some("24.95"));
    assert_eq!(done.received_token.as_deref(), Some("USDCARB"));
    assert_eq!(done.tx_hashes.len(), 2);
    assert_eq!(done.tx_hashes[1].chain, "eip155:42161");
    assert_eq!(done.tx_hashes[1].role, "destination");

    // PARTIAL: another token arrived; one swapd does not list is named by its symbol.
    let mut partial = status_body("DONE", Some("PARTIAL"));
    partial["receiving"]["token"] = json!({"address": "0x0000000000000000000000000000000000000abc", "symbol": "USDC.e", "decimals": 6});
    let partial = super::tracked(&serde_json::to_vec(&partial).unwrap(), from, to, &source())
        .unwrap()
        .unwrap();
    assert_eq!(partial.outcome, Some(Outcome::Partial));
    assert_eq!(partial.received_token.as_deref(), Some("USDC.e"));

    // REFUNDED: the input came back on the source chain.
    let mut refunded = status_body("DONE", Some("REFUNDED"));
    refunded["receiving"] = json!({"txHash": format!("0x{}", "cc".repeat(32)), "amount": "25000000", "chainId": 8453,
        "token": {"address": "0x833589fcd6edb6e08f4c7c32d4f71b54bda02913", "symbol": "USDC", "decimals": 6}});
    let refunded = super::tracked(&serde_json::to_vec(&refunded).unwrap(), from, to, &source())
        .unwrap()
        .unwrap();
    assert_eq!(refunded.outcome, Some(Outcome::Refunded));
    assert_eq!(refunded.received_token.as_deref(), Some("USDCBASE"));
    assert_eq!(refunded.received_amount.as_deref(), Some("25"));

    for (substatus, ours) in [
        ("INSUFFICIENT_ALLOWANCE", "insufficient_allowance"),
        ("INSUFFICIENT_BALANCE", "insufficient_balance"),
        ("OUT_OF_GAS", "out_of_gas"),
        ("EXPIRED", "expired"),
        ("SLIPPAGE_EXCEEDED", "slippage_exceeded"),
        ("UNKNOWN_FAILED_ERROR", "unknown_failed_error"),
    ] {
        let tracked = map("FAILED", Some(substatus)).unwrap().unwrap();
        assert_eq!(tracked.status, ExecutionStatus::Failed);
        assert_eq!(tracked.substatus.as_deref(), Some(ours));
    }
    let mut no_receiving = status_body("DONE", Some("COMPLETED"));
    no_receiving["receiving"] = serde_json::Value::Null;
    assert!(
        super::tracked(
            &serde_json::to_vec(&no_receiving).unwrap(),
            from,
            to,
            &source()
        )
        .is_err()
    );
}

fn wallet() -> Address {
    WALLET.parse().unwrap()
}

const USDC_BASE: Address = address!("833589fCD6eDb6E08f4c7C32D4f71b54bdA02913");
const USDC_ARB: Address = address!("af88d065e77c8cC2239327C5EDb3A432268e5831");

fn plan(from: &str, to: &str) -> ExecutionPlan {
    crate::scripted::plan("lifi", WALLET, from, to)
}

async fn track(
    lifi: &LiFi,
    plan: &ExecutionPlan,
    now_ms: i64,
) -> Result<swapd_core::onchain::plan::Tracked, ProviderError> {
    let report = ExecutionReport::TxHash {
        tx_hash: source().tx_hash,
    };
    lifi.track_execution(TrackRequest {
        plan,
        report: &report,
        reported_at_ms: 10_000,
        now_ms,
    })
    .await
}

#[tokio::test]
async fn a_same_chain_swap_is_followed_on_its_chain_to_what_its_logs_paid() {
    let server = MockServer::start().await;
    let base = Arc::new(ScriptedChain::new(Network::Base));
    let lifi = lifi(&server, Chains::new(vec![base.clone()])).await;
    let plan = plan("ETHBASE", "USDCBASE");

    let tracked = track(&lifi, &plan, 20_000).await.unwrap();
    assert_eq!(
        (tracked.status, tracked.substatus.as_deref()),
        (ExecutionStatus::Submitted, Some("not_indexed"))
    );
    base.mined(
        &source().tx_hash,
        100,
        true,
        wallet(),
        vec![
            paid_log(USDC_BASE, WALLET, 2_994_123_456),
            paid_log(USDC_BASE, "0x0000000000000000000000000000000000000007", 5),
        ],
    );
    let tracked = track(&lifi, &plan, 21_000).await.unwrap();
    assert_eq!(
        (tracked.status, tracked.substatus.as_deref()),
        (ExecutionStatus::Pending, Some("source_confirming"))
    );
    base.set_head(101);
    let tracked = track(&lifi, &plan, 22_000).await.unwrap();
    assert_eq!(tracked.status, ExecutionStatus::Done);
    assert_eq!(tracked.outcome, Some(Outcome::Completed));
    assert_eq!(tracked.received_amount.as_deref(), Some("2994.123456"));
    assert_eq!(tracked.received_token.as_deref(), Some("USDCBASE"));
    // LI.FI's status API was not needed.
    assert!(server.received_requests().await.unwrap().is_empty());
}

#[tokio::test]
async fn reverted_and_unknown_transactions_fail() {
    let server = MockServer::start().await;
    let base = Arc::new(ScriptedChain::new(Network::Base));
    let lifi = lifi(&server, Chains::new(vec![base.clone()])).await;
    let plan = plan("ETHBASE", "USDCBASE");
    let tracked = track(&lifi, &plan, 300_000).await.unwrap();
    assert_eq!(
        (tracked.status, tracked.substatus.as_deref()),
        (ExecutionStatus::Failed, Some("tx_not_found"))
    );
    base.mined(&source().tx_hash, 100, false, wallet(), Vec::new());
    base.set_head(105);
    let tracked = track(&lifi, &plan, 20_000).await.unwrap();
    assert_eq!(
        (tracked.status, tracked.substatus.as_deref()),
        (ExecutionStatus::Failed, Some("reverted"))
    );
}

#[tokio::test]
async fn a_bridge_is_followed_through_lifis_status_and_checked_at_its_destination() {
    let server = MockServer::start().await;
    let answers = [
        ResponseTemplate::new(200).set_body_json(json!({"status": "NOT_FOUND"})),
        ResponseTemplate::new(200)
            .set_body_json(status_body("PENDING", Some("WAIT_DESTINATION_TRANSACTION"))),
        ResponseTemplate::new(200).set_body_json(status_body("DONE", Some("COMPLETED"))),
    ];
    let (base, arbitrum) = (
        Arc::new(ScriptedChain::new(Network::Base)),
        Arc::new(ScriptedChain::new(Network::Arbitrum)),
    );
    base.mined(&source().tx_hash, 100, true, wallet(), Vec::new());
    base.set_head(200);
    let lifi = lifi(&server, Chains::new(vec![base, arbitrum.clone()])).await;
    let plan = plan("USDCBASE", "USDCARB");
    let mut seen = Vec::new();
    for answer in answers {
        server.reset().await;
        Mock::given(method("GET"))
            .and(path("/status"))
            .and(query_param("txHash", source().tx_hash))
            .and(query_param("fromChain", "8453"))
            .and(query_param("toChain", "42161"))
            .respond_with(answer)
            .mount(&server)
            .await;
        let tracked = track(&lifi, &plan, 20_000).await.unwrap();
        seen.push((tracked.status, tracked.substatus.clone()));
    }
    assert_eq!(
        seen,
        [
            (
                ExecutionStatus::Pending,
                Some("awaiting_destination".into())
            ),
            (
                ExecutionStatus::Pending,
                Some("awaiting_destination".into())
            ),
            // LI.FI says done; the destination node does not know the transaction yet.
            (
                ExecutionStatus::Pending,
                Some("awaiting_destination".into())
            ),
        ]
    );
    arbitrum.mined(
        &format!("0x{}", "bb".repeat(32)),
        7,
        true,
        Address::ZERO,
        vec![paid_log(USDC_ARB, WALLET, 24_949_999)],
    );
    let tracked = track(&lifi, &plan, 20_000).await.unwrap();
    assert_eq!(tracked.status, ExecutionStatus::Done);
    // What the destination's logs paid, not what LI.FI reported (24.95).
    assert_eq!(tracked.received_amount.as_deref(), Some("24.949999"));
    assert_eq!(tracked.tx_hashes.len(), 2);
}

#[tokio::test]
async fn a_solana_source_is_judged_on_solana_before_lifi_is_asked() {
    use crate::scripted::ScriptedSolana;
    use swapd_core::onchain::chain::SolanaStatus;
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path("/status"))
        .and(query_param("fromChain", "1151111081099710"))
        .respond_with(ResponseTemplate::new(200).set_body_json(
            json!({"status": "PENDING", "substatus": "WAIT_DESTINATION_TRANSACTION"}),
        ))
        .mount(&server)
        .await;
    let solana = Arc::new(ScriptedSolana::default());
    let lifi = lifi(&server, Chains::default().with_solana(solana.clone())).await;
    let plan = plan("USDCSOL", "USDCBASE");
    let signature =
        "5VERv8NMvzbJMEkV8xnrLkEaWRtSz9CosKDYjCJjBRnbJLgp8uirBgmQpjKhoR4tjF3ZpRzrFmBV6UjKdiSZkQUW";
    let report = ExecutionReport::TxHash {
        tx_hash: signature.into(),
    };
    let track = || {
        lifi.track_execution(TrackRequest {
            plan: &plan,
            report: &report,
            reported_at_ms: 10_000,
            now_ms: 20_000,
        })
    };
    let tracked = track().await.unwrap();
    assert_eq!(tracked.substatus.as_deref(), Some("not_indexed"));
    assert!(server.received_requests().await.unwrap().is_empty());
    solana.statuses.lock().unwrap().push((
        signature.into(),
        SolanaStatus {
            failed: true,
            finalized: true,
        },
    ));
    assert_eq!(
        track().await.unwrap().substatus.as_deref(),
        Some("reverted")
    );
    solana.statuses.lock().unwrap().push((
        signature.into(),
        SolanaStatus {
            failed: false,
            finalized: true,
        },
    ));
    solana.transactions.lock().unwrap().push((
        signature.into(),
        swapd_core::onchain::chain::SolanaTx {
            fee_payer: "x".into(),
            fee: 0,
            lamports: Vec::new(),
            tokens: Vec::new(),
        },
    ));
    let tracked = track().await.unwrap();
    assert_eq!(
        (tracked.status, tracked.substatus.as_deref()),
        (ExecutionStatus::Pending, Some("awaiting_destination"))
    );
    assert_eq!(
        tracked.tx_hashes[0].chain,
        "solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp"
    );
}
