//! A worker process killed with SIGKILL between sending a payout and saving it: after a
//! restart the order completes and exactly one payout exists.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use reqwest::Method;
use serde_json::{Value, json};

pub(crate) const SWAPD: &str = env!("CARGO_BIN_EXE_swapd");

pub(crate) fn swapd(cwd: &Path) -> Command {
    let mut command = Command::new(SWAPD);
    sandbox_node(&mut command, cwd);
    command
}

/// Runs `command` (swapd, or a program that starts it) in `cwd` with the sandbox settings of
/// these tests and no `SWAPD_*` setting of the caller's.
pub(crate) fn sandbox_node(command: &mut Command, cwd: &Path) {
    command.current_dir(cwd);
    for (key, _) in std::env::vars() {
        if key.starts_with("SWAPD_") {
            command.env_remove(key);
        }
    }
    command
        .env("RUST_LOG", "warn")
        .env("SWAPD_PROVIDERS__SANDBOX_BLOCK_MS", "50")
        .env("SWAPD_ORDERS__POLL_INTERVAL_MS", "50")
        // Every provider delivers what it estimates, at once: these tests are about crashes.
        .env("SWAPD_SANDBOX__PROFILE", "punctual");
}

/// Spawns `command`, forwarding its stderr lines into a channel.
pub(crate) fn spawn_watched(command: &mut Command) -> (Child, mpsc::Receiver<String>) {
    let mut child = command
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn swapd");
    let (send, receive) = mpsc::channel();
    let stderr = child.stderr.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if send.send(line).is_err() {
                return;
            }
        }
    });
    (child, receive)
}

fn wait_for_line(lines: &mpsc::Receiver<String>, needle: &str) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while let Some(left) = deadline.checked_duration_since(Instant::now()) {
        match lines.recv_timeout(left) {
            Ok(line) if line.contains(needle) => return,
            Ok(_) => {}
            Err(_) => break,
        }
    }
    panic!("no line containing `{needle}` within 60 s");
}

/// Starts `swapd serve …` (`command`, listening on port 0), watching its log; returns it with
/// its base URL once it listens.
pub(crate) fn serve_watched(command: &mut Command) -> (Child, String, mpsc::Receiver<String>) {
    let (mut child, log) = spawn_watched(command);
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let base = loop {
        let Some(line) = lines.next() else {
            let _ = child.wait();
            let said: Vec<String> =
                std::iter::from_fn(|| log.recv_timeout(Duration::from_secs(1)).ok()).collect();
            panic!("swapd exited before listening:\n{}", said.join("\n"));
        };
        let line = line.unwrap();
        if let Some(rest) = line.trim().strip_prefix("listening: ") {
            break rest.split_whitespace().next().unwrap().to_owned();
        }
    };
    std::thread::spawn(move || lines.for_each(drop));
    (child, base, log)
}

/// Starts the API role and returns it with its base URL.
fn serve_api(dir: &Path) -> (Child, String) {
    let (child, base, _log) =
        serve_watched(swapd(dir).args(["serve", "--api", "--listen", "127.0.0.1:0"]));
    (child, base)
}

/// Issues an API key with `permissions` in `dir` as `swapd keys create --json` does; its JSON.
pub(crate) fn create_key(dir: &Path, permissions: &str) -> Value {
    let created = swapd(dir)
        .args([
            "keys",
            "create",
            "--name",
            "crash",
            "--permissions",
            permissions,
            "--json",
        ])
        .output()
        .unwrap();
    assert!(
        created.status.success(),
        "{}",
        String::from_utf8_lossy(&created.stderr)
    );
    serde_json::from_slice(&created.stdout).unwrap()
}

/// A Business API client of the server at `base` signing with `key` (`{apiKey, apiSecret}`, as
/// `swapd keys create --json` prints it).
pub(crate) fn client_for(base: &str, key: &Value) -> swapd_client::BusinessClient {
    swapd_client::BusinessClient::new(
        base,
        swapd_client::Credentials::new(
            key["apiKey"].as_str().unwrap(),
            key["apiSecret"].as_str().unwrap(),
        ),
    )
    .unwrap()
}

/// A sandbox order (0.05 BTC to USDT on Tron) and its whole deposit, simulated: its id.
pub(crate) async fn paid_order(client: &swapd_client::BusinessClient) -> String {
    let order = client
        .send(
            Method::POST,
            "/api/v3/orders",
            &[],
            Some(&json!({
            "fromCcy": "BTC", "toCcy": "USDTTRC", "amount": "0.05",
            "toAddress": "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t"})),
        )
        .await
        .unwrap()
        .data;
    let id = order["orderId"].as_str().unwrap().to_owned();
    client
        .send(
            Method::POST,
            &format!("/api/v3/sandbox/orders/{id}/deposit"),
            &[],
            Some(&json!({"amount": "0.05"})),
        )
        .await
        .unwrap();
    id
}

pub(crate) async fn payouts(dir: &Path, order_id: &str) -> Vec<swapd_core::store::SandboxTransfer> {
    let url = format!("sqlite://{}", dir.join("data/swapd.db").display());
    let store = swapd_store::open(&url, &swapd_store::StoreOptions::default())
        .await
        .unwrap();
    let key = format!("payout:{order_id}");
    store
        .sandbox_transfers()
        .await
        .unwrap()
        .into_iter()
        .filter(|t| t.key == key)
        .collect()
}

#[tokio::test]
async fn a_worker_killed_between_payout_and_commit_pays_once_after_restart() {
    let dir = tempfile::tempdir().unwrap();
    let key = create_key(dir.path(), "orders:create,orders:read");
    let (mut api, base) = serve_api(dir.path());
    let client = client_for(&base, &key);

    let (mut doomed, doomed_log) = spawn_watched(
        swapd(dir.path())
            .args(["serve", "--worker"])
            .env("SWAPD_ORDERS__SANDBOX_PAUSE_AFTER_PAYOUT", "true"),
    );
    let id = paid_order(&client).await;

    // The payout is on the chain; the worker has not saved it. Kill it there.
    wait_for_line(&doomed_log, "paused after a payout");
    doomed.kill().unwrap();
    doomed.wait().unwrap();
    let path = format!("/api/v3/orders/{id}");
    let read = |client: &swapd_client::BusinessClient| {
        let client = client.clone();
        let path = path.clone();
        async move {
            client
                .send(Method::GET, &path, &[], None::<&()>)
                .await
                .unwrap()
                .data
        }
    };
    assert_eq!(read(&client).await["status"], "withdrawing");
    let sent = payouts(dir.path(), &id).await;
    assert_eq!(sent.len(), 1);

    // A new worker finishes the order with the payout already sent.
    let (mut worker, _log) = spawn_watched(swapd(dir.path()).args(["serve", "--worker"]));
    let deadline = Instant::now() + Duration::from_secs(60);
    let done = loop {
        let order = read(&client).await;
        if order["status"] == "completed" {
            break order;
        }
        assert!(Instant::now() < deadline, "not completed: {order}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(done["to"]["txId"], sent[0].tx_id.as_str());
    assert_eq!(payouts(dir.path(), &id).await, sent, "exactly one payout");

    for child in [&mut worker, &mut api] {
        Command::new("kill")
            .args(["-TERM", &child.id().to_string()])
            .status()
            .unwrap();
        child.wait().unwrap();
    }
}
