//! The `swapd` binary as an operator uses it.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};

use serde_json::Value;
use swapd_store::test_support::{PgTestSchema, postgres_url};

const SWAPD: &str = env!("CARGO_BIN_EXE_swapd");

/// `swapd` run in `cwd` with no inherited SWAPD_* configuration.
fn swapd(cwd: &Path) -> Command {
    let mut command = Command::new(SWAPD);
    command.current_dir(cwd);
    for (key, _) in std::env::vars() {
        if key.starts_with("SWAPD_") {
            command.env_remove(key);
        }
    }
    command.env("RUST_LOG", "warn");
    command
}

fn run(command: &mut Command) -> Output {
    command.output().expect("run swapd")
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

fn ok(command: &mut Command) -> String {
    let output = run(command);
    assert!(
        output.status.success(),
        "failed: {}\n{}",
        stdout(&output),
        stderr(&output)
    );
    stdout(&output)
}

/// Starts `swapd serve` and waits for the line announcing its address.
fn serve(command: &mut Command) -> (Child, String) {
    let mut child = command
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("spawn swapd serve");
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let base = loop {
        let line = lines
            .next()
            .expect("swapd exited before listening")
            .unwrap();
        if let Some(rest) = line.trim().strip_prefix("listening: ") {
            break rest.split_whitespace().next().unwrap().to_owned();
        }
    };
    // Keep draining stdout so the server never blocks on a full pipe.
    std::thread::spawn(move || lines.for_each(drop));
    (child, base)
}

fn terminate(child: &mut Child) -> std::process::ExitStatus {
    let pid = child.id().to_string();
    assert!(
        Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .unwrap()
            .success()
    );
    child.wait().unwrap()
}

async fn get_json(url: &str) -> (u16, Value) {
    let response = reqwest::get(url).await.unwrap();
    (response.status().as_u16(), response.json().await.unwrap())
}

#[tokio::test]
async fn serve_with_zero_configuration_creates_its_data_and_stops_on_sigterm() {
    let dir = tempfile::tempdir().unwrap();
    let (mut child, base) = serve(swapd(dir.path()).args(["serve", "--listen", "127.0.0.1:0"]));

    let (status, body) = get_json(&format!("{base}/healthz")).await;
    assert_eq!((status, &body["data"]["status"]), (200, &Value::from("ok")));
    let (status, body) = get_json(&format!("{base}/readyz")).await;
    assert_eq!(
        (status, &body["data"]["mode"]),
        (200, &Value::from("sandbox"))
    );

    // The image's health check: ready here, refused where nothing answers.
    for url in [format!("{base}/readyz"), base.clone(), format!("{base}/")] {
        let ready = run(swapd(dir.path()).args(["healthcheck", "--url", &url]));
        assert!(ready.status.success(), "{url}: {}", stderr(&ready));
    }
    let elsewhere = run(swapd(dir.path()).args(["healthcheck", "--url", &format!("{base}/nope")]));
    assert!(!elsewhere.status.success());
    let closed = run(swapd(dir.path()).args(["healthcheck", "--url", "http://127.0.0.1:9/readyz"]));
    assert!(!closed.status.success());
    assert!(
        stderr(&closed).contains("does not answer"),
        "{}",
        stderr(&closed)
    );

    let data = dir.path().join("data");
    assert!(data.join("swapd.db").exists());
    let mode = std::os::unix::fs::PermissionsExt::mode(
        &std::fs::metadata(data.join("master.key"))
            .unwrap()
            .permissions(),
    );
    assert_eq!(mode & 0o777, 0o600);

    let status = terminate(&mut child);
    assert!(status.success(), "graceful shutdown exits 0, got {status}");
}

#[tokio::test]
async fn role_flags_select_what_runs() {
    let dir = tempfile::tempdir().unwrap();
    let mut worker_only = swapd(dir.path())
        .args(["serve", "--worker"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(worker_only.stdout.take().unwrap()).lines();
    let banner = lines.next().unwrap().unwrap();
    assert!(banner.contains("(worker)"), "{banner}");
    std::thread::sleep(std::time::Duration::from_millis(300));
    assert!(terminate(&mut worker_only).success());
    let rest: Vec<String> = lines.map(Result::unwrap).collect();
    assert!(!rest.iter().any(|l| l.contains("listening:")), "{rest:?}");

    let (mut api_only, base) =
        serve(swapd(dir.path()).args(["serve", "--api", "--listen", "127.0.0.1:0"]));
    assert_eq!(get_json(&format!("{base}/healthz")).await.0, 200);
    assert!(terminate(&mut api_only).success());
}

#[test]
fn keys_are_issued_once_stored_sealed_listed_without_secrets_and_revoked() {
    let dir = tempfile::tempdir().unwrap();
    let created: Value = serde_json::from_str(&ok(swapd(dir.path()).args([
        "keys",
        "create",
        "--name",
        "shop",
        "--permissions",
        "prices:read,orders:create",
        "--ip-allow",
        "203.0.113.0/24,10.1.1.1",
        "--origins",
        "https://shop.example",
        "--per-minute",
        "30",
        "--per-hour",
        "600",
        "--weight-per-hour",
        "900",
        "--json",
    ])))
    .unwrap();
    let id = created["apiKey"].as_str().unwrap().to_owned();
    let secret = created["apiSecret"].as_str().unwrap().to_owned();
    assert!(id.starts_with("key_") && secret.starts_with("sec_"));
    assert_eq!(
        created["permissions"],
        serde_json::json!(["prices:read", "orders:create"])
    );
    assert_eq!(
        created["ipAllow"],
        serde_json::json!(["10.1.1.1/32", "203.0.113.0/24"])
    );
    assert_eq!(created["rateLimits"]["perMinute"], 30);

    for file in std::fs::read_dir(dir.path().join("data")).unwrap() {
        let bytes = std::fs::read(file.unwrap().path()).unwrap();
        assert!(
            !bytes.windows(secret.len()).any(|w| w == secret.as_bytes()),
            "the plaintext secret reached the disk"
        );
    }

    let listed = ok(swapd(dir.path()).args(["keys", "list", "--json"]));
    assert!(listed.contains(&id) && !listed.contains(&secret) && !listed.contains("apiSecret"));
    let shown = ok(swapd(dir.path()).args(["keys", "show", &id]));
    assert!(
        shown.contains("active")
            && shown.contains("https://shop.example")
            && !shown.contains(&secret)
    );

    let revoked: Value = serde_json::from_str(&ok(
        swapd(dir.path()).args(["keys", "revoke", &id, "--json"])
    ))
    .unwrap();
    assert_eq!(revoked["status"], "revoked");
    assert!(revoked["revokedAt"].is_i64());
    let shown: Value =
        serde_json::from_str(&ok(swapd(dir.path()).args(["keys", "show", &id, "--json"]))).unwrap();
    assert_eq!(shown["status"], "revoked");

    let missing = run(swapd(dir.path()).args(["keys", "show", "key_0000"]));
    assert!(!missing.status.success());
    assert!(
        stderr(&missing).contains("no API key `key_0000`"),
        "{}",
        stderr(&missing)
    );
}

#[test]
fn keys_create_refuses_bad_input_and_says_why() {
    let dir = tempfile::tempdir().unwrap();
    let unknown = run(swapd(dir.path()).args([
        "keys",
        "create",
        "--name",
        "x",
        "--permissions",
        "orders:delete",
    ]));
    assert!(!unknown.status.success());
    assert!(
        stderr(&unknown).contains("unknown permission `orders:delete` (valid: prices:read"),
        "{}",
        stderr(&unknown)
    );

    let cidr = run(swapd(dir.path()).args([
        "keys",
        "create",
        "--name",
        "x",
        "--permissions",
        "prices:read",
        "--ip-allow",
        "300.1.1.1",
    ]));
    assert!(!cidr.status.success());
    assert!(
        stderr(&cidr).contains("`300.1.1.1` is not an IP address or CIDR block"),
        "{}",
        stderr(&cidr)
    );

    let listed = ok(swapd(dir.path()).args(["keys", "list", "--json"]));
    assert_eq!(listed.trim(), "[]", "nothing was stored");
}

#[test]
fn a_key_carries_a_markup_up_to_the_operators_cap() {
    let dir = tempfile::tempdir().unwrap();
    let create = |markup: &str| {
        run(swapd(dir.path())
            .env("SWAPD_FEES__MAX_MARKUP_BPS", "50")
            .args([
                "keys",
                "create",
                "--name",
                "shop",
                "--permissions",
                "prices:read",
            ])
            .args(["--markup-bps", markup, "--json"]))
    };
    let above = create("51");
    assert!(!above.status.success());
    assert!(
        stderr(&above).contains(
            "a markup of 51 bps is more than this operator allows (fees.max_markup_bps = 50)"
        ),
        "{}",
        stderr(&above)
    );
    let created: serde_json::Value = serde_json::from_slice(&create("50").stdout).unwrap();
    assert_eq!(created["markupBps"], 50);
    assert_eq!(created["markupRecipient"], serde_json::Value::Null);
    let shown = ok(swapd(dir.path()).args(["keys", "show", created["apiKey"].as_str().unwrap()]));
    assert!(shown.contains("markupBps:    50"), "{shown}");

    // Its recipient on chain: an EVM address, or the key is not created.
    let with_recipient = |address: &str| {
        run(swapd(dir.path())
            .args([
                "keys",
                "create",
                "--name",
                "dapp",
                "--permissions",
                "prices:read",
            ])
            .args([
                "--markup-bps",
                "20",
                "--markup-recipient",
                address,
                "--json",
            ]))
    };
    let bad = with_recipient("0xnot-an-address");
    assert!(!bad.status.success());
    assert!(
        stderr(&bad).contains("is not an EVM address"),
        "{}",
        stderr(&bad)
    );
    let address = "0x90F79bf6EB2c4f870365E785982E1f101E93b906";
    let created: serde_json::Value =
        serde_json::from_slice(&with_recipient(address).stdout).unwrap();
    assert_eq!(created["markupRecipient"], address);
}

#[test]
fn affiliates_are_registered_listed_disabled_and_their_earnings_read() {
    let dir = tempfile::tempdir().unwrap();
    let created = ok(swapd(dir.path()).args([
        "affiliates",
        "create",
        "--code",
        "wallet-app",
        "--name",
        "Wallet App",
        "--share",
        "25%",
        "--payout",
        "0xabc",
        "--json",
    ]));
    let created: serde_json::Value = serde_json::from_str(&created).unwrap();
    assert_eq!(created["shareBps"], 2500);
    assert_eq!(created["active"], true);
    let again = run(swapd(dir.path()).args([
        "affiliates",
        "create",
        "--code",
        "wallet-app",
        "--name",
        "X",
        "--share",
        "10",
        "--payout",
        "y",
    ]));
    assert!(!again.status.success());
    assert!(
        stderr(&again).contains("already has the code `wallet-app`"),
        "{}",
        stderr(&again)
    );
    let bad = run(swapd(dir.path()).args([
        "affiliates",
        "create",
        "--code",
        "x",
        "--name",
        "X",
        "--share",
        "150%",
        "--payout",
        "y",
    ]));
    assert!(
        stderr(&bad).contains("the share must be 1 to 10000 bps"),
        "{}",
        stderr(&bad)
    );

    ok(swapd(dir.path()).args(["affiliates", "disable", "wallet-app"]));
    let listed: serde_json::Value = serde_json::from_str(&ok(swapd(dir.path()).args([
        "affiliates",
        "list",
        "--json",
    ])))
    .unwrap();
    assert_eq!(listed[0]["code"], "wallet-app");
    assert_eq!(listed[0]["active"], false);
    let earned: serde_json::Value = serde_json::from_str(&ok(swapd(dir.path()).args([
        "affiliates",
        "earnings",
        "wallet-app",
        "--json",
    ])))
    .unwrap();
    assert_eq!(earned["totals"], serde_json::json!([]));
    let unknown = run(swapd(dir.path()).args(["affiliates", "show", "nobody"]));
    assert!(stderr(&unknown).contains("no affiliate has the code `nobody`"));
}

#[test]
fn config_show_redacts_and_bad_settings_are_named() {
    let dir = tempfile::tempdir().unwrap();
    let master = "ab".repeat(32);
    let shown = ok(swapd(dir.path())
        .args(["config", "show"])
        .env("SWAPD_MASTER_KEY", &master)
        .env(
            "SWAPD_DATABASE_URL",
            "postgres://app:hunter2@db.internal/swapd",
        ));
    assert!(
        shown.contains("mode = \"sandbox\"") && shown.contains("listen = \"127.0.0.1:8080\""),
        "{shown}"
    );
    assert!(
        !shown.contains(&master) && !shown.contains("hunter2"),
        "{shown}"
    );
    assert!(shown.starts_with("# shared state: database"), "{shown}");
    let with_redis = ok(swapd(dir.path()).args(["config", "show"]).env(
        "SWAPD_SHARED__REDIS_URL",
        "redis://:sesame@cache.internal:6379",
    ));
    assert!(
        with_redis.starts_with("# shared state: redis")
            && with_redis.contains("redis://:***@cache.internal:6379")
            && !with_redis.contains("sesame"),
        "{with_redis}"
    );
    let not_redis = run(swapd(dir.path())
        .args(["config", "show"])
        .env("SWAPD_SHARED__REDIS_URL", "http://cache.internal"));
    assert_eq!(not_redis.status.code(), Some(2));
    assert!(
        stderr(&not_redis).contains("shared.redis_url"),
        "{}",
        stderr(&not_redis)
    );

    let bad = run(swapd(dir.path())
        .args(["config", "show"])
        .env("SWAPD_LISTEN", "localhost-8080"));
    assert_eq!(bad.status.code(), Some(2));
    assert!(stderr(&bad).contains("listen"), "{}", stderr(&bad));

    std::fs::write(
        dir.path().join("swapd.toml"),
        "[database]\nmax_conections = 4\n",
    )
    .unwrap();
    let typo = run(swapd(dir.path()).args(["config", "show"]));
    assert_eq!(typo.status.code(), Some(2));
    assert!(
        stderr(&typo).contains("max_conections"),
        "{}",
        stderr(&typo)
    );

    let missing = run(swapd(dir.path()).args(["--config", "nowhere.toml", "config", "show"]));
    assert!(
        stderr(&missing).contains("nowhere.toml does not exist"),
        "{}",
        stderr(&missing)
    );

    std::fs::write(
        dir.path().join("custom.toml"),
        "listen = \"127.0.0.1:9999\"\n",
    )
    .unwrap();
    let custom = ok(swapd(dir.path()).args(["config", "show", "--config", "custom.toml"]));
    assert!(custom.contains("127.0.0.1:9999"), "{custom}");

    let live = run(swapd(dir.path())
        .args(["serve", "--config", "custom.toml"])
        .env("SWAPD_MODE", "live"));
    assert_eq!(live.status.code(), Some(2));
    let message = stderr(&live);
    assert!(
        message.contains("live mode cannot start")
            && message.contains("`master_key` (env SWAPD_MASTER_KEY)"),
        "{message}"
    );
}

/// The newest migration the binary embeds for `backend`.
fn latest_migration(backend: swapd_store::Backend) -> i64 {
    swapd_store::migrations(backend)
        .last()
        .expect("migrations exist")
        .0
}

#[test]
fn migrate_brings_sqlite_up_to_date() {
    let dir = tempfile::tempdir().unwrap();
    let out = ok(swapd(dir.path()).args(["migrate", "--data-dir", "elsewhere"]));
    let latest = latest_migration(swapd_store::Backend::Sqlite);
    assert!(
        out.starts_with(&format!("sqlite database is at migration {latest}")),
        "{out}"
    );
    assert!(dir.path().join("elsewhere/swapd.db").exists());
}

#[tokio::test]
async fn serve_and_migrate_on_postgres() {
    let Some(url) = postgres_url() else { return };
    let schema = PgTestSchema::create(&url).await;
    let dir = tempfile::tempdir().unwrap();
    let database_url = schema.database_url();

    let out = ok(swapd(dir.path()).args(["migrate", "--database-url", &database_url]));
    let latest = latest_migration(swapd_store::Backend::Postgres);
    assert!(
        out.starts_with(&format!("postgres database is at migration {latest}")),
        "{out}"
    );

    let created: Value = serde_json::from_str(&ok(swapd(dir.path()).args([
        "keys",
        "create",
        "--database-url",
        &database_url,
        "--name",
        "pg",
        "--permissions",
        "prices:read",
        "--json",
    ])))
    .unwrap();
    let listed = ok(swapd(dir.path()).args(["keys", "list", "--database-url", &database_url]));
    assert!(listed.contains(created["apiKey"].as_str().unwrap()));

    let (mut child, base) = serve(swapd(dir.path()).args([
        "serve",
        "--listen",
        "127.0.0.1:0",
        "--database-url",
        &database_url,
    ]));
    let (status, body) = get_json(&format!("{base}/readyz")).await;
    assert_eq!(
        (status, &body["data"]["database"]),
        (200, &Value::from("postgres"))
    );
    assert!(terminate(&mut child).success());
}

#[test]
fn openapi_check_accepts_the_committed_documents_and_refuses_stale_ones() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    ok(swapd(&root).args(["openapi", "--out", "openapi", "--check"]));

    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("v3.json"), "{}").unwrap();
    let stale = run(swapd(dir.path()).args(["openapi", "--out", ".", "--check"]));
    assert!(!stale.status.success());
    assert!(
        stderr(&stale).contains("differ from the code"),
        "{}",
        stderr(&stale)
    );
}

#[test]
fn nothing_says_it_started_until_every_start_up_check_passed() {
    let dir = tempfile::tempdir().unwrap();
    // A facilitator nobody answers at: its `/supported` cannot be read.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/", closed.local_addr().unwrap());
    drop(closed);
    let failed = run(swapd(dir.path())
        .args(["serve", "--listen", "127.0.0.1:0"])
        .env("RUST_LOG", "info")
        .env("SWAPD_X402__FACILITATOR", "http")
        .env("SWAPD_X402__FACILITATOR_URL", &url));
    assert!(!failed.status.success());
    let (out, err) = (stdout(&failed), stderr(&failed));
    assert!(err.contains("x402.facilitator"), "{err}");
    assert!(
        !out.contains("listening") && !out.contains("swapd 0."),
        "a banner before the checks: {out}"
    );
    assert!(!err.contains("worker started"), "{err}");
}
