//! A sandbox swapd on 127.0.0.1:0 (its own SQLite file, fast sandbox blocks) in a thread of its
//! own, an API key issued as `swapd keys create` does, and `swapctl` commands configured for it
//! through the environment only.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::sync::mpsc;

use assert_cmd::Command;
use serde_json::Value;
use swapd::app::{Node, Roles, Runtime};
use swapd::config::Config;
use swapd_types::Permission;
use tokio_util::sync::CancellationToken;

/// A fixed EVM key (the well-known first Hardhat account), so tests can predict the wallet.
pub const EVM_KEY: &str = "0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80";
pub const EVM_WALLET: &str = "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266";
/// A Solana seed, in hex.
pub const SOLANA_KEY: &str = "0707070707070707070707070707070707070707070707070707070707070707";
pub const TRON_ADDRESS: &str = "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t";
pub const BTC_ADDRESS: &str = "bc1qar0srrr7xfkvy5l643lydnw9re59gtzzwf5mdq";

pub struct Sandbox {
    pub url: String,
    pub api_key: String,
    pub api_secret: String,
    pub dir: PathBuf,
    shutdown: CancellationToken,
    thread: Option<std::thread::JoinHandle<()>>,
    _dir: tempfile::TempDir,
}

impl Sandbox {
    pub fn start() -> Sandbox {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().to_path_buf();
        let shutdown = CancellationToken::new();
        let (ready, started) = mpsc::channel();
        let stop = shutdown.clone();
        let thread = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .unwrap();
            runtime.block_on(async move {
                let mut config = Config {
                    listen: "127.0.0.1:0".parse().unwrap(),
                    data_dir: path.clone(),
                    sandbox: swapd::config::SandboxConfig::punctual(),
                    ..Config::default()
                };
                config.providers.sandbox_block_ms = 300;
                config.orders.poll_interval_ms = 100;
                let runtime = Runtime::open(config).await.unwrap();
                let (key, secret) = issue_key(&runtime).await;
                let app = Node::build(runtime, Roles::ALL).await.unwrap();
                let url = format!("http://{}", app.local_addr().unwrap());
                ready.send((url, key, secret)).unwrap();
                app.run_until_stopped(stop).await.unwrap();
            });
        });
        let (url, api_key, api_secret) = started.recv().expect("the sandbox server started");
        Sandbox {
            url,
            api_key,
            api_secret,
            dir: dir.path().to_path_buf(),
            shutdown,
            thread: Some(thread),
            _dir: dir,
        }
    }

    /// `swapctl` configured for this server by the environment (nothing inherited: no profile
    /// file, no stray SWAPD_* variables).
    pub fn swapctl(&self) -> Command {
        let mut command = bare_swapctl(&self.dir);
        command
            .env("SWAPD_URL", &self.url)
            .env("SWAPD_API_KEY", &self.api_key)
            .env("SWAPD_API_SECRET", &self.api_secret)
            .env("SWAPD_EVM_KEY", EVM_KEY)
            .env("SWAPD_SOLANA_KEY", SOLANA_KEY);
        command
    }

    /// Runs `swapctl --json ARGS`, expects success, and parses what it printed.
    pub fn json(&self, args: &[&str]) -> Value {
        let output = self.swapctl().arg("--json").args(args).output().unwrap();
        assert!(
            output.status.success(),
            "swapctl {args:?} failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        serde_json::from_slice(&output.stdout).unwrap_or_else(|e| {
            panic!(
                "swapctl {args:?} printed no JSON ({e}): {}",
                String::from_utf8_lossy(&output.stdout)
            )
        })
    }

    /// Runs `swapctl ARGS`, expects success, and returns stdout.
    pub fn text(&self, args: &[&str]) -> String {
        let output = self.swapctl().args(args).output().unwrap();
        assert!(
            output.status.success(),
            "swapctl {args:?} failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8(output.stdout).unwrap()
    }

    /// Runs `swapctl ARGS`, expects failure, and returns stderr.
    pub fn failure(&self, args: &[&str]) -> String {
        let output = self.swapctl().args(args).output().unwrap();
        assert!(!output.status.success(), "swapctl {args:?} succeeded");
        String::from_utf8(output.stderr).unwrap()
    }

    /// A new order of 0.05 BTC to USDTTRC (fixed rate), as JSON.
    pub fn order(&self) -> Value {
        self.json(&[
            "order",
            "create",
            "--from",
            "BTC",
            "--to",
            "USDTTRC",
            "--amount",
            "0.05",
            "--type",
            "fixed",
            "--to-address",
            TRON_ADDRESS,
        ])
    }
}

/// `swapctl` with a clean environment whose config home is `home`.
pub fn bare_swapctl(home: &Path) -> Command {
    let mut command = Command::cargo_bin("swapctl").unwrap();
    for (name, _) in std::env::vars() {
        if name.starts_with("SWAPD_") || name.starts_with("SWAPCTL_") {
            command.env_remove(name);
        }
    }
    command
        .env("XDG_CONFIG_HOME", home)
        .env("HOME", home)
        .env("NO_COLOR", "1")
        .timeout(std::time::Duration::from_secs(300));
    command
}

async fn issue_key(runtime: &Runtime) -> (String, String) {
    let policy = swapd_core::api_keys::ApiKeyPolicy::new(
        "swapctl-tests",
        <Permission as strum::VariantArray>::VARIANTS
            .iter()
            .copied(),
        &[],
        &[],
        swapd_core::api_keys::RateLimits {
            per_minute: 6_000,
            per_hour: 100_000,
            weight_per_hour: 1_000_000,
        },
    )
    .unwrap();
    let issued = swapd_core::api_keys::ApiKey::issue(
        policy,
        &runtime.master_key,
        swapd_core::Clock::now_ms(runtime.clock.as_ref()),
    );
    runtime.store.insert_api_key(&issued.key).await.unwrap();
    (issued.key.id, issued.secret)
}

impl Drop for Sandbox {
    fn drop(&mut self) {
        self.shutdown.cancel();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
