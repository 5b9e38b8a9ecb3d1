//! The desks' clients against local servers that answer with the desks' recorded wire format:
//! authentication, rate limits with and without `Retry-After`, 5xx, timeouts, malformed JSON,
//! and FixedFloat's signature checked as FixedFloat checks it.

use std::time::Duration;

use swapd_core::amount::Amount;
use swapd_core::market::currencies::{CurrencyDef, currency};
use swapd_core::market::{Direction, RateType};
use swapd_core::offchain::desk::{DeskError, DeskStatus};
use swapd_desks::changenow::{ChangeNow, CreateRequest, Side};
use swapd_desks::fixedfloat::{self, Choice, CreateOrder, FixedFloat, OrderRef};
use wiremock::matchers::{body_string, header, method, path, query_param};
use wiremock::{Mock, MockServer, Request, ResponseTemplate};

const TIMEOUT: Duration = Duration::from_millis(500);

fn fixture(desk: &str, name: &str) -> Vec<u8> {
    let path = format!("{}/fixtures/{desk}/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn def(code: &str) -> &'static CurrencyDef {
    currency(code).unwrap()
}

/// A ChangeNOW pair side: its ticker and swapd's currency.
fn side(ticker: &'static str, code: &str) -> Side<'static> {
    Side {
        ticker,
        currency: def(code),
    }
}

fn json(body: Vec<u8>) -> ResponseTemplate {
    ResponseTemplate::new(200).set_body_raw(body, "application/json")
}

async fn changenow(server: &MockServer) -> ChangeNow {
    ChangeNow::new(&format!("{}/v2", server.uri()), "cn-key", TIMEOUT).unwrap()
}

#[tokio::test]
async fn changenow_sends_its_key_and_reads_the_catalog_and_an_exchange() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path("/v2/exchange/currencies"))
        .and(header("x-changenow-api-key", "cn-key"))
        .respond_with(json(fixture("changenow", "currencies.json")))
        .expect(1)
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .and(path("/v2/exchange/by-id"))
        .and(query_param("id", "a1b2c3d4e5f6a7"))
        .and(header("x-changenow-api-key", "cn-key"))
        .respond_with(json(fixture("changenow", "exchange.json")))
        .expect(1)
        .mount(&server)
        .await;
    let desk = changenow(&server).await;
    let catalog = desk.currencies().await.unwrap();
    assert_eq!(catalog.currencies.len(), 4);
    let exchange = desk
        .exchange("a1b2c3d4e5f6a7", def("BTC"), def("USDTETH"))
        .await
        .unwrap();
    assert_eq!(exchange.status, DeskStatus::Finished);
}

#[tokio::test]
async fn changenow_quotes_fixed_rates_and_opens_exchanges_once() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path("/v2/exchange/estimated-amount"))
        .and(query_param("flow", "fixed-rate"))
        .and(query_param("useRateId", "true"))
        .and(query_param("fromAmount", "0.1"))
        .respond_with(json(fixture("changenow", "estimate-fixed.json")))
        .mount(&server)
        .await;
    // The create fails with a 503: a write is sent once, never again on its own.
    Mock::given(method("POST"))
        .and(path("/v2/exchange"))
        .respond_with(ResponseTemplate::new(503))
        .expect(1)
        .mount(&server)
        .await;
    let desk = changenow(&server).await;
    let (btc, eth) = (side("btc", "BTC"), side("eth", "ETH"));
    let amount = Amount::parse("0.1", 8).unwrap();
    let quote = desk
        .quote(btc, eth, RateType::Fixed, Direction::From, amount)
        .await
        .unwrap();
    let rate_id = quote.rate_lock.unwrap();
    let opened = desk
        .open(&CreateRequest {
            from: btc,
            to: eth,
            rate: RateType::Fixed,
            direction: Direction::From,
            amount,
            payout_address: "0x52908400098527886E0F7030069857D2E4169EE7",
            payout_tag: None,
            refund_address: None,
            refund_tag: None,
            rate_id: Some(&rate_id),
            reference: None,
        })
        .await;
    assert!(
        matches!(opened, Err(DeskError::Unavailable { .. })),
        "{opened:?}"
    );
}

#[tokio::test]
async fn a_bad_key_is_unauthorized_at_once() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .respond_with(ResponseTemplate::new(401).set_body_string("Unauthorized"))
        .expect(1)
        .mount(&server)
        .await;
    let result = changenow(&server).await.currencies().await;
    assert_eq!(result.err(), Some(DeskError::Unauthorized));
}

#[tokio::test]
async fn a_rate_limited_read_waits_as_told_and_goes_through() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .respond_with(ResponseTemplate::new(429).insert_header("Retry-After", "1"))
        .up_to_n_times(1)
        .expect(1)
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .respond_with(json(fixture("changenow", "currencies.json")))
        .expect(1)
        .mount(&server)
        .await;
    let started = std::time::Instant::now();
    let catalog = changenow(&server).await.currencies().await.unwrap();
    assert_eq!(catalog.currencies.len(), 4);
    assert!(
        started.elapsed() >= Duration::from_secs(1),
        "Retry-After was honoured"
    );
}

#[tokio::test]
async fn reads_give_up_after_three_attempts_with_the_last_failure() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path("/v2/exchange/range"))
        .respond_with(ResponseTemplate::new(429))
        .expect(3)
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .and(path("/v2/exchange/currencies"))
        .respond_with(ResponseTemplate::new(502).set_body_string("<html>bad gateway</html>"))
        .expect(3)
        .mount(&server)
        .await;
    let desk = changenow(&server).await;
    let (btc, eth) = (side("btc", "BTC"), side("eth", "ETH"));
    let limited = desk.limits(btc, eth, RateType::Float).await;
    assert_eq!(
        limited.err(),
        Some(DeskError::RateLimited { retry_after: None })
    );
    let down = desk.currencies().await.unwrap_err();
    assert!(down.is_transient(), "{down}");
    assert!(!down.to_string().contains("bad gateway"), "{down}");
}

#[tokio::test]
async fn a_desk_that_does_not_answer_in_time_is_unavailable() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .respond_with(json(fixture("changenow", "currencies.json")).set_delay(TIMEOUT * 4))
        .mount(&server)
        .await;
    let error = changenow(&server).await.currencies().await.unwrap_err();
    assert_eq!(
        error,
        DeskError::Unavailable {
            detail: "ChangeNOW timed out after 500 ms".into()
        }
    );
}

#[tokio::test]
async fn malformed_json_is_unavailable() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .respond_with(json(b"{\"id\": ".to_vec()))
        .mount(&server)
        .await;
    let error = changenow(&server)
        .await
        .exchange("x", def("BTC"), def("ETH"))
        .await
        .unwrap_err();
    assert!(matches!(error, DeskError::Unavailable { .. }), "{error:?}");
}

/// Answers only requests whose `X-API-SIGN` is the HMAC of their exact body under `secret`
/// and whose `X-API-KEY` is `key`, as FixedFloat does; anything else gets 401.
struct FixedFloatSignature {
    key: &'static str,
    secret: &'static str,
}

impl wiremock::Match for FixedFloatSignature {
    fn matches(&self, request: &Request) -> bool {
        let body = String::from_utf8_lossy(&request.body);
        let header = |name: &str| {
            request
                .headers
                .get(name)
                .and_then(|v| v.to_str().ok())
                .unwrap_or_default()
                .to_owned()
        };
        header("x-api-key") == self.key
            && header("x-api-sign") == fixedfloat::signature(self.secret, &body)
    }
}

async fn fixedfloat_server() -> MockServer {
    let server = MockServer::start().await;
    let signed = || FixedFloatSignature {
        key: "ff-key",
        secret: "ff-secret",
    };
    for (name, file) in [
        ("ccies", "ccies.json"),
        ("price", "price.json"),
        ("create", "order-new.json"),
        ("order", "order-emergency.json"),
        ("emergency", "emergency-accepted.json"),
    ] {
        Mock::given(method("POST"))
            .and(path(format!("/api/v2/{name}")))
            .and(signed())
            .respond_with(json(fixture("fixedfloat", file)))
            .mount(&server)
            .await;
    }
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(401))
        .mount(&server)
        .await;
    server
}

fn fixedfloat(server: &MockServer, secret: &str) -> FixedFloat {
    FixedFloat::new(
        &format!("{}/api/v2", server.uri()),
        "ff-key",
        secret,
        TIMEOUT,
    )
    .unwrap()
}

#[tokio::test]
async fn fixedfloat_signs_every_call_and_runs_an_order_into_an_emergency_refund() {
    let server = fixedfloat_server().await;
    let desk = fixedfloat(&server, "ff-secret");
    let catalog = desk.currencies().await.unwrap();
    assert_eq!(catalog.currencies.len(), 3);

    let amount = Amount::parse("0.5", 8).unwrap();
    let (quote, limits) = desk
        .quote(
            ("BTC", def("BTC")),
            ("USDTTRC", def("USDTTRC")),
            RateType::Float,
            Direction::From,
            amount,
            None,
        )
        .await
        .unwrap();
    assert_eq!(quote.to_amount.to_string(), "18847.102");
    assert_eq!(limits.min.to_string(), "0.00045");

    let opened = desk
        .open(&CreateOrder {
            rate: RateType::Float,
            from_code: "BTC",
            to_code: "USDTTRC",
            direction: Direction::From,
            amount,
            to_address: "TAzsQ9Gx8eqFNFSKbeXrbi45CuVPHzA8wr",
            tag: None,
            referral: None,
        })
        .await
        .unwrap();
    let token = opened.access_token.unwrap();
    let order = OrderRef {
        id: &opened.id,
        token: &token,
    };
    let state = desk
        .exchange(order, def("BTC"), def("USDTTRC"))
        .await
        .unwrap();
    assert!(matches!(state.status, DeskStatus::NeedsChoice(_)));
    let refund = Choice::Refund {
        address: "bc1qxy2kgdygjrsqtzq2n0yrf2493p83kkfjhx0wlh",
        tag: None,
    };
    assert!(desk.choose(order, refund).await.unwrap());

    // The emergency call carried exactly the body that was signed.
    let requests = server.received_requests().await.unwrap();
    let choice = requests
        .iter()
        .find(|r| r.url.path() == "/api/v2/emergency")
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&choice.body),
        r#"{"id":"ZG3Y2F","token":"1LBH03tPYoU2RNBEXBNcl0B6cxrHM5VXloOyTjcd","choice":"REFUND","address":"bc1qxy2kgdygjrsqtzq2n0yrf2493p83kkfjhx0wlh"}"#
    );
}

#[tokio::test]
async fn a_wrong_secret_is_refused_by_the_desk() {
    let server = fixedfloat_server().await;
    let desk = fixedfloat(&server, "not-the-secret");
    assert_eq!(desk.currencies().await.err(), Some(DeskError::Unauthorized));
}

/// The operator's referral rides on `price` and `create` as FixedFloat documents it, and the
/// quote shows the service fee FixedFloat takes out of the output for it.
#[tokio::test]
async fn fixedfloat_carries_the_service_fee_under_the_operators_refcode() {
    use swapd_core::fees::entry::FeeKind;
    use swapd_core::market::provider::{Provider, QuoteRequest};
    use swapd_core::offchain::desk::{Desk, Destination, ExchangeRequest};
    let server = fixedfloat_server().await;
    let desk = swapd_desks::fixedfloat::FixedFloatDesk::new(fixedfloat(&server, "ff-secret"))
        .with_refcode("swapd-op");
    let mut request = QuoteRequest::without_wallet(
        def("BTC"),
        def("USDTTRC"),
        Amount::parse("0.5", 8).unwrap(),
        Direction::From,
        RateType::Float,
        0,
    );
    request.fees.service_bps = 40;
    request.fees.partner_bps = 25;
    let quote = desk.quote(&request).await.unwrap();
    let bodies = |call: &str| {
        let server = &server;
        let call = call.to_owned();
        async move {
            server
                .received_requests()
                .await
                .unwrap()
                .into_iter()
                .filter(|r| r.url.path().ends_with(&call))
                .map(|r| String::from_utf8(r.body).unwrap())
                .collect::<Vec<_>>()
        }
    };
    let price = bodies("/price").await;
    assert!(
        price
            .last()
            .unwrap()
            .ends_with(r#""refcode":"swapd-op","afftax":0.4}"#),
        "{price:?}"
    );
    let service = quote
        .fees
        .iter()
        .find(|f| f.kind == FeeKind::Service)
        .expect("the service fee is shown");
    assert_eq!(service.rate.unwrap().to_string(), "40");
    assert!(
        quote.fees.iter().all(|f| f.kind != FeeKind::Partner),
        "FixedFloat pays one code: the partner's markup is left out"
    );
    assert_eq!(quote.rate_lock.as_deref(), Some("afftax-bps:40"));

    desk.open(&ExchangeRequest {
        reference: "ord_ff_fee".into(),
        from: def("BTC"),
        to: def("USDTTRC"),
        rate_type: RateType::Float,
        from_amount: quote.from_amount,
        to_amount: quote.to_amount,
        rate_lock: quote.rate_lock.clone(),
        payout: Destination {
            address: "TAzsQ9Gx8eqFNFSKbeXrbi45CuVPHzA8wr".into(),
            tag: None,
        },
        refund: None,
        deposit_deadline_ms: 0,
        now_ms: 0,
    })
    .await
    .unwrap();
    let create = bodies("/create").await;
    assert!(
        create
            .last()
            .unwrap()
            .contains(r#""refcode":"swapd-op","afftax":0.4,"toAddress""#),
        "{create:?}"
    );
}

#[tokio::test]
async fn a_refusal_in_the_envelope_keeps_fixedfloats_words_out() {
    let server = MockServer::start().await;
    let order = CreateOrder {
        rate: RateType::Fixed,
        from_code: "BTC",
        to_code: "USDTTRC",
        direction: Direction::From,
        amount: Amount::parse("0.5", 8).unwrap(),
        to_address: "not-an-address",
        tag: None,
        referral: None,
    };
    Mock::given(method("POST"))
        .and(path("/api/v2/create"))
        .and(body_string(fixedfloat::create_body(&order)))
        .respond_with(json(fixture("fixedfloat", "error.json")))
        .expect(1)
        .mount(&server)
        .await;
    let refused = fixedfloat(&server, "ff-secret")
        .open(&order)
        .await
        .unwrap_err();
    assert!(matches!(refused, DeskError::Refused { .. }), "{refused:?}");
    assert!(!refused.to_string().contains("Invalid address"));
}
