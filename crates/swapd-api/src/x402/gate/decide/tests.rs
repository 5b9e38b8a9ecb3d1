use alloy_signer_local::PrivateKeySigner;
use swapd_x402::Pricing;
use swapd_x402::wire::PaymentRequired;

use super::*;

const PAY_TO: &str = "0x209693Bc6afc0C5328bA36FaF03C514EF312287C";
const RESOURCE: &str = "https://swapd.example/api/x402/quotes?fromCcy=BTC&toCcy=ETH&amount=1";

fn required() -> PaymentRequired {
    let requirements = |network| {
        Pricing::usdc(network, "0.05", PAY_TO)
            .unwrap()
            .requirements()
    };
    PaymentRequired {
        x402_version: X402_VERSION,
        error: None,
        resource: wire::ResourceInfo {
            url: RESOURCE.into(),
            description: None,
            mime_type: None,
            other: Default::default(),
        },
        accepts: vec![requirements("eip155:8453"), requirements("eip155:137")],
        extensions: Default::default(),
    }
}

/// `signer`'s payment of `required`, made by swapd's own client as any payer would.
fn paid_by(signer: &PrivateKeySigner, required: &PaymentRequired) -> PaymentPayload {
    let header = swapd_client::x402::X402Client::new("https://swapd.example")
        .unwrap()
        .paying_with(signer.clone())
        .payment_for(required)
        .unwrap();
    wire::decode_header(&header).unwrap()
}

fn refused_reason(payment: &PaymentPayload) -> String {
    payer(payment, &required().accepts, RESOURCE)
        .unwrap_err()
        .reason
}

#[test]
fn a_payment_for_our_requirements_and_this_request_names_its_payer_and_nonce() {
    let signer = PrivateKeySigner::random();
    let payment = paid_by(&signer, &required());
    let (option, paid_by_signer, nonce) = payer(&payment, &required().accepts, RESOURCE).unwrap();
    assert_eq!(option, 0);
    assert_eq!(paid_by_signer, Wallet::Evm(signer.address()));
    let authorization = &payment.payload["authorization"];
    assert_eq!(authorization["nonce"].as_str(), Some(nonce.as_str()));

    // Paid the second way offered: that option, its chain's EIP-712 domain recovering the payer.
    let offered = required();
    let polygon_only = PaymentRequired {
        accepts: vec![offered.accepts[1].clone()],
        ..offered.clone()
    };
    let on_polygon = paid_by(&signer, &polygon_only);
    let (option, payer_on_polygon, _) = payer(&on_polygon, &offered.accepts, RESOURCE).unwrap();
    assert_eq!(
        (option, payer_on_polygon),
        (1, Wallet::Evm(signer.address()))
    );
    // Signed for Polygon, presented as paid on Base: the signature is for another chain.
    let mut misnamed = on_polygon;
    misnamed.accepted = offered.accepts[0].clone();
    assert_eq!(refused_reason(&misnamed), "invalid_exact_evm_signature");
}

#[test]
fn a_payment_for_anything_else_is_refused_with_its_reason() {
    let signer = PrivateKeySigner::random();
    let good = paid_by(&signer, &required());

    let old = PaymentPayload {
        x402_version: 1,
        ..good.clone()
    };
    assert_eq!(refused_reason(&old), "invalid_x402_version");

    // Less than the price, or to another address: not what we asked.
    let mut cheaper = good.clone();
    cheaper.accepted.amount = "1".into();
    assert_eq!(refused_reason(&cheaper), "No matching payment requirements");
    let mut elsewhere = good.clone();
    elsewhere.accepted.pay_to = signer.address().to_string();
    assert_eq!(
        refused_reason(&elsewhere),
        "No matching payment requirements"
    );

    // Made for another request.
    let mut other = good.clone();
    other.resource.as_mut().unwrap().url = format!("{RESOURCE}0");
    assert_eq!(refused_reason(&other), "resource_mismatch");

    // Signed by someone else than `from`, or not an authorization at all.
    let mut forged = good.clone();
    forged.payload["authorization"]["from"] =
        PrivateKeySigner::random().address().to_string().into();
    assert_eq!(refused_reason(&forged), "invalid_exact_evm_signature");
    let mut garbled = good.clone();
    garbled.payload["signature"] = "0xzz".into();
    assert_eq!(
        refused_reason(&garbled),
        "invalid_exact_evm_failed_to_parse_signature"
    );
    let mut empty = good;
    empty.payload = serde_json::json!({});
    assert_eq!(refused_reason(&empty), "invalid_payload");
}

fn answer(success: bool, reason: Option<&str>) -> SettleResponse {
    SettleResponse {
        success,
        error_reason: reason.map(Into::into),
        error_message: Some("upstream free text, never shown".into()),
        payer: None,
        transaction: if success {
            "0xabc".into()
        } else {
            String::new()
        },
        network: "eip155:8453".into(),
        amount: None,
    }
}

#[test]
fn a_settlement_pays_for_the_call_only_when_money_moved() {
    match settlement(answer(true, None), false) {
        Settlement::Settled(settled) => {
            assert_eq!(settled.transaction, "0xabc");
            assert_eq!(settled.error_message, None);
        }
        refused => panic!("{refused:?}"),
    }
    // Refused: the client sees a reason code, never the facilitator's text.
    for (reason, shown) in [
        (Some("insufficient_funds"), "insufficient_funds"),
        (Some("The RPC said: nonce too low!"), "settlement_failed"),
        (None, "settlement_failed"),
    ] {
        match settlement(answer(false, reason), false) {
            Settlement::Refused(refused) => {
                assert_eq!(refused.error_reason.as_deref(), Some(shown));
                assert_eq!(refused.error_message, None);
                assert!(!refused.success);
            }
            settled => panic!("{reason:?}: {settled:?}"),
        }
    }
}

#[test]
fn settling_again_a_payment_the_lost_attempt_settled_buys_the_call() {
    for code in NONCE_ALREADY_USED {
        let used = answer(false, Some(code));
        assert!(matches!(
            settlement(used.clone(), true),
            Settlement::Settled(SettleResponse { success: true, .. })
        ));
        // The first time, a used authorization is someone else's spending: refused.
        assert!(matches!(settlement(used, false), Settlement::Refused(_)));
    }
}

#[test]
fn a_facilitator_out_of_reach_while_settling_says_to_send_the_same_payment_again() {
    let unavailable = swapd_x402::FacilitatorError::Unavailable("timeout".into());
    let (code, message) = facilitator_failure(&unavailable, true);
    assert_eq!(code, ErrorCode::ServiceUnavailable);
    assert!(message.contains("settles at most once"), "{message}");
    let (code, message) = facilitator_failure(&unavailable, false);
    assert_eq!(code, ErrorCode::ServiceUnavailable);
    assert!(message.contains("nothing was charged"), "{message}");
    let (code, _) = facilitator_failure(
        &swapd_x402::FacilitatorError::BadAnswer("html".into()),
        true,
    );
    assert_eq!(code, ErrorCode::FacilitatorError);
}

#[test]
fn paid_attempts_count_per_route_and_reads_per_resource() {
    let paid = |path| Limit::of(true, "203.0.113.7", "/api/x402/orders", path);
    assert_eq!(paid("/api/x402/orders").key, paid("/api/x402/other").key);
    assert_eq!((paid("").per_window, paid("").window_ms), (60, 3_600_000));
    let read = |path| Limit::of(false, "203.0.113.7", "/api/x402/orders/{orderId}", path);
    assert_ne!(
        read("/api/x402/orders/a").key,
        read("/api/x402/orders/b").key
    );
    assert_ne!(
        read("/x").key,
        Limit::of(false, "203.0.113.8", "/api/x402/orders/{orderId}", "/x").key
    );
    assert_eq!((read("").per_window, read("").window_ms), (30, 60_000));

    // The refusal rounds the wait up to whole seconds and names its window.
    let spent = WindowDecision {
        allowed: false,
        limit: 30,
        used: 30,
        resets_at_ms: 10_001,
    };
    let (message, retry_after) = read("").refusal(&spent, 1_000);
    assert_eq!(retry_after, 10);
    assert!(message.contains("30 such requests per minute"), "{message}");
    let (message, retry_after) = paid("").refusal(&spent, 20_000);
    assert_eq!(retry_after, 0);
    assert!(message.contains("per hour"), "{message}");
}

#[test]
fn reasons_are_codes_and_owners_name_their_wallets() {
    assert_eq!(
        reason_code(Some("invalid_payload".into()), "x"),
        "invalid_payload"
    );
    assert_eq!(reason_code(Some("Bad Thing".into()), "x"), "x");
    assert_eq!(reason_code(Some("a".repeat(65)), "x"), "x");
    assert_eq!(
        path_parameter(
            "/api/x402/orders/{orderId}/refund",
            "/api/x402/orders/ord_1/refund",
            "{orderId}"
        ),
        "ord_1"
    );
    let evm = swapd_core::owner::Owner::Wallet(PAY_TO.into());
    assert!(matches!(wallet_of_owner(&evm), Some(Wallet::Evm(a)) if a.to_string() == PAY_TO));
    let key = swapd_core::owner::Owner::Key("key_1".into());
    assert!(wallet_of_owner(&key).is_none());
}
