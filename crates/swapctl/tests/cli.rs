//! swapctl against a running sandbox swapd: every command group, from the outside.

mod support;

use std::io::{BufRead, BufReader, Read};
use std::net::TcpListener;
use std::process::{Child, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::*;

fn lines(stdout: &str) -> Vec<Value> {
    stdout
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}")))
        .collect()
}

fn text(value: &Value) -> &str {
    value
        .as_str()
        .unwrap_or_else(|| panic!("not a string: {value}"))
}

#[test]
fn catalog_tokens_quotes_routes_and_a_resolved_order() {
    let sandbox = Sandbox::start();
    let readiness = sandbox.json(&["readiness"]);
    assert_eq!(readiness["mode"], "sandbox");
    assert_eq!(readiness["apiKey"], sandbox.api_key.as_str());
    assert!(sandbox.text(&["readiness"]).contains("/api/v3/orders"));
    let paid = sandbox.json(&["--x402", "readiness"]);
    assert_eq!(paid["x402Version"], 2);
    assert!(
        sandbox
            .text(&["--x402", "readiness"])
            .contains("PaidWallet")
    );

    let table = sandbox.text(&["currencies"]);
    assert!(table.contains("BTC") && table.contains("USDTTRC") && table.contains("currencies"));
    assert!(sandbox.json(&["currencies"])["count"].as_u64().unwrap() >= 20);

    let popular = sandbox.json(&["tokens", "popular"]);
    let token = &popular["tokens"][0];
    let (chain, address) = (text(&token["chain"]), text(&token["address"]));
    let found = sandbox.json(&[
        "tokens",
        "by-address",
        "--chain",
        chain,
        "--address",
        address,
    ]);
    assert_eq!(found["address"], token["address"]);
    let logo = sandbox.json(&["tokens", "logo", "--chain", chain, "--address", address]);
    assert!(text(&logo["image"]).starts_with("data:image/"));
    let search = sandbox.json(&["tokens", "search", "usdc", "--limit", "3"]);
    let hits = search["tokens"].as_array().unwrap();
    assert!(!hits.is_empty() && hits.len() <= 3);
    assert!(sandbox.text(&["tokens", "search", "usdc"]).contains("USDC"));

    let quote = sandbox.json(&["quote", "--from", "BTC", "--to", "ETH", "--amount", "0.1"]);
    assert_eq!(quote["fromCcy"], "BTC");
    assert!(text(&quote["toAmount"]).parse::<f64>().unwrap() > 0.0);
    assert!(
        sandbox
            .text(&["quote", "--from", "BTC", "--to", "ETH", "--amount", "0.1"])
            .contains("BTC →")
    );

    let args = [
        "routes", "--from", "BTC", "--to", "USDTTRC", "--amount", "0.05", "--type", "fixed",
    ];
    let routes = sandbox.json(&args);
    let card = routes["routes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["executionType"] == "offchain" && c["isAvailable"] == true)
        .expect("an offchain card");
    let table = sandbox.text(&args);
    assert!(
        table.contains("rqq_") && table.contains(text(&card["executionProvider"])),
        "{table}"
    );
    let resolved = sandbox.json(&["resolve", text(&card["routeQuoteId"])]);
    let token = text(&resolved["createToken"]);
    let order = sandbox.json(&[
        "order",
        "create",
        "--token",
        token,
        "--to-address",
        TRON_ADDRESS,
    ]);
    assert_eq!(order["status"], "awaiting_deposit");
    assert_eq!(order["to"]["amount"], resolved["toAmount"]);

    // A used createToken is refused with the API's code, and exit status 1.
    let refused = sandbox.failure(&[
        "order",
        "create",
        "--token",
        token,
        "--to-address",
        TRON_ADDRESS,
    ]);
    assert!(refused.contains("error: 4"), "{refused}");
}

#[test]
fn an_order_is_paid_in_the_sandbox_and_watched_to_its_payout() {
    let sandbox = Sandbox::start();
    let order = sandbox.order();
    let id = text(&order["orderId"]);
    let shown = sandbox.text(&["order", "show", id]);
    assert!(
        shown.contains(id) && shown.contains("awaiting_deposit"),
        "{shown}"
    );

    let qr = sandbox.text(&["order", "qr", id]);
    assert!(qr.contains('█'), "a QR code drawn with block characters");
    assert!(
        qr.contains(&format!(
            "bitcoin:{}?amount=0.05",
            text(&order["from"]["depositAddress"])
        )),
        "{qr}"
    );
    let address_only = sandbox.text(&["order", "qr", id, "--address-only"]);
    assert!(!address_only.contains("amount="), "{address_only}");
    assert_eq!(
        sandbox.json(&["order", "qr", id])["qr"]
            .as_array()
            .unwrap()
            .len(),
        2
    );

    let emailed = sandbox.json(&["order", "email", id, "alice@example.com"]);
    assert_eq!(emailed["emailAttached"], true);

    let deposit = sandbox.json(&["order", "deposit", id, "0.05"]);
    assert_eq!(deposit["amount"], "0.05");
    let watched = sandbox.text(&["--json", "order", "watch", id, "--interval-ms", "100"]);
    let changes = lines(&watched);
    let statuses: Vec<&str> = changes.iter().map(|c| text(&c["status"])).collect();
    assert_eq!(statuses.last(), Some(&"completed"), "{statuses:?}");
    assert!(
        statuses.contains(&"confirming") || statuses.contains(&"exchanging"),
        "{statuses:?}"
    );
    assert!(changes.last().unwrap()["to"]["txId"].is_string());
    let human = sandbox.text(&["order", "watch", id]);
    assert!(
        human.contains("completed") && human.contains("paid in"),
        "{human}"
    );

    // A refund needs a deposit that was not exchanged: the API's code reaches the terminal.
    let fresh = sandbox.order();
    let refused = sandbox.failure(&["order", "refund", text(&fresh["orderId"])]);
    assert!(refused.contains("409 order_not_refundable"), "{refused}");
}

#[test]
fn an_emergency_is_answered_with_a_refund() {
    let sandbox = Sandbox::start();
    let order = sandbox.order();
    let id = text(&order["orderId"]);
    sandbox.json(&["order", "deposit", id, "0.04"]);
    let judged = lines(&sandbox.text(&["--json", "order", "watch", id, "--interval-ms", "100"]));
    let last = judged.last().unwrap();
    assert_eq!(last["status"], "emergency");
    assert!(
        last["emergency"]["reasons"]
            .as_array()
            .unwrap()
            .contains(&json!("LESS"))
    );
    assert!(
        sandbox
            .text(&["order", "show", id])
            .contains("swapctl order emergency")
    );

    let chosen = sandbox.json(&[
        "order",
        "emergency",
        id,
        "--choice",
        "refund",
        "--refund-address",
        BTC_ADDRESS,
    ]);
    assert_eq!(chosen["emergency"]["choice"], "REFUND");
    let refunded = lines(&sandbox.text(&["--json", "order", "watch", id, "--interval-ms", "100"]));
    let last = refunded.last().unwrap();
    assert_eq!(last["status"], "refunded");
    assert_eq!(last["refund"]["amount"], "0.04");
    assert_eq!(last["refund"]["address"], BTC_ADDRESS);
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// `swapctl --json webhooks listen` in the background, with its printed events on a channel.
struct Listener {
    child: Child,
    events: mpsc::Receiver<Value>,
}

impl Listener {
    fn start(sandbox: &Sandbox, port: u16, secret: &str, count: Option<u32>) -> Listener {
        let mut command = std::process::Command::new(assert_cmd::cargo::cargo_bin("swapctl"));
        command
            .env("HOME", &sandbox.dir)
            .env("XDG_CONFIG_HOME", &sandbox.dir)
            .args([
                "--json",
                "webhooks",
                "listen",
                "--listen",
                &format!("127.0.0.1:{port}"),
            ])
            .args(["--secret", secret])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        if let Some(count) = count {
            command.args(["--count", &count.to_string()]);
        }
        let mut child = command.spawn().unwrap();
        let stdout = child.stdout.take().unwrap();
        let (sender, events) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let event = serde_json::from_str(&line.unwrap()).unwrap();
                if sender.send(event).is_err() {
                    break;
                }
            }
        });
        let started = Instant::now();
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                started.elapsed() < Duration::from_secs(30),
                "listen did not start"
            );
            assert!(child.try_wait().unwrap().is_none(), "listen exited early");
            std::thread::sleep(Duration::from_millis(50));
        }
        Listener { child, events }
    }

    /// The first verified event that `wanted` accepts (others are skipped).
    fn event(&self, wanted: impl Fn(&Value) -> bool) -> Value {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let event = self
                .events
                .recv_timeout(left)
                .expect("the delivery arrived");
            if wanted(&event) {
                return event;
            }
        }
    }

    /// Stops it and returns what it reported on stderr.
    fn stop(mut self) -> String {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let mut stderr = String::new();
        self.child
            .stderr
            .take()
            .unwrap()
            .read_to_string(&mut stderr)
            .unwrap();
        stderr
    }
}

#[test]
fn webhooks_are_managed_and_a_local_listener_verifies_their_deliveries() {
    let sandbox = Sandbox::start();
    let port = free_port();
    let url = format!("http://127.0.0.1:{port}/hooks");
    let created = sandbox.json(&[
        "webhooks",
        "create",
        "--url",
        &url,
        "--events",
        "all",
        "--description",
        "cli",
    ]);
    let id = text(&created["webhookId"]).to_owned();
    let secret = text(&created["secret"]).to_owned();
    assert_eq!(created["events"].as_array().unwrap().len(), 9);

    // The listener verifies a test delivery and a real order event.
    let listener = Listener::start(&sandbox, port, &secret, None);
    let tested = sandbox.text(&["webhooks", "test", &id]);
    assert!(tested.contains("answered 204"), "{tested}");
    let test = listener.event(|e| e["test"] == true);
    assert_eq!(test["sequence"], 0);
    let order = sandbox.order();
    let real = listener.event(|e| e["data"]["order"]["orderId"] == order["orderId"]);
    assert!(text(&real["type"]).starts_with("order."));
    listener.stop();

    let list = sandbox.json(&["webhooks", "list"]);
    assert_eq!(list["webhooks"][0]["webhookId"], id.as_str());
    assert!(sandbox.text(&["webhooks", "list"]).contains(&url));
    let disabled = sandbox.json(&[
        "webhooks",
        "update",
        &id,
        "--disable",
        "--clear-description",
    ]);
    assert_eq!(disabled["status"], "disabled");
    assert_eq!(disabled["description"], Value::Null);
    let enabled = sandbox.json(&[
        "webhooks",
        "update",
        &id,
        "--enable",
        "--events",
        "order.completed,order.failed",
    ]);
    assert_eq!(enabled["status"], "active");
    assert_eq!(
        enabled["events"],
        json!(["order.completed", "order.failed"])
    );

    // After a rotation the new secret verifies; the replayed event arrives again, same id.
    let rotated = sandbox.json(&["webhooks", "rotate", &id, "--grace", "0"]);
    let new_secret = text(&rotated["secret"]).to_owned();
    assert_ne!(new_secret, secret);
    assert_eq!(rotated["previousSecretExpiresAt"], Value::Null);
    let listener = Listener::start(&sandbox, port, &new_secret, None);
    let replayed = sandbox.json(&["webhooks", "replay", &id, "--event", text(&real["id"])]);
    assert_eq!(replayed["queued"], 1);
    listener.event(|e| e["id"] == real["id"]);
    listener.stop();

    let log = sandbox.json(&["webhooks", "deliveries", &id, "--limit", "10"]);
    assert!(log["count"].as_u64().unwrap() >= 2);
    assert!(
        sandbox
            .text(&["webhooks", "deliveries", &id])
            .contains("succeeded")
    );

    // A listener with the old secret refuses deliveries; the test call reports it.
    let stale = Listener::start(&sandbox, port, &secret, None);
    let refused = sandbox.failure(&["webhooks", "test", &id]);
    assert!(refused.contains("not accepted"), "{refused}");
    assert!(stale.stop().contains("refused a delivery"));

    // --count: a listener that exits by itself after that many verified deliveries.
    let quiet_port = free_port();
    let quiet = sandbox.json(&[
        "webhooks",
        "create",
        "--url",
        &format!("http://127.0.0.1:{quiet_port}/"),
        "--events",
        "order.failed",
    ]);
    let mut counted = Listener::start(&sandbox, quiet_port, text(&quiet["secret"]), Some(1));
    sandbox.text(&["webhooks", "test", text(&quiet["webhookId"])]);
    let status = counted.child.wait().unwrap();
    assert!(status.success());
    assert_eq!(counted.events.recv().unwrap()["test"], true);
}

#[test]
fn an_onchain_swap_is_planned_reported_and_followed() {
    let sandbox = Sandbox::start();
    let routes = sandbox.json(&[
        "routes", "--from", "ETHARB", "--to", "USDCARB", "--amount", "0.1", "--wallet", EVM_WALLET,
    ]);
    let card = routes["routes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["executionType"] == "onchain" && c["isAvailable"] == true)
        .expect("an onchain card");
    let plan = sandbox.json(&[
        "onchain",
        "resolve",
        text(&card["routeQuoteId"]),
        "--wallet",
        EVM_WALLET,
    ]);
    let (plan_id, token) = (
        text(&plan["executionPlanId"]),
        text(&plan["executionAccessToken"]),
    );
    assert!(!plan["steps"].as_array().unwrap().is_empty());
    let human = sandbox.text(&[
        "onchain",
        "resolve",
        text(&card["routeQuoteId"]),
        "--wallet",
        EVM_WALLET,
    ]);
    assert!(
        human.contains(plan_id),
        "the same request gives the same plan: {human}"
    );

    let tx_hash = format!("0x{}01", "ab".repeat(31));
    let reported = sandbox.json(&[
        "onchain",
        "report",
        plan_id,
        "--token",
        token,
        "--wallet",
        EVM_WALLET,
        "--tx-hash",
        &tx_hash,
    ]);
    assert_eq!(reported["status"], "submitted");
    let followed = lines(&sandbox.text(&[
        "--json", "onchain", "status", plan_id, "--token", token, "--wait",
    ]));
    let last = followed.last().unwrap();
    assert_eq!(last["status"], "done");
    assert_eq!(last["outcome"], "completed");
    assert!(
        sandbox
            .text(&["onchain", "status", plan_id, "--token", token])
            .contains("done")
    );

    let refused = sandbox.failure(&["onchain", "status", plan_id, "--token", "xat_forged"]);
    assert!(refused.contains("execution_token_invalid"), "{refused}");
}

#[test]
fn x402_calls_are_paid_by_the_evm_key_and_bound_to_the_wallet_that_signs_in() {
    let sandbox = Sandbox::start();
    assert!(
        sandbox.json(&["--x402", "currencies"])["count"]
            .as_u64()
            .unwrap()
            >= 20
    );
    let free = lines(&sandbox.text(&["--json", "x402", "get", "/api/x402"]));
    assert_eq!(free[0]["status"], 200);
    assert_eq!(free[0]["settlement"], Value::Null);

    let body =
        json!({"fromCcy": "BTC", "toCcy": "USDTTRC", "amount": "0.05", "toAddress": TRON_ADDRESS});
    let paid = lines(&sandbox.text(&[
        "--json",
        "--sign-in",
        "solana",
        "x402",
        "post",
        "/api/x402/orders",
        "--body",
        &body.to_string(),
    ]));
    assert_eq!(paid[0]["status"], 201);
    assert_eq!(paid[0]["settlement"]["success"], true);
    assert_eq!(paid[0]["settlement"]["payer"], EVM_WALLET);
    let id = text(&paid[0]["data"]["orderId"]);

    let mine = sandbox.json(&["--x402", "--sign-in", "solana", "order", "show", id]);
    assert_eq!(mine["orderId"], id);
    let not_mine = sandbox.failure(&["--x402", "order", "show", id]);
    assert!(not_mine.contains("order_not_found"), "{not_mine}");
    let raw = sandbox.text(&[
        "--sign-in",
        "solana",
        "x402",
        "get",
        &format!("/api/x402/orders/{id}"),
        "-q",
        "unused=1",
    ]);
    assert!(raw.contains(id));

    let job = sandbox.json(&[
        "market-intel",
        "create",
        "route-scan",
        "--from",
        "BTC",
        "--to",
        "ETH",
        "--amount",
        "0.5",
        "--wait",
    ]);
    assert_eq!(job["status"], "succeeded");
    assert!(!job["result"]["routes"].as_array().unwrap().is_empty());
    let shown = sandbox.json(&["market-intel", "show", text(&job["jobId"])]);
    assert_eq!(shown["jobId"], job["jobId"]);
    assert!(
        sandbox
            .text(&["market-intel", "show", text(&job["jobId"])])
            .contains("Succeeded")
    );

    // Without an EVM key, paid calls say what to set.
    let mut unpaid = bare_swapctl(&sandbox.dir);
    let output = unpaid
        .env("SWAPD_URL", &sandbox.url)
        .args(["--x402", "currencies"])
        .output()
        .unwrap();
    assert!(!output.status.success());
    assert!(String::from_utf8_lossy(&output.stderr).contains("SWAPD_EVM_KEY"));
}

#[test]
fn the_demo_runs_every_step_against_a_sandbox() {
    let sandbox = Sandbox::start();
    let output = sandbox.swapctl().arg("demo").output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    for step in [
        "✔ offchain order",
        "✔ emergency",
        "✔ onchain bridge",
        "✔ x402 order",
        "All 4 steps ended as expected.",
    ] {
        assert!(stdout.contains(step), "{step} missing from:\n{stdout}");
    }

    // A step that cannot end as expected makes the demo fail.
    let wrong = sandbox
        .swapctl()
        .env("SWAPD_API_SECRET", "sec_wrong")
        .arg("demo")
        .output()
        .unwrap();
    assert!(!wrong.status.success());
    let stderr = String::from_utf8_lossy(&wrong.stderr);
    assert!(
        stderr.contains("signature_invalid") || stderr.contains("api_key_invalid"),
        "{stderr}"
    );
    let missing = sandbox
        .swapctl()
        .args([
            "demo",
            "--data-dir",
            "/nonexistent",
            "--swapd-bin",
            "/nonexistent/swapd",
        ])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&missing.stderr).contains("--swapd-bin"));
}

#[test]
fn settings_come_from_profiles_and_completions_and_help_are_there() {
    let sandbox = Sandbox::start();
    let home = tempfile::tempdir().unwrap();
    let profiles = home.path().join("swapctl");
    std::fs::create_dir_all(&profiles).unwrap();
    std::fs::write(
        profiles.join("profiles.toml"),
        format!(
            "[default]\nurl = \"http://127.0.0.1:1\"\n\n[staging]\nurl = \"{}\"\napi_key = \"{}\"\napi_secret = \"{}\"\n",
            sandbox.url, sandbox.api_key, sandbox.api_secret
        ),
    )
    .unwrap();
    let output = bare_swapctl(home.path())
        .args(["--profile", "staging", "--json", "currencies"])
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    // Flags win over the profile.
    let output = bare_swapctl(home.path())
        .args([
            "--url",
            "http://127.0.0.1:1",
            "--profile",
            "staging",
            "currencies",
        ])
        .output()
        .unwrap();
    assert!(!output.status.success());
    let output = bare_swapctl(home.path())
        .args(["--profile", "prod", "currencies"])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&output.stderr).contains("default, staging"));
    let output = bare_swapctl(sandbox.dir.as_path())
        .arg("currencies")
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&output.stderr).contains("SWAPD_API_KEY"));

    for shell in ["bash", "zsh", "fish", "powershell", "elvish"] {
        let output = bare_swapctl(home.path())
            .args(["completions", shell])
            .output()
            .unwrap();
        assert!(
            output.status.success() && String::from_utf8_lossy(&output.stdout).contains("swapctl")
        );
    }
    for args in [
        &["--help"][..],
        &["order", "create", "--help"],
        &["webhooks", "listen", "--help"],
        &["demo", "--help"],
    ] {
        let output = bare_swapctl(home.path()).args(args).output().unwrap();
        assert!(
            String::from_utf8_lossy(&output.stdout).contains("Example"),
            "{args:?}"
        );
    }
}
