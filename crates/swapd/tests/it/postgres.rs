//! The server on PostgreSQL: `serve --database-url postgres://...` semantics in process, and
//! readiness that follows the database (a TCP proxy in front of PostgreSQL is cut mid-test).
//! Needs `SWAPD_TEST_POSTGRES_URL` (mandatory under CI).

use serde_json::Value;
use swapd::app::{Node, Roles, Runtime};
use swapd::config::Config;
use swapd_store::test_support::{PgTestSchema, postgres_url, server_addr, tcp_proxy};
use tokio_util::sync::CancellationToken;

#[tokio::test]
async fn readiness_follows_the_database_through_an_outage() {
    let Some(base_url) = postgres_url() else {
        return;
    };
    let schema = PgTestSchema::create(&base_url).await;
    let mut url = url::Url::parse(&schema.database_url()).unwrap();
    let target = server_addr(&base_url);
    let cut = CancellationToken::new();
    let proxy = tcp_proxy(target, cut.clone()).await;
    url.set_port(Some(proxy.port())).unwrap();

    let dir = tempfile::tempdir().unwrap();
    let mut config = Config {
        listen: "127.0.0.1:0".parse().unwrap(),
        data_dir: dir.path().to_path_buf(),
        database_url: Some(url.as_str().parse().unwrap()),
        ..Config::default()
    };
    config.database.acquire_timeout_ms = 500;
    let app = Node::build(Runtime::open(config).await.unwrap(), Roles::ALL)
        .await
        .unwrap();
    let base = format!("http://{}", app.local_addr().unwrap());
    let shutdown = CancellationToken::new();
    let task = tokio::spawn(app.run_until_stopped(shutdown.clone()));
    let client = reqwest::Client::new();

    let ready = client.get(format!("{base}/readyz")).send().await.unwrap();
    assert_eq!(ready.status(), 200);
    let body: Value = ready.json().await.unwrap();
    assert_eq!(body["data"]["database"], "postgres");

    cut.cancel();
    let down = client.get(format!("{base}/readyz")).send().await.unwrap();
    assert_eq!(down.status(), 503);
    let body: Value = down.json().await.unwrap();
    assert_eq!(body["error"]["code"], "service_unavailable");
    let health = client.get(format!("{base}/healthz")).send().await.unwrap();
    assert_eq!(
        health.status(),
        200,
        "liveness does not depend on the database"
    );

    shutdown.cancel();
    task.await.unwrap().unwrap();
}
