//! Jupiter against its recorded wire format (docs/providers.md, "Jupiter"), served locally.

use std::sync::Arc;
use std::time::Duration;

use alloy_primitives::U256;
use base64::Engine;
use serde_json::json;
use swapd_core::amount::Amount;
use swapd_core::market::currencies::currency;
use swapd_core::market::provider::{Provider, ProviderError, QuoteRequest, Wallet};
use swapd_core::market::{Direction, RateType};
use swapd_core::onchain::chain::{SolanaStatus, SolanaTx, TokenBalance};
use swapd_core::onchain::plan::{ExecutionPlan, ExecutionReport, ExecutionStatus, Outcome};
use swapd_core::onchain::router::{OnchainRouter, PlanRequest, TrackRequest};
use swapd_types::onchain::PlanTransaction;
use wiremock::matchers::{body_partial_json, header, method, path, query_param};
use wiremock::{Mock, MockServer, ResponseTemplate};

use super::Jupiter;
use crate::Chains;
use crate::scripted::ScriptedSolana;

const WALLET: &str = "9WzDXwBbmkg8ZTbNMqUxvQRAyrZzDsGYdLVL9zYtAWWM";
const USDC: &str = "EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v";
const WSOL: &str = "So11111111111111111111111111111111111111112";
const SIGNATURE: &str =
    "5VERv8NMvzbJMEkV8xnrLkEaWRtSz9CosKDYjCJjBRnbJLgp8uirBgmQpjKhoR4tjF3ZpRzrFmBV6UjKdiSZkQUW";

/// A real capture of Jupiter's `/quote`, for 2.5 SOL → USDC.
fn sol_to_usdc() -> serde_json::Value {
    json!({
        "inputMint": WSOL, "inAmount": "2500000000", "outputMint": USDC, "outAmount": "375123456",
        "otherAmountThreshold": "373247838", "swapMode": "ExactIn", "slippageBps": 50,
        "platformFee": null, "priceImpactPct": "0.0001",
        "routePlan": [{"swapInfo": {"ammKey": "9R87b2Ur7jEmTmshXjq9CWr4j4fnf2QfhZivHbaY3Zcb", "label": "Whirlpool",
                                    "inputMint": WSOL, "outputMint": USDC, "inAmount": "2500000000", "outAmount": "375123456",
                                    "feeAmount": "115588", "feeMint": WSOL}, "percent": 100, "bps": 10000}],
        "contextSlot": 299999999, "timeTaken": 0.01
    })
}

fn solana() -> Chains {
    Chains::default().with_solana(Arc::new(ScriptedSolana::default()))
}

async fn jupiter(server: &MockServer, chains: Chains) -> Jupiter {
    Jupiter::new(
        &server.uri(),
        Some("jup-key"),
        Duration::from_millis(500),
        chains,
    )
    .unwrap()
}

fn request(from: &str, to: &str, amount: &str, direction: Direction) -> QuoteRequest {
    let (from, to) = (currency(from).unwrap(), currency(to).unwrap());
    let precision = if direction == Direction::From {
        from.precision
    } else {
        to.precision
    };
    QuoteRequest {
        from,
        to,
        amount: Amount::parse(amount, precision).unwrap(),
        direction,
        rate_type: RateType::Float,
        wallet: Some(Wallet {
            namespace: "solana",
            address: Some(WALLET.into()),
        }),
        recipient: None,
        fees: Default::default(),
        now_ms: 0,
    }
}

fn plan_request(min: &str) -> PlanRequest {
    let (from, to) = (currency("SOL").unwrap(), currency("USDCSOL").unwrap());
    PlanRequest {
        plan_id: "ocx_1".into(),
        from,
        to,
        from_amount: Amount::parse("2.5", from.precision).unwrap(),
        min_output: Amount::parse(min, to.precision).unwrap(),
        shown: swapd_core::onchain::router::ShownTerms {
            expected_output: Amount::parse(min, to.precision).unwrap(),
            min_output: Amount::parse(min, to.precision).unwrap(),
        },
        wallet_address: WALLET.into(),
        recipient: None,
        slippage_bps: 50,
        gasless: false,
        deadline_secs: 1_800_000_300,
        onchain_fees: Vec::new(),
    }
}

#[tokio::test]
async fn cards_are_priced_by_quote_in_either_swap_mode() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path("/quote"))
        .and(header("x-api-key", "jup-key"))
        .and(query_param("inputMint", WSOL))
        .and(query_param("outputMint", USDC))
        .and(query_param("amount", "2500000000"))
        .and(query_param("slippageBps", "50"))
        .and(query_param("swapMode", "ExactIn"))
        .respond_with(ResponseTemplate::new(200).set_body_json(sol_to_usdc()))
        .expect(1)
        .mount(&server)
        .await;
    let mut exact_out = sol_to_usdc();
    exact_out["swapMode"] = "ExactOut".into();
    exact_out["otherAmountThreshold"] = "2512500000".into();
    Mock::given(method("GET"))
        .and(path("/quote"))
        .and(query_param("swapMode", "ExactOut"))
        .and(query_param("amount", "375123456"))
        .respond_with(ResponseTemplate::new(200).set_body_json(exact_out))
        .expect(1)
        .mount(&server)
        .await;
    let jupiter = jupiter(&server, solana()).await;
    let card = jupiter
        .quote(&request("SOL", "USDCSOL", "2.5", Direction::From))
        .await
        .unwrap();
    assert_eq!(card.to_amount.to_string(), "375.123456");
    assert_eq!(card.min_output.to_string(), "373.247838");
    assert!(!card.gasless);
    let card = jupiter
        .quote(&request("SOL", "USDCSOL", "375.123456", Direction::To))
        .await
        .unwrap();
    assert_eq!(
        card.from_amount.to_string(),
        "2.5125",
        "the most the input may rise to"
    );
    assert_eq!(card.min_output.to_string(), "375.123456");
}

#[tokio::test]
async fn routes_jupiter_cannot_take_are_refused_without_asking_it() {
    let server = MockServer::start().await;
    let jupiter_reading = jupiter(&server, solana()).await;
    let mut to_someone = request("SOL", "USDCSOL", "1", Direction::From);
    to_someone.recipient = Some("DRpbCBMxVnDK7maPM5tGv6MvB3v1sRMC86PZ8okm21hy".into());
    let mut evm = request("ETHBASE", "USDCBASE", "1", Direction::From);
    evm.wallet = None;
    for refused in [to_someone, evm] {
        assert!(matches!(
            jupiter_reading.quote(&refused).await,
            Err(ProviderError::PairUnsupported(_))
        ));
    }
    // Without a Solana node swapd cannot follow its swaps: the card says why, and so does
    // readiness.
    let blind = jupiter(&server, Chains::default()).await;
    let refused = blind
        .quote(&request("SOL", "USDCSOL", "1", Direction::From))
        .await
        .unwrap_err();
    assert_eq!(refused.reason_code(), "provider_not_configured");
    assert!(refused.to_string().contains("[chains.sol]"), "{refused}");
    assert!(blind.unconfigured().is_some());
    assert_eq!(jupiter_reading.unconfigured(), None);
    assert!(blind.catalog(0).await.unwrap().is_empty());
    assert!(!jupiter_reading.catalog(0).await.unwrap().is_empty());
    assert!(server.received_requests().await.unwrap().is_empty());
}

#[tokio::test]
async fn refusals_and_failures_are_swapds_errors_never_jupiters_words() {
    for (answer, code) in [
        (
            ResponseTemplate::new(400).set_body_json(
                json!({"error": "secret upstream detail", "errorCode": "COULD_NOT_FIND_ANY_ROUTE"}),
            ),
            "pair_unsupported",
        ),
        (
            ResponseTemplate::new(400).set_body_json(
                json!({"error": "secret upstream detail", "errorCode": "TOKEN_NOT_TRADABLE"}),
            ),
            "pair_unsupported",
        ),
        (
            ResponseTemplate::new(401).set_body_json(json!({"error": "secret upstream detail"})),
            "provider_unavailable",
        ),
        (
            ResponseTemplate::new(502).set_body_string("secret upstream detail"),
            "provider_unavailable",
        ),
        (
            ResponseTemplate::new(200).set_body_string("secret upstream detail"),
            "provider_unavailable",
        ),
        (
            ResponseTemplate::new(200)
                .set_delay(Duration::from_secs(2))
                .set_body_json(sol_to_usdc()),
            "provider_unavailable",
        ),
    ] {
        let server = MockServer::start().await;
        Mock::given(method("GET"))
            .and(path("/quote"))
            .respond_with(answer)
            .mount(&server)
            .await;
        let error = jupiter(&server, solana())
            .await
            .quote(&request("SOL", "USDCSOL", "2.5", Direction::From))
            .await
            .unwrap_err();
        assert_eq!(error.reason_code(), code, "{error}");
        assert!(!error.to_string().contains("secret"), "{error}");
    }
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path("/quote"))
        .respond_with(ResponseTemplate::new(429))
        .expect(3)
        .mount(&server)
        .await;
    let error = jupiter(&server, solana())
        .await
        .quote(&request("SOL", "USDCSOL", "2.5", Direction::From))
        .await
        .unwrap_err();
    assert_eq!(error.to_string(), "Jupiter is rate limiting swapd");
}

#[tokio::test]
async fn a_plan_is_the_swap_transaction_for_the_wallet_with_its_last_valid_block_height() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path("/quote"))
        .respond_with(ResponseTemplate::new(200).set_body_json(sol_to_usdc()))
        .mount(&server)
        .await;
    let transaction = base64::engine::general_purpose::STANDARD.encode([7u8; 600]);
    Mock::given(method("POST"))
        .and(path("/swap"))
        .and(body_partial_json(json!({"quoteResponse": sol_to_usdc(), "userPublicKey": WALLET, "wrapAndUnwrapSol": true})))
        .respond_with(ResponseTemplate::new(200).set_body_json(
            json!({"swapTransaction": transaction, "lastValidBlockHeight": 279632475, "prioritizationFeeLamports": 9999}),
        ))
        .expect(1)
        .mount(&server)
        .await;
    let built = jupiter(&server, solana())
        .await
        .build_plan(&plan_request("373.2"))
        .await
        .unwrap();
    assert_eq!(built.steps.len(), 1);
    assert_eq!(
        built.steps[0].chain,
        "solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp"
    );
    assert_eq!(
        built.steps[0].transaction,
        Some(PlanTransaction::Solana {
            serialized_transaction: transaction,
            last_valid_block_height: Some(279_632_475),
        })
    );
    let error = jupiter(&server, solana())
        .await
        .build_plan(&plan_request("373.3"))
        .await
        .unwrap_err();
    assert!(error.to_string().contains("the price moved"), "{error}");
}

#[tokio::test]
async fn the_operators_fee_is_jupiters_platform_fee_into_the_operators_account_for_the_output() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path("/quote"))
        .and(query_param("platformFeeBps", "30"))
        .respond_with(ResponseTemplate::new(200).set_body_json(sol_to_usdc()))
        .expect(2)
        .mount(&server)
        .await;
    let account = "FeeAccount1111111111111111111111111111111111";
    Mock::given(method("POST"))
        .and(path("/swap"))
        .and(body_partial_json(json!({"feeAccount": account})))
        .respond_with(ResponseTemplate::new(200).set_body_json(
            json!({"swapTransaction": base64::engine::general_purpose::STANDARD.encode([7u8; 60]),
                   "lastValidBlockHeight": 279632475}),
        ))
        .expect(1)
        .mount(&server)
        .await;
    let jupiter = jupiter(&server, solana()).await;
    let card = jupiter
        .quote(&QuoteRequest {
            fees: crate::scripted::fee_policy(),
            ..request("SOL", "USDCSOL", "2.5", Direction::From)
        })
        .await
        .unwrap();
    assert_eq!(
        crate::scripted::entries(&card.fees),
        [
            (
                "service".into(),
                "22.5".into(),
                "0.846567".into(),
                "USDCSOL".into()
            ),
            (
                "affiliate".into(),
                "7.5".into(),
                "0.282189".into(),
                "USDCSOL".into()
            ),
        ]
    );
    let fees = card.onchain_fees.clone();
    let fee = &fees[0];
    assert_eq!((fee.bps, fee.recipient.as_str()), (30, account));
    jupiter
        .build_plan(&PlanRequest {
            onchain_fees: fees.clone(),
            ..plan_request("373.2")
        })
        .await
        .unwrap();

    // An exact output would pay the fee from the input: left out.
    let exact_out = QuoteRequest {
        fees: crate::scripted::fee_policy(),
        ..request("SOL", "USDCSOL", "375", Direction::To)
    };
    assert!(super::fees_for(&exact_out).is_none());
}

#[tokio::test]
async fn a_swap_is_followed_on_solana_to_what_the_wallet_received() {
    let server = MockServer::start().await;
    let chain = Arc::new(ScriptedSolana::default());
    let jupiter = jupiter(&server, Chains::default().with_solana(chain.clone())).await;
    let mut plan = ExecutionPlan {
        from_amount: crate::scripted::amount("2.5", "SOL"),
        ..crate::scripted::plan("jupiter", WALLET, "SOL", "USDCSOL")
    };
    let report = ExecutionReport::TxHash {
        tx_hash: SIGNATURE.into(),
    };
    let track = |plan: &ExecutionPlan, now_ms| {
        let plan = plan.clone();
        let report = report.clone();
        let jupiter = &jupiter;
        async move {
            jupiter
                .track_execution(TrackRequest {
                    plan: &plan,
                    report: &report,
                    reported_at_ms: 10_000,
                    now_ms,
                })
                .await
                .unwrap()
        }
    };
    let sub = |tracked: swapd_core::onchain::plan::Tracked| (tracked.status, tracked.substatus);
    assert_eq!(
        sub(track(&plan, 20_000).await),
        (ExecutionStatus::Submitted, Some("not_indexed".into()))
    );
    assert_eq!(
        sub(track(&plan, 400_000).await),
        (ExecutionStatus::Failed, Some("tx_not_found".into()))
    );
    let status = |failed, finalized| (SIGNATURE.to_owned(), SolanaStatus { failed, finalized });
    chain.statuses.lock().unwrap().push(status(false, false));
    assert_eq!(
        sub(track(&plan, 21_000).await),
        (ExecutionStatus::Pending, Some("source_confirming".into()))
    );
    chain.statuses.lock().unwrap().push(status(false, true));
    chain.transactions.lock().unwrap().push((
        SIGNATURE.into(),
        SolanaTx {
            fee_payer: WALLET.into(),
            fee: 5_000,
            lamports: vec![(WALLET.into(), 3_000_000_000, 499_995_000)],
            tokens: vec![TokenBalance {
                owner: WALLET.into(),
                mint: USDC.into(),
                before: U256::ZERO,
                after: U256::from(374_000_001u64),
            }],
        },
    ));
    let done = track(&plan, 22_000).await;
    assert_eq!(done.outcome, Some(Outcome::Completed));
    assert_eq!(done.received_amount.as_deref(), Some("374.000001"));
    assert_eq!(done.received_token.as_deref(), Some("USDCSOL"));
    assert_eq!(
        done.tx_hashes[0].chain,
        "solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp"
    );

    // The other way, SOL arrives: the wallet's lamports, its fee counted back.
    plan.from = swapd_core::market::currencies::currency("USDCSOL").unwrap();
    plan.to = swapd_core::market::currencies::currency("SOL").unwrap();
    chain.transactions.lock().unwrap()[0].1.lamports =
        vec![(WALLET.into(), 1_000_000_000, 1_999_995_000)];
    let done = track(&plan, 23_000).await;
    assert_eq!(done.received_token.as_deref(), Some("SOL"));
    assert_eq!(done.received_amount.as_deref(), Some("1"));
    // Nothing arrived: not a swap swapd vouches for.
    chain.transactions.lock().unwrap()[0].1.lamports =
        vec![(WALLET.into(), 1_000_000_000, 999_995_000)];
    assert_eq!(
        sub(track(&plan, 23_500).await),
        (ExecutionStatus::Failed, Some("nothing_received".into()))
    );

    chain.statuses.lock().unwrap().push(status(true, true));
    assert_eq!(
        sub(track(&plan, 24_000).await),
        (ExecutionStatus::Failed, Some("reverted".into()))
    );
}
