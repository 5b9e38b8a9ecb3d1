//! Several nodes (docs/operations.md, "Several nodes"): three `swapd serve --api` and two
//! `swapd serve --worker` processes on one PostgreSQL database and one Redis, the client spreading
//! its requests over the API nodes, one worker killed with SIGKILL and restarted twice while 200
//! orders run.

use std::collections::{HashMap, HashSet};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::http::{HeaderMap, StatusCode};
use reqwest::Method;
use serde_json::Value;
use strum::VariantArray;
use swapd_client::{BusinessClient, Credentials, Error as ClientError};
use swapd_core::store::{OrderStore, SandboxChainStore};
use swapd_store::test_support::{PgTestSchema, postgres_url};

use crate::crash::{paid_order, serve_watched, swapd};
use crate::webhook_durability::standard_headers;

const ORDERS: usize = 200;
const MASTER_KEY: &str = "5f5f5f5f5f5f5f5f5f5f5f5f5f5f5f5f5f5f5f5f5f5f5f5f5f5f5f5f5f5f5f5f";
/// Failed authentications per minute per address, on every node together.
const AUTH_FAILURES_PER_MINUTE: usize = 20;
/// The address the forged requests come from, as the trusted proxy (the test) reports it.
const FORGER: &str = "203.0.113.9";

/// What every node of the cluster is configured with.
struct Cluster {
    env: Vec<(&'static str, String)>,
    /// One data directory (and so one node id) per process.
    root: tempfile::TempDir,
}

impl Cluster {
    fn command(&self, node: &str) -> Command {
        let dir = self.root.path().join(node);
        std::fs::create_dir_all(&dir).unwrap();
        let mut command = swapd(&dir);
        command.envs(self.env.iter().map(|(k, v)| (*k, v.as_str())));
        command
    }

    fn api(&self, node: &str) -> (Child, String) {
        let (child, base, _log) =
            serve_watched(
                self.command(node)
                    .args(["serve", "--api", "--listen", "127.0.0.1:0"]),
            );
        (child, base)
    }

    fn worker(&self, node: &str) -> Child {
        self.command(node)
            .args(["serve", "--worker"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn swapd serve --worker")
    }

    fn cli(&self, args: &[&str]) -> Value {
        let output = self.command("cli").args(args).output().unwrap();
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
        serde_json::from_slice(&output.stdout).unwrap()
    }

    /// A new key's id and credentials.
    fn key(&self, permissions: &str, per_minute: u32) -> (String, Credentials) {
        let per_minute = per_minute.to_string();
        let key = self.cli(&[
            "keys",
            "create",
            "--name",
            "cluster",
            "--permissions",
            permissions,
            "--per-minute",
            &per_minute,
            "--per-hour",
            "1000000",
            "--weight-per-hour",
            "10000000",
            "--json",
        ]);
        let id = key["apiKey"].as_str().unwrap().to_owned();
        let credentials = Credentials::new(&id, key["apiSecret"].as_str().unwrap());
        (id, credentials)
    }
}

/// One client per API node; none waits out a 429, so that refusals are seen.
fn clients(bases: &[String], credentials: &Credentials) -> Vec<BusinessClient> {
    bases
        .iter()
        .map(|base| {
            BusinessClient::new(base, credentials.clone())
                .unwrap()
                .with_retry(swapd_client::RetryPolicy::none())
        })
        .collect()
}

/// The error code of a refused call.
fn refused_with(result: Result<swapd_client::Answer, ClientError>) -> &'static str {
    match result {
        Ok(answer) => panic!("admitted: {:?}", answer.data),
        Err(ClientError::Api { code, .. }) => code.as_str(),
        Err(other) => panic!("{other}"),
    }
}

fn unix_secs() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

fn kill(child: &mut Child) {
    child.kill().unwrap();
    child.wait().unwrap();
}

fn terminate(child: &mut Child) {
    Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    child.wait().unwrap();
}

/// Deliveries received, by event id, and any that did not verify.
#[derive(Default)]
pub(crate) struct Seen {
    pub(crate) counts: HashMap<String, usize>,
    pub(crate) unverified: usize,
}

/// The secret's verifier, once it is known.
pub(crate) type Verifier = Arc<Mutex<Option<standardwebhooks::Webhook>>>;

/// A webhook receiver on a loopback port: its URL, its verifier and what it received.
async fn receiver() -> (String, Verifier, Arc<Mutex<Seen>>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/hook", listener.local_addr().unwrap());
    let (verifier, seen) = receive_on(vec![listener]);
    (url, verifier, seen)
}

/// A webhook receiver answering on every one of `listeners`.
pub(crate) fn receive_on(listeners: Vec<tokio::net::TcpListener>) -> (Verifier, Arc<Mutex<Seen>>) {
    let seen = Arc::new(Mutex::new(Seen::default()));
    let verifier: Verifier = Arc::default();
    let (log, check) = (seen.clone(), verifier.clone());
    let app = axum::Router::new().route(
        "/hook",
        axum::routing::post(move |headers: HeaderMap, body: axum::body::Bytes| {
            let (log, check) = (log.clone(), check.clone());
            async move {
                let standard = standard_headers(&headers);
                let verified = check
                    .lock()
                    .unwrap()
                    .as_ref()
                    .is_some_and(|v| v.verify(&body, &standard).is_ok());
                let mut seen = log.lock().unwrap();
                if !verified {
                    seen.unverified += 1;
                    return StatusCode::BAD_REQUEST;
                }
                let id = headers["webhook-id"].to_str().unwrap().to_owned();
                *seen.counts.entry(id).or_default() += 1;
                StatusCode::NO_CONTENT
            }
        }),
    );
    for listener in listeners {
        let app = app.clone();
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    }
    (verifier, seen)
}

/// Subscribes `client`'s key to every event at `url`, and arms `verifier` with the secret.
pub(crate) async fn subscribe_to_every_event(
    client: &BusinessClient,
    url: String,
    verifier: &Verifier,
) {
    let created = client
        .create_webhook(&swapd_client::webhooks::WebhookInput {
            url,
            events: swapd_client::webhooks::EventType::VARIANTS
                .iter()
                .map(|e| e.to_string())
                .collect(),
            description: None,
        })
        .await
        .unwrap();
    *verifier.lock().unwrap() = Some(standardwebhooks::Webhook::new(&created.secret).unwrap());
}

/// A request with a key that does not exist, from [`FORGER`]: 401 `api_key_invalid`, counted
/// against that address's failure budget.
async fn forged(http: &reqwest::Client, base: &str) -> (u16, String) {
    let response = http
        .get(format!("{base}/api/v3"))
        .header("X-Forwarded-For", FORGER)
        .header("X-API-KEY", "key_does_not_exist")
        .header("X-API-TIMESTAMP", unix_secs().to_string())
        .header("X-API-NONCE", swapd_client::new_nonce())
        .header("X-API-SIGN", "0".repeat(64))
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    let body: Value = response.json().await.unwrap();
    (status, body["error"]["code"].as_str().unwrap().to_owned())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_api_nodes_and_two_workers_share_postgres_and_redis_through_worker_kills() {
    let Some(pg) = postgres_url() else { return };
    let Some(redis) = swapd_redis::test_support::redis_url() else {
        return;
    };
    let schema = PgTestSchema::create(&pg).await;
    let cluster = Cluster {
        env: vec![
            ("SWAPD_DATABASE_URL", schema.database_url()),
            ("SWAPD_MASTER_KEY", MASTER_KEY.into()),
            ("SWAPD_SHARED__REDIS_URL", redis),
            (
                "SWAPD_SHARED__REDIS_PREFIX",
                swapd_redis::test_support::unique_prefix(),
            ),
            (
                "SWAPD_SECURITY__TRUSTED_PROXIES",
                "[\"127.0.0.1/32\"]".into(),
            ),
            (
                "SWAPD_SECURITY__IP_AUTH_FAILURES_PER_MINUTE",
                AUTH_FAILURES_PER_MINUTE.to_string(),
            ),
            ("SWAPD_SECURITY__IP_REQUESTS_PER_SECOND", "0".into()),
        ],
        root: tempfile::tempdir().unwrap(),
    };
    let status = cluster.command("cli").arg("migrate").status().unwrap();
    assert!(status.success());
    let mut apis: Vec<(Child, String)> = (0..3).map(|i| cluster.api(&format!("api{i}"))).collect();
    let bases: Vec<String> = apis.iter().map(|(_, base)| base.clone()).collect();
    for base in &bases {
        let ready: Value = reqwest::get(format!("{base}/readyz"))
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        assert_eq!(ready["data"]["sharedState"], "redis", "{ready}");
        assert_eq!(ready["data"]["database"], "postgres", "{ready}");
    }
    // Nonces and rate limits are decided in Redis from now on; the clients sign after it.
    tokio::time::sleep(Duration::from_millis(1_100)).await;

    // A nonce used on one node is refused on the others.
    let (_, reader) = cluster.key("prices:read", 10);
    let readers = clients(&bases, &reader);
    let once = readers[0]
        .sign(
            Method::GET,
            "/api/v3",
            &[],
            None::<&()>,
            None,
            &swapd_client::new_nonce(),
            unix_secs(),
        )
        .unwrap();
    readers[0].execute(once.clone()).await.unwrap();
    for client in &readers[1..] {
        assert_eq!(
            refused_with(client.execute(once.clone()).await),
            "nonce_reused"
        );
    }

    // The key's limit is global: 10 a minute (one spent), whichever nodes count.
    let mut admitted = 0;
    for i in 0..30 {
        match readers[i % 3]
            .send(Method::GET, "/api/v3", &[], None::<&()>)
            .await
        {
            Ok(_) => admitted += 1,
            Err(ClientError::Api { code, .. }) => assert_eq!(code.as_str(), "rate_limit_exceeded"),
            Err(other) => panic!("{other}"),
        }
    }
    assert_eq!(admitted, 9);

    // So is an address's failed-authentication budget: spent, and one failure past it, on any
    // nodes, and every node refuses the address.
    let http = reqwest::Client::new();
    for i in 0..=AUTH_FAILURES_PER_MINUTE {
        assert_eq!(
            forged(&http, &bases[i % 3]).await,
            (401, "api_key_invalid".into())
        );
    }
    for base in &bases {
        assert_eq!(forged(&http, base).await, (429, "ip_rate_limited".into()));
    }

    // 200 orders with their deposits, while a worker is killed and restarted twice.
    let (hook, verifier, seen) = receiver().await;
    let (partner_id, partner) = cluster.key(
        "orders:create,orders:read,webhooks:read,webhooks:write",
        1_000_000,
    );
    let partners = clients(&bases, &partner);
    subscribe_to_every_event(&partners[1], hook, &verifier).await;
    let mut workers = [cluster.worker("worker0"), cluster.worker("worker1")];
    let mut orders = Vec::new();
    for i in 0..ORDERS {
        let id = paid_order(&partners[i % 3]).await;
        orders.push(id);
        if i == ORDERS / 3 || i == 2 * ORDERS / 3 {
            kill(&mut workers[0]);
            workers[0] = cluster.worker("worker0");
        }
    }

    // Every order completes with exactly one payout.
    let store = swapd_store::SqlStore::open(
        &schema.database_url(),
        &swapd_store::StoreOptions::default(),
    )
    .await
    .unwrap();
    let deadline = Instant::now() + Duration::from_secs(300);
    let mut pending: HashSet<String> = orders.iter().cloned().collect();
    while !pending.is_empty() {
        assert!(
            Instant::now() < deadline,
            "{} orders not completed, e.g. {:?}",
            pending.len(),
            pending.iter().next()
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
        let mut done = Vec::new();
        for (i, id) in pending.iter().enumerate() {
            let order = partners[i % 3].order_status(id).await.unwrap();
            if order.status.as_str() == "completed" {
                done.push(id.clone());
            }
        }
        for id in done {
            pending.remove(&id);
        }
    }
    let mut payouts: HashMap<String, usize> = HashMap::new();
    for transfer in store.sandbox_transfers().await.unwrap() {
        if let Some(order) = transfer.key.strip_prefix("payout:") {
            *payouts.entry(order.to_owned()).or_default() += 1;
        }
    }
    for id in &orders {
        assert_eq!(payouts.get(id), Some(&1), "payouts of {id}");
    }

    // Every event of every order is delivered at least once, and every delivery verifies.
    let mut events = Vec::new();
    for id in &orders {
        events.extend(
            store
                .order_events(&crate::support::parsed(id))
                .await
                .unwrap()
                .into_iter()
                .map(|e| e.id.to_string()),
        );
    }
    let deadline = Instant::now() + Duration::from_secs(180);
    loop {
        let missing = {
            let seen = seen.lock().unwrap();
            assert_eq!(seen.unverified, 0, "deliveries that did not verify");
            events
                .iter()
                .filter(|id| !seen.counts.contains_key(*id))
                .count()
        };
        if missing == 0 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "{missing} events never delivered"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }

    // A revoked key stops working on every node within a second, although each cached it.
    for client in &partners {
        client
            .send(Method::GET, "/api/v3", &[], None::<&()>)
            .await
            .unwrap();
    }
    cluster.cli(&["keys", "revoke", &partner_id, "--json"]);
    let revoked_at = Instant::now();
    let mut stopped = [false; 3];
    while !stopped.iter().all(|&s| s) {
        assert!(
            revoked_at.elapsed() < Duration::from_secs(1),
            "still served after a second: {stopped:?}"
        );
        for (i, client) in partners.iter().enumerate() {
            if !stopped[i] {
                let answer = client.send(Method::GET, "/api/v3", &[], None::<&()>).await;
                stopped[i] = matches!(answer, Err(ClientError::Api { code, .. }) if code.as_str() == "api_key_revoked");
            }
        }
    }

    for child in workers.iter_mut().chain(apis.iter_mut().map(|(c, _)| c)) {
        terminate(child);
    }
}
