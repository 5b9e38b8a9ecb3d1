//! Per-key rate limits against a running server, as docs/authentication.md ("Rate limits")
//! describes them.

use std::sync::Arc;

use crate::support::x402::send;
use crate::support::{Options, TestServer};
use swapd_api::limits::Sharing;
use swapd_core::api_keys::RateLimits;
use swapd_types::Permission::{OrdersCreate, PricesRead};

fn limits(per_minute: u32, per_hour: u32, weight_per_hour: u32) -> RateLimits {
    RateLimits {
        per_minute,
        per_hour,
        weight_per_hour,
    }
}

#[tokio::test]
async fn the_minute_quota_admits_its_limit_then_answers_429_with_retry_after() {
    // 74.
    let server = TestServer::start().await;
    let key = server
        .key_with(&[PricesRead], &[], &[], limits(3, 1000, 1000))
        .await;
    for expected_remaining in [2, 1, 0] {
        let resp = server.call(&key, "GET", "/api/v3", "", b"").await;
        resp.expect(200, "");
        assert_eq!(resp.remaining(), Some(expected_remaining));
        assert_eq!(resp.header("x-ratelimit-resource"), Some("key-minute"));
    }
    let resp = server.call(&key, "GET", "/api/v3", "", b"").await;
    resp.expect(429, "rate_limit_exceeded");
    assert_eq!(resp.remaining(), Some(0));
    assert_eq!(resp.header("x-ratelimit-resource"), Some("key-minute"));
    let retry_after: u64 = resp.header("retry-after").unwrap().parse().unwrap();
    assert!(retry_after >= 1);
    // 80. The refusal consumed nothing: after Retry-After exactly one more is admitted.
    server.clock.advance_ms(retry_after as i64 * 1000);
    server
        .call(&key, "GET", "/api/v3", "", b"")
        .await
        .expect(200, "");
    server
        .call(&key, "GET", "/api/v3", "", b"")
        .await
        .expect(429, "rate_limit_exceeded");
}

#[tokio::test]
async fn headers_add_up_and_name_the_tightest_policy() {
    // 75.
    let server = TestServer::start().await;
    let key = server
        .key_with(&[PricesRead, OrdersCreate], &[], &[], limits(100, 1000, 20))
        .await;
    let now = server.now_secs();
    let mut last_remaining = u32::MAX;
    for _ in 0..3 {
        let resp = server
            .call(&key, "POST", "/api/v3/test/costly", "", b"{}")
            .await;
        resp.expect(200, "");
        let number = |name: &str| resp.header(name).unwrap().parse::<i64>().unwrap();
        assert_eq!(
            number("x-ratelimit-used") + number("x-ratelimit-remaining"),
            number("x-ratelimit-limit")
        );
        assert!(number("x-ratelimit-reset") >= now);
        assert_eq!(resp.header("x-ratelimit-resource"), Some("key-weight-hour"));
        let remaining = resp.remaining().unwrap();
        assert!(
            remaining + 5 == last_remaining || last_remaining == u32::MAX,
            "drops by the route weight"
        );
        last_remaining = remaining;
    }
    assert_eq!(last_remaining, 5);
}

#[tokio::test]
async fn a_costly_request_that_does_not_fit_is_refused_whole() {
    // 76.
    let server = TestServer::start().await;
    let key = server
        .key_with(&[PricesRead, OrdersCreate], &[], &[], limits(100, 1000, 9))
        .await;
    server
        .call(&key, "POST", "/api/v3/test/costly", "", b"{}")
        .await
        .expect(200, "");
    let resp = server
        .call(&key, "POST", "/api/v3/test/costly", "", b"{}")
        .await;
    resp.expect(429, "quota_exceeded");
    assert_eq!(resp.remaining(), Some(4));
    assert!(resp.header("retry-after").is_some());
    assert_eq!(server.quota(&key).await.remaining, 4);
    // A cheaper route still fits.
    server
        .call(&key, "GET", "/api/v3", "", b"")
        .await
        .expect(200, "");
}

#[tokio::test]
async fn refused_requests_leave_the_quota_unchanged() {
    // 80.
    let server = TestServer::start().await;
    let key = server
        .key_with(
            &[PricesRead],
            &["203.0.113.0/24"],
            &[],
            limits(5, 1000, 1000),
        )
        .await;
    let before = server.quota(&key).await;
    let bad_sig = server
        .sign(&key, "GET", "/api/v3", "", b"")
        .set("X-API-SIGN", &"d".repeat(64));
    server.send(&bad_sig).await.expect(401, "signature_invalid");
    let resp = server.call(&key, "GET", "/api/v3", "", b"").await;
    resp.expect(403, "ip_not_allowed");
    assert_eq!(resp.remaining(), Some(before.remaining));
    assert_eq!(server.quota(&key).await, before);
    let unauthorized = server
        .key_with(&[PricesRead], &[], &[], limits(5, 1000, 1000))
        .await;
    let resp = server
        .call(
            &unauthorized,
            "POST",
            "/api/v3/test/echo",
            "",
            br#"{"amount":"1"}"#,
        )
        .await;
    resp.expect(403, "permission_denied");
    assert_eq!(resp.remaining(), Some(5));
}

#[tokio::test]
async fn nodes_sharing_postgres_share_one_quota() {
    // 77.
    let Some(url) = swapd_store::test_support::postgres_url() else {
        return;
    };
    let schema = swapd_store::test_support::PgTestSchema::create(&url).await;
    let master = swapd_core::secrets::MasterKey::generate();
    let clock = Arc::new(swapd_core::ManualClock::new(crate::support::T0_MS));
    let mut nodes = Vec::new();
    for _ in 0..3 {
        let store = swapd_store::SqlStore::open(
            &schema.database_url(),
            &swapd_store::StoreOptions::default(),
        )
        .await
        .unwrap();
        nodes.push(Arc::new(
            TestServer::start_with(Options {
                sharing: Sharing::Database,
                store: Some(Arc::new(store)),
                clock: Some(clock.clone()),
                master: Some(master.clone()),
                ..Options::default()
            })
            .await,
        ));
    }
    let key = nodes[0]
        .key_with(&[PricesRead], &[], &[], limits(10, 1000, 1000))
        .await;
    let tasks: Vec<_> = (0..60)
        .map(|i| {
            let node = nodes[i % 3].clone();
            let key = key.clone();
            tokio::spawn(async move { node.call(&key, "GET", "/api/v3", "", b"").await.status })
        })
        .collect();
    let mut admitted = 0;
    for task in tasks {
        match task.await.unwrap() {
            200 => admitted += 1,
            status => assert_eq!(status, 429),
        }
    }
    assert_eq!(admitted, 10);
}

/// Before authentication, each client address has a budget of failed authentications: past it
/// the address is refused (even with a good signature) for a while; other addresses and the
/// health probes are not (docs/authentication.md, check 2a).
#[tokio::test]
async fn failed_authentications_block_their_address_before_any_key_is_looked_up() {
    let server = TestServer::start_with(Options {
        trusted_proxies: vec!["127.0.0.0/8".parse().unwrap()],
        ip_limits: (0, 3),
        ..Options::default()
    })
    .await;
    let key = server
        .key_with(&[PricesRead], &[], &[], limits(100, 1000, 1000))
        .await;
    let from = |ip: &str| ("X-Forwarded-For", ip.to_owned());
    for _ in 0..4 {
        send(&server, "GET", "/api/v3", None, &[from("198.51.100.1")])
            .await
            .expect(401, "auth_header_missing");
    }
    let signed = server
        .sign(&key, "GET", "/api/v3", "", b"")
        .add("X-Forwarded-For", "198.51.100.1");
    let blocked = server.send(&signed).await;
    blocked.expect(429, "ip_rate_limited");
    let retry_after: u64 = blocked.header("retry-after").unwrap().parse().unwrap();
    assert!((1..=20).contains(&retry_after), "{retry_after}");
    send(&server, "GET", "/api/x402", None, &[from("198.51.100.1")])
        .await
        .expect(429, "ip_rate_limited");
    let probe = send(&server, "GET", "/healthz", None, &[from("198.51.100.1")]).await;
    assert_eq!(probe.status, 200);

    let elsewhere = server
        .sign(&key, "GET", "/api/v3", "", b"")
        .add("X-Forwarded-For", "198.51.100.2");
    server.send(&elsewhere).await.expect(200, "");
}

/// Every API request counts against its address's rate (here 1/s, bursts of 2).
#[tokio::test]
async fn a_flood_from_one_address_is_throttled() {
    let server = TestServer::start_with(Options {
        ip_limits: (1, 0),
        ..Options::default()
    })
    .await;
    let mut refused = None;
    for _ in 0..10 {
        let resp = send(&server, "GET", "/api/x402", None, &[]).await;
        if resp.status == 429 {
            refused = Some(resp);
            break;
        }
        assert_eq!(resp.status, 200);
    }
    let refused = refused.expect("ten requests at once exceed a rate of 1/s with bursts of 2");
    refused.expect(429, "ip_rate_limited");
    assert!(refused.header("retry-after").is_some());
}
