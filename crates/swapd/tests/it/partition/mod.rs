//! The partition test (docs/reliability.md, "The partition test"): three API nodes and two
//! workers as processes, each in a network namespace of its own, reaching PostgreSQL and Redis
//! through relays on the host, under a load of signed order creations, sandbox deposits,
//! emergency answers, webhook deliveries and paid x402 orders, while faults are injected one
//! after another with `iptables` drops, a slow lossy link and clocks 90 s ahead (libfaketime). Every client
//! operation is recorded; after the run a checker reads the history with the final database,
//! the sandbox desks' and chain's books and the webhook receiver's records, prints its figures
//! and the fault matrix, and fails on any broken promise.

mod history;
mod net;

use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use alloy_signer_local::PrivateKeySigner;
use reqwest::Method;
use serde_json::{Value, json};
use swapd_client::{BusinessClient, Credentials};
use swapd_core::store::{OrderSearch, SandboxDeposit};
use swapd_store::test_support::{PgTestSchema, SilentRelay, postgres_url, server_addr};

use self::history::{FaultWindow, Finals, Kind, Op, Outcome};
use self::net::{Cut, Net};
use crate::cluster::{receive_on, subscribe_to_every_event};
use crate::crash::{SWAPD, sandbox_node, serve_watched};

const API_NODES: usize = 3;
const WORKERS: [usize; 2] = [3, 4];
const MASTER_KEY: &str = "5f5f5f5f5f5f5f5f5f5f5f5f5f5f5f5f5f5f5f5f5f5f5f5f5f5f5f5f5f5f5f5f";
/// How long a client waits for an answer before it calls the request hung.
const CLIENT_DEADLINE: Duration = Duration::from_secs(15);
/// How long a client tries to connect before it calls the node out of reach.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);
/// Clients running orders at once.
const CUSTOMERS: usize = 6;
/// A client's first wait before a retry, doubling to the most it waits.
const RETRY_FIRST: Duration = Duration::from_millis(300);
const RETRY_MOST: Duration = Duration::from_secs(5);
/// How long one step of a customer may keep being retried before the test gives up on it.
const STEP_GIVE_UP: Duration = Duration::from_secs(240);
const TRON_ADDRESS: &str = "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t";
const BTC_ADDRESS: &str = "bc1qar0srrr7xfkvy5l643lydnw9re59gtzzwf5mdq";
/// The origin every API node names as its own, as behind one load balancer: an x402 payment
/// made for one node's resource is good on the others.
const PUBLIC_URL: &str = "http://swapd.partition.test";

/// The processes' configuration, their namespaces and their relays.
struct Cluster {
    net: Net,
    root: tempfile::TempDir,
    schema: PgTestSchema,
    env: Vec<(&'static str, String)>,
    redis: String,
    /// One relay to PostgreSQL and one to Redis per node, on the host's address.
    pg_relays: Vec<SilentRelay>,
    redis_relays: Vec<SilentRelay>,
}

impl Cluster {
    /// `swapd` in `node`'s namespace, its clock `ahead` of the host's by 90 s or not.
    fn command(&self, node: usize, ahead: bool) -> Command {
        let dir = self.root.path().join(format!("n{node}"));
        std::fs::create_dir_all(&dir).unwrap();
        let mut command = self.net.command(node, SWAPD);
        sandbox_node(&mut command, &dir);
        if ahead {
            command
                .env("LD_PRELOAD", net::FAKETIME_LIBRARY)
                .env("FAKETIME", "+90s");
        }
        let mut redis = reqwest::Url::parse(&self.redis).unwrap();
        redis.set_host(Some(&self.net.host.to_string())).unwrap();
        redis
            .set_port(Some(self.redis_relays[node].addr.port()))
            .unwrap();
        command
            .envs(self.env.iter().map(|(k, v)| (*k, v.as_str())))
            .env(
                "SWAPD_DATABASE_URL",
                self.schema.database_url_on(self.pg_relays[node].addr),
            )
            .env("SWAPD_SHARED__REDIS_URL", redis.as_str());
        command
    }

    fn api(&self, node: usize, ahead: bool) -> (Child, String) {
        let listen = format!("{}:0", self.net.address(node));
        let (child, base, _log) = serve_watched(
            self.command(node, ahead)
                .args(["serve", "--api", "--listen", &listen]),
        );
        (child, base)
    }

    fn worker(&self, node: usize, ahead: bool) -> Child {
        let log = self.root.path().join(format!("n{node}.log"));
        self.command(node, ahead)
            .args(["serve", "--worker"])
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(log).unwrap())
            .spawn()
            .expect("spawn swapd serve --worker")
    }

    /// The CLI on the host, straight to the database.
    fn cli(&self, args: &[&str]) -> Value {
        let dir = self.root.path().join("cli");
        std::fs::create_dir_all(&dir).unwrap();
        let mut command = Command::new(SWAPD);
        sandbox_node(&mut command, &dir);
        let output = command
            .envs(self.env.iter().map(|(k, v)| (*k, v.as_str())))
            .env("SWAPD_DATABASE_URL", self.schema.database_url())
            .args(args)
            .output()
            .unwrap();
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
        serde_json::from_slice(&output.stdout).unwrap_or(Value::Null)
    }
}

/// An answer as a client saw it.
struct Seen {
    outcome: Outcome,
    headers: reqwest::header::HeaderMap,
    body: Value,
}

/// The clients: where the API nodes are, what every request got, and the partner's key.
struct Load {
    started: Instant,
    /// Each API node's base URL while clients can reach it.
    bases: RwLock<Vec<Option<String>>>,
    ops: Mutex<Vec<Op>>,
    stop: AtomicBool,
    /// Turns the clients take over the reachable nodes.
    turn: AtomicUsize,
    /// Agents paying with x402 so far: each comes from an address of its own.
    agents: AtomicUsize,
    http: reqwest::Client,
    partner: BusinessClient,
    /// The database as the outside world's chain sees it: deposits to the wallets' orders.
    chain: Arc<dyn swapd_core::store::Store>,
    chain_deposits: Mutex<Vec<String>>,
    creation_keys: Mutex<Vec<String>>,
}

/// A request to send: rebuilt for every attempt (a signed one needs a fresh nonce).
struct Request {
    method: Method,
    path_and_query: String,
    headers: Vec<(&'static str, String)>,
    body: Vec<u8>,
    nonce: Option<String>,
}

impl Load {
    fn now_ms(&self) -> u64 {
        self.started.elapsed().as_millis() as u64
    }

    /// The next API node clients can reach, other than `avoid` when another is.
    async fn pick(&self, avoid: Option<usize>) -> (usize, String) {
        loop {
            let reachable: Vec<(usize, String)> = {
                let bases = self.bases.read().unwrap();
                bases
                    .iter()
                    .enumerate()
                    .filter_map(|(i, b)| b.clone().map(|b| (i, b)))
                    .collect()
            };
            let others: Vec<&(usize, String)> = reachable
                .iter()
                .filter(|(i, _)| Some(*i) != avoid)
                .collect();
            let choice = if others.is_empty() {
                reachable.first()
            } else {
                Some(others[self.turn.fetch_add(1, Ordering::Relaxed) % others.len()])
            };
            if let Some(choice) = choice {
                return choice.clone();
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    async fn send(&self, base: &str, request: &Request) -> Seen {
        let mut builder = self.http.request(
            request.method.clone(),
            format!("{base}{}", request.path_and_query),
        );
        for (name, value) in &request.headers {
            builder = builder.header(*name, value);
        }
        let answer = async {
            let response = builder.body(request.body.clone()).send().await?;
            let status = response.status().as_u16();
            let headers = response.headers().clone();
            let bytes = response.bytes().await?;
            Ok::<_, reqwest::Error>((status, headers, bytes))
        }
        .await;
        match answer {
            Ok((status, headers, bytes)) => {
                let body: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
                let code = body["error"]["code"].as_str().map(str::to_owned);
                Seen {
                    outcome: Outcome::Answered { status, code },
                    headers,
                    body,
                }
            }
            Err(error) => Seen {
                outcome: if error.is_connect() {
                    Outcome::Unreachable
                } else {
                    Outcome::NoAnswer
                },
                headers: Default::default(),
                body: Value::Null,
            },
        }
    }

    /// Sends one request to `node` and records it.
    async fn once(
        &self,
        kind: Kind,
        node: usize,
        base: &str,
        request: &Request,
        about: &About,
    ) -> Seen {
        let sent_ms = self.now_ms();
        let seen = self.send(base, request).await;
        self.ops.lock().unwrap().push(Op {
            kind,
            node,
            sent_ms,
            took_ms: self.now_ms() - sent_ms,
            idempotency_key: about.key.clone(),
            nonce: request.nonce.clone().or_else(|| about.payment.clone()),
            order: about
                .order
                .clone()
                .or_else(|| seen.body["data"]["orderId"].as_str().map(str::to_owned)),
            tx_id: seen.body["data"]["txId"].as_str().map(str::to_owned),
            outcome: seen.outcome.clone(),
        });
        seen
    }

    /// Sends `make()` to one node after another until an answer with `status`, as a client
    /// retrying with the same Idempotency-Key does.
    async fn until(
        &self,
        kind: Kind,
        status: u16,
        about: About,
        make: impl Fn() -> Request,
    ) -> Seen {
        let since = Instant::now();
        let mut last = None;
        let mut wait = RETRY_FIRST;
        loop {
            let (node, base) = self.pick(last).await;
            let seen = self.once(kind, node, &base, &make(), &about).await;
            match &seen.outcome {
                Outcome::Answered { status: s, .. } if *s == status => return seen,
                // The first attempt's answer was lost and this one replays it: a 201 or 202 is
                // replayed as 200 with Idempotent-Replayed (docs/authentication.md), same body.
                Outcome::Answered { status: 200, .. }
                    if matches!(status, 201 | 202)
                        && seen.headers.contains_key("idempotent-replayed") =>
                {
                    return seen;
                }
                Outcome::Answered { status: s, code }
                    if *s < 500 && *s != 429 && !code.as_deref().is_some_and(in_progress) =>
                {
                    panic!("{kind:?} answered {s} {code:?}: {}", seen.body)
                }
                _ => {}
            }
            assert!(
                since.elapsed() < STEP_GIVE_UP,
                "{kind:?} not done after {STEP_GIVE_UP:?}: {}",
                seen.outcome.label()
            );
            last = Some(node);
            // As a client should: backing off, and never sooner than the answer asks.
            let asked = seen
                .headers
                .get("retry-after")
                .and_then(|v| v.to_str().ok()?.parse::<u64>().ok())
                .map_or(Duration::ZERO, Duration::from_secs);
            tokio::time::sleep(wait.max(asked).min(RETRY_MOST)).await;
            wait = (wait * 2).min(RETRY_MOST);
        }
    }

    /// A request of the partner's, signed now.
    fn signed(
        &self,
        method: Method,
        path: &str,
        body: Option<&Value>,
        key: Option<&str>,
    ) -> Request {
        let nonce = swapd_client::new_nonce();
        let signed = self
            .partner
            .sign(
                method,
                path,
                &[],
                body,
                key,
                &nonce,
                swapd_client::now_secs(),
            )
            .unwrap();
        Request {
            method: signed.method,
            path_and_query: signed.path_and_query,
            headers: signed.headers,
            body: signed.body,
            nonce: Some(nonce),
        }
    }
}

/// A 409 that asks to retry shortly: another attempt with the same key or payment is running.
fn in_progress(code: &str) -> bool {
    matches!(code, "idempotency_key_in_use" | "payment_in_progress")
}

/// What a request is about, for its record.
#[derive(Default, Clone)]
struct About {
    key: Option<String>,
    order: Option<String>,
    /// An x402 payment: `payer:nonce`.
    payment: Option<String>,
}

fn order_body() -> Value {
    json!({"fromCcy": "BTC", "toCcy": "USDTTRC", "amount": "0.05", "toAddress": TRON_ADDRESS})
}

/// A partner's order: created, read (and the read replayed on another node), paid in full, or
/// short and then answered in its emergency.
async fn partner_order(load: &Load, short: bool, refund: bool) {
    let key = swapd_client::new_idempotency_key();
    load.creation_keys.lock().unwrap().push(key.clone());
    let body = order_body();
    let created = load
        .until(
            Kind::CreateOrder,
            201,
            About {
                key: Some(key.clone()),
                ..About::default()
            },
            || load.signed(Method::POST, "/api/v3/orders", Some(&body), Some(&key)),
        )
        .await;
    let id = created.body["data"]["orderId"].as_str().unwrap().to_owned();
    let about = |key: Option<String>| About {
        key,
        order: Some(id.clone()),
        ..About::default()
    };
    let path = format!("/api/v3/orders/{id}");

    // The same signed read on two nodes: the second is refused, wherever the first went.
    let read = load.signed(Method::GET, &path, None, None);
    let (first, base) = load.pick(None).await;
    let answered = load
        .once(Kind::Read, first, &base, &read, &about(None))
        .await;
    if matches!(answered.outcome, Outcome::Answered { status: 200, .. }) {
        let (second, base) = load.pick(Some(first)).await;
        if second != first {
            load.once(Kind::ReplayedNonce, second, &base, &read, &about(None))
                .await;
        }
    }

    let deposit_key = swapd_client::new_idempotency_key();
    let amount = if short { "0.04" } else { "0.05" };
    let deposit = json!({"amount": amount});
    let deposit_path = format!("/api/v3/sandbox/orders/{id}/deposit");
    load.until(Kind::Deposit, 202, about(Some(deposit_key.clone())), || {
        load.signed(
            Method::POST,
            &deposit_path,
            Some(&deposit),
            Some(&deposit_key),
        )
    })
    .await;
    if !short {
        return;
    }
    let since = Instant::now();
    loop {
        let seen = load
            .until(Kind::ReadOrder, 200, about(None), || {
                load.signed(Method::GET, &path, None, None)
            })
            .await;
        if seen.body["data"]["status"] == "emergency" {
            break;
        }
        assert!(
            since.elapsed() < STEP_GIVE_UP,
            "{id} never held for a choice: {}",
            seen.body
        );
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    let answer_key = swapd_client::new_idempotency_key();
    let choice = if refund {
        json!({"choice": "REFUND", "refundAddress": BTC_ADDRESS})
    } else {
        json!({"choice": "EXCHANGE"})
    };
    let emergency_path = format!("/api/v3/orders/{id}/emergency");
    load.until(
        Kind::Emergency,
        200,
        about(Some(answer_key.clone())),
        || {
            load.signed(
                Method::POST,
                &emergency_path,
                Some(&choice),
                Some(&answer_key),
            )
        },
    )
    .await;
}

/// An agent's order paid with x402 by a wallet of its own, then its deposit on the chain.
async fn paid_order(load: &Load) {
    let key = swapd_client::new_idempotency_key();
    load.creation_keys.lock().unwrap().push(key.clone());
    let body = serde_json::to_vec(&order_body()).unwrap();
    // Each agent comes from an address of its own, as the load balancer (a trusted proxy)
    // reports it: paid attempts are limited per client address.
    let agent = load.agents.fetch_add(1, Ordering::Relaxed);
    let address = format!("198.51.{}.{}", agent / 250 % 250, agent % 250 + 1);
    let request = |payment: Option<&str>| {
        let mut headers = vec![
            ("Idempotency-Key", key.clone()),
            ("Content-Type", "application/json".to_owned()),
            ("X-Forwarded-For", address.clone()),
        ];
        if let Some(payment) = payment {
            headers.push(("PAYMENT-SIGNATURE", payment.to_owned()));
        }
        Request {
            method: Method::POST,
            path_and_query: "/api/x402/orders".into(),
            headers,
            body: body.clone(),
            nonce: None,
        }
    };
    let challenge = load
        .until(Kind::X402Challenge, 402, About::default(), || request(None))
        .await;
    let required = crate::support::x402::required(&crate::support::Resp {
        status: 402,
        headers: challenge.headers,
        body: challenge.body,
    });
    let wallet = PrivateKeySigner::random();
    let payment = crate::support::x402::pay(&required, &wallet, swapd_client::now_secs());
    let paid = format!(
        "{}:{}",
        wallet.address().to_checksum(None),
        payment.payload["authorization"]["nonce"].as_str().unwrap()
    );
    let (_, header) = crate::support::x402::payment_header(&payment);
    let created = load
        .until(
            Kind::X402Order,
            201,
            About {
                key: Some(key.clone()),
                payment: Some(paid),
                ..About::default()
            },
            || request(Some(&header)),
        )
        .await;
    let data = &created.body["data"];
    let address = data["from"]["depositAddress"].as_str().unwrap().to_owned();
    load.chain
        .sandbox_record_deposit(
            &SandboxDeposit {
                tx_id: format!("partition-{}", data["orderId"].as_str().unwrap()),
                address: address.clone(),
                tag: data["from"]["depositTag"].as_str().map(str::to_owned),
                amount: data["from"]["amount"].as_str().unwrap().to_owned(),
                confirmations: 0,
                seen_at_ms: swapd_client::now_secs() * 1000,
            },
            None,
        )
        .await
        .unwrap();
    load.chain_deposits.lock().unwrap().push(address);
}

/// One customer: orders of every kind in turn until the load stops.
async fn customer(load: Arc<Load>, me: usize) {
    let mut turn = me;
    while !load.stop.load(Ordering::SeqCst) {
        match turn % 4 {
            0 | 1 => partner_order(&load, false, false).await,
            2 => partner_order(&load, true, turn % 8 == 2).await,
            _ => paid_order(&load).await,
        }
        turn += CUSTOMERS;
    }
}

/// The orders not ended yet, each with its status.
async fn open_orders(store: &dyn swapd_core::store::Store) -> Vec<(String, &'static str)> {
    store
        .search_orders(&OrderSearch {
            limit: 100_000,
            ..OrderSearch::default()
        })
        .await
        .unwrap()
        .into_iter()
        .filter(|o| !o.status.is_terminal())
        .map(|o| (o.id.to_string(), o.status.as_str()))
        .collect()
}

/// Polls `base`'s readiness from now for 10 s: how long until it answered not ready, if it did.
fn watch_readiness(base: &str) -> tokio::task::JoinHandle<Option<Duration>> {
    let url = format!("{base}/readyz");
    tokio::spawn(async move {
        let since = Instant::now();
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(2))
            .build()
            .unwrap();
        while since.elapsed() < Duration::from_secs(10) {
            let ready = http
                .get(&url)
                .send()
                .await
                .is_ok_and(|r| r.status().is_success());
            if !ready {
                return Some(since.elapsed());
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        None
    })
}

/// Polls `base`'s readiness until it is ready: how long that took.
async fn ready_again(base: &str) -> Duration {
    let since = Instant::now();
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(2))
        .build()
        .unwrap();
    loop {
        let ready = http
            .get(format!("{base}/readyz"))
            .send()
            .await
            .is_ok_and(|r| r.status().is_success());
        if ready {
            return since.elapsed();
        }
        assert!(
            since.elapsed() < Duration::from_secs(120),
            "{base} not ready 120 s after the heal"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn stop(child: &mut Child) {
    let _ = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status();
    let _ = child.wait();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cluster_keeps_its_promises_through_partitions_slow_links_and_a_clock_ahead() {
    let Some(pg) = postgres_url() else { return };
    let Some(redis) = swapd_redis::test_support::redis_url() else {
        return;
    };
    if let Some(missing) = net::missing_tools() {
        assert!(
            std::env::var_os("CI").is_none(),
            "the partition test may not be skipped in CI: {missing}"
        );
        eprintln!("SKIPPED: the partition test: {missing}");
        return;
    }
    let schema = PgTestSchema::create(&pg).await;
    let net = Net::create(API_NODES + WORKERS.len());
    let host = net.host;
    let mut pg_relays = Vec::new();
    let mut redis_relays = Vec::new();
    let redis_addr: SocketAddr = {
        let url = reqwest::Url::parse(&redis).unwrap();
        tokio::net::lookup_host((url.host_str().unwrap(), url.port().unwrap_or(6379)))
            .await
            .unwrap()
            .next()
            .unwrap()
    };
    for _ in 0..API_NODES + WORKERS.len() {
        pg_relays.push(SilentRelay::start_on((host, 0).into(), server_addr(&pg)).await);
        redis_relays.push(SilentRelay::start_on((host, 0).into(), redis_addr).await);
    }
    let cluster = Cluster {
        net,
        root: tempfile::tempdir().unwrap(),
        env: vec![
            ("SWAPD_MASTER_KEY", MASTER_KEY.into()),
            (
                "SWAPD_SHARED__REDIS_PREFIX",
                swapd_redis::test_support::unique_prefix(),
            ),
            ("SWAPD_PUBLIC_URL", PUBLIC_URL.into()),
            ("SWAPD_SECURITY__IP_REQUESTS_PER_SECOND", "0".into()),
            // The replayed nonces are failed authentications from the clients' one address;
            // its budget would soon refuse every request from it.
            ("SWAPD_SECURITY__IP_AUTH_FAILURES_PER_MINUTE", "0".into()),
            (
                "SWAPD_SECURITY__TRUSTED_PROXIES",
                format!("[\"{host}/32\"]"),
            ),
        ],
        redis,
        schema,
        pg_relays,
        redis_relays,
    };
    cluster.cli(&["migrate"]);
    let key = cluster.cli(&[
        "keys",
        "create",
        "--name",
        "partition",
        "--permissions",
        "orders:create,orders:read,orders:update,webhooks:read,webhooks:write",
        "--per-minute",
        "1000000",
        "--per-hour",
        "100000000",
        "--weight-per-hour",
        "100000000",
        "--json",
    ]);
    let credentials = Credentials::new(
        key["apiKey"].as_str().unwrap(),
        key["apiSecret"].as_str().unwrap(),
    );
    let mut apis: Vec<(Child, String)> = (0..API_NODES).map(|n| cluster.api(n, false)).collect();
    let mut workers: Vec<Child> = WORKERS.iter().map(|&n| cluster.worker(n, false)).collect();
    // Nonces and rate limits are decided in Redis once every node has read its settings.
    tokio::time::sleep(Duration::from_millis(1_100)).await;

    // The webhook receiver, at one loopback port inside each worker's namespace.
    let first = cluster.net.listen_inside(WORKERS[0], 0);
    let port = first.local_addr().unwrap().port();
    let second = cluster.net.listen_inside(WORKERS[1], port);
    let (verifier, received) = receive_on(
        [first, second]
            .into_iter()
            .map(|l| tokio::net::TcpListener::from_std(l).unwrap())
            .collect(),
    );
    let hook = format!("http://127.0.0.1:{port}/hook");
    let partner = BusinessClient::new(&apis[0].1, credentials.clone()).unwrap();
    subscribe_to_every_event(&partner, hook, &verifier).await;

    let chain: Arc<dyn swapd_core::store::Store> = Arc::new(
        swapd_store::SqlStore::open(
            &cluster.schema.database_url(),
            &swapd_store::StoreOptions::default(),
        )
        .await
        .unwrap(),
    );
    let load = Arc::new(Load {
        started: Instant::now(),
        bases: RwLock::new(apis.iter().map(|(_, b)| Some(b.clone())).collect()),
        ops: Mutex::default(),
        stop: AtomicBool::new(false),
        turn: AtomicUsize::new(0),
        agents: AtomicUsize::new(0),
        http: reqwest::Client::builder()
            .connect_timeout(CONNECT_TIMEOUT)
            .timeout(CLIENT_DEADLINE)
            .build()
            .unwrap(),
        partner,
        chain: chain.clone(),
        chain_deposits: Mutex::default(),
        creation_keys: Mutex::default(),
    });
    let customers: Vec<_> = (0..CUSTOMERS)
        .map(|me| tokio::spawn(customer(load.clone(), me)))
        .collect();

    let mut faults: Vec<FaultWindow> = Vec::new();
    let pause = |secs| tokio::time::sleep(Duration::from_secs(secs));
    let window = |name, node, isolates, from_ms, load: &Load| FaultWindow {
        name,
        node,
        isolates,
        from_ms,
        to_ms: load.now_ms(),
        not_ready_after: None,
        recovery: None,
    };
    pause(5).await;

    // An API node cut off from PostgreSQL for 20 s (packets dropped, not refused), then another
    // from Redis while the others keep it; each watched turning not ready, and ready again.
    let links = [
        (
            0,
            "API node 0 cut off from PostgreSQL",
            &cluster.pg_relays,
            20,
        ),
        (
            1,
            "API node 1 cut off from Redis",
            &cluster.redis_relays,
            15,
        ),
    ];
    for (node, name, relays, secs) in links {
        let from = load.now_ms();
        let readiness = watch_readiness(&apis[node].1);
        cluster.net.cut(node, Cut::Port(relays[node].addr.port()));
        pause(secs).await;
        cluster.net.heal(node);
        let mut fault = window(name, Some(node), false, from, &load);
        fault.not_ready_after = readiness.await.unwrap();
        fault.recovery = Some(ready_again(&apis[node].1).await);
        faults.push(fault);
        pause(5).await;
    }

    // A worker cut off from PostgreSQL in the middle of its leases, healed after they expired
    // (60 s) and the other worker took them: at least 75 s, then until every order open at the
    // cut has ended (the other worker, alone, also carries the whole load: how soon it gets to
    // them is the machine's speed, not a promise), at most STEP_GIVE_UP in all.
    let from = load.now_ms();
    let cut_at = Instant::now();
    cluster.net.cut(
        WORKERS[0],
        Cut::Port(cluster.pg_relays[WORKERS[0]].addr.port()),
    );
    let open_at_cut = open_orders(&*chain).await;
    pause(75).await;
    let mut still_open = open_orders(&*chain).await;
    while cut_at.elapsed() < STEP_GIVE_UP
        && still_open
            .iter()
            .any(|(open, _)| open_at_cut.iter().any(|(id, _)| id == open))
    {
        pause(1).await;
        still_open = open_orders(&*chain).await;
    }
    cluster.net.heal(WORKERS[0]);
    let stranded: Vec<String> = open_at_cut
        .iter()
        .filter_map(|(id, at_cut)| {
            let (_, now) = still_open.iter().find(|(open, _)| open == id)?;
            Some(format!("{id} ({at_cut} at the cut, {now} at the heal)"))
        })
        .collect();
    let open_at_cut: Vec<String> = open_at_cut.into_iter().map(|(id, _)| id).collect();
    faults.push(window(
        "worker 0 cut off from PostgreSQL",
        Some(WORKERS[0]),
        false,
        from,
        &load,
    ));
    pause(5).await;

    // An API node cut off from everyone: clients keep talking to the other two.
    let from = load.now_ms();
    load.bases.write().unwrap()[2] = None;
    cluster.net.cut(2, Cut::Everyone);
    pause(15).await;
    cluster.net.heal(2);
    let mut fault = window(
        "API node 2 cut off from everyone",
        Some(2),
        true,
        from,
        &load,
    );
    fault.recovery = Some(ready_again(&apis[2].1).await);
    load.bases.write().unwrap()[2] = Some(apis[2].1.clone());
    faults.push(fault);
    pause(5).await;

    // 200 ms more per round trip and 5 % loss between every node and PostgreSQL, for a minute.
    let from = load.now_ms();
    for node in 0..API_NODES + WORKERS.len() {
        cluster.pg_relays[node].delay(Duration::from_millis(100));
        let port = cluster.pg_relays[node].addr.port();
        cluster.net.cut(node, Cut::Loss { port, percent: 5 });
    }
    pause(60).await;
    for node in 0..API_NODES + WORKERS.len() {
        cluster.pg_relays[node].delay(Duration::ZERO);
        cluster.net.heal(node);
    }
    faults.push(window(
        "every node to PostgreSQL: +200 ms, 5 % loss",
        None,
        false,
        from,
        &load,
    ));
    pause(5).await;

    // An API node and a worker whose clocks are 90 s ahead, for one phase; each restarted
    // under `faketime` and again without it.
    let restart_api =
        |apis: &mut Vec<(Child, String)>, ahead: bool, faults: &mut Vec<FaultWindow>| {
            let from = load.now_ms();
            load.bases.write().unwrap()[2] = None;
            stop(&mut apis[2].0);
            apis[2] = cluster.api(2, ahead);
            load.bases.write().unwrap()[2] = Some(apis[2].1.clone());
            faults.push(window("API node 2 restarted", Some(2), true, from, &load));
        };
    let from = load.now_ms();
    restart_api(&mut apis, true, &mut faults);
    stop(&mut workers[1]);
    workers[1] = cluster.worker(WORKERS[1], true);
    let skew = BusinessClient::new(&apis[2].1, credentials.clone())
        .unwrap()
        .readiness()
        .await
        .unwrap()
        .server_time
        - swapd_client::now_secs();
    assert!(
        (80..=100).contains(&skew),
        "the node's clock is {skew} s ahead, not 90"
    );
    pause(25).await;
    restart_api(&mut apis, false, &mut faults);
    stop(&mut workers[1]);
    workers[1] = cluster.worker(WORKERS[1], false);
    faults.push(window(
        "API node 2 and worker 1 clocks 90 s ahead",
        Some(2),
        false,
        from,
        &load,
    ));

    // The load stops; every order it acknowledged is carried to its end without faults.
    load.stop.store(true, Ordering::SeqCst);
    for customer in customers {
        customer.await.unwrap();
    }
    let acknowledged: Vec<String> = {
        let ops = load.ops.lock().unwrap();
        ops.iter()
            .filter(|op| matches!(op.kind, Kind::CreateOrder | Kind::X402Order))
            .filter(|op| matches!(op.outcome, Outcome::Answered { status: 201, .. }))
            .filter_map(|op| op.order.clone())
            .collect()
    };
    let deadline = Instant::now() + Duration::from_secs(300);
    let orders = loop {
        let orders = chain
            .search_orders(&OrderSearch {
                limit: 100_000,
                ..OrderSearch::default()
            })
            .await
            .unwrap();
        let open = orders.iter().filter(|o| !o.status.is_terminal()).count();
        if open == 0 || Instant::now() > deadline {
            break orders;
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    };
    let partner_owner = format!("key:{}", key["apiKey"].as_str().unwrap());
    let mut events = Vec::new();
    for order in orders
        .iter()
        .filter(|o| o.owner.to_string() == partner_owner)
    {
        for event in chain.order_events(&order.id).await.unwrap() {
            events.push((event.id.to_string(), order.id.to_string()));
        }
    }
    let deadline = Instant::now() + Duration::from_secs(180);
    while Instant::now() < deadline {
        let missing = {
            let seen = received.lock().unwrap();
            events.iter().any(|(id, _)| !seen.counts.contains_key(id))
        };
        if !missing {
            break;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }

    // The final records, and the checker's verdict.
    let db = sqlx::PgPool::connect(&cluster.schema.database_url())
        .await
        .unwrap();
    let column = |sql: &'static str| {
        let db = db.clone();
        async move {
            sqlx::query_as::<_, (String, String)>(sql)
                .fetch_all(&db)
                .await
                .unwrap()
        }
    };
    let creation: std::collections::HashSet<String> =
        load.creation_keys.lock().unwrap().iter().cloned().collect();
    let creation_keys = sqlx::query_as::<_, (String, Option<Vec<u8>>)>(
        "SELECT idem_key, body FROM idempotency_keys",
    )
    .fetch_all(&db)
    .await
    .unwrap()
    .into_iter()
    .filter(|(key, _)| creation.contains(key))
    .filter_map(|(key, body)| {
        let body: Value =
            serde_json::from_slice(&swapd_store::packed::unpack(&body?).ok()?).ok()?;
        Some((key, order_id_in(&body)?))
    })
    .collect();
    let (seen_counts, unverified) = {
        let seen = received.lock().unwrap();
        (seen.counts.clone(), seen.unverified)
    };
    let finals = Finals {
        orders: orders
            .iter()
            .map(|o| history::FinalOrder {
                id: o.id.to_string(),
                status: o.status.as_str().to_owned(),
                terminal: o.status.is_terminal(),
                provider_ref: o.provider_ref.clone(),
                deposit_address: o.deposit_address.clone(),
                deposit_txs: o.deposits.iter().map(|d| d.tx_id.clone()).collect(),
                payout_tx: o.payout_tx.clone(),
                refund_tx: o.refund_tx.clone(),
            })
            .collect(),
        creation_keys,
        exchanges: column("SELECT id, '' FROM sandbox_exchanges")
            .await
            .into_iter()
            .map(|(id, _)| id)
            .collect(),
        deposits: column("SELECT tx_id, address FROM sandbox_deposits").await,
        transfers: chain
            .sandbox_transfers()
            .await
            .unwrap()
            .into_iter()
            .map(|t| t.key)
            .collect(),
        settlements: column("SELECT payer, nonce FROM x402_settlements")
            .await
            .into_iter()
            .map(|(payer, nonce)| format!("{payer}:{nonce}"))
            .collect(),
        events,
        deliveries: seen_counts,
        unverified,
        chain_deposits: load.chain_deposits.lock().unwrap().clone(),
        worker_cut: (open_at_cut, stranded),
    };
    for child in workers.iter_mut().chain(apis.iter_mut().map(|(c, _)| c)) {
        stop(child);
    }
    let ops = load.ops.lock().unwrap().clone();
    if let Some(path) = std::env::var_os("SWAPD_PARTITION_HISTORY") {
        let lines: Vec<String> = ops
            .iter()
            .map(|op| serde_json::to_string(op).unwrap())
            .collect();
        std::fs::write(path, lines.join("\n")).unwrap();
    }
    let report = history::check(&ops, &faults, &finals);
    println!("partition test: {} orders acknowledged", acknowledged.len());
    for (figure, n) in &report.figures {
        println!("  {figure}: {n}");
    }
    println!("{}", history::matrix(&ops, &faults));
    assert!(
        report.violations.is_empty(),
        "{} promises broken:\n{}",
        report.violations.len(),
        report.violations.join("\n")
    );
    assert!(
        report.figures.get("replayed nonces refused") > Some(&0),
        "no replay was refused: {:?}",
        report.figures
    );
}

/// The `orderId` a stored answer names, wherever the envelope puts it.
fn order_id_in(body: &Value) -> Option<String> {
    match body {
        Value::Object(map) => map
            .get("orderId")
            .and_then(Value::as_str)
            .map(str::to_owned)
            .or_else(|| map.values().find_map(order_id_in)),
        Value::String(text) => serde_json::from_str::<Value>(text)
            .ok()
            .as_ref()
            .and_then(order_id_in),
        _ => None,
    }
}
