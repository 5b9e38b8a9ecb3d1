//! 0x against its recorded wire format (docs/providers.md, "0x"), served locally.

use std::sync::Arc;
use std::time::Duration;

use alloy_primitives::{Address, U256, address};
use serde_json::json;
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
use swapd_types::onchain::PlanTransaction;
use wiremock::matchers::{body_json, header, method, path, query_param};
use wiremock::{Mock, MockServer, ResponseTemplate};

use super::{Gasless, ZeroX};
use crate::Chains;
use crate::scripted::{ScriptedChain, paid_log};

const WALLET: &str = "0x70997970C51812dc3A010C7d01b50e0d17dc79C8";
const USDC: &str = "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913";
const NATIVE: &str = "0xEeeeeEeeeEeEeeEeEeEeeEEEeeeeEeeeeeeeEEeE";
const SETTLER: &str = "0x0d0E364aa7852291883C162B22D6D81f6355428F";
const SPENDER: Address = address!("0000000000001fF3684f28c67538d4D072C22734");
const TX: &str = "0x7c7c7c7c7c7c7c7c7c7c7c7c7c7c7c7c7c7c7c7c7c7c7c7c7c7c7c7c7c7c7c7c";

fn base() -> Arc<ScriptedChain> {
    Arc::new(ScriptedChain::new(Network::Base))
}

async fn zerox(server: &MockServer, chains: Chains) -> ZeroX {
    ZeroX::new(
        &server.uri(),
        Some("zx-key"),
        Duration::from_millis(500),
        chains,
    )
    .unwrap()
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
        slippage_bps: 100,
        gasless: false,
        deadline_secs: 1_800_000_000,
        onchain_fees: Vec::new(),
    }
}

/// The SDK's quote example (from 0x's documentation) for 0.01 ETH → USDC on Base.
fn eth_to_usdc() -> serde_json::Value {
    json!({
        "blockNumber": "21000000",
        "buyAmount": "30012345",
        "buyToken": USDC.to_lowercase(),
        "fees": {"integratorFee": null, "zeroExFee": null, "gasFee": null},
        "issues": {"allowance": null, "balance": null, "simulationIncomplete": false, "invalidSourcesPassed": []},
        "liquidityAvailable": true,
        "minBuyAmount": "29712221",
        "route": {"fills": [{"from": NATIVE, "to": USDC, "source": "Uniswap_V3", "proportionBps": "10000"}], "tokens": []},
        "sellAmount": "10000000000000000",
        "sellToken": NATIVE,
        "totalNetworkFee": "1234567890000",
        "transaction": {"to": SETTLER, "data": "0x1FFF991F00AA", "gas": "280000", "gasPrice": "12000000000", "value": "10000000000000000"},
        "zid": "0x111"
    })
}

fn eip712(primary: &str, amount: &str) -> serde_json::Value {
    json!({
        "types": {
            "EIP712Domain": [{"name": "name", "type": "string"}, {"name": "chainId", "type": "uint256"},
                             {"name": "verifyingContract", "type": "address"}],
            primary: [{"name": "owner", "type": "address"}, {"name": "value", "type": "uint256"},
                      {"name": "nonce", "type": "uint256"}]
        },
        "domain": {"name": "Settler", "chainId": 8453, "verifyingContract": SETTLER},
        "message": {"owner": WALLET, "value": amount, "nonce": "7"},
        "primaryType": primary
    })
}

/// A gasless quote of 25 USDC → ETH, with a gasless approval when `approval` is set.
fn usdc_to_eth_gasless(approval: bool) -> serde_json::Value {
    json!({
        "liquidityAvailable": true,
        "buyToken": NATIVE, "sellToken": USDC, "buyAmount": "8300000000000000",
        "minBuyAmount": "8217000000000000", "sellAmount": "25000000",
        "target": SETTLER, "zid": "0x222",
        "fees": {"integratorFee": null, "zeroExFee": {"amount": "0", "token": USDC, "type": "volume"},
                 "gasFee": {"amount": "12000", "token": USDC, "type": "gas"}},
        "issues": {"allowance": {"actual": "0", "spender": SPENDER}, "balance": null},
        "trade": {"type": "settler_metatransaction", "hash": "0xabc", "eip712": eip712("Trade", "25000000")},
        "approval": if approval { json!({"type": "permit", "hash": "0xdef", "eip712": eip712("Permit", "25000000")}) } else { serde_json::Value::Null }
    })
}

#[tokio::test]
async fn a_native_input_card_is_priced_by_the_allowance_holder_api() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path("/swap/allowance-holder/price"))
        .and(header("0x-api-key", "zx-key"))
        .and(header("0x-version", "v2"))
        .and(query_param("chainId", "8453"))
        .and(query_param("sellToken", NATIVE))
        .and(query_param("buyToken", USDC))
        .and(query_param("sellAmount", "10000000000000000"))
        .and(query_param("slippageBps", "50"))
        .and(query_param("taker", WALLET))
        .respond_with(ResponseTemplate::new(200).set_body_json(eth_to_usdc()))
        .expect(1)
        .mount(&server)
        .await;
    let quote = zerox(&server, Chains::new(vec![base()]))
        .await
        .quote(&request("ETHBASE", "USDCBASE", "0.01"))
        .await
        .unwrap();
    assert_eq!(quote.to_amount.to_string(), "30.012345");
    assert_eq!(quote.min_output.to_string(), "29.712221");
    assert!(!quote.gasless);
    assert_eq!(quote.fees[0].kind, FeeKind::Network);
    assert_eq!(quote.fees[0].currency.code, "ETHBASE");
    assert_eq!(quote.fees[0].amount.to_string(), "0.00000124");
}

fn entry(kind: &str, bps: &str, amount: &str, currency: &str) -> (String, String, String, String) {
    (kind.into(), bps.into(), amount.into(), currency.into())
}

#[tokio::test]
async fn each_partys_fee_is_paid_by_0x_to_its_recipient_in_the_output_token() {
    let server = MockServer::start().await;
    let recipients = format!(
        "{},{}",
        crate::scripted::FEE_RECIPIENT,
        crate::scripted::PARTNER_RECIPIENT
    );
    for endpoint in [
        "/swap/allowance-holder/price",
        "/swap/allowance-holder/quote",
    ] {
        Mock::given(method("GET"))
            .and(path(endpoint))
            .and(query_param("swapFeeRecipient", recipients.as_str()))
            .and(query_param("swapFeeBps", "30,20"))
            .and(query_param("swapFeeToken", USDC))
            .respond_with(ResponseTemplate::new(200).set_body_json(eth_to_usdc()))
            .expect(1)
            .mount(&server)
            .await;
    }
    let zerox = zerox(&server, Chains::new(vec![base()])).await;
    let quote = zerox
        .quote(&QuoteRequest {
            fees: crate::scripted::fee_policy(),
            ..request("ETHBASE", "USDCBASE", "0.01")
        })
        .await
        .unwrap();
    // 0x's buy amount is after the fees: the entries are derived from it, one recipient per
    // party (the affiliate's share is the operator's).
    assert_eq!(quote.to_amount.to_string(), "30.012345");
    assert_eq!(
        crate::scripted::entries(&quote.fees),
        [
            entry("service", "22.5", "0.067867", "USDCBASE"),
            entry("affiliate", "7.5", "0.022622", "USDCBASE"),
            entry("partner", "20", "0.060326", "USDCBASE"),
        ]
    );
    let fees = quote.onchain_fees.clone();
    let payees: Vec<_> = fees
        .iter()
        .map(|fee| (fee.payee, fee.bps, fee.recipient.as_str()))
        .collect();
    use swapd_core::fees::Payee::{Operator, Partner};
    assert_eq!(
        payees,
        [
            (Operator, 30, crate::scripted::FEE_RECIPIENT),
            (Partner, 20, crate::scripted::PARTNER_RECIPIENT)
        ]
    );
    // The plan asks 0x for the same fee.
    zerox
        .build_plan(&PlanRequest {
            onchain_fees: fees.clone(),
            ..plan_request("ETHBASE", "USDCBASE", "0.01", "29.7")
        })
        .await
        .unwrap();
}

#[tokio::test]
async fn the_fee_0x_states_for_one_recipient_is_split_as_it_states_it() {
    let server = MockServer::start().await;
    let mut stated = eth_to_usdc();
    stated["fees"]["integratorFee"] = json!({"amount": "90300", "token": USDC, "type": "volume"});
    Mock::given(method("GET"))
        .and(path("/swap/allowance-holder/price"))
        .and(query_param(
            "swapFeeRecipient",
            crate::scripted::FEE_RECIPIENT,
        ))
        .respond_with(ResponseTemplate::new(200).set_body_json(stated))
        .expect(1)
        .mount(&server)
        .await;
    let mut fees = crate::scripted::fee_policy();
    fees.recipients.partner_evm = None;
    let quote = zerox(&server, Chains::new(vec![base()]))
        .await
        .quote(&QuoteRequest {
            fees,
            ..request("ETHBASE", "USDCBASE", "0.01")
        })
        .await
        .unwrap();
    // No recipient for the partner: its markup is left out; the operator's is 0x's figure.
    assert_eq!(
        crate::scripted::entries(&quote.fees),
        [
            entry("service", "22.5", "0.067725", "USDCBASE"),
            entry("affiliate", "7.5", "0.022575", "USDCBASE"),
        ]
    );
}

#[tokio::test]
async fn a_token_input_card_is_gasless() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path("/gasless/price"))
        .and(query_param("sellToken", USDC))
        .respond_with(ResponseTemplate::new(200).set_body_json(usdc_to_eth_gasless(true)))
        .expect(1)
        .mount(&server)
        .await;
    let quote = zerox(&server, Chains::new(vec![base()]))
        .await
        .quote(&request("USDCBASE", "ETHBASE", "25"))
        .await
        .unwrap();
    assert!(quote.gasless);
    assert_eq!(quote.to_amount.to_string(), "0.0083");
}

#[tokio::test]
async fn routes_0x_cannot_take_are_refused_without_asking_it() {
    let server = MockServer::start().await;
    let zerox = zerox(&server, Chains::new(vec![base()])).await;
    let mut to_someone = request("ETHBASE", "USDCBASE", "0.01");
    to_someone.recipient = Some(WALLET.into());
    let mut fixed_output = request("ETHBASE", "USDCBASE", "0.01");
    fixed_output.direction = Direction::To;
    for refused in [
        request("ETHBASE", "USDCARB", "0.01"),
        to_someone,
        fixed_output,
    ] {
        assert!(matches!(
            zerox.quote(&refused).await,
            Err(ProviderError::PairUnsupported(_))
        ));
    }
    // A chain swapd reads no node of: the card says what to set.
    let unread = zerox
        .quote(&request("ETH", "USDCETH", "0.01"))
        .await
        .unwrap_err();
    assert_eq!(unread.reason_code(), "provider_not_configured");
    assert!(unread.to_string().contains("[chains.eth]"), "{unread}");
    assert_eq!(zerox.unconfigured(), None, "it reads Base");
    assert!(
        self::zerox(&server, Chains::default())
            .await
            .unconfigured()
            .is_some()
    );
    assert!(server.received_requests().await.unwrap().is_empty());
    // Only the chains swapd reads are in its catalog.
    let catalog = zerox.catalog(0).await.unwrap();
    assert!(
        catalog
            .iter()
            .all(|offer| offer.currency.network == Network::Base)
    );
    assert!(
        catalog
            .iter()
            .any(|offer| offer.currency.code == "USDCBASE")
    );
}

#[tokio::test]
async fn refusals_and_failures_are_swapds_errors_never_0xs_words() {
    let cases = [
        (
            ResponseTemplate::new(400).set_body_json(json!({"name": "SELL_AMOUNT_TOO_SMALL", "message": "secret upstream detail", "data": {"zid": "0x1", "minSellAmount": "20000000000000000"}})),
            "amount_out_of_range",
        ),
        (
            ResponseTemplate::new(400).set_body_json(json!({"name": "TOKEN_NOT_SUPPORTED", "message": "secret upstream detail"})),
            "pair_unsupported",
        ),
        (
            ResponseTemplate::new(400).set_body_json(json!({"code": 100, "reason": "secret upstream detail"})),
            "pair_unsupported",
        ),
        (ResponseTemplate::new(200).set_body_json(json!({"liquidityAvailable": false, "zid": "0x1"})), "pair_unsupported"),
        (ResponseTemplate::new(401).set_body_json(json!({"name": "UNAUTHORIZED", "message": "secret upstream detail"})), "provider_unavailable"),
        (ResponseTemplate::new(500).set_body_string("secret upstream detail"), "provider_unavailable"),
        (ResponseTemplate::new(200).set_body_string("secret upstream detail"), "provider_unavailable"),
        (ResponseTemplate::new(200).set_delay(Duration::from_secs(2)).set_body_json(eth_to_usdc()), "provider_unavailable"),
    ];
    for (answer, code) in cases {
        let server = MockServer::start().await;
        Mock::given(method("GET"))
            .and(path("/swap/allowance-holder/price"))
            .respond_with(answer)
            .mount(&server)
            .await;
        let error = zerox(&server, Chains::new(vec![base()]))
            .await
            .quote(&request("ETHBASE", "USDCBASE", "0.01"))
            .await
            .unwrap_err();
        assert_eq!(error.reason_code(), code, "{error}");
        assert!(!error.to_string().contains("secret"), "{error}");
        if let ProviderError::OutOfRange { min, .. } = error {
            assert_eq!(min.to_string(), "0.02");
        }
    }
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path("/swap/allowance-holder/price"))
        .respond_with(ResponseTemplate::new(429).insert_header("retry-after", "0"))
        .expect(3)
        .mount(&server)
        .await;
    let error = zerox(&server, Chains::new(vec![base()]))
        .await
        .quote(&request("ETHBASE", "USDCBASE", "0.01"))
        .await
        .unwrap_err();
    assert_eq!(error.to_string(), "0x is rate limiting swapd");
}

#[tokio::test]
async fn a_native_input_plan_is_the_quotes_transaction() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path("/swap/allowance-holder/quote"))
        .and(query_param("taker", WALLET))
        .and(query_param("slippageBps", "100"))
        .respond_with(ResponseTemplate::new(200).set_body_json(eth_to_usdc()))
        .expect(2)
        .mount(&server)
        .await;
    let built = zerox(&server, Chains::new(vec![base()]))
        .await
        .build_plan(&plan_request("ETHBASE", "USDCBASE", "0.01", "29.7"))
        .await
        .unwrap();
    assert_eq!(built.steps.len(), 1);
    let Some(PlanTransaction::Evm {
        to,
        data,
        value,
        gas,
    }) = &built.steps[0].transaction
    else {
        panic!("a transaction");
    };
    assert_eq!((to.as_str(), data.as_str()), (SETTLER, "0x1fff991f00aa"));
    assert_eq!(
        (value.as_str(), gas.as_deref().unwrap_or_default()),
        ("10000000000000000", "280000")
    );
    assert_eq!(built.provider_state, None);

    // Below the card's minimum: refused.
    let error = zerox(&server, Chains::new(vec![base()]))
        .await
        .build_plan(&plan_request("ETHBASE", "USDCBASE", "0.01", "29.8"))
        .await
        .unwrap_err();
    assert!(error.to_string().contains("the price moved"), "{error}");
}

fn signed(purpose: &str, last: &str) -> SignedStep {
    SignedStep {
        signature_id: format!("sig_{purpose}"),
        purpose: purpose.into(),
        signature: format!("0x{}{}{last}", "11".repeat(32), "22".repeat(32)),
    }
}

#[tokio::test]
async fn a_gasless_plan_is_signed_then_submitted_to_0x_with_split_signatures() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path("/gasless/quote"))
        .and(query_param("taker", WALLET))
        .respond_with(ResponseTemplate::new(200).set_body_json(usdc_to_eth_gasless(true)))
        .expect(1)
        .mount(&server)
        .await;
    let zerox = zerox(&server, Chains::new(vec![base()])).await;
    let built = zerox
        .build_plan(&plan_request("USDCBASE", "ETHBASE", "25", "0.0082"))
        .await
        .unwrap();
    let purposes: Vec<_> = built
        .steps
        .iter()
        .map(|step| step.signature.as_ref().unwrap().purpose.as_str())
        .collect();
    assert_eq!(purposes, ["permit", "order"]);
    assert_eq!(
        built.steps[1].signature.as_ref().unwrap().typed_data,
        eip712("Trade", "25000000")
    );

    let expected = json!({
        "chainId": 8453,
        "approval": {"type": "permit", "eip712": eip712("Permit", "25000000"),
                     "signature": {"v": 27, "r": format!("0x{}", "11".repeat(32)), "s": format!("0x{}", "22".repeat(32)), "signatureType": 2}},
        "trade": {"type": "settler_metatransaction", "eip712": eip712("Trade", "25000000"),
                  "signature": {"v": 28, "r": format!("0x{}", "11".repeat(32)), "s": format!("0x{}", "22".repeat(32)), "signatureType": 2}}
    });
    Mock::given(method("POST"))
        .and(path("/gasless/submit"))
        .and(body_json(&expected))
        .respond_with(ResponseTemplate::new(200).set_body_json(
            json!({"type": "settler_metatransaction", "tradeHash": "0xtrade", "zid": "0x3"}),
        ))
        .expect(1)
        .mount(&server)
        .await;
    let mut plan = plan("USDCBASE", "ETHBASE");
    plan.provider_state = built.provider_state;
    let state = zerox
        .relay_signatures(&plan, &[signed("permit", "1b"), signed("order", "1c")])
        .await
        .unwrap()
        .unwrap();
    assert_eq!(state["tradeHash"], "0xtrade");

    // A signature 0x refuses ends the relay (the tracker fails the execution).
    server.reset().await;
    Mock::given(method("POST"))
        .and(path("/gasless/submit"))
        .respond_with(
            ResponseTemplate::new(400)
                .set_body_json(json!({"name": "INVALID_SIGNATURE", "message": "secret"})),
        )
        .mount(&server)
        .await;
    let refused = zerox
        .relay_signatures(&plan, &[signed("permit", "1b"), signed("order", "1c")])
        .await
        .unwrap_err();
    assert_eq!(refused.reason_code(), "pair_unsupported");
}

#[tokio::test]
async fn a_token_without_gasless_approval_falls_back_to_an_approval_transaction() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path("/gasless/quote"))
        .respond_with(ResponseTemplate::new(200).set_body_json(usdc_to_eth_gasless(false)))
        .expect(1)
        .mount(&server)
        .await;
    let mut holder = eth_to_usdc();
    holder["sellToken"] = USDC.into();
    holder["buyToken"] = NATIVE.into();
    holder["sellAmount"] = "25000000".into();
    holder["buyAmount"] = "8300000000000000".into();
    holder["minBuyAmount"] = "8217000000000000".into();
    holder["transaction"]["value"] = "0".into();
    holder["issues"]["allowance"] = json!({"actual": "0", "spender": SPENDER});
    Mock::given(method("GET"))
        .and(path("/swap/allowance-holder/quote"))
        .respond_with(ResponseTemplate::new(200).set_body_json(holder))
        .expect(1)
        .mount(&server)
        .await;
    let built = zerox(&server, Chains::new(vec![base()]))
        .await
        .build_plan(&plan_request("USDCBASE", "ETHBASE", "25", "0.0082"))
        .await
        .unwrap();
    let kinds: Vec<_> = built
        .steps
        .iter()
        .map(|step| step.step_id.as_str())
        .collect();
    assert_eq!(kinds, ["approve", "swap"]);
    let Some(PlanTransaction::Evm { to, data, .. }) = &built.steps[0].transaction else {
        panic!("an approval transaction");
    };
    assert_eq!(to, USDC);
    let approve = <crate::approveCall as alloy_sol_types::SolCall>::abi_decode(
        &alloy_primitives::hex::decode(data).unwrap(),
    )
    .unwrap();
    assert_eq!(
        (approve.spender, approve.amount),
        (SPENDER, U256::from(25_000_000u64))
    );
}

#[test]
fn gasless_statuses_map_onto_waiting_mined_or_failed() {
    let map = |body: serde_json::Value| super::gasless_status(&serde_json::to_vec(&body).unwrap());
    for waiting in ["pending", "submitted"] {
        assert_eq!(
            map(json!({"status": waiting, "transactions": []})).unwrap(),
            Gasless::Waiting
        );
    }
    for mined in ["succeeded", "confirmed"] {
        assert_eq!(
            map(json!({"status": mined, "transactions": [{"hash": TX, "timestamp": 1717000000000u64}], "zid": "0x1"})).unwrap(),
            Gasless::Mined(TX.into())
        );
    }
    for (reason, ours) in [
        ("transaction_reverted", "reverted"),
        ("order_expired", "expired"),
        (
            "transaction_simulation_failed",
            "transaction_simulation_failed",
        ),
        ("invalid_balance", "invalid_balance"),
        ("internal_error", "internal_error"),
    ] {
        assert_eq!(
            map(json!({"status": "failed", "reason": reason, "transactions": [{"hash": TX, "timestamp": 1}]})).unwrap(),
            Gasless::Failed(ours.into(), vec![TX.into()])
        );
    }
    assert!(map(json!({"status": "confirmed", "transactions": []})).is_err());
    assert!(map(json!({"status": "brand_new"})).is_err());
}

fn plan(from: &str, to: &str) -> ExecutionPlan {
    ExecutionPlan {
        from_amount: crate::scripted::amount("25", from),
        gasless: true,
        relayed_at_ms: Some(10_000),
        ..crate::scripted::plan("zerox", WALLET, from, to)
    }
}

#[tokio::test]
async fn a_relayed_trade_is_followed_at_0x_then_read_on_its_chain() {
    let server = MockServer::start().await;
    let chain = base();
    let zerox = zerox(&server, Chains::new(vec![chain.clone()])).await;
    let mut plan = plan("ETHBASE", "USDCBASE");
    plan.provider_state = Some(json!({
        "chainId": 8453, "tradeHash": "0xtrade",
        "trade": {"type": "settler_metatransaction", "eip712": {}}
    }));
    let report = ExecutionReport::Signatures {
        signatures: vec![signed("order", "1b")],
    };
    let track = |now_ms| {
        zerox.track_execution(TrackRequest {
            plan: &plan,
            report: &report,
            reported_at_ms: 10_000,
            now_ms,
        })
    };
    let status = |body: serde_json::Value| {
        Mock::given(method("GET"))
            .and(path("/gasless/status/0xtrade"))
            .and(query_param("chainId", "8453"))
            .respond_with(ResponseTemplate::new(200).set_body_json(body))
    };
    status(json!({"status": "submitted", "transactions": [{"hash": TX, "timestamp": 1}]}))
        .mount(&server)
        .await;
    let tracked = track(20_000).await.unwrap();
    assert_eq!(
        (tracked.status, tracked.substatus.as_deref()),
        (ExecutionStatus::Submitted, Some("relayed"))
    );

    server.reset().await;
    status(json!({"status": "confirmed", "transactions": [{"hash": TX, "timestamp": 1}]}))
        .mount(&server)
        .await;
    let relayer: Address = SETTLER.parse().unwrap();
    chain.mined(
        TX,
        50,
        true,
        relayer,
        vec![paid_log(USDC.parse().unwrap(), WALLET, 24_988_000)],
    );
    let tracked = track(21_000).await.unwrap();
    assert_eq!(
        tracked.status,
        ExecutionStatus::Pending,
        "one confirmation of two"
    );
    chain.set_head(51);
    let tracked = track(22_000).await.unwrap();
    assert_eq!(tracked.outcome, Some(Outcome::Completed));
    assert_eq!(tracked.received_amount.as_deref(), Some("24.988"));
    assert_eq!(tracked.tx_hashes[0].tx_hash, TX);

    server.reset().await;
    status(json!({"status": "failed", "reason": "order_expired", "transactions": []}))
        .mount(&server)
        .await;
    let tracked = track(23_000).await.unwrap();
    assert_eq!(
        (tracked.status, tracked.substatus.as_deref()),
        (ExecutionStatus::Failed, Some("expired"))
    );
}

#[tokio::test]
async fn coin_output_is_read_from_the_wallets_balance_over_the_block() {
    let server = MockServer::start().await;
    let chain = base();
    let zerox = zerox(&server, Chains::new(vec![chain.clone()])).await;
    let mut plan = plan("USDCBASE", "ETHBASE");
    plan.gasless = false;
    let wallet: Address = WALLET.parse().unwrap();
    // The wallet sent the swap (21000 gas units at 1 wei in the scripted receipt) and is
    // 0.0083 ETH minus that gas up after it.
    chain.mined(TX, 80, true, wallet, Vec::new());
    chain.set_head(81);
    chain.balances.lock().unwrap().extend([
        (wallet, 79, U256::from(1_000_000_000_000_000u64)),
        (
            wallet,
            80,
            U256::from(1_000_000_000_000_000u64 + 8_300_000_000_000_000 - 21_000),
        ),
    ]);
    let tracked = reported_tx(&zerox, &plan).await;
    assert_eq!(tracked.received_token.as_deref(), Some("ETHBASE"));
    assert_eq!(tracked.received_amount.as_deref(), Some("0.0083"));
}

/// What 0x's tracking makes of `plan` once its transaction `TX` was reported.
async fn reported_tx(zerox: &ZeroX, plan: &ExecutionPlan) -> swapd_core::onchain::plan::Tracked {
    zerox
        .track_execution(TrackRequest {
            plan,
            report: &ExecutionReport::TxHash { tx_hash: TX.into() },
            reported_at_ms: 10_000,
            now_ms: 20_000,
        })
        .await
        .unwrap()
}

#[tokio::test]
async fn what_reached_the_fee_recipient_is_read_from_the_swaps_transfer_logs() {
    let server = MockServer::start().await;
    let chain = base();
    let zerox = zerox(&server, Chains::new(vec![chain.clone()])).await;
    let mut plan = plan("ETHBASE", "USDCBASE");
    plan.gasless = false;
    let fee = |payee, bps, recipient: &str| swapd_core::fees::OnchainFee {
        payee,
        bps,
        recipient: recipient.into(),
    };
    use swapd_core::fees::Payee::{Operator, Partner};
    plan.onchain_fees = vec![
        fee(Operator, 30, crate::scripted::FEE_RECIPIENT),
        fee(Partner, 20, crate::scripted::PARTNER_RECIPIENT),
    ];
    let usdc: Address = USDC.parse().unwrap();
    chain.mined(
        TX,
        80,
        true,
        WALLET.parse().unwrap(),
        vec![
            paid_log(usdc, crate::scripted::FEE_RECIPIENT, 89_000),
            paid_log(usdc, crate::scripted::PARTNER_RECIPIENT, 60_000),
            paid_log(usdc, WALLET, 29_910_000),
        ],
    );
    chain.set_head(81);
    let tracked = reported_tx(&zerox, &plan).await;
    assert_eq!(tracked.received_amount.as_deref(), Some("29.91"));
    assert_eq!(
        tracked.fees_paid,
        [
            (Operator, U256::from(89_000u64)),
            (Partner, U256::from(60_000u64))
        ],
        "what the logs show each recipient"
    );

    // A plan without a fee recipient reads none.
    let unpaid = ExecutionPlan {
        onchain_fees: Vec::new(),
        ..plan
    };
    let tracked = reported_tx(&zerox, &unpaid).await;
    assert!(tracked.fees_paid.is_empty());
}
