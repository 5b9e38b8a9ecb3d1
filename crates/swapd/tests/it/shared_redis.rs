//! Several API nodes sharing their hot-path state through Redis (docs/operations.md, "Several
//! nodes"): one store, three servers, each with its own connection to one Redis.

use std::sync::Arc;
use std::time::Duration;

use swapd_api::limits::Sharing;
use swapd_core::api_keys::RateLimits;
use swapd_redis::SharedRedis;
use swapd_redis::test_support::{OwnRedis, redis_url, unique_prefix};
use swapd_types::Permission::PricesRead;

use crate::support::{Options, Resp, TestServer};

fn limits(per_minute: u32) -> RateLimits {
    RateLimits {
        per_minute,
        per_hour: 1_000,
        weight_per_hour: 1_000,
    }
}

/// `count` nodes on one store and one clock, sharing Redis at `url` under `prefix`.
async fn nodes(url: &str, prefix: &str, count: usize, ip_limits: (u32, u32)) -> Vec<TestServer> {
    let mut nodes: Vec<TestServer> = Vec::new();
    for _ in 0..count {
        let first = nodes.first();
        let now_secs = first.map_or(crate::support::T0_MS / 1000, |n| n.now_secs());
        let redis = SharedRedis::connect(url, prefix, now_secs).await.unwrap();
        nodes.push(
            TestServer::start_with(Options {
                sharing: Sharing::Redis(Arc::new(redis)),
                store: first.map(|n| n.state.store.clone()),
                clock: first.map(|n| n.clock.clone()),
                master: first.map(|n| n.master.clone()),
                ip_limits,
                trusted_proxies: vec!["127.0.0.1/32".parse().unwrap()],
                ..Options::default()
            })
            .await,
        );
    }
    // The shared nonce set began when the first node connected; start from the next second.
    nodes[0].clock.advance_ms(1_000);
    nodes
}

#[tokio::test]
async fn nodes_sharing_redis_share_nonces_quotas_address_budgets_and_revocations() {
    let Some(url) = redis_url() else { return };
    let prefix = unique_prefix();
    let nodes = nodes(&url, &prefix, 3, (0, 3)).await;
    let key = nodes[0].key_with(&[PricesRead], &[], &[], limits(10)).await;

    // A nonce used on one node is refused on the others.
    let request = nodes[0].sign(&key, "GET", "/api/v3", "", b"");
    nodes[0].send(&request).await.expect(200, "");
    nodes[1].send(&request).await.expect(401, "nonce_reused");
    nodes[2].send(&request).await.expect(401, "nonce_reused");

    // One quota for the key, whichever node counts: 10 a minute, one spent already.
    let mut admitted = 0;
    for i in 0..30 {
        let resp = nodes[i % 3].call(&key, "GET", "/api/v3", "", b"").await;
        match resp.status {
            200 => admitted += 1,
            429 => assert_eq!(resp.code(), "rate_limit_exceeded"),
            other => panic!("{other}: {}", resp.body),
        }
    }
    assert_eq!(admitted, 9);
    let quota = nodes[2].quota(&key).await;
    assert_eq!(quota.remaining, 0);

    // One failed-authentication budget per address: three failures anywhere, then refused
    // everywhere (the client's address as a trusted proxy reports it, so that the failures
    // above, from the proxy's own address, count for another budget).
    let other = nodes[0].key(&[PricesRead]).await;
    let from = |node: &TestServer| {
        node.sign(&other, "GET", "/api/v3", "", b"")
            .set("X-Forwarded-For", "203.0.113.9")
    };
    for node in &nodes {
        let forged = from(node).set("X-API-SIGN", &"0".repeat(64));
        node.send(&forged).await.expect(401, "signature_invalid");
    }
    let forged = from(&nodes[0]).set("X-API-SIGN", &"0".repeat(64));
    nodes[1]
        .send(&forged)
        .await
        .expect(401, "signature_invalid");
    for node in &nodes {
        node.send(&from(node)).await.expect(429, "ip_rate_limited");
    }
    // Other addresses keep their own budgets.
    nodes[2]
        .call(&other, "GET", "/api/v3", "", b"")
        .await
        .expect(200, "");
}

#[tokio::test]
async fn a_revoked_key_leaves_every_node_cache_at_once() {
    let Some(url) = redis_url() else { return };
    let prefix = unique_prefix();
    let nodes = nodes(&url, &prefix, 3, (0, 0)).await;
    let key = nodes[0].key(&[PricesRead]).await;
    let shutdown = tokio_util::sync::CancellationToken::new();
    for node in &nodes {
        // Every node caches the key; the clock stands still, so only the revocation message
        // can make a node read it again.
        node.call(&key, "GET", "/api/v3", "", b"")
            .await
            .expect(200, "");
        tokio::spawn(
            node.state
                .guards
                .clone()
                .follow_revocations(shutdown.clone()),
        );
    }
    let now = swapd_core::Clock::now_ms(nodes[0].clock.as_ref());
    nodes[0]
        .state
        .store
        .revoke_api_key(&key.id, now)
        .await
        .unwrap();
    let publisher = SharedRedis::connect(&url, &prefix, nodes[0].now_secs())
        .await
        .unwrap();
    let mut refused = [false; 3];
    for _ in 0..200 {
        // The followers subscribe in the background; publish until each has heard.
        publisher.publish_revoked(&key.id).await.unwrap();
        for (i, node) in nodes.iter().enumerate() {
            if !refused[i] {
                let resp = node.call(&key, "GET", "/api/v3", "", b"").await;
                refused[i] = resp.status == 401 && resp.code() == "api_key_revoked";
            }
        }
        if refused.iter().all(|&r| r) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert_eq!(refused, [true; 3]);
    shutdown.cancel();
}

#[tokio::test]
async fn while_redis_is_away_requests_get_503_and_no_nonce_is_replayed_after() {
    let Some(mut redis) = OwnRedis::start() else {
        return;
    };
    // Two failed authentications a minute per address: the refusals after Redis comes back
    // empty are not the client's fault and must not block it.
    let nodes = nodes(&redis.url(), "swapd", 2, (200, 2)).await;
    let key = nodes[0].key(&[PricesRead]).await;
    let used = nodes[0].sign(&key, "GET", "/api/v3", "", b"");
    nodes[0].send(&used).await.expect(200, "");
    let ready = nodes[1].http.get(format!("{}/readyz", nodes[1].base));
    let body: serde_json::Value = ready.send().await.unwrap().json().await.unwrap();
    assert_eq!(body["data"]["sharedState"], "redis");

    redis.kill();
    for node in &nodes {
        let resp = node.call(&key, "GET", "/api/v3", "", b"").await;
        assert_eq!(resp.status, 503, "{}", resp.body);
        assert!(
            ["service_unavailable", "auth_unavailable"].contains(&resp.code()),
            "{}",
            resp.body
        );
        node.send(&used).await.expect(503, resp.code());
        let ready = node.http.get(format!("{}/readyz", node.base));
        assert_eq!(ready.send().await.unwrap().status(), 503);
    }

    // Redis comes back empty: the nodes reconnect by themselves, and the nonce it forgot is
    // refused by its time.
    redis.resume().unwrap();
    nodes[0].clock.advance_ms(1_000);
    for node in &nodes {
        answered_once_back(node, &used)
            .await
            .expect(401, "timestamp_out_of_window");
        for _ in 0..3 {
            node.send(&used)
                .await
                .expect(401, "timestamp_out_of_window");
        }
    }
    nodes[0].clock.advance_ms(1_000);
    for node in &nodes {
        node.call(&key, "GET", "/api/v3", "", b"")
            .await
            .expect(200, "");
    }
}

/// The first answer to `request` that is not a 503.
async fn answered_once_back(node: &TestServer, request: &crate::support::Signed) -> Resp {
    for _ in 0..200 {
        let resp = node.send(request).await;
        if resp.status != 503 {
            return resp;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("the node did not reconnect to Redis");
}

/// Two nodes whose clocks are 90 s apart share one key's quota as if they agreed: the limits
/// kept in Redis are decided on Redis's clock, so the node ahead does not push the key's rate
/// cell into the future and refuse the other node's requests (docs/reliability.md).
#[tokio::test]
async fn a_node_whose_clock_runs_ahead_shares_the_quota_without_refusing_the_others() {
    use swapd_core::Clock as _;
    let Some(url) = redis_url() else { return };
    let prefix = unique_prefix();
    let mut nodes: Vec<TestServer> = Vec::new();
    let mut connections = Vec::new();
    for ahead_ms in [0, 90_000] {
        let clock = Arc::new(swapd_core::ManualClock::new(
            crate::support::T0_MS + ahead_ms,
        ));
        let redis = Arc::new(
            SharedRedis::connect(&url, &prefix, clock.now_secs())
                .await
                .unwrap(),
        );
        let first = nodes.first();
        nodes.push(
            TestServer::start_with(Options {
                sharing: Sharing::Redis(redis.clone()),
                store: first.map(|n| n.state.store.clone()),
                clock: Some(clock),
                master: first.map(|n| n.master.clone()),
                ip_limits: (0, 0),
                ..Options::default()
            })
            .await,
        );
        connections.push(redis);
    }
    for (node, redis) in nodes.iter().zip(&connections) {
        node.clock.advance_ms(1_000);
        redis.measure_clock(&*node.clock).await.unwrap();
    }
    // 10 a minute: nine requests, alternating, leave a little of the burst for the few
    // milliseconds between the two measurements.
    let key = nodes[0].key_with(&[PricesRead], &[], &[], limits(10)).await;
    for i in 0..9 {
        nodes[(i + 1) % 2]
            .call(&key, "GET", "/api/v3", "", b"")
            .await
            .expect(200, "");
    }
    assert!(
        nodes[0].quota(&key).await.remaining <= 1,
        "one quota for both nodes"
    );
}
