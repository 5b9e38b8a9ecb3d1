//! ChangeNOW's documented shapes (docs/providers.md, "The desks"), read as swapd reads them.

use std::time::Duration;

use swapd_core::market::currencies::currency;
use swapd_core::offchain::desk::{DeskError, DeskStatus};

use super::*;

fn fixture(name: &str) -> Vec<u8> {
    let path = format!("{}/fixtures/changenow/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn def(code: &str) -> &'static CurrencyDef {
    currency(code).unwrap()
}

#[test]
fn the_catalog_keeps_what_swapd_lists_matched_by_network_and_contract() {
    let catalog = catalog(&fixture("currencies.json")).unwrap();
    let codes: Vec<(&str, bool, bool)> = catalog
        .currencies
        .iter()
        .map(|l| (l.currency.code, l.send, l.receive))
        .collect();
    // USDT on Ethereum matches by contract in any letter case; USDT on TRON deposits are off.
    assert_eq!(
        codes,
        [
            ("BTC", true, true),
            ("USDTETH", true, true),
            ("USDTTRC", false, true),
            ("XRP", true, true)
        ]
    );
    // USDT on TON (a network swapd does not know), PEPE (a token swapd does not list) and
    // the US dollar (fiat) are left out, not guessed.
    assert_eq!(catalog.unknown, 3);
    assert!(!catalog.currencies[3].fixed_rate, "XRP has no fixed rate");
}

#[test]
fn every_status_value_maps() {
    for (wire, expected) in [
        ("new", DeskStatus::AwaitingDeposit),
        ("waiting", DeskStatus::AwaitingDeposit),
        ("confirming", DeskStatus::Confirming),
        ("exchanging", DeskStatus::Exchanging),
        ("sending", DeskStatus::Sending),
        ("finished", DeskStatus::Finished),
        ("failed", DeskStatus::Failed),
        ("refunded", DeskStatus::Refunded),
        ("verifying", DeskStatus::OnHold),
        ("expired", DeskStatus::Expired),
    ] {
        assert_eq!(status(wire), Ok(expected), "{wire}");
    }
    assert!(status("FINISHED").is_err(), "values are lowercase");
    assert!(matches!(
        DeskError::from(status("halted").unwrap_err()),
        DeskError::Unavailable { .. }
    ));
}

#[test]
fn an_exchange_reads_exactly_with_its_deposit_and_payout() {
    let exchange = exchange(&fixture("exchange.json"), def("BTC"), def("USDTETH")).unwrap();
    assert_eq!(exchange.id, "a1b2c3d4e5f6a7");
    assert_eq!(exchange.status, DeskStatus::Finished);
    assert_eq!(
        exchange.deposit_address,
        "bc1qar0srrr7xfkvy5l643lydnw9re59gtzzwf5mdq"
    );
    assert_eq!(exchange.deposit_tag, None);
    assert_eq!(exchange.expected_from.unwrap().to_string(), "0.1");
    assert_eq!(exchange.expected_to.unwrap().to_string(), "4312.55");
    // Six fraction digits, USDT's precision: kept as written.
    assert_eq!(exchange.payout_amount.unwrap().to_string(), "4312.549871");
    let deposit = exchange.deposits[0].clone();
    assert_eq!(
        deposit.tx_id,
        "9b0fc92260312ce44e74ef369f5c66bbb85848f2eddd5a7a1cde251e54ccfdd5"
    );
    assert_eq!(deposit.amount.unwrap().to_string(), "0.1");
    assert_eq!(
        exchange.payout_tx.as_deref(),
        Some("0x5c504ed432cb51138bcf09aa5e8a410dd4a1e204ef84bfed1be16dfba1b22060")
    );
    assert_eq!(exchange.refund_tx, None);
}

#[test]
fn a_waiting_exchange_has_no_deposit_and_a_refunded_one_its_refund() {
    let body = String::from_utf8(fixture("exchange.json")).unwrap();
    let waiting = body
        .replace("\"finished\"", "\"waiting\"")
        .replace(
            "\"9b0fc92260312ce44e74ef369f5c66bbb85848f2eddd5a7a1cde251e54ccfdd5\"",
            "null",
        )
        .replace("\"amountFrom\": 0.1", "\"amountFrom\": null");
    let read = exchange(waiting.as_bytes(), def("BTC"), def("USDTETH")).unwrap();
    assert_eq!(read.status, DeskStatus::AwaitingDeposit);
    assert!(read.deposits.is_empty());

    let refunded = body
        .replace("\"finished\"", "\"refunded\"")
        .replace(
            "\"refundHash\": null",
            "\"refundHash\": \"4a5e1e4baab89f3a32518a88c31bc87f618f76673e2cc77ab2127b7afdeda33b\"",
        )
        .replace("\"refundAmount\": null", "\"refundAmount\": 9.99e-2");
    let read = exchange(refunded.as_bytes(), def("BTC"), def("USDTETH")).unwrap();
    assert_eq!(read.status, DeskStatus::Refunded);
    assert_eq!(read.refund_amount.unwrap().to_string(), "0.0999");
    assert!(read.refund_tx.is_some());
}

#[test]
fn a_fixed_rate_estimate_keeps_its_rate_id_and_fee() {
    let quote = quote(&fixture("estimate-fixed.json"), def("BTC"), def("ETH")).unwrap();
    assert_eq!(quote.from_amount.to_string(), "0.1");
    assert_eq!(quote.to_amount.to_string(), "1.7312");
    assert_eq!(
        quote.rate_lock.as_deref(),
        Some("K3LTgrXuMd5nzC0lW5rYrvvxbnJvmz5M")
    );
    assert_eq!(quote.network_fee.unwrap().to_string(), "0.0015");
    // A standard estimate has no rate id.
    let standard = br#"{"fromAmount": 0.1, "toAmount": 1.74, "rateId": null, "flow": "standard"}"#;
    assert_eq!(quote_of(standard).rate_lock, None);
}

fn quote_of(body: &[u8]) -> DeskQuote {
    quote(body, def("BTC"), def("ETH")).unwrap()
}

#[test]
fn limits_read_with_and_without_a_maximum() {
    let limits = limits(&fixture("range.json"), def("BTC")).unwrap();
    assert_eq!(limits.min.to_string(), "0.0005");
    assert_eq!(limits.max.unwrap().to_string(), "1.25");
    for open in [
        br#"{"minAmount": 0.0005, "maxAmount": null}"#.as_slice(),
        br#"{"minAmount": 0.0005, "maxAmount": 0}"#,
        br#"{"minAmount": 0.0005}"#,
    ] {
        assert_eq!(limits_of(open).max, None);
    }
}

fn limits_of(body: &[u8]) -> DeskLimits {
    limits(body, def("BTC")).unwrap()
}

#[test]
fn an_opened_exchange_has_no_memo_when_it_is_empty() {
    let opened = opened(&fixture("created.json")).unwrap();
    assert_eq!(opened.id, "a1b2c3d4e5f6a7");
    assert_eq!(opened.deposit_tag, None);
    assert_eq!(opened.access_token, None);
}

#[test]
fn errors_map_to_stable_kinds_without_the_desks_words() {
    let refusal = |code: &str| {
        let body = format!(r#"{{"error": "{code}", "message": "secret internal text 12345"}}"#);
        error(400, body.as_bytes(), None)
    };
    assert_eq!(refusal("not_valid_address"), DeskError::AddressRefused);
    assert_eq!(refusal("pair_is_inactive"), DeskError::PairUnsupported);
    assert_eq!(
        refusal("fixed_rate_not_enabled"),
        DeskError::PairUnsupported
    );
    for code in [
        "deposit_too_small",
        "less_min_amount",
        "max_amount_exceeded",
    ] {
        assert_eq!(
            refusal(code),
            DeskError::OutOfRange {
                min: None,
                max: None
            }
        );
    }
    let other = refusal("not_valid_params");
    assert!(
        !other.to_string().contains("secret internal text"),
        "{other}"
    );
    assert!(other.to_string().contains("not_valid_params"), "{other}");

    assert_eq!(error(401, b"Unauthorized", None), DeskError::Unauthorized);
    assert_eq!(error(404, b"", None), DeskError::NotFound);
    assert_eq!(
        error(429, b"", Some(Duration::from_secs(3))),
        DeskError::RateLimited {
            retry_after: Some(Duration::from_secs(3))
        }
    );
    assert!(error(429, b"", None).is_transient());
    assert!(error(502, b"<html>bad gateway</html>", None).is_transient());
    assert!(error(400, b"<html>", None).is_transient(), "no error code");
}

#[test]
fn malformed_answers_are_unavailable_not_a_panic() {
    for body in [&b"{"[..], b"[]", b"{\"id\": 1}", b"null", b""] {
        let result = exchange(body, def("BTC"), def("ETH"));
        assert!(
            matches!(result, Err(DeskError::Unavailable { .. })),
            "{result:?}"
        );
    }
    // An amount that is not a decimal number fails the answer; it is not read as "none".
    for amount in ["\"lots\"", "\"0.1\"", "-1", "true"] {
        let body = format!(
            r#"{{"id":"x","status":"waiting","payinAddress":"a","expectedAmountFrom":{amount}}}"#
        );
        let result = exchange(body.as_bytes(), def("BTC"), def("ETH"));
        assert!(
            matches!(result, Err(DeskError::Unavailable { .. })),
            "{amount}: {result:?}"
        );
    }
}

#[test]
fn requests_name_the_pair_by_ticker_and_network_with_exact_amounts() {
    let btc = Side {
        ticker: "btc",
        currency: def("BTC"),
    };
    let usdt = Side {
        ticker: "usdt",
        currency: def("USDTETH"),
    };
    let amount = swapd_core::amount::Amount::parse("0.00000001", 8).unwrap();
    let query = estimate_query(btc, usdt, RateType::Fixed, Direction::From, amount);
    let pairs: Vec<(&str, &str)> = query.iter().map(|(k, v)| (*k, v.as_str())).collect();
    assert_eq!(
        pairs,
        [
            ("fromCurrency", "btc"),
            ("toCurrency", "usdt"),
            ("fromNetwork", "btc"),
            ("toNetwork", "eth"),
            ("flow", "fixed-rate"),
            ("fromAmount", "0.00000001"),
            ("type", "direct"),
            ("useRateId", "true"),
        ]
    );
    let reverse = estimate_query(btc, usdt, RateType::Float, Direction::To, amount);
    assert!(reverse.contains(&("toAmount", "0.00000001".into())));
    assert!(reverse.contains(&("flow", "standard".into())));
    assert!(!reverse.iter().any(|(k, _)| *k == "useRateId"));

    let body = create_body(&CreateRequest {
        from: btc,
        to: usdt,
        rate: RateType::Fixed,
        direction: Direction::From,
        amount: swapd_core::amount::Amount::parse("0.1", 8).unwrap(),
        payout_address: "0x57f1887a8BF19b14fC0dF6Fd9B2acc9Af147eA85",
        payout_tag: None,
        refund_address: Some("bc1qxy2kgdygjrsqtzq2n0yrf2493p83kkfjhx0wlh"),
        refund_tag: None,
        rate_id: Some("K3LTgrXuMd5nzC0lW5rYrvvxbnJvmz5M"),
        reference: None,
    });
    let body: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(
        body,
        serde_json::json!({
            "fromCurrency": "btc", "fromNetwork": "btc", "toCurrency": "usdt", "toNetwork": "eth",
            "fromAmount": "0.1", "toAmount": "", "address": "0x57f1887a8BF19b14fC0dF6Fd9B2acc9Af147eA85",
            "extraId": "", "refundAddress": "bc1qxy2kgdygjrsqtzq2n0yrf2493p83kkfjhx0wlh",
            "refundExtraId": "", "flow": "fixed-rate", "type": "direct",
            "rateId": "K3LTgrXuMd5nzC0lW5rYrvvxbnJvmz5M"
        })
    );
}

fn create_request(reference: Option<&'static str>) -> CreateRequest<'static> {
    CreateRequest {
        from: Side {
            ticker: "btc",
            currency: def("BTC"),
        },
        to: Side {
            ticker: "usdt",
            currency: def("USDTETH"),
        },
        rate: RateType::Float,
        direction: Direction::From,
        amount: swapd_core::amount::Amount::parse("0.1", 8).unwrap(),
        payout_address: "0x57f1887a8BF19b14fC0dF6Fd9B2acc9Af147eA85",
        payout_tag: None,
        refund_address: None,
        refund_tag: None,
        rate_id: None,
        reference,
    }
}

/// An item of `GET /v2/exchanges` as ChangeNOW's documentation shows it.
fn listed(id: &str, payload: serde_json::Value, amount: &str, address: &str) -> serde_json::Value {
    serde_json::from_str(&format!(
        r#"{{"createdAt": "2026-11-26T12:00:05.000Z", "updatedAt": "2026-11-26T12:00:05.000Z",
        "exchangeId": "{id}", "requestId": "req-{id}", "status": "waiting",
        "validUntil": null, "flow": "standard",
        "payin": {{"currency": "btc", "address": "bc1q-deposit-{id}", "extraId": null,
                   "amount": null, "expectedAmount": {amount}, "hash": null}},
        "payout": {{"currency": "usdt", "address": "{address}", "extraId": null, "hash": null}},
        "refund": {{"currency": "btc", "address": null, "extra_id": null, "hash": null}},
        "partnerInfo": {{"commission": {{"currency": "btc", "amount": 0, "percent": 0.4}},
                         "userId": null, "payload": {payload}}}}}"#
    ))
    .unwrap()
}

#[test]
fn the_commission_reported_for_an_exchange_is_in_the_currency_its_ticker_names() {
    let (btc, usdt) = (currency("BTC").unwrap(), currency("USDTETH").unwrap());
    let mut item = listed("cn-7", serde_json::Value::Null, "0.1", "0xabc");
    let body =
        |item: &serde_json::Value| serde_json::json!({"count": 1, "exchanges": [item]}).to_string();
    item["partnerInfo"]["commission"] =
        serde_json::json!({"currency": "usdt", "amount": 21.4, "percent": 0.5});
    let found = commission(body(&item).as_bytes(), "cn-7", (btc, usdt))
        .unwrap()
        .unwrap();
    assert_eq!(
        (found.amount.to_string(), found.currency.code),
        ("21.4".into(), "USDTETH")
    );
    item["partnerInfo"]["commission"] =
        serde_json::json!({"currency": "btc", "amount": 0.0004, "percent": 0.5});
    let found = commission(body(&item).as_bytes(), "cn-7", (btc, usdt))
        .unwrap()
        .unwrap();
    assert_eq!(
        (found.amount.to_string(), found.currency.code),
        ("0.0004".into(), "BTC")
    );
    // Another exchange's, or none: nothing.
    assert_eq!(
        commission(body(&item).as_bytes(), "cn-8", (btc, usdt)).unwrap(),
        None
    );
    item["partnerInfo"]["commission"] = serde_json::Value::Null;
    assert_eq!(
        commission(body(&item).as_bytes(), "cn-7", (btc, usdt)).unwrap(),
        None
    );
}

fn found(items: &[serde_json::Value], request: &CreateRequest<'_>) -> Found {
    let body = serde_json::json!({"count": items.len(), "exchanges": items});
    find_opened(body.to_string().as_bytes(), request).unwrap()
}

#[test]
fn a_create_carries_swapds_reference_in_payload_when_the_account_has_it() {
    let body: serde_json::Value =
        serde_json::from_str(&create_body(&create_request(Some("ord_1")))).unwrap();
    assert_eq!(
        body["payload"],
        serde_json::json!({"swapdReference": "ord_1"})
    );
    let body: serde_json::Value =
        serde_json::from_str(&create_body(&create_request(None))).unwrap();
    assert!(body.get("payload").is_none(), "{body}");
}

#[test]
fn a_lost_create_is_found_by_its_reference_else_by_its_terms_when_one_matches() {
    const PAYOUT: &str = "0x57f1887a8BF19b14fC0dF6Fd9B2acc9Af147eA85";
    let ours = listed(
        "cn-ours",
        serde_json::json!({"swapdReference": "ord_1"}),
        "0.1",
        PAYOUT,
    );
    let other_order = listed(
        "cn-other",
        serde_json::json!({"swapdReference": "ord_2"}),
        "0.1",
        PAYOUT,
    );
    let unreferenced = listed("cn-plain", serde_json::Value::Null, "0.1", PAYOUT);
    // By reference, whatever else is listed.
    let Found::One(opened) = found(
        &[other_order.clone(), unreferenced.clone(), ours],
        &create_request(Some("ord_1")),
    ) else {
        panic!("not found by reference")
    };
    assert_eq!(opened.id, "cn-ours");
    assert_eq!(opened.deposit_address, "bc1q-deposit-cn-ours");
    // Without a reference: the one unreferenced exchange with the same terms (the address in
    // any letter case on an EVM network); another order's exchange is never taken.
    let lower = listed(
        "cn-plain",
        serde_json::Value::Null,
        "1e-1",
        &PAYOUT.to_lowercase(),
    );
    assert!(matches!(
        found(&[other_order.clone(), lower], &create_request(None)),
        Found::One(opened) if opened.id == "cn-plain"
    ));
    // Another amount or address is not the create's.
    let other_amount = listed("cn-x", serde_json::Value::Null, "0.2", PAYOUT);
    let other_address = listed(
        "cn-y",
        serde_json::Value::Null,
        "0.1",
        "0x0000000000000000000000000000000000000001",
    );
    assert_eq!(
        found(
            &[other_amount, other_address, other_order],
            &create_request(None)
        ),
        Found::Nothing
    );
    // Two candidates: neither is adopted.
    let twin = listed("cn-twin", serde_json::Value::Null, "0.1", PAYOUT);
    assert_eq!(
        found(&[unreferenced, twin], &create_request(None)),
        Found::Several(2)
    );
}

#[test]
fn the_lookup_asks_for_the_payout_address_since_the_create() {
    let query = lookup_query("0xabc", 1_764_158_400_123);
    assert!(query.contains(&("payoutAddress", "0xabc".into())));
    assert!(
        query.contains(&("dateFrom", "2025-11-26T12:00:00.123Z".into())),
        "{query:?}"
    );
    assert!(query.contains(&("limit", "100".into())));
}

#[test]
fn float_noise_in_every_answer_is_read_and_cut_against_promising_more() {
    // Estimates: what the user gets rounds down, a reverse estimate's deposit up.
    let estimate = br#"{"fromAmount": 5.123456789012345e-05, "toAmount": 7.46249999999999999999,
        "rateId": null, "withdrawalFee": 1.0000000000000000001, "flow": "standard"}"#;
    let quote = quote(estimate, def("BTC"), def("USDTETH")).unwrap();
    assert_eq!(quote.from_amount.to_string(), "0.00005124");
    assert_eq!(quote.to_amount.to_string(), "7.462499");
    assert_eq!(quote.network_fee.unwrap().to_string(), "1.000001");
    // Limits: the minimum up, the maximum down.
    let range = br#"{"minAmount": 4.9999999999999996e-04, "maxAmount": 1.24999999999999999}"#;
    let limits = limits(range, def("BTC")).unwrap();
    assert_eq!(limits.min.to_string(), "0.0005");
    assert_eq!(limits.max.unwrap().to_string(), "1.24999999");
    // An exchange: the deposit to send up; what arrived, was paid out or refunded, down.
    let body = String::from_utf8(fixture("exchange.json"))
        .unwrap()
        .replace(
            "\"expectedAmountFrom\": 0.1",
            "\"expectedAmountFrom\": 0.100000000000000006",
        )
        .replace(
            "\"amountFrom\": 0.1",
            "\"amountFrom\": 9.9999999999999992e-02",
        )
        .replace(
            "\"amountTo\": 4312.549871",
            "\"amountTo\": 4312.54987199999999999",
        );
    let exchange = exchange(body.as_bytes(), def("BTC"), def("USDTETH")).unwrap();
    assert_eq!(exchange.expected_from.unwrap().to_string(), "0.10000001");
    assert_eq!(
        exchange.deposits[0].amount.unwrap().to_string(),
        "0.09999999"
    );
    assert_eq!(exchange.payout_amount.unwrap().to_string(), "4312.549871");
}
