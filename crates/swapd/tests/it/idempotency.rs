//! Idempotency-Key on mutations against a running server, as docs/authentication.md
//! ("Idempotency") describes it, and the race of 100 concurrent requests with one key.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use crate::support::{Options, Resp, Signed, TestServer};
use swapd_core::api_keys::RateLimits;
use swapd_types::Permission::OrdersCreate;

const ECHO: &str = "/api/v3/test/echo";
const BODY: &[u8] = br#"{"amount":"1.5"}"#;

fn executions(server: &TestServer) -> usize {
    server.counters.echo.load(Ordering::SeqCst)
}

#[tokio::test]
async fn keys_are_required_and_well_formed() {
    let server = TestServer::start().await;
    let key = server.key(&[OrdersCreate]).await;
    // 41.
    let resp = server
        .send(
            &server
                .sign(&key, "POST", ECHO, "", BODY)
                .without("Idempotency-Key"),
        )
        .await;
    resp.expect(400, "idempotency_key_missing");
    // 42.
    for bad in [
        "",
        "short7c",
        &"a".repeat(256),
        "abc\tdefgh",
        "\"unterminated",
    ] {
        let resp = server
            .send(
                &server
                    .sign(&key, "POST", ECHO, "", BODY)
                    .set("Idempotency-Key", bad),
            )
            .await;
        resp.expect(400, "idempotency_key_invalid");
    }
    let twice = server
        .sign(&key, "POST", ECHO, "", BODY)
        .add("Idempotency-Key", "second-value-1");
    server
        .send(&twice)
        .await
        .expect(400, "idempotency_key_invalid");
    assert_eq!(executions(&server), 0);

    // Quoted (RFC 8941 string) and bare forms are the same key.
    server
        .send(
            &server
                .sign(&key, "POST", ECHO, "", BODY)
                .set("Idempotency-Key", "8f2d-same-key"),
        )
        .await
        .expect(201, "");
    let quoted = server
        .send(
            &server
                .sign(&key, "POST", ECHO, "", BODY)
                .set("Idempotency-Key", "\"8f2d-same-key\""),
        )
        .await;
    quoted.expect(200, "");
    assert_eq!(quoted.header("idempotent-replayed"), Some("true"));
    assert_eq!(executions(&server), 1);
}

#[tokio::test]
async fn a_key_replays_its_response_and_refuses_other_requests() {
    let server = TestServer::start().await;
    let key = server.key(&[OrdersCreate]).await;
    let with_key = |body: &[u8], path: &str| {
        server
            .sign(&key, "POST", path, "", body)
            .set("Idempotency-Key", "order-key-0001")
    };

    // 43 and 54: a retry signed anew (new nonce, timestamp, signature) replays the stored body.
    let first = server.send(&with_key(BODY, ECHO)).await;
    first.expect(201, "");
    let again = server.send(&with_key(BODY, ECHO)).await;
    again.expect(200, "");
    assert_eq!(again.body, first.body);
    assert_eq!(again.header("idempotent-replayed"), Some("true"));
    assert!(first.header("idempotent-replayed").is_none());

    // 44. Another amount; 45. another route.
    server
        .send(&with_key(br#"{"amount":"2"}"#, ECHO))
        .await
        .expect(422, "idempotency_key_reused");
    server
        .send(&with_key(BODY, "/api/v3/test/other"))
        .await
        .expect(422, "idempotency_key_reused");
    // The same route template with another path parameter is another request (the refund of
    // order B is not order A's refund replayed).
    server
        .send(&with_key(BODY, "/api/v3/test/echo/A"))
        .await
        .expect(422, "idempotency_key_reused");
    // 46. The same body reformatted and reordered is the same request.
    let reformatted = server
        .send(&with_key(b"{ \"amount\" : \"1.5\" }", ECHO))
        .await;
    reformatted.expect(200, "");
    assert_eq!(reformatted.body, first.body);

    // 55. Retrying with the same nonce fails authentication before idempotency is consulted.
    let replayed_nonce = with_key(BODY, ECHO);
    server.send(&replayed_nonce).await.expect(200, "");
    server
        .send(&replayed_nonce)
        .await
        .expect(401, "nonce_reused");
    assert_eq!(executions(&server), 1);

    // A key first used on a route with a path parameter binds that parameter's value.
    let on = |target: &str| {
        server
            .sign(
                &key,
                "POST",
                &format!("/api/v3/test/echo/{target}"),
                "",
                BODY,
            )
            .set("Idempotency-Key", "order-key-0002")
    };
    let first = server.send(&on("A")).await;
    first.expect(201, "");
    let again = server.send(&on("A")).await;
    again.expect(200, "");
    assert_eq!(again.body, first.body);
    server
        .send(&on("B"))
        .await
        .expect(422, "idempotency_key_reused");
    assert_eq!(executions(&server), 2);
}

#[tokio::test]
async fn keys_are_scoped_per_principal_and_expire_after_a_day() {
    let server = TestServer::start().await;
    let a = server.key(&[OrdersCreate]).await;
    let b = server.key(&[OrdersCreate]).await;
    // 47.
    let ra = server
        .send(
            &server
                .sign(&a, "POST", ECHO, "", BODY)
                .set("Idempotency-Key", "shared-key-01"),
        )
        .await;
    let rb = server
        .send(
            &server
                .sign(&b, "POST", ECHO, "", BODY)
                .set("Idempotency-Key", "shared-key-01"),
        )
        .await;
    ra.expect(201, "");
    rb.expect(201, "");
    assert_ne!(ra.body["data"]["execution"], rb.body["data"]["execution"]);

    // 53. 24 h + 1 s later the key is new.
    server.clock.advance_ms(24 * 3_600_000 + 1_000);
    let later = server
        .send(
            &server
                .sign(&a, "POST", ECHO, "", br#"{"amount":"9"}"#)
                .set("Idempotency-Key", "shared-key-01"),
        )
        .await;
    later.expect(201, "");
    assert_eq!(executions(&server), 3);
}

#[tokio::test]
async fn refused_and_failed_attempts_store_nothing() {
    let server = TestServer::start().await;
    let key = server.key(&[OrdersCreate]).await;
    let with_key = |path: &str, body: &[u8], k: &str| {
        server
            .sign(&key, "POST", path, "", body)
            .set("Idempotency-Key", k)
    };

    // 49. A validation error is not stored: the corrected request executes.
    server
        .send(&with_key(
            ECHO,
            br#"{"amount":"1","admin":true}"#,
            "fix-me-001",
        ))
        .await
        .expect(400, "validation_failed");
    server
        .send(&with_key(ECHO, BODY, "fix-me-001"))
        .await
        .expect(201, "");

    // 50. A 500 before commit is not stored: the retry executes once more and succeeds.
    server
        .send(&with_key("/api/v3/test/flaky", b"{}", "flaky-0001"))
        .await
        .expect(500, "internal_error");
    let retry = server
        .send(&with_key("/api/v3/test/flaky", b"{}", "flaky-0001"))
        .await;
    retry.expect(201, "");
    assert_eq!(retry.body["data"]["call"], 2);
    server
        .send(&with_key("/api/v3/test/flaky", b"{}", "flaky-0001"))
        .await
        .expect(200, "");
    assert_eq!(server.counters.flaky.load(Ordering::SeqCst), 2);

    // 56. A 429 is not stored: after the window the same key executes.
    let limited = server
        .key_with(
            &[OrdersCreate],
            &[],
            &[],
            RateLimits {
                per_minute: 1,
                ..RateLimits::default()
            },
        )
        .await;
    server
        .send(&server.sign(&limited, "POST", ECHO, "", BODY))
        .await
        .expect(201, "");
    let request = |s: &TestServer| {
        s.sign(&limited, "POST", ECHO, "", br#"{"amount":"3"}"#)
            .set("Idempotency-Key", "after-429-1")
    };
    server
        .send(&request(&server))
        .await
        .expect(429, "rate_limit_exceeded");
    server.clock.advance_ms(60_000);
    server.send(&request(&server)).await.expect(201, "");
}

#[tokio::test]
async fn a_response_lost_after_commit_is_replayed() {
    // 51. The server commits, the client never reads the answer, the retry gets the stored one.
    let server = TestServer::start().await;
    let key = server.key(&[OrdersCreate]).await;
    let request = server
        .sign(&key, "POST", ECHO, "", BODY)
        .set("Idempotency-Key", "lost-response-1");
    let scope = format!("key:{}", key.id);
    let stream = {
        use tokio::io::AsyncWriteExt;
        let address = server.base.trim_start_matches("http://").to_owned();
        let mut stream = tokio::net::TcpStream::connect(&address).await.unwrap();
        let mut head = format!(
            "POST {ECHO} HTTP/1.1\r\nHost: {address}\r\nContent-Length: {}\r\n",
            BODY.len()
        );
        for (name, value) in &request.headers {
            head.push_str(&format!("{name}: {value}\r\n"));
        }
        head.push_str("\r\n");
        stream.write_all(head.as_bytes()).await.unwrap();
        stream.write_all(BODY).await.unwrap();
        stream
    };
    // Wait until the handler ran, then until its outcome is stored. (Once the record exists, a
    // probe with the same fingerprint only reads it.)
    while executions(&server) == 0 {
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    let fingerprint = swapd_core::idempotency::fingerprint(
        "POST",
        ECHO,
        "",
        Some(&serde_json::from_slice(BODY).unwrap()),
    );
    for _ in 0..200 {
        let begin = server
            .state
            .store
            .begin_idempotent(
                &scope,
                "lost-response-1",
                &fingerprint,
                "probe",
                "probe-node",
                crate::support::T0_MS,
            )
            .await
            .unwrap();
        if matches!(begin, swapd_core::idempotency::Begin::Replay(_)) {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    drop(stream);
    let retry = server
        .send(
            &server
                .sign(&key, "POST", ECHO, "", BODY)
                .set("Idempotency-Key", "lost-response-1"),
        )
        .await;
    retry.expect(200, "");
    assert_eq!(retry.body["data"]["execution"], 1);
    assert_eq!(executions(&server), 1);
}

/// A handler that panics (a bug) answers 500 in the envelope, and its key is free at once: the
/// retry executes (what died committed nothing).
#[tokio::test]
async fn a_handler_that_panics_answers_the_envelope_and_frees_its_key() {
    // 52.
    let server = TestServer::start().await;
    let key = server.key(&[OrdersCreate]).await;
    let request = |s: &TestServer| {
        s.sign(&key, "POST", "/api/v3/test/crash", "", b"{}")
            .set("Idempotency-Key", "crash-key-001")
    };
    let died = server.send(&request(&server)).await;
    died.expect(500, "internal_error");
    assert!(died.header("x-request-id").is_some());
    assert_eq!(
        died.body["error"]["message"], "internal error",
        "nothing of the panic leaks"
    );
    let resp = eventually(&server, &request).await;
    resp.expect(201, "");
    assert_eq!(resp.body["data"]["call"], 2);
    server.send(&request(&server)).await.expect(200, "");
}

/// A request that outlives `security.request_timeout_ms` answers 503 in the envelope, and its
/// key is free again for the retry.
#[tokio::test]
async fn a_request_that_runs_too_long_answers_503_and_frees_its_key() {
    let server = TestServer::start_with(Options {
        request_timeout_ms: 300,
        ..Options::default()
    })
    .await;
    let key = server.key(&[OrdersCreate]).await;
    let request = |s: &TestServer| {
        s.sign(&key, "POST", "/api/v3/test/slow", "", b"{}")
            .set("Idempotency-Key", "slow-key-0001")
    };
    let stopped = server.send(&request(&server)).await;
    stopped.expect(503, "service_unavailable");
    assert!(stopped.header("x-request-id").is_some());
    let resp = eventually(&server, &request).await;
    resp.expect(201, "");
    assert_eq!(resp.body["data"]["call"], 2);
}

/// Sends `request` until it is not refused as in flight (the release of a dropped execution
/// runs in the background).
async fn eventually(server: &TestServer, request: &impl Fn(&TestServer) -> Signed) -> Resp {
    for _ in 0..100 {
        let resp = server.send(&request(server)).await;
        if resp.status != 409 {
            return resp;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    panic!("the key stayed in flight");
}

#[tokio::test]
async fn one_hundred_concurrent_requests_with_one_key_execute_once() {
    // 48.
    let server = Arc::new(TestServer::start().await);
    let key = server
        .key_with(
            &[OrdersCreate],
            &[],
            &[],
            RateLimits {
                per_minute: 1_000,
                per_hour: 10_000,
                weight_per_hour: 10_000,
            },
        )
        .await;
    let tasks: Vec<_> = (0..100)
        .map(|_| {
            let server = server.clone();
            let request = server
                .sign(&key, "POST", ECHO, "", BODY)
                .set("Idempotency-Key", "race-key-0001");
            tokio::spawn(async move { server.send(&request).await })
        })
        .collect();
    let (mut created, mut replayed, mut in_use) = (0, 0, 0);
    for task in tasks {
        let resp: Resp = task.await.unwrap();
        match resp.status {
            201 => created += 1,
            200 => {
                assert_eq!(resp.body["data"]["execution"], 1);
                replayed += 1;
            }
            _ => {
                resp.expect(409, "idempotency_key_in_use");
                assert!(resp.header("retry-after").is_some());
                in_use += 1;
            }
        }
    }
    assert_eq!(created, 1);
    assert_eq!(created + replayed + in_use, 100);
    assert_eq!(executions(&server), 1);
}

#[tokio::test]
async fn a_domain_write_can_commit_the_record_in_its_own_transaction() {
    let server = TestServer::start().await;
    let key = server.key(&[OrdersCreate]).await;
    let request = |s: &TestServer| {
        s.sign(&key, "POST", "/api/v3/test/domain", "", b"{}")
            .set("Idempotency-Key", "domain-key-01")
    };
    let first = server.send(&request(&server)).await;
    first.expect(201, "");
    let again = server.send(&request(&server)).await;
    again.expect(200, "");
    assert_eq!(again.body, first.body);
    assert_eq!(executions(&server), 1);
}

/// A route that takes its key in its own write (order creation) has no claim to wait on: one
/// key's attempts at the same moment may each execute, but only the first write commits and
/// every attempt answers the response it stored.
#[tokio::test]
async fn concurrent_requests_with_one_key_taken_at_commit_answer_one_response() {
    let server = Arc::new(TestServer::start().await);
    let key = server.key(&[OrdersCreate]).await;
    let request = |s: &TestServer| {
        s.sign(&key, "POST", "/api/v3/test/domain-at-commit", "", b"{}")
            .set("Idempotency-Key", "commit-race-01")
    };
    let tasks: Vec<_> = (0..50)
        .map(|_| {
            let server = server.clone();
            let request = request(&server);
            tokio::spawn(async move { server.send(&request).await })
        })
        .collect();
    let mut answers = Vec::new();
    for task in tasks {
        answers.push(task.await.unwrap());
    }
    let created: Vec<_> = answers.iter().filter(|r| r.status == 201).collect();
    assert_eq!(created.len(), 1, "one attempt's write commits");
    let winner = &created[0].body;
    for answer in &answers {
        assert!(
            matches!(answer.status, 200 | 201),
            "{}: {}",
            answer.status,
            answer.body
        );
        assert_eq!(
            &answer.body, winner,
            "every attempt answers the stored response"
        );
    }
    let executed = executions(&server);
    let again = server.send(&request(&server)).await;
    again.expect(200, "");
    assert_eq!(&again.body, winner);
    assert_eq!(again.header("idempotent-replayed"), Some("true"));
    assert_eq!(executions(&server), executed, "a retry executes nothing");
    // Another request under the same key is refused as on any route.
    let other = server
        .send(
            &server
                .sign(
                    &key,
                    "POST",
                    "/api/v3/test/domain-at-commit",
                    "",
                    br#"{"a":1}"#,
                )
                .set("Idempotency-Key", "commit-race-01"),
        )
        .await;
    other.expect(422, "idempotency_key_reused");
}

/// A body that is not JSON is the client's mistake on every mutating route: 400 `invalid_json`
/// (never 500), nothing claimed, so the same key then works with a good body.
#[tokio::test]
async fn bodies_that_are_not_json_answer_400_on_every_mutation() {
    let server = TestServer::start().await;
    let key = server
        .key(&[
            swapd_types::Permission::OrdersCreate,
            swapd_types::Permission::WebhooksWrite,
        ])
        .await;
    let deep = "[".repeat(10_000);
    let bodies: [&[u8]; 7] = [
        b"{",
        b"\xff\xfe{}",
        b"\xef\xbb\xbf{}",
        br#"{"a":"\ud800"}"#,
        b"{} trailing",
        deep.as_bytes(),
        b"1e400",
    ];
    for path in [
        "/api/v3/orders",
        "/api/v3/routes/resolve",
        "/api/v3/onchain/routes/resolve",
        "/api/v3/onchain/executions",
        "/api/v3/webhooks",
        "/api/v3/webhooks/whk_00000000000000000000000000000000/rotate-secret",
        "/api/v3/webhooks/whk_00000000000000000000000000000000/replay",
    ] {
        for body in bodies {
            let resp = server.call(&key, "POST", path, "", body).await;
            resp.expect(400, "invalid_json");
        }
    }
    for body in bodies {
        let resp = server
            .call(
                &key,
                "PATCH",
                "/api/v3/webhooks/whk_00000000000000000000000000000000",
                "",
                body,
            )
            .await;
        resp.expect(400, "invalid_json");
    }

    // Nothing was claimed: the key that met a broken body runs with a good one.
    let broken = server
        .sign(&key, "POST", "/api/v3/test/echo", "", b"{")
        .set("Idempotency-Key", "idem-after-broken-body-0001");
    server.send(&broken).await.expect(400, "invalid_json");
    let good = server
        .sign(&key, "POST", "/api/v3/test/echo", "", br#"{"amount":"1"}"#)
        .set("Idempotency-Key", "idem-after-broken-body-0001");
    let created = server.send(&good).await;
    assert_eq!(created.status, 201, "body: {}", created.body);
    assert_eq!(created.body["data"]["execution"], 1);
}
