//! Cross-implementation check of the x402 API: the reference npm clients (`@x402/fetch`,
//! `@x402/core`, `@x402/evm`, `@x402/svm`, `@x402/extensions`, versions pinned in
//! `tests/npm-x402/package-lock.json`, installed by `.ci/run` with `npm ci`) run against a real
//! server with the ledger facilitator: a paid catalog read, an order created and read back by
//! its wallet, EVM and Solana SIWX reads, a read refused to another wallet, a call sent again
//! under its `payment-identifier` answered once, paid routes' `bazaar` discovery validated
//! and indexed by the reference helpers, a call paid on Solana by the reference Solana client
//! (the sandbox's default ways to pay: Base, then Solana), and a market-intel job paid `upto`
//! its maximum by the reference upto client, settled for what it used once the worker ran it.

use std::path::PathBuf;
use std::process::Command;

use swapd::app::{Node, Roles, Runtime};
use tokio_util::sync::CancellationToken;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_reference_npm_clients_pay_and_sign_in() {
    let client_dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/npm-x402");
    if !client_dir.join("node_modules/@x402/fetch").exists() {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI must run this test: npm ci --prefix tests/npm-x402 (.ci/run does)"
        );
        println!("SKIPPED: run `npm ci --prefix tests/npm-x402` to install the reference clients");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let config = crate::local_config(dir.path());
    let app = Node::build(Runtime::open(config).await.unwrap(), Roles::ALL)
        .await
        .unwrap();
    let base = format!("http://{}", app.local_addr().unwrap());
    let shutdown = CancellationToken::new();
    let server = tokio::spawn(app.run_until_stopped(shutdown.clone()));

    let output = tokio::task::spawn_blocking(move || {
        Command::new("node")
            .arg("client.mjs")
            .arg(&base)
            .current_dir(client_dir)
            .output()
            .expect("run node")
    })
    .await
    .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    println!("{stdout}");
    eprintln!("{}", String::from_utf8_lossy(&output.stderr));
    shutdown.cancel();
    server.await.unwrap().unwrap();
    assert!(
        output.status.success(),
        "the reference clients' checks failed:\n{stdout}"
    );
    assert!(stdout.contains("all checks passed"));
    assert_eq!(stdout.lines().filter(|l| l.starts_with("ok ")).count(), 18);
}
