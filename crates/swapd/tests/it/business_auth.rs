//! The Business API gate against a running server: every check of docs/authentication.md
//! ("The order of checks", "Key policy"). Every refusal also shows that nothing was consumed
//! or recorded.

use std::sync::Arc;

use crate::support::{Options, Resp, TestServer};
use swapd_api::business::guards::Guards;
use swapd_api::limits::Sharing;
use swapd_core::api_keys::RateLimits;
use swapd_types::Permission::{OrdersCreate, OrdersRead, PricesRead};

const ECHO: &str = "/api/v3/test/echo";

async fn unchanged_quota(server: &TestServer, key: &crate::support::TestKey, before: u32) {
    assert_eq!(
        server.quota(key).await.remaining,
        before,
        "a refused request consumed quota"
    );
}

#[tokio::test]
async fn valid_requests_pass_get_post_compact_and_pretty() {
    let server = TestServer::start().await;
    let key = server.key(&[OrdersCreate, PricesRead]).await;

    // 1. GET, no query, empty body.
    let resp = server.call(&key, "GET", "/api/v3", "", b"").await;
    resp.expect(200, "");
    assert_eq!(resp.body["data"]["apiKey"], key.id);
    assert_eq!(resp.body["data"]["routes"][0]["path"], "/api/v3");
    assert!(resp.header("x-ratelimit-limit").is_some());

    // 2. POST with compact sorted JSON; 3. pretty JSON signed over its exact bytes.
    server
        .call(&key, "POST", ECHO, "", br#"{"amount":"1.5"}"#)
        .await
        .expect(201, "");
    let pretty = b"{\n  \"note\": {\"b\": 1, \"a\": 2},\n  \"amount\": \"2\"\n}";
    let resp = server.call(&key, "POST", ECHO, "", pretty).await;
    resp.expect(201, "");
    assert_eq!(resp.body["data"]["amount"], "2");
}

#[tokio::test]
async fn tampered_bodies_and_signatures_are_refused() {
    let server = TestServer::start().await;
    let key = server.key(&[OrdersCreate, PricesRead]).await;
    let other = server.key(&[OrdersCreate]).await;
    let before = server.quota(&key).await.remaining;

    // 4. Compact bytes signed, pretty bytes sent.
    let signed = server.sign(&key, "POST", ECHO, "", br#"{"amount":"1"}"#);
    server
        .send(&signed.clone().body(b"{ \"amount\": \"1\" }"))
        .await
        .expect(401, "signature_invalid");
    // 5. One byte flipped.
    server
        .send(&signed.clone().body(br#"{"amount":"2"}"#))
        .await
        .expect(401, "signature_invalid");
    // 6. Correct MAC in uppercase; 7. wrong lengths, non-hex, base64.
    let sig = signed.get("X-API-SIGN");
    for bad in [
        sig.to_uppercase(),
        sig[..63].to_owned(),
        format!("{sig}0"),
        "z".repeat(64),
        "q83vEjRWeJq83vEjRWeJq83vEjRWeJq83vEjRWeJq80=".to_owned(),
    ] {
        let resp = server
            .send(
                &server
                    .sign(&key, "POST", ECHO, "", br#"{"amount":"1"}"#)
                    .set("X-API-SIGN", &bad),
            )
            .await;
        resp.expect(401, "signature_malformed");
    }
    // 8. MAC computed with another key's secret.
    let forged = server
        .sign(&other, "GET", "/api/v3", "", b"")
        .set("X-API-KEY", &key.id);
    server.send(&forged).await.expect(401, "signature_invalid");
    // 30. Method signed in lowercase, sent uppercase.
    let lower = server.sign(&key, "post", ECHO, "", br#"{"amount":"1"}"#);
    server
        .send(&Signed {
            method: "POST".into(),
            ..lower
        })
        .await
        .expect(401, "signature_invalid");

    unchanged_quota(&server, &key, before).await;
    assert_eq!(
        server
            .counters
            .echo
            .load(std::sync::atomic::Ordering::SeqCst),
        0
    );
}

use crate::support::Signed;

#[tokio::test]
async fn missing_duplicated_and_aliased_headers() {
    let server = TestServer::start().await;
    let key = server.key(&[PricesRead]).await;

    // 9. Each header missing, named in the message.
    for header in ["X-API-KEY", "X-API-SIGN", "X-API-TIMESTAMP", "X-API-NONCE"] {
        let resp = server
            .send(&server.sign(&key, "GET", "/api/v3", "", b"").without(header))
            .await;
        resp.expect(401, "auth_header_missing");
        assert!(resp.message().contains(header), "{}", resp.message());
    }
    // 10. X-API-SIGN twice.
    let signed = server.sign(&key, "GET", "/api/v3", "", b"");
    let sig = signed.get("X-API-SIGN");
    server
        .send(&signed.clone().add("X-API-SIGN", &sig))
        .await
        .expect(401, "auth_header_duplicated");

    // The older aliases work, and the canonical header wins when both are sent.
    let signed = server.sign(&key, "GET", "/api/v3", "", b"");
    let aliased = signed
        .clone()
        .without("X-API-SIGN")
        .without("X-API-TIMESTAMP")
        .without("X-API-NONCE")
        .add("X-Signature", &signed.get("X-API-SIGN"))
        .add("X-Timestamp", &signed.get("X-API-TIMESTAMP"))
        .add("X-Nonce", &signed.get("X-API-NONCE"));
    server.send(&aliased).await.expect(200, "");
    let both = server
        .sign(&key, "GET", "/api/v3", "", b"")
        .add("X-Signature", &"0".repeat(64));
    server.send(&both).await.expect(200, "");
}

#[tokio::test]
async fn unknown_and_revoked_keys() {
    let server = TestServer::start().await;
    let key = server.key(&[PricesRead]).await;

    // 11. Unknown key id (well-formed and malformed).
    let unknown = crate::support::TestKey {
        id: "key_00000000000000000000000000000000".into(),
        secret: key.secret.clone(),
    };
    server
        .call(&unknown, "GET", "/api/v3", "", b"")
        .await
        .expect(401, "api_key_invalid");
    let garbage = crate::support::TestKey {
        id: "not-a-key".into(),
        secret: key.secret.clone(),
    };
    server
        .call(&garbage, "GET", "/api/v3", "", b"")
        .await
        .expect(401, "api_key_invalid");

    // 40 and 12. Revocation reaches every node within the key-cache TTL (5 s) ...
    server
        .call(&key, "GET", "/api/v3", "", b"")
        .await
        .expect(200, "");
    server.state.store.revoke_api_key(&key.id, 0).await.unwrap();
    server.clock.advance_ms(5_000);
    let before = server.quota(&key).await.remaining;
    server
        .call(&key, "GET", "/api/v3", "", b"")
        .await
        .expect(401, "api_key_revoked");
    // ... and only holders of the secret learn it: a bad signature stays signature_invalid.
    let bad = server
        .sign(&key, "GET", "/api/v3", "", b"")
        .set("X-API-SIGN", &"a".repeat(64));
    server.send(&bad).await.expect(401, "signature_invalid");
    unchanged_quota(&server, &key, before).await;
}

#[tokio::test]
async fn timestamps_must_be_seconds_within_five_minutes() {
    let server = TestServer::start().await;
    let key = server.key(&[PricesRead]).await;
    let now = server.now_secs();
    let at = |ts: i64| {
        server.sign_at(
            &key,
            "GET",
            "/api/v3",
            "",
            b"",
            ts,
            &swapd_client::new_nonce(),
        )
    };

    // 13. The window is ±300 s inclusive; the message states the server time.
    server.send(&at(now - 299)).await.expect(200, "");
    server.send(&at(now + 299)).await.expect(200, "");
    server.send(&at(now - 300)).await.expect(200, "");
    for ts in [now - 301, now + 301] {
        let resp = server.send(&at(ts)).await;
        resp.expect(401, "timestamp_out_of_window");
        assert!(
            resp.message().contains(&now.to_string()),
            "{}",
            resp.message()
        );
    }
    // 14. Milliseconds.
    let resp = server.send(&at(now * 1000)).await;
    resp.expect(401, "timestamp_out_of_window");
    assert!(resp.message().contains("milliseconds"));
    // 15. Malformed. (HTTP strips leading whitespace from header values; the parser's refusal
    // of it is a unit test of swapd_types::signing.)
    for bad in ["+1800000000", "1800000000.5", "1.8e9", "-1", ""] {
        let resp = server.send(&at(now).set("X-API-TIMESTAMP", bad)).await;
        resp.expect(401, "timestamp_invalid");
    }
}

#[tokio::test]
async fn nonces_are_well_formed_and_single_use() {
    let server = TestServer::start().await;
    let key = server.key(&[PricesRead]).await;
    let other = server.key(&[PricesRead]).await;
    let now = server.now_secs();
    let with_nonce = |nonce: &str| server.sign_at(&key, "GET", "/api/v3", "", b"", now, nonce);

    // 16. Format.
    for bad in [
        "abcdefg",
        &"a".repeat(201),
        "abcd efgh",
        "abcd/efgh",
        "abcd%efgh",
        "abcdéfgh",
    ] {
        let resp = server
            .send(&with_nonce("placeholder").set("X-API-NONCE", bad))
            .await;
        resp.expect(401, "nonce_invalid");
    }
    server.send(&with_nonce("abcdefgh")).await.expect(200, "");
    server
        .send(&with_nonce(&"b".repeat(200)))
        .await
        .expect(200, "");

    // 17. Byte-identical replay: refused, nothing consumed.
    let request = with_nonce("replay-me-1");
    server.send(&request).await.expect(200, "");
    let before = server.quota(&key).await.remaining;
    server.send(&request).await.expect(401, "nonce_reused");
    unchanged_quota(&server, &key, before).await;

    // 18. The same replay after the window has passed fails on time.
    server.clock.advance_ms(301_000);
    server
        .send(&request)
        .await
        .expect(401, "timestamp_out_of_window");

    // 19. The same nonce on two keys is fine.
    let now = server.now_secs();
    server
        .send(&server.sign_at(&key, "GET", "/api/v3", "", b"", now, "shared-nonce"))
        .await
        .expect(200, "");
    server
        .send(&server.sign_at(&other, "GET", "/api/v3", "", b"", now, "shared-nonce"))
        .await
        .expect(200, "");

    // 22. A nonce is recorded only after the signature verifies.
    let bad = server
        .sign_at(&key, "GET", "/api/v3", "", b"", now, "burn-attempt")
        .set("X-API-SIGN", &"c".repeat(64));
    server.send(&bad).await.expect(401, "signature_invalid");
    server
        .send(&server.sign_at(&key, "GET", "/api/v3", "", b"", now, "burn-attempt"))
        .await
        .expect(200, "");
}

#[tokio::test]
async fn fifty_concurrent_copies_of_one_signed_request_succeed_once() {
    let server = Arc::new(TestServer::start().await);
    let key = server.key(&[PricesRead]).await;
    let request = server.sign(&key, "GET", "/api/v3", "", b"");
    let tasks: Vec<_> = (0..50)
        .map(|_| {
            let (server, request) = (server.clone(), request.clone());
            tokio::spawn(async move { server.send(&request).await })
        })
        .collect();
    let mut ok = 0;
    for task in tasks {
        let resp: Resp = task.await.unwrap();
        match resp.status {
            200 => ok += 1,
            _ => {
                resp.expect(401, "nonce_reused");
            }
        }
    }
    assert_eq!(ok, 1);
}

#[tokio::test]
async fn the_query_is_canonicalized_and_handlers_see_what_was_signed() {
    let server = TestServer::start().await;
    let key = server.key(&[PricesRead]).await;
    let q = "/api/v3/test/query";

    // 23. Sent unsorted, signed canonical: accepted. Signed over the raw unsorted string: refused.
    let resp = server.call(&key, "GET", q, "b=2&a=1", b"").await;
    resp.expect(200, "");
    assert_eq!(
        resp.body["data"]["pairs"],
        serde_json::json!([["b", "2"], ["a", "1"]])
    );
    let now = server.now_secs();
    let message = swapd_types::signing::string_to_sign(
        "GET",
        q,
        "b=2&a=1",
        &now.to_string(),
        "raw-signer",
        b"",
    );
    let raw = server
        .sign_at(&key, "GET", q, "b=2&a=1", b"", now, "raw-signer")
        .set(
            "X-API-SIGN",
            &swapd_types::signing::sign(key.secret.as_bytes(), &message),
        );
    server.send(&raw).await.expect(401, "signature_invalid");

    // 24. %20 is a space, + is a plus; 25. lowercase escapes; 27. a bare flag.
    let resp = server
        .call(&key, "GET", q, "a=x%20y&p=x+y&s=%2f&flag", b"")
        .await;
    resp.expect(200, "");
    assert_eq!(
        resp.body["data"]["pairs"],
        serde_json::json!([["a", "x y"], ["p", "x+y"], ["s", "/"], ["flag", ""]])
    );
    assert_eq!(
        swapd_types::signing::canonical_query("a=x%20y&p=x+y&s=%2f&flag").unwrap(),
        "a=x%20y&flag=&p=x%2By&s=%2F"
    );

    // 26. Repeated names are signed in value order; a scalar parameter refuses them.
    server
        .call(&key, "GET", q, "b=2&b=1", b"")
        .await
        .expect(200, "");
    server
        .call(&key, "GET", q, "a=2&a=1", b"")
        .await
        .expect(400, "duplicate_parameter");

    // 28. Invalid encodings.
    for bad in ["x=%zz", "x=%E2%82"] {
        server
            .call(&key, "GET", q, bad, b"")
            .await
            .expect(400, "query_invalid_encoding");
    }
}

#[tokio::test]
async fn non_canonical_paths_never_reach_a_handler() {
    let server = TestServer::start().await;
    let key = server.key(&[OrdersCreate]).await;
    // 29. Sent byte for byte: HTTP clients would normalize some of these paths away.
    for path in [
        "/api/v3/test/../test/echo",
        "//api/v3/test/echo",
        "/api/v3/test/%2e%2e/echo",
        "/api/v3/test%2Fecho",
        "/api/v3/test/echo/",
        "/api/v3/%74est/echo",
        "/api/v3/test/./echo",
    ] {
        let signed = server.sign(&key, "POST", path, "", br#"{"amount":"1"}"#);
        server
            .send_raw(&signed)
            .await
            .expect(400, "path_not_canonical");
    }
    assert_eq!(
        server
            .counters
            .echo
            .load(std::sync::atomic::Ordering::SeqCst),
        0
    );
}

#[tokio::test]
async fn bodies_are_uncompressed_and_absent_on_get() {
    let server = TestServer::start().await;
    let key = server.key(&[OrdersCreate, PricesRead]).await;
    // 32.
    let gz = server
        .sign(&key, "POST", ECHO, "", br#"{"amount":"1"}"#)
        .add("Content-Encoding", "gzip");
    server
        .send(&gz)
        .await
        .expect(415, "content_encoding_unsupported");
    // 33.
    server
        .call(&key, "GET", "/api/v3", "", b"{}")
        .await
        .expect(400, "body_not_allowed");
}

#[tokio::test]
async fn ip_allowlists_use_the_peer_or_trusted_proxies_only() {
    // 35 and 36: the peer is 127.0.0.1, not in the list; a spoofed X-Forwarded-For changes nothing.
    let server = TestServer::start().await;
    let key = server
        .key_with(
            &[PricesRead],
            &["203.0.113.0/24"],
            &[],
            RateLimits::default(),
        )
        .await;
    let before = server.quota(&key).await.remaining;
    server
        .call(&key, "GET", "/api/v3", "", b"")
        .await
        .expect(403, "ip_not_allowed");
    let spoofed = server
        .sign(&key, "GET", "/api/v3", "", b"")
        .add("X-Forwarded-For", "203.0.113.5");
    let resp = server.send(&spoofed).await;
    resp.expect(403, "ip_not_allowed");
    assert_eq!(
        resp.remaining(),
        Some(before),
        "authenticated refusals report the unchanged quota"
    );
    unchanged_quota(&server, &key, before).await;

    // Behind a trusted proxy, the first untrusted hop from the right is the client.
    let proxied = TestServer::start_with(Options {
        trusted_proxies: vec!["127.0.0.0/8".parse().unwrap()],
        ..Options::default()
    })
    .await;
    let key = proxied
        .key_with(
            &[PricesRead],
            &["203.0.113.0/24"],
            &[],
            RateLimits::default(),
        )
        .await;
    let via = proxied
        .sign(&key, "GET", "/api/v3", "", b"")
        .add("X-Forwarded-For", "198.51.100.9, 203.0.113.5, 127.0.0.2");
    proxied.send(&via).await.expect(200, "");
    let outside = proxied
        .sign(&key, "GET", "/api/v3", "", b"")
        .add("X-Forwarded-For", "203.0.113.5, 198.51.100.9");
    proxied.send(&outside).await.expect(403, "ip_not_allowed");
}

#[tokio::test]
async fn ipv4_mapped_ipv6_peers_count_as_ipv4() {
    // 37: a dual-stack listener sees 127.0.0.1 as ::ffff:127.0.0.1.
    let server = TestServer::start_with(Options {
        bind: "[::]:0",
        ..Options::default()
    })
    .await;
    let key = server
        .key_with(&[PricesRead], &["127.0.0.1"], &[], RateLimits::default())
        .await;
    server
        .call(&key, "GET", "/api/v3", "", b"")
        .await
        .expect(200, "");
}

#[tokio::test]
async fn origins_are_checked_when_present_and_cors_goes_only_to_listed_ones() {
    let server = TestServer::start().await;
    let key = server
        .key_with(
            &[PricesRead],
            &[],
            &["https://app.example"],
            RateLimits::default(),
        )
        .await;
    // 38. No Origin: unaffected, no CORS headers.
    let resp = server.call(&key, "GET", "/api/v3", "", b"").await;
    resp.expect(200, "");
    assert!(resp.header("access-control-allow-origin").is_none());
    // Listed origin: CORS headers.
    let resp = server
        .send(
            &server
                .sign(&key, "GET", "/api/v3", "", b"")
                .add("Origin", "https://app.example"),
        )
        .await;
    resp.expect(200, "");
    assert_eq!(
        resp.header("access-control-allow-origin"),
        Some("https://app.example")
    );
    // Other origin: refused, no CORS headers.
    let resp = server
        .send(
            &server
                .sign(&key, "GET", "/api/v3", "", b"")
                .add("Origin", "https://evil.example"),
        )
        .await;
    resp.expect(403, "origin_not_allowed");
    assert!(resp.header("access-control-allow-origin").is_none());

    // Preflights: allowed for listed origins only.
    let preflight = |origin: &'static str| {
        server
            .http
            .request(reqwest::Method::OPTIONS, format!("{}/api/v3", server.base))
            .header("Origin", origin)
            .header("Access-Control-Request-Method", "GET")
            .send()
    };
    let ok = preflight("https://app.example").await.unwrap();
    assert_eq!(ok.status(), 204);
    assert_eq!(
        ok.headers()["access-control-allow-origin"],
        "https://app.example"
    );
    let refused = preflight("https://evil.example").await.unwrap();
    assert_eq!(refused.status(), 403);
    assert!(
        refused
            .headers()
            .get("access-control-allow-origin")
            .is_none()
    );

    // A key without an origin list accepts any Origin but never gets CORS headers.
    let open = server.key(&[PricesRead]).await;
    let resp = server
        .send(
            &server
                .sign(&open, "GET", "/api/v3", "", b"")
                .add("Origin", "https://elsewhere.example"),
        )
        .await;
    resp.expect(200, "");
    assert!(resp.header("access-control-allow-origin").is_none());
}

#[tokio::test]
async fn permissions_follow_the_route_table() {
    let server = TestServer::start().await;
    let reader = server.key(&[OrdersRead]).await;
    let before = server.quota(&reader).await.remaining;
    // 39.
    let request = server.sign(&reader, "POST", ECHO, "", br#"{"amount":"1"}"#);
    let resp = server.send(&request).await;
    resp.expect(403, "permission_denied");
    assert!(resp.message().contains("orders:create"));
    unchanged_quota(&server, &reader, before).await;
    // No idempotency record was made: the key is still free for another principal... and for
    // this one, once it has the permission.
    let begin = server
        .state
        .store
        .begin_idempotent(
            &reader.owner().scope(),
            &request.get("Idempotency-Key"),
            "fp",
            "probe",
            "probe-node",
            crate::support::T0_MS,
        )
        .await
        .unwrap();
    assert!(matches!(
        begin,
        swapd_core::idempotency::Begin::Execute { .. }
    ));
    // The readiness document needs no permission.
    server
        .call(&reader, "GET", "/api/v3", "", b"")
        .await
        .expect(200, "");
}

#[tokio::test]
async fn replays_fail_after_a_graceful_restart_and_after_a_crash() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("swapd.db").display());
    let store_options = swapd_store::StoreOptions::default();
    let open = || swapd_store::open(&url, &store_options);
    let master = swapd_core::secrets::MasterKey::generate();
    let clock = Arc::new(swapd_core::ManualClock::new(crate::support::T0_MS));
    let options = |store, after_unclean_stop| Options {
        store: Some(store),
        clock: Some(clock.clone()),
        master: Some(master.clone()),
        after_unclean_stop,
        ..Options::default()
    };

    let first = TestServer::start_with(options(open().await.unwrap(), false)).await;
    let key = first.key(&[PricesRead]).await;
    let request = first.sign(&key, "GET", "/api/v3", "", b"");
    first.send(&request).await.expect(200, "");
    first.stop().await;

    // Graceful stop: the nonce was flushed, and the new process reloads it.
    clock.advance_ms(10_000);
    let second = TestServer::start_with(options(open().await.unwrap(), false)).await;
    second.send(&request).await.expect(401, "nonce_reused");
    let in_flight = second.sign(&key, "GET", "/api/v3", "", b"");

    // A crash before the flush loses the in-memory nonce; after an unclean stop, requests signed
    // before the restart are refused instead, also when the crash and the restart fall in the
    // same second as the signature.
    second.send(&in_flight).await.expect(200, "");
    drop(second);
    let third = TestServer::start_with(options(open().await.unwrap(), true)).await;
    let resp = third.send(&in_flight).await;
    resp.expect(401, "timestamp_out_of_window");
    assert!(resp.message().contains("restart"));
    clock.advance_ms(1_000);
    third
        .send(&in_flight)
        .await
        .expect(401, "timestamp_out_of_window");
    third
        .call(&key, "GET", "/api/v3", "", b"")
        .await
        .expect(200, "");
}

#[tokio::test]
async fn nodes_sharing_postgres_share_nonces_and_fail_closed_when_it_is_gone() {
    let Some(url) = swapd_store::test_support::postgres_url() else {
        return;
    };
    let schema = swapd_store::test_support::PgTestSchema::create(&url).await;
    let target = swapd_store::test_support::server_addr(&url);
    let cut = tokio_util::sync::CancellationToken::new();
    let proxy = swapd_store::test_support::tcp_proxy(target, cut.clone()).await;
    let options = swapd_store::StoreOptions {
        acquire_timeout: std::time::Duration::from_millis(500),
        ..Default::default()
    };
    let open = |port: u16| {
        let url = schema.database_url_at(port);
        let options = options.clone();
        async move {
            Arc::new(swapd_store::SqlStore::open(&url, &options).await.unwrap())
                as Arc<dyn swapd_core::Store>
        }
    };
    let master = swapd_core::secrets::MasterKey::generate();
    let clock = Arc::new(swapd_core::ManualClock::new(crate::support::T0_MS));
    let node = |store| Options {
        sharing: Sharing::Database,
        store: Some(store),
        clock: Some(clock.clone()),
        master: Some(master.clone()),
        ..Options::default()
    };
    let a = TestServer::start_with(node(open(target.port()).await)).await;
    let b = TestServer::start_with(node(open(proxy.port()).await)).await;
    let key = a.key(&[PricesRead]).await;

    // A replay is refused by any node sharing the database.
    let request = a.sign(&key, "GET", "/api/v3", "", b"");
    a.send(&request).await.expect(200, "");
    b.send(&request).await.expect(401, "nonce_reused");

    // 21. When the shared nonce store is gone, node b fails closed (its key is still cached).
    b.call(&key, "GET", "/api/v3", "", b"")
        .await
        .expect(200, "");
    cut.cancel();
    let resp = b.call(&key, "GET", "/api/v3", "", b"").await;
    resp.expect(503, "auth_unavailable");
}

#[tokio::test]
async fn every_business_route_is_mounted_behind_the_gate_and_listed() {
    let server = TestServer::start().await;
    let key = server.key(&[PricesRead]).await;
    let listed = server.call(&key, "GET", "/api/v3", "", b"").await.body["data"]["routes"].clone();
    assert_eq!(
        listed.as_array().unwrap().len(),
        swapd_api::business::routes().len()
    );
    for spec in swapd_api::business::routes() {
        let method = reqwest::Method::from_bytes(spec.method.as_str().as_bytes()).unwrap();
        let resp = server
            .http
            .request(method, format!("{}{}", server.base, spec.path))
            .send()
            .await
            .unwrap();
        assert_eq!(
            resp.status(),
            401,
            "{} {} must require a signature",
            spec.method,
            spec.path
        );
    }
}

/// A method a path does not have is the client's mistake: 405 with the path's methods in
/// `Allow`, on every path of both surfaces, before any gate (no signature, payment or proof).
#[tokio::test]
async fn methods_a_path_lacks_answer_405_with_allow_on_both_surfaces() {
    use std::collections::{BTreeMap, BTreeSet};

    let server = TestServer::start().await;
    let mut paths: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for spec in swapd_api::business::routes() {
        paths
            .entry(spec.path.clone())
            .or_default()
            .insert(spec.method.to_string());
    }
    for route in swapd_api::x402::routes() {
        paths
            .entry(route.path.clone())
            .or_default()
            .insert(route.method.to_string());
    }
    assert!(paths.len() > 40, "both surfaces are listed");
    for (template, methods) in &paths {
        let path = template
            .replace("{orderId}", "ord_x")
            .replace("{executionPlanId}", "ocx_x")
            .replace("{webhookId}", "wh_x")
            .replace("{jobId}", "mij_x");
        for method in ["PUT", "DELETE", "TRACE", "OPTIONS", "PATCH", "POST", "GET"] {
            if methods.contains(method) || (method == "HEAD" && methods.contains("GET")) {
                continue;
            }
            let resp = server
                .http
                .request(
                    reqwest::Method::from_bytes(method.as_bytes()).unwrap(),
                    format!("{}{path}", server.base),
                )
                .send()
                .await
                .unwrap();
            assert_eq!(resp.status(), 405, "{method} {path}");
            let allow: BTreeSet<String> = resp.headers()["allow"]
                .to_str()
                .unwrap()
                .split(',')
                .map(|m| m.trim().to_owned())
                .filter(|m| m != "HEAD")
                .collect();
            assert_eq!(&allow, methods, "Allow of {method} {path}");
            let body: serde_json::Value = resp.json().await.unwrap();
            assert_eq!(
                body["error"]["code"], "method_not_allowed",
                "{method} {path}"
            );
        }
    }
}

/// The single-node nonce set is bounded: while flushes fail, unflushed nonces stop at their
/// limit, and the live set at its own (expired ones are dropped first); past either, requests
/// are refused (fail closed) instead of memory growing.
#[tokio::test]
async fn the_local_nonce_set_and_its_unflushed_buffer_are_bounded() {
    use swapd_api::business::guards::NonceOutcome;
    use swapd_api::limits::NonceLimits;
    let dir = tempfile::tempdir().unwrap();
    let store = sqlite_store(&dir).await;
    let clock = Arc::new(swapd_core::ManualClock::new(crate::support::T0_MS));
    let guards = Guards::new(
        store,
        clock.clone(),
        swapd_core::secrets::MasterKey::generate(),
        Sharing::Local,
        false,
    )
    .await
    .unwrap()
    .with_nonce_limits(NonceLimits {
        live: 3,
        unflushed: 2,
    });
    let claim =
        |nonce: &'static str| guards.claim_nonce("key_a", nonce, crate::support::T0_MS / 1000);
    assert_eq!(claim("n-1").await.unwrap(), NonceOutcome::Fresh);
    assert_eq!(claim("n-2").await.unwrap(), NonceOutcome::Fresh);
    // Two unflushed: full until a flush writes them.
    assert!(matches!(
        claim("n-3").await,
        Err(swapd_core::StoreError::Unavailable(_))
    ));
    guards.flush_nonces().await.unwrap();
    assert_eq!(claim("n-3").await.unwrap(), NonceOutcome::Fresh);
    guards.flush_nonces().await.unwrap();
    // Three live: full until they expire.
    assert!(matches!(
        claim("n-4").await,
        Err(swapd_core::StoreError::Unavailable(_))
    ));
    assert_eq!(claim("n-1").await.unwrap(), NonceOutcome::Reused);
    clock.advance_ms(swapd_core::signing::NONCE_TTL_SECS * 1000 + 1_000);
    assert_eq!(claim("n-4").await.unwrap(), NonceOutcome::Fresh);
}

/// One node counts its windows (x402 paid attempts and wallet reads, webhook replays) in
/// memory, so a refused or unauthenticated request writes nothing; several nodes count them in
/// the shared database. Both decide alike.
#[tokio::test]
async fn windows_are_counted_in_memory_on_one_node_and_in_the_database_on_several() {
    let dir = tempfile::tempdir().unwrap();
    let store = sqlite_store(&dir).await;
    let clock = Arc::new(swapd_core::ManualClock::new(crate::support::T0_MS));
    let limits = |sharing| swapd_api::limits::Limits::new(store.clone(), clock.clone(), sharing);
    let local = limits(Sharing::Local).await.unwrap();
    let shared = limits(Sharing::Database).await.unwrap();
    for limits in [&local, &shared] {
        let windows = &limits.windows;
        let first = windows.consume_window("paid|c|r", 60_000, 2).await.unwrap();
        let second = windows.consume_window("paid|c|r", 60_000, 2).await.unwrap();
        let third = windows.consume_window("paid|c|r", 60_000, 2).await.unwrap();
        assert_eq!(
            (first.allowed, second.allowed, third.allowed),
            (true, true, false)
        );
    }
    // The local node wrote nothing: the database's window for the key holds only the shared
    // node's two requests.
    let stored = store
        .consume_window(
            "paid|c|r",
            60_000,
            3,
            swapd_core::Clock::now_ms(clock.as_ref()),
        )
        .await
        .unwrap();
    assert_eq!(stored.used, 3);
    clock.advance_ms(60_000);
    assert!(
        local
            .windows
            .consume_window("paid|c|r", 60_000, 2)
            .await
            .unwrap()
            .allowed
    );
}

/// A migrated SQLite store in `dir`.
async fn sqlite_store(dir: &tempfile::TempDir) -> Arc<dyn swapd_core::Store> {
    let store = swapd_store::open(
        &format!("sqlite://{}", dir.path().join("swapd.db").display()),
        &swapd_store::StoreOptions::default(),
    )
    .await
    .unwrap();
    store.migrate().await.unwrap();
    store
}
