//! Sends requests to a running swapd for a fixed time from N concurrent connections and reports
//! throughput and latency percentiles. With `--key`/`--secret`, every request is signed with a
//! fresh nonce (what a real partner sends); with `--x402-payer`, every GET is paid with a fresh
//! x402 payment (signed before the request's clock starts); otherwise, plain GETs (e.g.
//! `/healthz`).
//!
//! cargo run --release -p swapd-loadgen -- --path /api/v3 --key key_... --secret sec_...

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use clap::Parser;
use reqwest::Method;
use swapd_client::x402::{PaymentRequired, PrivateKeySigner, X402Client, payment_required};
use swapd_client::{BusinessClient, Credentials, new_idempotency_key, new_nonce};

#[derive(Debug, Parser)]
#[command(about = "Load generator for swapd benchmarks")]
struct Args {
    /// Server base URL; repeat it to spread the connections over several nodes (connection
    /// `i` goes to URL `i mod n`).
    #[arg(long = "url", default_value = "http://127.0.0.1:8080")]
    urls: Vec<String>,
    /// Path to GET.
    #[arg(long, default_value = "/healthz")]
    path: String,
    /// Query parameter `name=value` (repeatable), sent and signed in canonical order.
    #[arg(long = "query", value_parser = parse_pair)]
    query: Vec<(String, String)>,
    /// JSON body: send POSTs with it (each with a fresh Idempotency-Key) instead of GETs.
    /// Signed mode only.
    #[arg(long, requires = "key")]
    body: Option<String>,
    /// API key: sign every request (needs --secret).
    #[arg(long, env = "SWAPD_API_KEY", requires = "secret")]
    key: Option<String>,
    #[arg(long, env = "SWAPD_API_SECRET")]
    secret: Option<String>,
    /// EVM private key (hex): pay every GET of an x402 route with a fresh payment from it. The
    /// route's requirements are read from one unpaid request per URL before the run.
    #[arg(long, conflicts_with_all = ["key", "body"])]
    x402_payer: Option<String>,
    /// Send every request as from its own client address (`X-Forwarded-For: 10.x.y.z`), as
    /// many clients behind a proxy the server trusts (`security.trusted_proxies`): per-address
    /// limits, such as x402's paid attempts per hour, then apply to each request alone.
    #[arg(long)]
    forwarded_for_each: bool,
    /// Concurrent connections.
    #[arg(long, default_value_t = 32)]
    concurrency: usize,
    /// Measured seconds (after the warm-up).
    #[arg(long, default_value_t = 10)]
    seconds: u64,
    /// Unmeasured warm-up seconds.
    #[arg(long, default_value_t = 2)]
    warmup: u64,
    /// Print one JSON object instead of text.
    #[arg(long)]
    json: bool,
    /// Count this status as success instead of any 2xx (e.g. 402 to measure x402 challenges).
    #[arg(long)]
    expect_status: Option<u16>,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let http = reqwest::Client::builder()
        .pool_max_idle_per_host(args.concurrency)
        .build()?;
    let signers = match (&args.key, &args.secret) {
        (Some(key), Some(secret)) => args
            .urls
            .iter()
            .map(|url| BusinessClient::new(url, Credentials::new(key, secret)).map(Some))
            .collect::<Result<Vec<_>, _>>()?,
        _ => vec![None; args.urls.len()],
    };
    let payers = payers(&args, &http).await?;
    let body: Option<serde_json::Value> = args
        .body
        .as_deref()
        .map(serde_json::from_str)
        .transpose()
        .context("--body is not JSON")?;
    let warm_until = Instant::now() + Duration::from_secs(args.warmup);
    let stop_at = warm_until + Duration::from_secs(args.seconds);
    let workers: Vec<_> = (0..args.concurrency)
        .map(|connection| {
            let node = connection % args.urls.len();
            let worker = Worker {
                connection,
                http: http.clone(),
                signer: signers[node].clone(),
                payer: payers[node].clone(),
                url: args.urls[node].clone(),
                path: args.path.clone(),
                query: args.query.clone(),
                body: body.clone(),
                expect_status: args.expect_status,
                forwarded_for_each: args.forwarded_for_each,
            };
            tokio::spawn(worker.run(warm_until, stop_at))
        })
        .collect();
    let mut tally = Tally::default();
    for worker in workers {
        let done = worker.await.context("worker panicked")?;
        tally.latencies.extend(done.latencies);
        tally.failures += done.failures;
        tally.first_failure = tally.first_failure.or(done.first_failure);
    }
    report(&args, tally)
}

/// Each URL's payer with the route's requirements, read from one unpaid request, when
/// `--x402-payer` is given.
async fn payers(
    args: &Args,
    http: &reqwest::Client,
) -> anyhow::Result<Vec<Option<Arc<(X402Client, PaymentRequired)>>>> {
    let mut payers = vec![None; args.urls.len()];
    let Some(key) = &args.x402_payer else {
        return Ok(payers);
    };
    let key: PrivateKeySigner = key.parse().context("--x402-payer is not a private key")?;
    for (url, payer) in args.urls.iter().zip(&mut payers) {
        let challenge = http
            .get(format!("{url}{}", args.path))
            .query(&args.query)
            .send()
            .await?;
        let required = challenge
            .headers()
            .get("payment-required")
            .and_then(|v| v.to_str().ok())
            .and_then(payment_required)
            .with_context(|| format!("{url}{} did not answer a 402 challenge", args.path))?;
        let client = X402Client::new(url)?.paying_with(key.clone());
        *payer = Some(Arc::new((client, required)));
    }
    Ok(payers)
}

/// What the connections measured after the warm-up.
#[derive(Default)]
struct Tally {
    /// Of each successful request, in microseconds.
    latencies: Vec<u64>,
    failures: u64,
    first_failure: Option<String>,
}

/// One connection's loop.
struct Worker {
    connection: usize,
    http: reqwest::Client,
    signer: Option<BusinessClient>,
    payer: Option<Arc<(X402Client, PaymentRequired)>>,
    url: String,
    path: String,
    query: Vec<(String, String)>,
    body: Option<serde_json::Value>,
    expect_status: Option<u16>,
    forwarded_for_each: bool,
}

impl Worker {
    async fn run(self, warm_until: Instant, stop_at: Instant) -> Tally {
        let mut tally = Tally::default();
        let mut sent: u32 = 0;
        while Instant::now() < stop_at {
            sent += 1;
            let payment = self
                .payer
                .as_ref()
                .map(|payer| payer.0.payment_for(&payer.1).expect("pay"));
            let started = Instant::now();
            let outcome = self.send(sent, payment.as_deref()).await;
            if started >= warm_until {
                match outcome {
                    Ok(()) => tally.latencies.push(started.elapsed().as_micros() as u64),
                    Err(error) => {
                        tally.failures += 1;
                        tally.first_failure.get_or_insert(error);
                    }
                }
            }
        }
        tally
    }

    /// Sends request number `sent` and reads its answer: `Err` with the status and the start of
    /// the body when it is not the status counted as success.
    async fn send(&self, sent: u32, payment: Option<&str>) -> Result<(), String> {
        let pairs: Vec<(&str, &str)> = self
            .query
            .iter()
            .map(|(n, v)| (n.as_str(), v.as_str()))
            .collect();
        // Both modes are sent and read alike (status and bytes, no JSON decoding), so they
        // cost the client the same but for the signature.
        let mut request = match &self.signer {
            Some(client) => self.signed(client, &pairs),
            None => {
                let request = self
                    .http
                    .get(format!("{}{}", self.url, self.path))
                    .query(&pairs);
                match payment {
                    Some(payment) => request.header("PAYMENT-SIGNATURE", payment),
                    None => request,
                }
            }
        };
        if self.forwarded_for_each {
            // Connection i, request n: 10.(i).(n / 256 % 256).(n % 256), wrapping.
            let [_, _, hi, lo] = sent.to_be_bytes();
            let address = format!("10.{}.{hi}.{lo}", self.connection % 256);
            request = request.header("X-Forwarded-For", address);
        }
        match request.send().await {
            Ok(r)
                if self
                    .expect_status
                    .map_or(r.status().is_success(), |s| r.status().as_u16() == s) =>
            {
                r.bytes().await.map(drop).map_err(|e| e.to_string())
            }
            Ok(r) => {
                let status = r.status();
                let body = r.text().await.unwrap_or_default();
                Err(format!(
                    "status {status}: {}",
                    body.chars().take(300).collect::<String>()
                ))
            }
            Err(e) => Err(e.to_string()),
        }
    }

    /// The request signed with a fresh nonce (and a fresh Idempotency-Key for a POST).
    fn signed(&self, client: &BusinessClient, pairs: &[(&str, &str)]) -> reqwest::RequestBuilder {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs() as i64;
        let idempotency_key = self.body.as_ref().map(|_| new_idempotency_key());
        let method = if self.body.is_some() {
            Method::POST
        } else {
            Method::GET
        };
        let signed = client
            .sign(
                method,
                &self.path,
                pairs,
                self.body.as_ref(),
                idempotency_key.as_deref(),
                &new_nonce(),
                now,
            )
            .expect("sign");
        let mut request = self.http.request(
            signed.method,
            format!("{}{}", self.url, signed.path_and_query),
        );
        for (name, value) in &signed.headers {
            request = request.header(*name, value);
        }
        request.body(signed.body)
    }
}

/// Prints throughput and latency percentiles, as text or one JSON object.
fn report(args: &Args, tally: Tally) -> anyhow::Result<()> {
    let Tally {
        mut latencies,
        failures,
        first_failure,
    } = tally;
    if let Some(error) = &first_failure {
        eprintln!("first failure: {error}");
    }
    if latencies.is_empty() {
        bail!(
            "no request succeeded ({failures} failed): is the server at {} running, and the key valid with a high enough rate limit?",
            args.urls.join(", ")
        );
    }
    latencies.sort_unstable();
    let pct = |p: f64| {
        latencies[((latencies.len() as f64 * p) as usize).min(latencies.len() - 1)] as f64 / 1000.0
    };
    let rps = latencies.len() as f64 / args.seconds as f64;
    let mode = match (&args.key, &args.body, &args.x402_payer) {
        (Some(_), Some(_), _) => "signed POST",
        (Some(_), None, _) => "signed",
        (None, _, Some(_)) => "paid",
        (None, _, None) => "plain",
    };
    if args.json {
        println!(
            "{}",
            serde_json::json!({"path": args.path, "mode": mode, "concurrency": args.concurrency, "seconds": args.seconds,
                "requests": latencies.len(), "failures": failures, "rps": rps.round(),
                "p50_ms": pct(0.50), "p90_ms": pct(0.90), "p99_ms": pct(0.99), "max_ms": pct(1.0)})
        );
    } else {
        println!(
            "{mode} {}: {} ok, {failures} failed in {} s, {:.0} req/s; latency p50 {:.2} ms, p90 {:.2} ms, p99 {:.2} ms, max {:.2} ms (concurrency {})",
            args.path,
            latencies.len(),
            args.seconds,
            rps,
            pct(0.5),
            pct(0.9),
            pct(0.99),
            pct(1.0),
            args.concurrency
        );
    }
    Ok(())
}

fn parse_pair(text: &str) -> Result<(String, String), String> {
    text.split_once('=')
        .map(|(n, v)| (n.to_owned(), v.to_owned()))
        .ok_or_else(|| format!("`{text}` is not name=value"))
}
