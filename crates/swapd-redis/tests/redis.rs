//! The shared state against a real Redis (`SWAPD_TEST_REDIS_URL`; mandatory under CI), each
//! test under its own key prefix; the outage tests run a `redis-server` of their own.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use swapd_core::StoreError;
use swapd_core::rate_limit::{WindowCount, count_in_window};
use swapd_core::store::NonceOutcome;
use swapd_redis::test_support::{OwnRedis, redis_url, unique_prefix};
use swapd_redis::{Revoked, SharedRedis};
use tokio_util::sync::CancellationToken;

const NOW_SECS: i64 = 1_700_000_000;
const TTL_MS: i64 = 900_000;

async fn node(url: &str, prefix: &str) -> SharedRedis {
    SharedRedis::connect(url, prefix, NOW_SECS).await.unwrap()
}

#[tokio::test]
async fn a_nonce_is_fresh_once_across_nodes_and_per_key() {
    let Some(url) = redis_url() else { return };
    let prefix = unique_prefix();
    let (a, b) = (node(&url, &prefix).await, node(&url, &prefix).await);
    // The set began when the first node connected: a request signed no later is refused.
    assert_eq!(
        a.claim_nonce("key_1", "n-0", TTL_MS, NOW_SECS, NOW_SECS + 5)
            .await
            .unwrap(),
        NonceOutcome::SignedBeforeReset {
            since_secs: NOW_SECS
        }
    );
    async fn claim(
        redis: &SharedRedis,
        key: &str,
        nonce: &str,
    ) -> Result<NonceOutcome, StoreError> {
        redis
            .claim_nonce(key, nonce, TTL_MS, NOW_SECS + 1, NOW_SECS + 1)
            .await
    }
    assert_eq!(
        claim(&a, "key_1", "n-1").await.unwrap(),
        NonceOutcome::Fresh
    );
    assert_eq!(
        claim(&b, "key_1", "n-1").await.unwrap(),
        NonceOutcome::Reused
    );
    assert_eq!(
        claim(&a, "key_1", "n-1").await.unwrap(),
        NonceOutcome::Reused
    );
    assert_eq!(
        claim(&b, "key_2", "n-1").await.unwrap(),
        NonceOutcome::Fresh
    );
    // Another deployment's prefix shares nothing.
    let other = node(&url, &unique_prefix()).await;
    assert_eq!(
        other
            .claim_nonce("key_1", "n-1", TTL_MS, NOW_SECS + 1, NOW_SECS + 1)
            .await
            .unwrap(),
        NonceOutcome::Fresh
    );
}

#[tokio::test]
async fn concurrent_updates_from_several_nodes_admit_exactly_the_limit() {
    let Some(url) = redis_url() else { return };
    let prefix = unique_prefix();
    let nodes = [
        Arc::new(node(&url, &prefix).await),
        Arc::new(node(&url, &prefix).await),
        Arc::new(node(&url, &prefix).await),
    ];
    let now_ms = NOW_SECS * 1000;
    let tasks: Vec<_> = (0..90)
        .map(|i| {
            let redis = nodes[i % 3].clone();
            tokio::spawn(async move {
                redis
                    .update("window:payer", 3_600_000, |stored: Option<WindowCount>| {
                        let (decision, counted) = count_in_window(stored, 3_600_000, 60, now_ms);
                        (decision.allowed, decision.allowed.then_some(counted))
                    })
                    .await
            })
        })
        .collect();
    let mut admitted = 0;
    for task in tasks {
        // Contention may exhaust a caller's attempts (503 to a client); it never over-admits.
        match task.await.unwrap() {
            Ok(true) => admitted += 1,
            Ok(false) | Err(StoreError::Unavailable(_)) => {}
            Err(other) => panic!("{other}"),
        }
    }
    let stored: WindowCount = nodes[0].read("window:payer").await.unwrap().unwrap();
    assert_eq!(stored.used, admitted);
    assert!(admitted <= 60, "{admitted}");
    // Sequentially, the rest of the window is admitted and then nothing more.
    let mut more = 0;
    for i in 0..100 {
        let allowed = nodes[i % 3]
            .update("window:payer", 3_600_000, |stored: Option<WindowCount>| {
                let (decision, counted) = count_in_window(stored, 3_600_000, 60, now_ms);
                (decision.allowed, decision.allowed.then_some(counted))
            })
            .await
            .unwrap();
        more += u32::from(allowed);
    }
    assert_eq!(admitted + more, 60);
}

#[tokio::test]
async fn a_stale_guess_never_decides() {
    let Some(url) = redis_url() else { return };
    let prefix = unique_prefix();
    let (a, b) = (node(&url, &prefix).await, node(&url, &prefix).await);
    async fn count(redis: &SharedRedis) -> Result<u32, StoreError> {
        redis
            .update("window:w", 60_000, |stored: Option<WindowCount>| {
                let (decision, counted) = count_in_window(stored, 60_000, 3, NOW_SECS * 1000);
                (decision.used, decision.allowed.then_some(counted))
            })
            .await
    }
    // `a` remembers 1; `b` moves the cell to 3; `a`'s next decision sees 3, not its guess.
    assert_eq!(count(&a).await.unwrap(), 1);
    assert_eq!(count(&b).await.unwrap(), 2);
    assert_eq!(count(&b).await.unwrap(), 3);
    assert_eq!(count(&a).await.unwrap(), 3);
}

/// What `follower` hears of revocations, until `shutdown` is cancelled and `task` joined.
fn follow(
    follower: Arc<SharedRedis>,
) -> (
    Arc<Mutex<Vec<Revoked>>>,
    CancellationToken,
    tokio::task::JoinHandle<()>,
) {
    let heard = Arc::new(Mutex::new(Vec::new()));
    let shutdown = CancellationToken::new();
    let task = tokio::spawn({
        let (heard, shutdown) = (heard.clone(), shutdown.clone());
        async move {
            follower
                .follow_revocations(shutdown, |revoked| heard.lock().unwrap().push(revoked))
                .await;
        }
    });
    (heard, shutdown, task)
}

#[tokio::test]
async fn revocations_reach_every_follower() {
    let Some(url) = redis_url() else { return };
    let prefix = unique_prefix();
    let publisher = node(&url, &prefix).await;
    let follower = Arc::new(node(&url, &prefix).await);
    let (heard, shutdown, task) = follow(follower);
    // Subscribed: it first reports that it may have missed some.
    wait_until(|| heard.lock().unwrap().contains(&Revoked::Unknown)).await;
    publisher.publish_revoked("key_9").await.unwrap();
    wait_until(|| {
        heard
            .lock()
            .unwrap()
            .contains(&Revoked::Key("key_9".into()))
    })
    .await;
    shutdown.cancel();
    task.await.unwrap();
}

/// A subscription whose connection is lost without a word (its packets dropped, Redis gave up on
/// it) is noticed by its silence: the follower subscribes anew and reports that it may have
/// missed revocations, rather than wait for ever while they go unheard.
#[tokio::test]
async fn a_silently_lost_subscription_is_replaced_and_reports_what_it_may_have_missed() {
    let Some(url) = redis_url() else { return };
    let target = url::Url::parse(&url).unwrap();
    let target = format!(
        "{}:{}",
        target.host_str().unwrap().replace("localhost", "127.0.0.1"),
        target.port().unwrap_or(6379)
    );
    let relay = swapd_store::test_support::SilentRelay::start(target.parse().unwrap()).await;
    let mut through = url::Url::parse(&url).unwrap();
    through.set_host(Some("127.0.0.1")).unwrap();
    through.set_port(Some(relay.addr.port())).unwrap();
    let prefix = unique_prefix();
    let publisher = node(&url, &prefix).await;
    let follower = Arc::new(node(through.as_str(), &prefix).await);
    let (heard, shutdown, task) = follow(follower);
    let unknowns = || {
        heard
            .lock()
            .unwrap()
            .iter()
            .filter(|r| **r == Revoked::Unknown)
            .count()
    };
    wait_until(|| unknowns() == 1).await;

    relay.silence();
    relay.lose_open();
    relay.heal();
    publisher.publish_revoked("key_unheard").await.unwrap();
    // Noticed after its quiet time: reported when it drops, and again once subscribed anew (a
    // bounded wait, no timing asserted).
    for _ in 0..300 {
        if unknowns() >= 3 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(unknowns() >= 3, "the lost subscription was never replaced");
    publisher.publish_revoked("key_9").await.unwrap();
    wait_until(|| {
        heard
            .lock()
            .unwrap()
            .contains(&Revoked::Key("key_9".into()))
    })
    .await;
    assert!(
        !heard
            .lock()
            .unwrap()
            .contains(&Revoked::Key("key_unheard".into()))
    );
    shutdown.cancel();
    task.await.unwrap();
}

#[tokio::test]
async fn an_outage_is_unavailable_a_restart_refuses_what_it_forgot_and_it_recovers() {
    let Some(mut server) = OwnRedis::start() else {
        return;
    };
    let redis = node(&server.url(), "swapd").await;
    assert_eq!(
        redis
            .claim_nonce("key_1", "n-1", TTL_MS, NOW_SECS + 1, NOW_SECS + 1)
            .await
            .unwrap(),
        NonceOutcome::Fresh
    );
    server.kill();
    let away = redis
        .claim_nonce("key_1", "n-2", TTL_MS, NOW_SECS + 2, NOW_SECS + 2)
        .await;
    assert!(matches!(away, Err(StoreError::Unavailable(_))), "{away:?}");
    assert!(matches!(
        redis.ping().await,
        Err(StoreError::Unavailable(_))
    ));
    server.resume().unwrap();
    // Back without reconnecting by hand; the forgotten nonce is refused by its time.
    let mut replay = None;
    for _ in 0..100 {
        match redis
            .claim_nonce("key_1", "n-1", TTL_MS, NOW_SECS + 1, NOW_SECS + 10)
            .await
        {
            Ok(claim) => {
                replay = Some(claim);
                break;
            }
            Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
        }
    }
    assert_eq!(
        replay,
        Some(NonceOutcome::SignedBeforeReset {
            since_secs: NOW_SECS + 10
        })
    );
    assert_eq!(
        redis
            .claim_nonce("key_1", "n-3", TTL_MS, NOW_SECS + 11, NOW_SECS + 11)
            .await
            .unwrap(),
        NonceOutcome::Fresh
    );
}

#[tokio::test]
async fn an_unreachable_redis_is_refused_at_start() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let refused =
        SharedRedis::connect(&format!("redis://127.0.0.1:{port}"), "swapd", NOW_SECS).await;
    assert!(matches!(refused, Err(StoreError::Unavailable(_))));
    assert!(matches!(
        SharedRedis::connect("http://127.0.0.1", "swapd", NOW_SECS).await,
        Err(StoreError::Database(_))
    ));
}

async fn wait_until(condition: impl Fn() -> bool) {
    for _ in 0..200 {
        if condition() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("not reached within 5 s");
}

/// The Lua key rate limit and `swapd_core::rate_limit::decide` agree on random inputs: the
/// same admissions, and the same state stored (or none, when refused).
#[tokio::test]
async fn the_lua_rate_limit_decides_as_the_rust_rule() {
    use rand::Rng;
    use swapd_core::api_keys::RateLimits;
    use swapd_core::rate_limit::{RateState, decide};
    let Some(url) = redis_url() else { return };
    let redis = node(&url, &unique_prefix()).await;
    let mut rng = rand::rng();
    for case in 0..400 {
        let now_ms: i64 = NOW_SECS * 1000 + rng.random_range(0..7_200_000);
        let hour = now_ms - now_ms.rem_euclid(3_600_000);
        let prior = RateState {
            tat_us: now_ms * 1000 + rng.random_range(-90_000_000..90_000_000),
            window_start_ms: if rng.random_bool(0.7) {
                hour
            } else {
                hour - 3_600_000
            },
            hour_count: rng.random_range(0..60),
            hour_weight: rng.random_range(0..200),
        };
        let limits = RateLimits {
            per_minute: rng.random_range(1..300),
            per_hour: rng.random_range(1..80),
            weight_per_hour: rng.random_range(1..250),
        };
        let cost = rng.random_range(1..20);
        let cell = format!("rate:case{case}");
        redis
            .update(&cell, 60_000, |_: Option<RateState>| ((), Some(prior)))
            .await
            .unwrap();
        let decided = redis
            .consume_rate(&cell, limits, cost, now_ms, 60_000)
            .await
            .unwrap();
        let expected = decide(prior, limits, cost, now_ms);
        assert_eq!(
            decided, expected,
            "case {case}: {prior:?} {limits:?} {cost}"
        );
        let stored: RateState = redis.read(&cell).await.unwrap().unwrap();
        let expected_stored = if expected.refused_by.is_none() {
            expected.state
        } else {
            prior
        };
        assert_eq!(
            stored, expected_stored,
            "case {case}: {prior:?} {limits:?} {cost}"
        );
    }
}

/// The Lua per-address admission and `swapd_core::rate_limit::admit_address` agree on random
/// inputs, blocked addresses and limits that are off included.
#[tokio::test]
async fn the_lua_address_admission_decides_as_the_rust_rule() {
    use rand::Rng;
    use swapd_core::rate_limit::{AddressLimits, AddressState, admit_address};
    let Some(url) = redis_url() else { return };
    let redis = node(&url, &unique_prefix()).await;
    let mut rng = rand::rng();
    for case in 0..400 {
        let now_ms: i64 = NOW_SECS * 1000 + rng.random_range(0..600_000);
        let prior = AddressState {
            requests_tat_us: now_ms * 1000 + rng.random_range(-3_000_000..3_000_000),
            failures_tat_us: now_ms * 1000 + rng.random_range(-60_000_000..60_000_000),
            blocked_until_ms: if rng.random_bool(0.2) {
                now_ms + rng.random_range(-20_000..20_000)
            } else {
                0
            },
        };
        let limits = AddressLimits {
            requests_per_second: if rng.random_bool(0.1) {
                0
            } else {
                rng.random_range(1..500)
            },
            auth_failures_per_minute: rng.random_range(0..100),
        };
        let cell = format!("address:case{case}");
        redis
            .update(&cell, 60_000, |_: Option<AddressState>| ((), Some(prior)))
            .await
            .unwrap();
        let decided = redis
            .admit_address(&cell, limits, now_ms, 60_000)
            .await
            .unwrap();
        let expected = admit_address(prior, limits, now_ms);
        assert_eq!(
            decided,
            expected.map(drop),
            "case {case}: {prior:?} {limits:?}"
        );
        let stored: AddressState = redis.read(&cell).await.unwrap().unwrap();
        assert_eq!(
            stored,
            expected.unwrap_or(prior),
            "case {case}: {prior:?} {limits:?}"
        );
    }
}
