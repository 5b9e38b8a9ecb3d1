//! FixedFloat's captured lifecycle (docs/providers.md, "The desks"), read as swapd reads it.

use swapd_core::market::currencies::currency;
use swapd_core::offchain::desk::{DeskError, DeskStatus, EmergencyCase};

use super::*;

fn fixture(name: &str) -> Vec<u8> {
    let path = format!("{}/fixtures/fixedfloat/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn def(code: &str) -> &'static CurrencyDef {
    currency(code).unwrap()
}

fn order(name: &str) -> DeskExchange {
    exchange(&fixture(name), def("BTC"), def("USDTTRC")).unwrap()
}

#[test]
fn the_signature_is_the_hmac_of_the_exact_body_bytes() {
    // `echo -n '{}' | openssl dgst -sha256 -hmac secret`, FixedFloat's own recipe.
    assert_eq!(
        signature("secret", "{}"),
        "77325902caca812dc259733aacd046b73817372c777b8d95b402647474516e13"
    );
    // One more space is another signature: the body is signed exactly as sent.
    assert_ne!(signature("secret", "{ }"), signature("secret", "{}"));
}

#[test]
fn request_bodies_are_compact_in_a_fixed_order_with_exact_amounts() {
    let amount = Amount::parse("0.5", 8).unwrap();
    assert_eq!(
        price_body(
            RateType::Float,
            "BTC",
            "USDTTRC",
            Direction::From,
            amount,
            None
        ),
        r#"{"type":"float","fromCcy":"BTC","toCcy":"USDTTRC","direction":"from","amount":0.5}"#
    );
    // The operator's referral: FixedFloat's `refcode`, and `afftax` as a percent (35 bps).
    let referral = Referral {
        refcode: "swapd-op",
        afftax_bps: 35,
    };
    assert_eq!(
        price_body(
            RateType::Fixed,
            "BTC",
            "ETH",
            Direction::From,
            amount,
            Some(referral)
        ),
        r#"{"type":"fixed","fromCcy":"BTC","toCcy":"ETH","direction":"from","amount":0.5,"refcode":"swapd-op","afftax":0.35}"#
    );
    let tiny = Amount::parse("0.00000001", 8).unwrap();
    assert_eq!(
        create_body(&CreateOrder {
            rate: RateType::Fixed,
            from_code: "BTC",
            to_code: "XRP",
            direction: Direction::To,
            amount: tiny,
            to_address: "rPEPPER7kfTD9w2To4CQk6UCfuHM9c6GDY",
            tag: Some("12345"),
            referral: None,
        }),
        r#"{"type":"fixed","fromCcy":"BTC","toCcy":"XRP","direction":"to","amount":0.00000001,"toAddress":"rPEPPER7kfTD9w2To4CQk6UCfuHM9c6GDY","tag":"12345"}"#
    );
    assert_eq!(
        create_body(&CreateOrder {
            rate: RateType::Float,
            from_code: "BTC",
            to_code: "ETH",
            direction: Direction::From,
            amount,
            to_address: "0x52908400098527886E0F7030069857D2E4169EE7",
            tag: None,
            referral: Some(Referral {
                refcode: "swapd-op",
                afftax_bps: 100,
            }),
        }),
        r#"{"type":"float","fromCcy":"BTC","toCcy":"ETH","direction":"from","amount":0.5,"refcode":"swapd-op","afftax":1,"toAddress":"0x52908400098527886E0F7030069857D2E4169EE7"}"#
    );
    assert_eq!(
        order_body("ZG3Y2F", "tok"),
        r#"{"id":"ZG3Y2F","token":"tok"}"#
    );
    assert_eq!(
        emergency_body("ZG3Y2F", "tok", Choice::Exchange),
        r#"{"id":"ZG3Y2F","token":"tok","choice":"EXCHANGE"}"#
    );
    assert_eq!(
        emergency_body(
            "ZG3Y2F",
            "tok",
            Choice::Refund {
                address: "bc1qxy2kgdygjrsqtzq2n0yrf2493p83kkfjhx0wlh",
                tag: None
            }
        ),
        r#"{"id":"ZG3Y2F","token":"tok","choice":"REFUND","address":"bc1qxy2kgdygjrsqtzq2n0yrf2493p83kkfjhx0wlh"}"#
    );
    assert_eq!(
        set_email_body("ZG3Y2F", "tok", "a@b.co"),
        r#"{"id":"ZG3Y2F","token":"tok","email":"a@b.co"}"#
    );
}

#[test]
fn the_catalog_reads_lenient_flags_and_leaves_out_what_swapd_does_not_list() {
    let catalog = catalog(&fixture("ccies.json")).unwrap();
    let listed: Vec<(&str, &str, bool, bool)> = catalog
        .currencies
        .iter()
        .map(|l| (l.currency.code, l.desk_code.as_str(), l.send, l.receive))
        .collect();
    assert_eq!(
        listed,
        [
            ("BTC", "BTC", true, true),
            ("USDTTRC", "USDTTRC", true, true),
            ("XRP", "XRP", false, true)
        ]
    );
    // Lightning (a network swapd does not know) and DOGE (not listed by swapd).
    assert_eq!(catalog.unknown, 2);
}

#[test]
fn a_price_reads_its_amounts_and_limits_and_a_limit_error_is_out_of_range() {
    let (quote, limits) = quote(&fixture("price.json"), def("BTC"), def("USDTTRC")).unwrap();
    assert_eq!(quote.from_amount.to_string(), "0.5");
    assert_eq!(quote.to_amount.to_string(), "18847.102");
    assert_eq!(limits.min.to_string(), "0.00045");
    assert_eq!(limits.max.unwrap().to_string(), "4.5");

    let below = super::quote(
        &fixture("price-below-minimum.json"),
        def("BTC"),
        def("USDTTRC"),
    );
    assert_eq!(
        below,
        Err(DeskError::OutOfRange {
            min: Some(Amount::parse("0.00045", 8).unwrap()),
            max: Some(Amount::parse("4.5", 8).unwrap()),
        })
    );
    let body = String::from_utf8(fixture("price.json"))
        .unwrap()
        .replace("\"errors\": []", "\"errors\": [\"MAINTENANCE_TO\"]");
    assert_eq!(
        super::quote(body.as_bytes(), def("BTC"), def("USDTTRC")),
        Err(DeskError::PairUnsupported)
    );
}

#[test]
fn a_new_order_gives_its_deposit_address_and_token() {
    let opened = opened(&fixture("order-new.json")).unwrap();
    assert_eq!(opened.id, "ZG3Y2F");
    assert_eq!(
        opened.deposit_address,
        "bc1q0elzn0s46p3jyg3d7d0pkpdwldy6ggsygjz228"
    );
    assert_eq!(opened.deposit_tag, None, "an empty tag is none");
    assert_eq!(
        opened.access_token.as_deref(),
        Some("1LBH03tPYoU2RNBEXBNcl0B6cxrHM5VXloOyTjcd")
    );
    let new = order("order-new.json");
    assert_eq!(new.status, DeskStatus::AwaitingDeposit);
    assert!(new.deposits.is_empty());
    assert_eq!(new.expected_from.unwrap().to_string(), "0.5");
    assert_eq!(new.expected_to.unwrap().to_string(), "18847.102");
    assert_eq!(new.deposit_deadline, Some(1_701_330_256));
    // An answer without the token cannot be acted on later.
    assert!(opened_without_token().is_err());
}

fn opened_without_token() -> Result<OpenedExchange, DeskError> {
    let body = String::from_utf8(fixture("order-new.json"))
        .unwrap()
        .replace(
            "\"token\": \"1LBH03tPYoU2RNBEXBNcl0B6cxrHM5VXloOyTjcd\"",
            "\"token\": \"\"",
        );
    opened(body.as_bytes())
}

#[test]
fn the_captured_lifecycle_maps_state_by_state() {
    let pending = order("order-pending.json");
    assert_eq!(pending.status, DeskStatus::Confirming);
    let deposit = pending.deposits[0].clone();
    assert_eq!(deposit.amount.unwrap().to_string(), "0.5");
    assert_eq!(deposit.confirmations, 0, "\"0\" is a string on the wire");
    assert_eq!(deposit.required_confirmations, Some(1));

    let exchanging = order("order-exchange.json");
    assert_eq!(exchanging.status, DeskStatus::Exchanging);
    assert_eq!(exchanging.deposits[0].clone().confirmations, 3);

    let withdrawing = order("order-withdraw.json");
    assert_eq!(withdrawing.status, DeskStatus::Sending);
    assert!(withdrawing.payout_tx.is_some());
    assert_eq!(withdrawing.payout_amount.unwrap().to_string(), "18846.102");

    let done = order("order-done.json");
    assert_eq!(done.status, DeskStatus::Finished);
    assert_eq!(
        done.payout_tx.as_deref(),
        Some("3b1f9f0a6e2d4c8b7a5e3d1c9b7a5f3e1d9c7b5a3f1e9d7c5b3a1f9e7d5c3b1a")
    );
    assert_eq!(done.refund_tx, None);
}

#[test]
fn an_emergency_asks_for_a_choice_and_a_refund_runs_to_its_end() {
    let emergency = order("order-emergency.json");
    assert_eq!(
        emergency.status,
        DeskStatus::NeedsChoice(vec![EmergencyCase::Less, EmergencyCase::OutOfLimits])
    );
    assert_eq!(
        emergency.deposits[0].clone().amount.unwrap().to_string(),
        "0.0003"
    );
    assert_eq!(order("order-refunding.json").status, DeskStatus::Refunding);
    let refunded = order("order-refunded.json");
    assert_eq!(refunded.status, DeskStatus::Refunded);
    assert_eq!(refunded.refund_amount.unwrap().to_string(), "0.00026");
    assert!(refunded.refund_tx.is_some());

    let repeated = String::from_utf8(fixture("order-emergency.json"))
        .unwrap()
        .replace("\"repeat\": \"0\"", "\"repeat\": true");
    let repeated = exchange(repeated.as_bytes(), def("BTC"), def("USDTTRC")).unwrap();
    assert_eq!(
        repeated.status,
        DeskStatus::NeedsChoice(vec![
            EmergencyCase::Less,
            EmergencyCase::OutOfLimits,
            EmergencyCase::Repeated
        ])
    );
    assert!(accepted(&fixture("emergency-accepted.json")).unwrap());
}

#[test]
fn every_status_value_maps_and_an_unknown_one_is_unavailable() {
    let body = String::from_utf8(fixture("order-new.json")).unwrap();
    for (wire, expected) in [
        ("NEW", DeskStatus::AwaitingDeposit),
        ("PENDING", DeskStatus::Confirming),
        ("EXCHANGE", DeskStatus::Exchanging),
        ("WITHDRAW", DeskStatus::Sending),
        ("DONE", DeskStatus::Finished),
        ("EXPIRED", DeskStatus::Expired),
        ("EMERGENCY", DeskStatus::NeedsChoice(vec![])),
    ] {
        let body = body.replace("\"status\": \"NEW\"", &format!("\"status\": \"{wire}\""));
        let read = exchange(body.as_bytes(), def("BTC"), def("USDTTRC")).unwrap();
        assert_eq!(read.status, expected, "{wire}");
    }
    let unknown = body.replace("\"status\": \"NEW\"", "\"status\": \"PAUSED\"");
    assert!(matches!(
        exchange(unknown.as_bytes(), def("BTC"), def("USDTTRC")),
        Err(DeskError::Unavailable { .. })
    ));
}

#[test]
fn refusals_and_failures_map_without_fixedfloats_words() {
    let refused = exchange(&fixture("error.json"), def("BTC"), def("USDTTRC")).unwrap_err();
    assert_eq!(
        refused,
        DeskError::Refused {
            detail: "FixedFloat refused the request (code 301)".into()
        }
    );
    assert!(!refused.to_string().contains("Invalid address"));
    assert_eq!(error(401, None), DeskError::Unauthorized);
    assert!(error(429, None).is_transient());
    assert!(error(503, None).is_transient());
    for body in [&b"<html>"[..], b"{}", b"{\"code\":0}", b""] {
        assert!(
            matches!(
                exchange(body, def("BTC"), def("USDTTRC")),
                Err(DeskError::Unavailable { .. })
            ),
            "{}",
            String::from_utf8_lossy(body)
        );
    }
}
