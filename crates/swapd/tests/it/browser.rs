//! The hosted order page in a real headless Chromium: `tests/browser/order_page.py`
//! (Playwright for Python, Debian's `chromium`) against a sandbox `swapd serve`, with orders this
//! test creates through the API. Skipped with the reason printed when Chromium or Playwright is
//! missing; under CI (`CI` set) their absence fails, as `.ci/run` installs both. Screenshots land
//! in `<target>/tmp/browser-artifacts`.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use reqwest::Method;
use serde_json::{Value, json};
use swapd_client::BusinessClient;

use super::crash::{client_for, create_key, payouts, serve_watched, swapd};

const SCRIPT: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../tests/browser/order_page.py"
);
const BTC_REFUND: &str = "bc1qar0srrr7xfkvy5l643lydnw9re59gtzzwf5mdq";

fn chromium() -> PathBuf {
    std::env::var_os("SWAPD_TEST_CHROMIUM")
        .map_or_else(|| "/usr/bin/chromium".into(), PathBuf::from)
}

/// Why the browser test cannot run here, if it cannot.
fn missing() -> Option<String> {
    if !chromium().exists() {
        return Some(format!(
            "no Chromium at {} (apt-get install chromium)",
            chromium().display()
        ));
    }
    let playwright = Command::new("python3")
        .args(["-c", "import playwright.sync_api"])
        .output();
    match playwright {
        Ok(out) if out.status.success() => None,
        _ => Some("no Playwright for Python (pip install playwright==1.56.0)".into()),
    }
}

/// Whether the browser tests can run here; under CI they must.
fn can_run() -> bool {
    let Some(reason) = missing() else {
        return true;
    };
    assert!(
        std::env::var_os("CI").is_none(),
        "browser test cannot run under CI: {reason}"
    );
    eprintln!("skipping the browser test: {reason}");
    false
}

async fn order(client: &BusinessClient, id: &str) -> Value {
    client
        .send(
            Method::GET,
            &format!("/api/v3/orders/{id}"),
            &[],
            None::<&()>,
        )
        .await
        .unwrap()
        .data
}

async fn create(client: &BusinessClient) -> Value {
    let body = json!({"fromCcy": "BTC", "toCcy": "USDTTRC", "amount": "0.05",
                      "toAddress": "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t"});
    client
        .send(Method::POST, "/api/v3/orders", &[], Some(&body))
        .await
        .unwrap()
        .data
}

async fn wait_for_status(client: &BusinessClient, id: &str, status: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let seen = order(client, id).await;
        if seen["status"] == status {
            return seen;
        }
        assert!(Instant::now() < deadline, "not {status}: {seen}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test]
async fn the_order_page_runs_an_order_and_an_emergency_in_chromium() {
    if !can_run() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let key = create_key(dir.path(), "orders:create,orders:read");
    let (mut server, base, _log) =
        serve_watched(swapd(dir.path()).args(["serve", "--listen", "127.0.0.1:0"]));
    let client = client_for(&base, &key);

    let to_complete = create(&client).await;
    let short = create(&client).await;
    let short_id = short["orderId"].as_str().unwrap();
    client
        .send(
            Method::POST,
            &format!("/api/v3/sandbox/orders/{short_id}/deposit"),
            &[],
            Some(&json!({"amount": "0.04"})),
        )
        .await
        .unwrap();
    wait_for_status(&client, short_id, "emergency").await;

    let artifacts = Path::new(env!("CARGO_TARGET_TMPDIR")).join("browser-artifacts");
    let run = Command::new("python3")
        .arg(SCRIPT)
        .args(["--completed", to_complete["orderPageUrl"].as_str().unwrap()])
        .args(["--emergency", short["orderPageUrl"].as_str().unwrap()])
        .args(["--refund-address", BTC_REFUND])
        .arg("--artifacts")
        .arg(&artifacts)
        .env("SWAPD_TEST_CHROMIUM", chromium())
        .output()
        .unwrap();
    let output = format!(
        "{}{}",
        String::from_utf8_lossy(&run.stdout),
        String::from_utf8_lossy(&run.stderr)
    );
    assert!(run.status.success(), "the browser checks failed:\n{output}");

    // What the browser did went through the API's own use cases.
    let id = to_complete["orderId"].as_str().unwrap();
    let done = order(&client, id).await;
    assert_eq!(done["status"], "completed");
    let sent = payouts(dir.path(), id).await;
    assert_eq!(sent.len(), 1, "one payout");
    assert_eq!(done["to"]["txId"].as_str(), Some(sent[0].tx_id.as_str()));
    let refunded = order(&client, short_id).await;
    assert_eq!(refunded["status"], "refunded");
    assert_eq!(refunded["emergency"]["choice"], "REFUND");
    assert_eq!(refunded["refund"]["address"], BTC_REFUND);
    for shot in [
        "order-page-desktop.png",
        "order-page-phone.png",
        "order-page-completed.png",
    ] {
        assert!(artifacts.join(shot).exists(), "{shot} saved");
    }

    server.kill().unwrap();
    server.wait().unwrap();
}

/// A webhook receiver: the event ids it was sent, in order.
async fn receiver() -> (String, std::sync::Arc<std::sync::Mutex<Vec<String>>>) {
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let log = seen.clone();
    let app = axum::Router::new().route(
        "/hook",
        axum::routing::post(move |body: axum::body::Bytes| {
            let log = log.clone();
            async move {
                let event: Value = serde_json::from_slice(&body).unwrap_or_default();
                log.lock()
                    .unwrap()
                    .push(event["id"].as_str().unwrap_or_default().to_owned());
                axum::http::StatusCode::NO_CONTENT
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/hook", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (url, seen)
}

#[tokio::test]
async fn the_console_manages_keys_and_replays_a_delivery_in_chromium() {
    if !can_run() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let password = "correct horse battery staple";
    let mut hashing = swapd(dir.path())
        .args(["console", "hash-password"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    writeln!(hashing.stdin.take().unwrap(), "{password}").unwrap();
    let hashed = hashing.wait_with_output().unwrap();
    assert!(hashed.status.success());
    let hash = String::from_utf8(hashed.stdout).unwrap().trim().to_owned();
    assert!(hash.starts_with("$argon2id$"), "{hash}");

    let key = create_key(dir.path(), "orders:create,orders:read,webhooks:write");
    let (mut server, base, _log) = serve_watched(
        swapd(dir.path())
            .args(["serve", "--listen", "127.0.0.1:0"])
            .env("SWAPD_CONSOLE__PASSWORD_HASH", &hash)
            // The order below pays a service fee: the revenue page has a row.
            .env("SWAPD_FEES__SERVICE_BPS", "30"),
    );
    let client = client_for(&base, &key);
    let (hook, seen) = receiver().await;
    client
        .send(
            Method::POST,
            "/api/v3/webhooks",
            &[],
            Some(&json!({"url": hook, "events": ["order.created"]})),
        )
        .await
        .unwrap();
    create(&client).await;
    let deadline = Instant::now() + Duration::from_secs(30);
    while seen.lock().unwrap().is_empty() {
        assert!(Instant::now() < deadline, "the event was not delivered");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    let artifacts = Path::new(env!("CARGO_TARGET_TMPDIR")).join("browser-artifacts");
    let run = Command::new("python3")
        .arg(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../tests/browser/console.py"
        ))
        .args(["--base", &base, "--password", password])
        .arg("--artifacts")
        .arg(&artifacts)
        .env("SWAPD_TEST_CHROMIUM", chromium())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&run.stdout).into_owned();
    assert!(
        run.status.success(),
        "the console's browser checks failed:\n{stdout}{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let created: Value = serde_json::from_str(stdout.lines().last().unwrap()).unwrap();

    // The key the console created and revoked: known to the API, and refused as revoked.
    let revoked = client_for(&base, &created);
    let refused = revoked
        .send(Method::GET, "/api/v3", &[], None::<&()>)
        .await
        .unwrap_err();
    assert_eq!(refused.code(), Some(swapd_types::ErrorCode::ApiKeyRevoked));
    // The replayed delivery arrived: the same event twice.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let events = seen.lock().unwrap().clone();
        if events.len() >= 2 && events[1..].contains(&events[0]) {
            break;
        }
        assert!(Instant::now() < deadline, "no replay arrived: {events:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(artifacts.join("console-keys.png").exists());

    server.kill().unwrap();
    server.wait().unwrap();
}
