//! Every mutating Business route, killed with SIGKILL right after its effect is written and
//! before it is answered (the sandbox fault `X-Sandbox-Fault: pause-after-commit`): after a
//! restart, the retry with the same Idempotency-Key finds the effect once: it is answered from
//! the record written with the effect, or (a test delivery, sent outside the database) repeated
//! as the same event.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::Path;
use std::process::{Child, Command};
use std::sync::{Arc, Mutex, mpsc};
use std::time::Duration;

use reqwest::Method;
use serde_json::{Value, json};
use swapd_client::{BusinessClient, Credentials, SignedRequest};

use super::crash::{create_key, serve_watched, swapd};

const TRON_ADDRESS: &str = "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t";
const BTC_ADDRESS: &str = "bc1qar0srrr7xfkvy5l643lydnw9re59gtzzwf5mdq";
const WALLET: &str = "0x52908400098527886E0F7030069857D2E4169EE7";

/// The server (API and worker) with the fault header honoured, its base URL and its log.
struct Node {
    child: Child,
    base: String,
    log: mpsc::Receiver<String>,
}

impl Node {
    fn start(dir: &Path) -> Node {
        let (child, base, log) = serve_watched(
            swapd(dir)
                .args(["serve", "--listen", "127.0.0.1:0"])
                .env("SWAPD_SANDBOX_FAULT_HEADER", "true"),
        );
        Node { child, base, log }
    }
}

fn receiver() -> (String, Arc<Mutex<Vec<String>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/hook", listener.local_addr().unwrap());
    let ids = Arc::new(Mutex::new(Vec::new()));
    let seen = ids.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut length = 0;
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                    break;
                }
                let lower = line.to_ascii_lowercase();
                if let Some(value) = lower.strip_prefix("content-length:") {
                    length = value.trim().parse().unwrap_or(0);
                }
                if let Some(value) = lower.strip_prefix("webhook-id:") {
                    seen.lock().unwrap().push(value.trim().to_owned());
                }
            }
            let mut body = vec![0; length];
            let _ = reader.read_exact(&mut body);
            let _ = stream.write_all(b"HTTP/1.1 204 No Content\r\nconnection: close\r\n\r\n");
        }
    });
    (url, ids)
}

struct Harness {
    dir: tempfile::TempDir,
    node: Node,
    credentials: (String, String),
    sequence: u32,
}

impl Harness {
    fn client(&self) -> BusinessClient {
        BusinessClient::new(
            &self.node.base,
            Credentials::new(&self.credentials.0, &self.credentials.1),
        )
        .unwrap()
    }

    fn signed(
        &self,
        method: Method,
        path: &str,
        body: &Value,
        key: &str,
        extra: &[(&'static str, &str)],
    ) -> SignedRequest {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs() as i64;
        let mut request = self
            .client()
            .sign(
                method,
                path,
                &[],
                Some(body),
                Some(key),
                &swapd_client::new_nonce(),
                now,
            )
            .unwrap();
        request.headers.extend(
            extra
                .iter()
                .map(|(name, value)| (*name, (*value).to_owned())),
        );
        request
    }

    /// Sends the mutation with the fault, kills the server where it paused, restarts it, and
    /// sends it again with the same Idempotency-Key: the retry's answer.
    async fn crash_and_retry(
        &mut self,
        method: Method,
        path: &str,
        body: Value,
        extra: &[(&'static str, &str)],
    ) -> swapd_client::Answer {
        self.sequence += 1;
        let key = format!("crash-{}-{}", self.sequence, std::process::id());
        let mut faulted = extra.to_vec();
        faulted.push(("X-Sandbox-Fault", "pause-after-commit"));
        // Sent until an execution has its effect and pauses: one that fails (the database busy
        // under load, say) answers instead, and is sent again with the same key.
        let mut paused = false;
        for _ in 0..20 {
            let doomed = self.signed(method.clone(), path, &body, &key, &faulted);
            let client = self.client();
            let sent = tokio::spawn(async move { client.execute(doomed).await });
            let deadline = std::time::Instant::now() + Duration::from_secs(60);
            while std::time::Instant::now() < deadline && !sent.is_finished() {
                match self.node.log.recv_timeout(Duration::from_millis(50)) {
                    Ok(line) if line.contains("paused after a mutation's effect") => {
                        paused = true;
                        break;
                    }
                    Ok(line) => eprintln!("swapd: {line}"),
                    Err(_) => {}
                }
            }
            if paused {
                drop(sent);
                break;
            }
            let answer = sent.await.unwrap();
            eprintln!("{path}: answered instead of pausing ({answer:?}); sending it again");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        assert!(paused, "{path}: never paused after an effect");
        self.node.child.kill().unwrap();
        self.node.child.wait().unwrap();

        self.node = Node::start(self.dir.path());
        // Requests signed in the second of an unclean restart are refused: sign in the next.
        tokio::time::sleep(Duration::from_millis(1_100)).await;
        let retry = self.signed(method, path, &body, &key, extra);
        match self.client().execute(retry).await {
            Ok(answer) => answer,
            Err(error) => panic!("{path}: the retry failed: {error:?}"),
        }
    }

    async fn call(
        &self,
        method: Method,
        path: &str,
        query: &[(&str, &str)],
        body: Option<&Value>,
    ) -> Value {
        self.client()
            .send(method, path, query, body)
            .await
            .unwrap_or_else(|e| panic!("{path}: {e:?}"))
            .data
    }

    async fn routes(&self, from: &str, to: &str, amount: &str) -> Vec<Value> {
        let query = [
            ("fromCcy", from),
            ("toCcy", to),
            ("amount", amount),
            ("walletAddress", WALLET),
        ];
        self.call(Method::GET, "/api/v3/routes", &query, None).await["routes"]
            .as_array()
            .unwrap()
            .clone()
    }

    async fn wait_for_status(&self, order_id: &str, status: &str) {
        for _ in 0..600 {
            let order = self
                .call(
                    Method::GET,
                    &format!("/api/v3/orders/{order_id}"),
                    &[],
                    None,
                )
                .await;
            if order["status"] == status {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("order {order_id} never reached {status}");
    }
}

/// The data of a retry answered from the stored record (not executed again).
fn replayed(route: &str, answer: swapd_client::Answer) -> Value {
    let replayed = answer
        .headers
        .get("idempotent-replayed")
        .is_some_and(|v| v == "true");
    assert!(replayed, "{route}: the retry executed again: {answer:?}");
    answer.data
}

// Two threads: the test blocks one waiting for the server's log while the request is in flight.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_mutation_killed_after_its_effect_has_it_once_after_restart() {
    let dir = tempfile::tempdir().unwrap();
    let key = create_key(
        dir.path(),
        "prices:read,orders:create,orders:read,orders:update,notifications:write,webhooks:read,webhooks:write",
    );
    let node = Node::start(dir.path());
    let mut h = Harness {
        dir,
        node,
        credentials: (
            key["apiKey"].as_str().unwrap().to_owned(),
            key["apiSecret"].as_str().unwrap().to_owned(),
        ),
        sequence: 0,
    };
    let mut effects: HashMap<&str, Value> = HashMap::new();

    // Orders: create, e-mail, deposit; then the emergency choice and the refund of two orders
    // the short deposits put on hold.
    let order_input =
        json!({"fromCcy": "BTC", "toCcy": "USDTTRC", "amount": "0.05", "toAddress": TRON_ADDRESS});
    let answer = h
        .crash_and_retry(Method::POST, "/api/v3/orders", order_input.clone(), &[])
        .await;
    effects.insert("create order", replayed("create order", answer));
    let first = effects["create order"]["orderId"]
        .as_str()
        .unwrap()
        .to_owned();
    let second = h
        .call(Method::POST, "/api/v3/orders", &[], Some(&order_input))
        .await["orderId"]
        .as_str()
        .unwrap()
        .to_owned();
    let answer = h
        .crash_and_retry(
            Method::POST,
            &format!("/api/v3/orders/{first}/notifications/email"),
            json!({"email": "user@example.com"}),
            &[],
        )
        .await;
    effects.insert("e-mail", replayed("e-mail", answer));
    let answer = h
        .crash_and_retry(
            Method::POST,
            &format!("/api/v3/sandbox/orders/{first}/deposit"),
            json!({"amount": "0.04"}),
            &[],
        )
        .await;
    effects.insert("deposit", replayed("deposit", answer));
    h.call(
        Method::POST,
        &format!("/api/v3/sandbox/orders/{second}/deposit"),
        &[],
        Some(&json!({"amount": "0.04"})),
    )
    .await;
    h.wait_for_status(&first, "emergency").await;
    h.wait_for_status(&second, "emergency").await;
    let answer = h
        .crash_and_retry(
            Method::POST,
            &format!("/api/v3/orders/{first}/emergency"),
            json!({"choice": "EXCHANGE"}),
            &[],
        )
        .await;
    effects.insert("emergency", replayed("emergency", answer));
    let answer = h
        .crash_and_retry(
            Method::POST,
            &format!("/api/v3/orders/{second}/refund"),
            json!({"refundAddress": BTC_ADDRESS}),
            &[],
        )
        .await;
    effects.insert("refund", replayed("refund", answer));

    // Webhooks: create, patch, rotate, replay; then a test delivery.
    let (url, received) = receiver();
    let answer = h
        .crash_and_retry(
            Method::POST,
            "/api/v3/webhooks",
            json!({"url": url, "events": ["order.created", "order.updated"]}),
            &[],
        )
        .await;
    effects.insert("create webhook", replayed("create webhook", answer));
    let webhook = effects["create webhook"]["webhookId"]
        .as_str()
        .unwrap()
        .to_owned();
    let answer = h
        .crash_and_retry(
            Method::PATCH,
            &format!("/api/v3/webhooks/{webhook}"),
            json!({"description": "after a crash"}),
            &[],
        )
        .await;
    effects.insert("patch webhook", replayed("patch webhook", answer));
    let answer = h
        .crash_and_retry(
            Method::POST,
            &format!("/api/v3/webhooks/{webhook}/rotate-secret"),
            json!({}),
            &[],
        )
        .await;
    effects.insert("rotate", replayed("rotate", answer));
    let answer = h
        .crash_and_retry(
            Method::POST,
            &format!("/api/v3/webhooks/{webhook}/replay"),
            json!({"since": 0}),
            &[],
        )
        .await;
    effects.insert("replay", replayed("replay", answer));
    let test_input = json!({"webhookId": webhook});
    let answer = h
        .crash_and_retry(Method::POST, "/api/v3/callbacks/test", test_input, &[])
        .await;
    // Sent before the crash and again by the retry: one event, which the receiver sees twice.
    let event = answer.data["eventId"].as_str().unwrap().to_owned();
    let test_deliveries: Vec<String> = received
        .lock()
        .unwrap()
        .iter()
        .filter(|id| **id == event)
        .cloned()
        .collect();
    assert_eq!(
        test_deliveries.len(),
        2,
        "the test event before and after the crash"
    );

    // Routes: the offchain resolve, the onchain resolve and an execution report.
    let offchain = h.routes("BTC", "USDTTRC", "0.05").await;
    let card = offchain
        .iter()
        .find(|c| c["executionType"] == "offchain")
        .unwrap();
    let answer = h
        .crash_and_retry(
            Method::POST,
            "/api/v3/routes/resolve",
            json!({"routeQuoteId": card["routeQuoteId"]}),
            &[],
        )
        .await;
    effects.insert("resolve", replayed("resolve", answer));
    let onchain = h.routes("ETHARB", "USDCARB", "0.1").await;
    let card = onchain
        .iter()
        .find(|c| c["executionType"] == "onchain")
        .unwrap();
    let answer = h
        .crash_and_retry(
            Method::POST,
            "/api/v3/onchain/routes/resolve",
            json!({"routeQuoteId": card["routeQuoteId"], "walletAddress": WALLET}),
            &[],
        )
        .await;
    effects.insert("onchain resolve", replayed("onchain resolve", answer));
    let plan = effects["onchain resolve"].clone();
    let token = plan["executionAccessToken"].as_str().unwrap().to_owned();
    let answer = h
        .crash_and_retry(
            Method::POST,
            "/api/v3/onchain/executions",
            json!({
                "executionPlanId": plan["executionPlanId"], "chainNamespace": "eip155",
                "walletAddress": WALLET, "txHash": format!("0x{}", "ab".repeat(32))}),
            &[("X-Onchain-Execution-Access-Token", &token)],
        )
        .await;
    effects.insert("execution report", replayed("execution report", answer));

    // Each effect once, as the stores hold it.
    let url = format!("sqlite://{}", h.dir.path().join("data/swapd.db").display());
    let store = swapd_store::open(&url, &swapd_store::StoreOptions::default())
        .await
        .unwrap();
    let deposit = &effects["deposit"];
    let deposits = store
        .sandbox_deposits(
            deposit["address"].as_str().unwrap(),
            deposit["tag"].as_str(),
        )
        .await
        .unwrap();
    assert_eq!(deposits.len(), 1, "one deposit: {deposits:?}");
    let subscriptions = h.call(Method::GET, "/api/v3/webhooks", &[], None).await;
    assert_eq!(
        subscriptions["webhooks"].as_array().unwrap().len(),
        1,
        "{subscriptions}"
    );

    Command::new("kill")
        .args(["-TERM", &h.node.child.id().to_string()])
        .status()
        .unwrap();
    h.node.child.wait().unwrap();
}
