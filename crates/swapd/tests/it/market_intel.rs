//! Market-intel jobs on the x402 API: each kind end to end through the paid flow, the
//! idempotent replay (same job, one settlement), a job whose worker died mid-run taken over and
//! finished exactly once, the time bound, and ownership by wallet.

use crate::support::text;
use std::time::Duration;

use crate::support::x402::{idempotency, pay, pay_upto, payment_header, prove_evm, required, send};
use crate::support::{Resp, TestServer};
use alloy_signer_local::PrivateKeySigner;
use serde_json::{Value, json};
use swapd_core::market_intel::{JobOutcome, LEASE_MS, MAX_ATTEMPTS};
use swapd_types::market_intel::JobError;

/// Queues a job paid by `payer` under `key`: the 202 answer.
async fn queue(server: &TestServer, payer: &PrivateKeySigner, body: &Value, key: &str) -> Resp {
    let path = "/api/x402/market-intel/jobs";
    let unpaid = send(server, "POST", path, Some(body), &[idempotency(key)]).await;
    unpaid.expect(402, "payment_required");
    let payment = pay(&required(&unpaid), payer, server.now_secs());
    send(
        server,
        "POST",
        path,
        Some(body),
        &[idempotency(key), payment_header(&payment)],
    )
    .await
}

/// Reads a job as `wallet` (a fresh SIWX proof for a fresh challenge).
async fn read(server: &TestServer, wallet: &PrivateKeySigner, id: &str) -> Resp {
    let path = format!("/api/x402/market-intel/jobs/{id}");
    let challenge = required(&send(server, "GET", &path, None, &[]).await);
    send(server, "GET", &path, None, &[prove_evm(&challenge, wallet)]).await
}

/// A decimal string as f64, for comparisons in tests only.
fn number(value: &Value) -> f64 {
    text(value).parse().unwrap()
}

#[tokio::test]
async fn pair_depth_ladders_every_provider_from_min_to_max() {
    let server = TestServer::start().await;
    let payer = PrivateKeySigner::random();
    let body = json!({"kind": "pair_depth", "fromCcy": "BTC", "toCcy": "USDTTRC", "steps": 4});
    let queued = queue(&server, &payer, &body, "depth-job-1").await;
    assert_eq!(queued.status, 202, "{}", queued.body);
    let job = &queued.body["data"];
    assert_eq!(job["status"], "queued");
    assert_eq!(job["kind"], "pair_depth");
    assert_eq!(job["request"]["steps"], 4);
    assert!(queued.header("payment-response").is_some());
    let id = text(&job["jobId"]).to_owned();
    assert!(id.starts_with("job_"));

    assert_eq!(server.jobs.run_due().await, 1);
    let done = read(&server, &payer, &id).await;
    assert_eq!(done.status, 200, "{}", done.body);
    let job = &done.body["data"];
    assert_eq!(job["status"], "succeeded", "{job}");
    assert!(job["startedAt"].is_i64() && job["finishedAt"].is_i64());
    let result = &job["result"];
    let ladder = result["ladder"].as_array().unwrap();
    assert_eq!(ladder.len(), 4);
    assert_eq!(ladder[0]["amount"], result["min"]);
    assert_eq!(ladder[3]["amount"], result["max"]);
    let amounts: Vec<f64> = ladder.iter().map(|p| number(&p["amount"])).collect();
    assert!(amounts.windows(2).all(|w| w[0] < w[1]), "{amounts:?}");
    for kind in ["fixed", "float"] {
        let first = &ladder[0][kind];
        assert_eq!(
            first["priceImpactBps"], "0.00",
            "{kind}: the reference point"
        );
        let reference = swapd_core::market_intel::parse_rate(text(&first["rate"])).unwrap();
        for point in ladder {
            let quote = &point[kind];
            assert!(!quote["provider"].is_null(), "{kind}: {point}");
            let rate = swapd_core::market_intel::parse_rate(text(&quote["rate"])).unwrap();
            assert_eq!(
                text(&quote["priceImpactBps"]),
                swapd_core::market_intel::impact_bps(reference, rate)
            );
        }
    }
    assert_ne!(
        ladder[1]["fixed"]["rate"], ladder[1]["float"]["rate"],
        "fixed and float differ"
    );
    server.stop().await;
}

#[tokio::test]
async fn route_scan_ranks_every_route_and_measures_the_spread() {
    let server = TestServer::start().await;
    let payer = PrivateKeySigner::random();
    let body = json!({"kind": "route_scan", "fromCcy": "ETH", "toCcy": "USDCETH", "amount": "1.5"});
    let queued = queue(&server, &payer, &body, "scan-job-1").await;
    let id = text(&queued.body["data"]["jobId"]).to_owned();
    server.jobs.run_due().await;
    let job = read(&server, &payer, &id).await.body["data"].clone();
    assert_eq!(job["status"], "succeeded", "{job}");
    let result = &job["result"];
    let routes = result["routes"].as_array().unwrap();
    let providers: Vec<&str> = routes.iter().map(|r| text(&r["provider"])).collect();
    for provider in ["atlas", "borealis", "meridian", "sunfish", "arcbridge"] {
        assert!(providers.contains(&provider), "{providers:?}");
    }
    let available: Vec<&Value> = routes.iter().filter(|r| r["available"] == true).collect();
    assert!(available.len() >= 3);
    let outputs: Vec<f64> = available.iter().map(|r| number(&r["output"])).collect();
    assert!(
        outputs.windows(2).all(|w| w[0] >= w[1]),
        "best first: {outputs:?}"
    );
    assert!(
        routes
            .iter()
            .any(|r| r["executionType"] == "onchain" && r["available"] == true)
    );
    assert!(
        routes
            .iter()
            .any(|r| r["available"] == false && r["unavailableReason"].is_string())
    );
    assert_eq!(result["best"], available[0]["output"]);
    assert_eq!(result["worst"], available.last().unwrap()["output"]);
    let best = swapd_core::amount::Amount::parse(text(&result["best"]), 6).unwrap();
    let worst = swapd_core::amount::Amount::parse(text(&result["worst"]), 6).unwrap();
    assert_eq!(
        text(&result["spread"]),
        best.checked_sub(worst).unwrap().to_string()
    );
    assert_eq!(
        text(&result["spreadBps"]),
        swapd_core::market_intel::impact_bps(best, worst)
    );
    assert!(!available[0]["fees"].as_array().unwrap().is_empty());
    server.stop().await;
}

#[tokio::test]
async fn rate_history_summarizes_the_rates_swapd_served() {
    let server = TestServer::start().await;
    let payer = PrivateKeySigner::random();
    let key = server.key(&[swapd_types::Permission::PricesRead]).await;
    // Serve some rates: three route discoveries a minute apart; each usable card is a rate.
    let mut cards = 0;
    for _ in 0..3 {
        let resp = server
            .call(
                &key,
                "GET",
                "/api/v3/routes",
                "fromCcy=BTC&toCcy=USDTTRC&amount=0.1",
                b"",
            )
            .await;
        assert_eq!(resp.status, 200);
        cards += resp.body["data"]["routes"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|card| card["isAvailable"] == true)
            .count();
        server.clock.advance_ms(60_000);
    }
    assert!(cards >= 3);
    // They are filed in the background.
    let pair = "BTC/USDTTRC";
    let now = swapd_core::Clock::now_ms(server.clock.as_ref());
    for _ in 0..100 {
        if server
            .state
            .store
            .rates(pair, 0, now, 1000)
            .await
            .unwrap()
            .len()
            >= 6
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let served = server.state.store.rates(pair, 0, now, 1000).await.unwrap();
    assert_eq!(served.len(), cards);

    let body = json!({"kind": "rate_history", "fromCcy": "BTC", "toCcy": "USDTTRC", "windowSecs": 600, "buckets": 10});
    let queued = queue(&server, &payer, &body, "history-job-1").await;
    let id = text(&queued.body["data"]["jobId"]).to_owned();
    server.jobs.run_due().await;
    let job = read(&server, &payer, &id).await.body["data"].clone();
    assert_eq!(job["status"], "succeeded", "{job}");
    let result = &job["result"];
    assert_eq!(result["count"], cards);
    assert_eq!(
        result["until"].as_i64().unwrap() - result["since"].as_i64().unwrap(),
        600
    );
    let (min, max, mean) = (
        number(&result["min"]),
        number(&result["max"]),
        number(&result["mean"]),
    );
    assert!(min <= mean && mean <= max, "{result}");
    assert_eq!(result["first"], served[0].rate);
    let series = result["series"].as_array().unwrap();
    assert_eq!(series.len(), 10);
    assert_eq!(
        series
            .iter()
            .map(|b| b["count"].as_u64().unwrap())
            .sum::<u64>(),
        cards as u64
    );
    server.stop().await;
}

#[tokio::test]
async fn a_replayed_request_answers_the_same_job_without_a_second_charge() {
    let server = TestServer::start().await;
    let payer = PrivateKeySigner::random();
    let body = json!({"kind": "route_scan", "fromCcy": "BTC", "toCcy": "ETH", "amount": "0.2"});
    let path = "/api/x402/market-intel/jobs";
    let challenge = required(
        &send(
            &server,
            "POST",
            path,
            Some(&body),
            &[idempotency("replay-job-1")],
        )
        .await,
    );
    let payment = pay(&challenge, &payer, server.now_secs());
    let first = send(
        &server,
        "POST",
        path,
        Some(&body),
        &[idempotency("replay-job-1"), payment_header(&payment)],
    )
    .await;
    assert_eq!(first.status, 202, "{}", first.body);
    let again = send(
        &server,
        "POST",
        path,
        Some(&body),
        &[idempotency("replay-job-1"), payment_header(&payment)],
    )
    .await;
    assert_eq!(again.status, 200);
    assert_eq!(again.header("idempotent-replayed"), Some("true"));
    assert!(
        again.header("payment-response").is_none(),
        "not charged again"
    );
    assert_eq!(again.body["data"]["jobId"], first.body["data"]["jobId"]);
    // One settlement: the payment bought one job.
    let nonce = payment.payload["authorization"]["nonce"].as_str().unwrap();
    assert!(
        server
            .state
            .store
            .x402_settlement(&payer.address().to_checksum(None), nonce)
            .await
            .unwrap()
            .is_some()
    );
    assert_eq!(server.jobs.run_due().await, 1, "one job queued");
    // Unknown kinds are refused, naming the valid ones, before any payment is asked for.
    let bad = send(
        &server,
        "POST",
        path,
        Some(&json!({"kind": "order_book", "fromCcy": "BTC", "toCcy": "ETH"})),
        &[idempotency("bad-kind-job")],
    )
    .await;
    bad.expect(400, "validation_failed");
    assert!(
        bad.message()
            .contains("pair_depth, route_scan, rate_history"),
        "{}",
        bad.message()
    );
    server.stop().await;
}

#[tokio::test]
async fn a_job_whose_worker_died_is_taken_over_and_finished_once() {
    let server = TestServer::start().await;
    let payer = PrivateKeySigner::random();
    let body = json!({"kind": "route_scan", "fromCcy": "SOL", "toCcy": "USDCSOL", "amount": "3"});
    let id =
        text(&queue(&server, &payer, &body, "dying-job-1").await.body["data"]["jobId"]).to_owned();
    let store = server.state.store.clone();
    let now = swapd_core::Clock::now_ms(server.clock.as_ref());
    // A worker claims it and dies mid-run (it never finishes).
    let claimed = store
        .claim_jobs(now, "lease-dead", now + LEASE_MS, 10)
        .await
        .unwrap();
    assert_eq!(claimed.len(), 1);
    assert_eq!(
        read(&server, &payer, &id).await.body["data"]["status"],
        "running"
    );
    // While its lease holds, nobody else takes it.
    assert_eq!(server.jobs.run_due().await, 0);
    // After the lease, another worker runs it to the end.
    server.clock.advance_ms(LEASE_MS);
    assert_eq!(server.jobs.run_due().await, 1);
    let job = read(&server, &payer, &id).await.body["data"].clone();
    assert_eq!(job["status"], "succeeded", "{job}");
    // The dead worker's late finish is refused: the job completes once.
    let late = JobOutcome::Failed(JobError {
        code: "internal_error".into(),
        message: "late".into(),
    });
    assert!(
        !store
            .finish_job(
                &crate::support::parsed(&id),
                "lease-dead",
                &late,
                None,
                now + LEASE_MS + 1
            )
            .await
            .unwrap()
    );
    assert_eq!(
        read(&server, &payer, &id).await.body["data"]["status"],
        "succeeded"
    );
    assert_eq!(server.jobs.run_due().await, 0, "nothing left to run");

    // A job every worker dies on fails after its attempts.
    let id =
        text(&queue(&server, &payer, &body, "dying-job-2").await.body["data"]["jobId"]).to_owned();
    for _ in 0..MAX_ATTEMPTS {
        let now = swapd_core::Clock::now_ms(server.clock.as_ref());
        assert_eq!(
            store
                .claim_jobs(now, "lease-dies", now + LEASE_MS, 10)
                .await
                .unwrap()
                .len(),
            1
        );
        server.clock.advance_ms(LEASE_MS);
    }
    server.jobs.run_due().await;
    let job = read(&server, &payer, &id).await.body["data"].clone();
    assert_eq!(job["status"], "failed");
    assert_eq!(job["error"]["code"], "attempts_exhausted");
    server.stop().await;
}

#[tokio::test]
async fn runs_are_bounded_in_time() {
    let server = TestServer::start().await;
    let payer = PrivateKeySigner::random();
    for provider in swapd_sandbox::PROVIDER_IDS {
        server.faults.set(provider, swapd_sandbox::Fault::Stall);
    }
    let body = json!({"kind": "route_scan", "fromCcy": "BTC", "toCcy": "ETH", "amount": "0.2"});
    let id =
        text(&queue(&server, &payer, &body, "slow-job-1").await.body["data"]["jobId"]).to_owned();
    let impatient = swapd_worker::JobRunner::new(
        server.state.store.clone(),
        server.state.market.clone(),
        server.clock.clone(),
    )
    .with_run_timeout(Duration::from_millis(100));
    assert_eq!(impatient.run_due().await, 1);
    let job = read(&server, &payer, &id).await.body["data"].clone();
    assert_eq!(job["status"], "failed");
    assert_eq!(job["error"]["code"], "timeout");
    server.stop().await;
}

#[tokio::test]
async fn jobs_belong_to_the_wallet_that_paid() {
    let server = TestServer::start().await;
    let payer = PrivateKeySigner::random();
    let body = json!({"kind": "pair_depth", "fromCcy": "ETH", "toCcy": "USDCETH"});
    let id =
        text(&queue(&server, &payer, &body, "owned-job-1").await.body["data"]["jobId"]).to_owned();
    let path = format!("/api/x402/market-intel/jobs/{id}");
    let anonymous = send(&server, "GET", &path, None, &[]).await;
    anonymous.expect(402, "payment_required");
    assert!(required(&anonymous).accepts.is_empty(), "reads are free");
    read(&server, &PrivateKeySigner::random(), &id)
        .await
        .expect(404, "job_not_found");
    assert_eq!(read(&server, &payer, &id).await.status, 200);
    read(&server, &payer, "job_0123456789abcdef0123456789abcdef")
        .await
        .expect(404, "job_not_found");
    server.stop().await;
}

/// A server whose ways to pay are Base USDC `exact`, then `upto`, both settled by the ledger.
async fn upto_server() -> TestServer {
    let way = |scheme| swapd::config::X402Accept {
        pay_to: Some(crate::support::PAY_TO.parse().unwrap()),
        ..crate::support::way_to_pay("eip155:8453", scheme)
    };
    TestServer::start_with(crate::support::Options {
        x402_accepts: vec![
            way(swapd_x402::Scheme::Exact),
            way(swapd_x402::Scheme::Upto),
        ],
        ..crate::support::Options::default()
    })
    .await
}

/// `upto` on market-intel jobs (docs/market-intel.md, "Paying for what a job used"): the 402
/// offers `exact` at the job's maximum and `upto` it; a job paid `upto` is queued with its
/// verified authorization, nothing settled; when it succeeds the worker settles what it used
/// (one price per amount of its ladder), said in the job and on its read's PAYMENT-RESPONSE;
/// a job that fails is charged nothing.
#[tokio::test]
async fn a_job_paid_upto_its_maximum_is_charged_what_it_used_and_nothing_when_it_fails() {
    let server = upto_server().await;
    let payer = PrivateKeySigner::random();
    let path = "/api/x402/market-intel/jobs";
    let depth = json!({"kind": "pair_depth", "fromCcy": "BTC", "toCcy": "USDTTRC", "steps": 4});
    let asked = send(
        &server,
        "POST",
        path,
        Some(&depth),
        &[idempotency("upto-job-1")],
    )
    .await;
    let challenge = required(&asked);
    let offered: Vec<(&str, &str)> = challenge
        .accepts
        .iter()
        .map(|r| (r.scheme.as_str(), r.amount.as_str()))
        .collect();
    assert_eq!(
        offered,
        [("exact", "600000"), ("upto", "600000")],
        "12 prices of a call, the most a pair_depth costs"
    );
    let upto_way = &challenge.accepts[1];
    assert_eq!(upto_way.extra["assetTransferMethod"], "permit2");
    assert_eq!(upto_way.max_timeout_seconds, 600);
    // A flat-priced route offers `exact` only, at one price.
    let flat = required(&send(&server, "GET", "/api/x402/currencies", None, &[]).await);
    assert_eq!(flat.accepts.len(), 1);
    assert_eq!(
        (
            flat.accepts[0].scheme.as_str(),
            flat.accepts[0].amount.as_str()
        ),
        ("exact", "50000")
    );

    let permit = pay_upto(upto_way, &challenge, &payer, server.now_secs());
    let queued = send(
        &server,
        "POST",
        path,
        Some(&depth),
        &[idempotency("upto-job-1"), payment_header(&permit)],
    )
    .await;
    assert_eq!(queued.status, 202, "{}", queued.body);
    assert!(
        queued.header("payment-response").is_none(),
        "nothing settled yet"
    );
    let payment = &queued.body["data"]["payment"];
    assert_eq!(payment["status"], "authorized");
    assert_eq!(payment["maximum"], "600000");
    let id = text(&queued.body["data"]["jobId"]).to_owned();
    let nonce = format!(
        "permit2:{}",
        permit.payload["permit2Authorization"]["nonce"]
            .as_str()
            .unwrap()
    );
    let payer_address = payer.address().to_checksum(None);
    let ledger = |nonce: String| {
        let store = server.state.store.clone();
        let payer = payer_address.clone();
        async move { store.x402_settlement(&payer, &nonce).await.unwrap() }
    };
    assert!(ledger(nonce.clone()).await.is_none());
    // The same permit buys nothing more.
    send(
        &server,
        "POST",
        path,
        Some(&depth),
        &[idempotency("upto-job-2"), payment_header(&permit)],
    )
    .await
    .expect(409, "payment_already_used");

    assert_eq!(server.jobs.run_due().await, 1);
    let done = read(&server, &payer, &id).await;
    let job = &done.body["data"];
    assert_eq!(job["status"], "succeeded", "{job}");
    let used = job["result"]["ladder"].as_array().unwrap().len() as u64;
    let charged = (50_000 * used).to_string();
    assert_eq!(job["payment"]["status"], "settled");
    assert_eq!(job["payment"]["amount"], charged.as_str());
    let settled: swapd_x402::wire::SettleResponse =
        swapd_x402::wire::decode_header(done.header("payment-response").unwrap()).unwrap();
    assert!(settled.success);
    assert_eq!(settled.amount.as_deref(), Some(charged.as_str()));
    assert_eq!(settled.payer.as_deref(), Some(payer_address.as_str()));
    assert_eq!(job["payment"]["transaction"], settled.transaction.as_str());
    let record = ledger(nonce).await.unwrap();
    assert_eq!(record.amount, charged);

    // A job that fails is charged nothing: its permit is never settled.
    for provider in swapd_sandbox::PROVIDER_IDS {
        server
            .faults
            .set(provider, swapd_sandbox::Fault::Fail("down".into()));
    }
    let scan = json!({"kind": "route_scan", "fromCcy": "BTC", "toCcy": "ETH", "amount": "0.2"});
    let asked = send(
        &server,
        "POST",
        path,
        Some(&scan),
        &[idempotency("upto-job-0")],
    )
    .await;
    assert_eq!(
        required(&asked).accepts[1].amount,
        "50000",
        "a route_scan costs one price"
    );
    let asked = send(
        &server,
        "POST",
        path,
        Some(&depth),
        &[idempotency("upto-job-3")],
    )
    .await;
    let challenge = required(&asked);
    let permit = pay_upto(&challenge.accepts[1], &challenge, &payer, server.now_secs());
    let queued = send(
        &server,
        "POST",
        path,
        Some(&depth),
        &[idempotency("upto-job-3"), payment_header(&permit)],
    )
    .await;
    assert_eq!(queued.status, 202, "{}", queued.body);
    let id = text(&queued.body["data"]["jobId"]).to_owned();
    assert_eq!(server.jobs.run_due().await, 1);
    let failed = read(&server, &payer, &id).await;
    assert_eq!(failed.body["data"]["status"], "failed", "{}", failed.body);
    assert_eq!(failed.body["data"]["payment"]["status"], "released");
    assert!(failed.header("payment-response").is_none());
    let nonce = format!(
        "permit2:{}",
        permit.payload["permit2Authorization"]["nonce"]
            .as_str()
            .unwrap()
    );
    assert!(ledger(nonce).await.is_none(), "nothing settled");

    // `exact` stays offered, at the maximum.
    for provider in swapd_sandbox::PROVIDER_IDS {
        server.faults.clear(provider);
    }
    let asked = send(
        &server,
        "POST",
        path,
        Some(&depth),
        &[idempotency("exact-job-1")],
    )
    .await;
    let challenge = required(&asked);
    let exact = pay(&challenge, &payer, server.now_secs());
    let queued = send(
        &server,
        "POST",
        path,
        Some(&depth),
        &[idempotency("exact-job-1"), payment_header(&exact)],
    )
    .await;
    assert_eq!(queued.status, 202, "{}", queued.body);
    let settled: swapd_x402::wire::SettleResponse =
        swapd_x402::wire::decode_header(queued.header("payment-response").unwrap()).unwrap();
    assert!(settled.success);
    assert!(queued.body["data"]["payment"].is_null());
    let record = server
        .state
        .store
        .x402_settlement(
            &payer_address,
            exact.payload["authorization"]["nonce"].as_str().unwrap(),
        )
        .await
        .unwrap()
        .unwrap();
    assert_eq!(record.amount, "600000");
    server.stop().await;
}

/// A facilitator that is down when an `upto` job ends: the job is not finished (its payment
/// stays authorized), its lease runs out, and the next run settles it.
#[tokio::test]
async fn an_upto_job_whose_settlement_cannot_be_asked_runs_again_and_settles_then() {
    struct Down;
    #[async_trait::async_trait]
    impl swapd_core::market_intel::UptoSettler for Down {
        async fn settle(
            &self,
            _: &swapd_core::market_intel::JobPayment,
            _: &str,
            _: bool,
        ) -> Result<String, swapd_core::market_intel::SettleFailure> {
            Err(swapd_core::market_intel::SettleFailure::Unavailable(
                "connection refused".into(),
            ))
        }
    }
    let server = upto_server().await;
    let payer = PrivateKeySigner::random();
    let path = "/api/x402/market-intel/jobs";
    let scan = json!({"kind": "route_scan", "fromCcy": "BTC", "toCcy": "ETH", "amount": "0.2"});
    let challenge = required(
        &send(
            &server,
            "POST",
            path,
            Some(&scan),
            &[idempotency("down-job-1")],
        )
        .await,
    );
    let permit = pay_upto(&challenge.accepts[1], &challenge, &payer, server.now_secs());
    let queued = send(
        &server,
        "POST",
        path,
        Some(&scan),
        &[idempotency("down-job-1"), payment_header(&permit)],
    )
    .await;
    assert_eq!(queued.status, 202, "{}", queued.body);
    let id = text(&queued.body["data"]["jobId"]).to_owned();

    let down = swapd_worker::JobRunner::new(
        server.state.store.clone(),
        server.state.market.clone(),
        server.clock.clone(),
    )
    .with_settler(std::sync::Arc::new(Down));
    assert_eq!(down.run_due().await, 1);
    let job = read(&server, &payer, &id).await.body["data"].clone();
    assert_eq!(job["status"], "running", "not finished: {job}");
    assert_eq!(job["payment"]["status"], "authorized");

    server.clock.advance_ms(LEASE_MS);
    assert_eq!(server.jobs.run_due().await, 1);
    let done = read(&server, &payer, &id).await;
    let job = &done.body["data"];
    assert_eq!(job["status"], "succeeded", "{job}");
    assert_eq!(
        (&job["payment"]["status"], &job["payment"]["amount"]),
        (&json!("settled"), &json!("50000"))
    );
    assert!(done.header("payment-response").is_some());
    server.stop().await;
}
