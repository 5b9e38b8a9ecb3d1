//! The HTTP skeleton, end to end against a real server on 127.0.0.1:0 with its own SQLite file.

use reqwest::StatusCode;
use serde_json::Value;
use std::time::Duration;
use swapd::app::{Node, Roles, Runtime};
use swapd::config::Config;
use swapd_client::SwapApi;
use tokio_util::sync::CancellationToken;

/// A real server on 127.0.0.1:0 with its own SQLite file (also the MCP tests').
pub(crate) struct Server {
    pub(crate) base: String,
    pub(crate) shutdown: CancellationToken,
    pub(crate) task: tokio::task::JoinHandle<anyhow::Result<()>>,
    _dir: tempfile::TempDir,
}

impl Server {
    async fn start() -> Server {
        Self::start_with(|_| {}).await
    }

    /// A server whose configuration `configure` adjusts.
    pub(crate) async fn start_with(configure: impl FnOnce(&mut Config)) -> Server {
        let dir = tempfile::tempdir().unwrap();
        let mut config = crate::local_config(dir.path());
        configure(&mut config);
        let app = Node::build(Runtime::open(config).await.unwrap(), Roles::ALL)
            .await
            .unwrap();
        let base = format!("http://{}", app.local_addr().unwrap());
        let shutdown = CancellationToken::new();
        let task = tokio::spawn(app.run_until_stopped(shutdown.clone()));
        Server {
            base,
            shutdown,
            task,
            _dir: dir,
        }
    }

    /// A client holding a new API key with `permissions`, issued as `swapd keys create` does.
    async fn client(
        &self,
        permissions: &[swapd_types::Permission],
    ) -> swapd_client::BusinessClient {
        let runtime = Runtime::open(Config {
            data_dir: self._dir.path().to_path_buf(),
            ..Config::default()
        })
        .await
        .unwrap();
        let policy = swapd_core::api_keys::ApiKeyPolicy::new(
            "e2e",
            permissions.iter().copied(),
            &[],
            &[],
            Default::default(),
        )
        .unwrap();
        let issued = swapd_core::api_keys::ApiKey::issue(
            policy,
            &runtime.master_key,
            swapd_core::Clock::now_ms(runtime.clock.as_ref()),
        );
        runtime.store.insert_api_key(&issued.key).await.unwrap();
        swapd_client::BusinessClient::new(
            &self.base,
            swapd_client::Credentials::new(issued.key.id, issued.secret),
        )
        .unwrap()
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    async fn stop(self) {
        self.shutdown.cancel();
        self.task.await.unwrap().unwrap();
    }
}

async fn error_of(response: reqwest::Response) -> (StatusCode, String, Value) {
    let status = response.status();
    assert!(response.headers().contains_key("x-request-id"));
    let content_type = response.headers()["content-type"]
        .to_str()
        .unwrap()
        .to_owned();
    assert!(
        content_type.starts_with("application/json"),
        "{content_type}"
    );
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["success"], false, "{body}");
    let code = body["error"]["code"].as_str().unwrap().to_owned();
    assert!(
        body["error"]["message"]
            .as_str()
            .is_some_and(|m| !m.is_empty())
    );
    (status, code, body)
}

#[tokio::test]
async fn health_and_readiness_answer_in_the_envelope_with_request_ids() {
    let server = Server::start().await;
    let client = reqwest::Client::new();

    let health = client.get(server.url("/healthz")).send().await.unwrap();
    assert_eq!(health.status(), StatusCode::OK);
    let id = health.headers()["x-request-id"]
        .to_str()
        .unwrap()
        .to_owned();
    assert!(id.starts_with("req_") && id.len() == 36, "{id}");
    let body: Value = health.json().await.unwrap();
    assert_eq!(
        body,
        serde_json::json!({"success": true, "data": {"status": "ok"}})
    );

    let ready: Value = client
        .get(server.url("/readyz"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(ready["data"]["status"], "ready");
    assert_eq!(ready["data"]["database"], "sqlite");
    assert_eq!(ready["data"]["mode"], "sandbox");

    let echoed = client
        .get(server.url("/healthz"))
        .header("x-request-id", "client-chosen-id-123")
        .send()
        .await
        .unwrap();
    assert_eq!(echoed.headers()["x-request-id"], "client-chosen-id-123");
    // An id too long, or with characters that do not belong in logs, is replaced.
    for unusable in ["x".repeat(129), "two words".to_owned(), "a\tb".to_owned()] {
        let replaced = client
            .get(server.url("/healthz"))
            .header("x-request-id", unusable.as_str())
            .send()
            .await
            .unwrap();
        let id = replaced.headers()["x-request-id"].to_str().unwrap();
        assert!(id.starts_with("req_") && id.len() == 36, "{id}");
    }
    let longest = "y".repeat(128);
    let kept = client
        .get(server.url("/healthz"))
        .header("x-request-id", longest.as_str())
        .send()
        .await
        .unwrap();
    assert_eq!(kept.headers()["x-request-id"], longest.as_str());
    server.stop().await;
}

#[tokio::test]
async fn framework_errors_use_the_envelope_and_stable_codes() {
    let server = Server::start().await;
    let client = reqwest::Client::new();

    for path in ["/nope", "/api/v3/nope", "/api/x402/nope"] {
        let (status, code, _) = error_of(client.get(server.url(path)).send().await.unwrap()).await;
        assert_eq!(
            (status, code.as_str()),
            (StatusCode::NOT_FOUND, "not_found"),
            "{path}"
        );
    }

    let response = client.post(server.url("/healthz")).send().await.unwrap();
    assert_eq!(response.headers()["allow"], "GET,HEAD");
    let (status, code, _) = error_of(response).await;
    assert_eq!(
        (status, code.as_str()),
        (StatusCode::METHOD_NOT_ALLOWED, "method_not_allowed")
    );

    let oversized = vec![b'x'; 64 * 1024 + 1];
    let response = client
        .post(server.url("/api/v3/openapi.json"))
        .header("content-type", "application/json")
        .body(oversized)
        .send()
        .await
        .unwrap();
    let (status, code, _) = error_of(response).await;
    assert_eq!(
        (status, code.as_str()),
        (StatusCode::PAYLOAD_TOO_LARGE, "payload_too_large")
    );

    // A request target or headers past swapd's limits: the envelope, with a request id.
    let long = format!("/api/v3/currencies?pad={}", "a".repeat(9 * 1024));
    let response = client.get(server.url(&long)).send().await.unwrap();
    assert!(response.headers().contains_key("x-request-id"));
    let (status, code, _) = error_of(response).await;
    assert_eq!(
        (status, code.as_str()),
        (StatusCode::URI_TOO_LONG, "uri_too_long")
    );
    let response = client
        .get(server.url("/api/v3"))
        .header("x-padding-one", "b".repeat(20 * 1024))
        .header("x-padding-two", "c".repeat(20 * 1024))
        .send()
        .await
        .unwrap();
    assert!(response.headers().contains_key("x-request-id"));
    let (status, code, _) = error_of(response).await;
    assert_eq!(
        (status, code.as_str()),
        (
            StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
            "headers_too_large"
        )
    );
    server.stop().await;
}

#[tokio::test]
async fn metrics_count_requests_by_route_and_status_with_a_latency_histogram() {
    let server = Server::start().await;
    let client = reqwest::Client::new();
    client.get(server.url("/healthz")).send().await.unwrap();
    client
        .get(server.url("/api/v3/missing"))
        .send()
        .await
        .unwrap();

    let response = client.get(server.url("/metrics")).send().await.unwrap();
    assert!(
        response.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/plain")
    );
    let text = response.text().await.unwrap();
    assert!(
        text.contains(r#"http_requests_total{route="/healthz",method="GET",status="200"}"#),
        "{text}"
    );
    assert!(
        text.contains(r#"route="unmatched",method="GET",status="404""#),
        "{text}"
    );
    assert!(
        text.contains("http_request_duration_seconds_bucket{"),
        "{text}"
    );
    server.stop().await;
}

#[tokio::test]
async fn one_api_process_per_data_dir() {
    let dir = tempfile::tempdir().unwrap();
    let config = crate::local_config(dir.path());
    let build = || async { Node::build(Runtime::open(config.clone()).await?, Roles::ALL).await };
    let first = build().await.unwrap();
    let base = format!("http://{}", first.local_addr().unwrap());
    let shutdown = CancellationToken::new();
    let serving = tokio::spawn(first.run_until_stopped(shutdown.clone()));

    let refused = format!(
        "{:#}",
        build().await.err().expect("a second API is refused")
    );
    assert!(
        refused.contains("another `swapd serve` is using the data directory"),
        "{refused}"
    );
    // The store still opens beside it (`swapd keys create` does that), and the first serves on.
    Runtime::open(config.clone()).await.unwrap();
    let ready = reqwest::get(format!("{base}/readyz")).await.unwrap();
    assert_eq!(ready.status(), StatusCode::OK);

    shutdown.cancel();
    serving.await.unwrap().unwrap();
    assert!(
        build().await.is_ok(),
        "the data dir is free once the first stopped"
    );
}

#[tokio::test]
async fn openapi_documents_are_served_and_match_the_committed_files() {
    let server = Server::start().await;
    let client = reqwest::Client::new();
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../../openapi");
    for (path, file) in [
        ("/api/v3/openapi.json", "v3.json"),
        ("/api/x402/openapi.json", "x402.json"),
    ] {
        let served = client
            .get(server.url(path))
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        let committed = std::fs::read_to_string(format!("{root}/{file}")).unwrap_or_default();
        assert!(
            served == committed,
            "openapi/{file} is stale: run `cargo run -p swapd -- openapi --out openapi`"
        );
        let doc: Value = serde_json::from_str(&served).unwrap();
        assert_eq!(doc["openapi"], "3.1.0");
        assert!(doc["paths"][path].is_object(), "{path} documents itself");
        let mut operation_ids = std::collections::HashSet::new();
        for item in doc["paths"].as_object().unwrap().values() {
            for operation in item.as_object().unwrap().values() {
                let id = operation["operationId"].as_str().unwrap();
                assert!(operation_ids.insert(id), "operationId {id} twice in {file}");
            }
        }
    }
    server.stop().await;
}

#[tokio::test]
async fn the_worker_sweeps_expired_nonces() {
    let dir = tempfile::tempdir().unwrap();
    let config = crate::local_config(dir.path());
    let runtime = Runtime::open(config).await.unwrap();
    let store = runtime.store.clone();
    let now = runtime.clock.now_ms();
    assert!(
        store
            .remember_nonce("key_a", "expired-nonce", now - 1)
            .await
            .unwrap()
    );
    assert!(
        store
            .remember_nonce("key_a", "live-nonce-1", now + 600_000)
            .await
            .unwrap()
    );

    let worker = swapd_worker::Worker::new(store.clone(), runtime.clock.clone());
    worker.sweep_expired().await;

    assert!(
        store
            .remember_nonce("key_a", "expired-nonce", now + 1)
            .await
            .unwrap()
    );
    assert!(
        !store
            .remember_nonce("key_a", "live-nonce-1", now + 1)
            .await
            .unwrap()
    );
}

/// The wired application serves market data from the sandbox providers, and a provider that
/// never answers costs only its deadline.
#[tokio::test]
async fn the_served_app_routes_around_a_stalled_provider() {
    let server = Server::start_with(|config| {
        config.providers.sandbox_stalled = vec!["sunfish".into()];
        config.providers.deadline_ms = 200;
    })
    .await;
    let client = server.client(&[swapd_types::Permission::PricesRead]).await;

    let catalog = client
        .send(reqwest::Method::GET, "/api/v3/currencies", &[], None::<&()>)
        .await
        .unwrap()
        .data;
    assert!(catalog["count"].as_u64().unwrap() >= 20);
    assert_eq!(catalog["degraded"], true);
    assert!(catalog["reason"].as_str().unwrap().contains("sunfish"));

    let routes = client
        .send(
            reqwest::Method::GET,
            "/api/v3/routes",
            &[("fromCcy", "SOL"), ("toCcy", "USDCSOL"), ("amount", "10")],
            None::<&()>,
        )
        .await
        .unwrap()
        .data;
    let cards = routes["routes"].as_array().unwrap();
    let by = |id: &str| cards.iter().find(|c| c["executionProvider"] == id).unwrap();
    assert_eq!(by("sunfish")["isAvailable"], false);
    assert_eq!(by("sunfish")["unavailableReason"], "provider_unavailable");
    assert_eq!(by("atlas")["isAvailable"], true);
    assert_eq!(cards[0]["isAvailable"], true);
    server.stop().await;
}

#[tokio::test]
async fn the_served_worker_tracks_an_onchain_execution_to_its_end() {
    use swapd_types::onchain::{
        ExecutionReportInput, ExecutionStatus, OnchainResolveInput, Outcome,
    };
    let server = Server::start_with(|config| {
        config.providers.sandbox_block_ms = 20;
        config.orders.poll_interval_ms = 20;
    })
    .await;
    let client = server
        .client(&[
            swapd_types::Permission::PricesRead,
            swapd_types::Permission::OrdersCreate,
            swapd_types::Permission::OrdersRead,
        ])
        .await;
    let wallet = "0x52908400098527886E0F7030069857D2E4169EE7";
    let routes = client
        .send(
            reqwest::Method::GET,
            "/api/v3/routes",
            &[
                ("fromCcy", "ETHARB"),
                ("toCcy", "USDCARB"),
                ("amount", "0.1"),
                ("walletAddress", wallet),
            ],
            None::<&()>,
        )
        .await
        .unwrap()
        .data;
    let card = routes["routes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["executionProvider"] == "meridian")
        .unwrap()
        .clone();
    let plan = client
        .resolve_onchain(&OnchainResolveInput {
            route_quote_id: card["routeQuoteId"].as_str().unwrap().into(),
            wallet_address: wallet.into(),
            wallet_chain_namespace: None,
            slippage_bps: None,
        })
        .await
        .unwrap();
    assert_eq!(plan.steps[0].chain_id, Some(42161));
    let token = plan.execution_access_token.clone();
    let submitted = client
        .report_execution(
            &token,
            &ExecutionReportInput {
                execution_plan_id: plan.execution_plan_id.clone(),
                chain_namespace: "eip155".into(),
                wallet_address: wallet.into(),
                tx_hash: Some(format!("0x{}", "ab".repeat(32))),
                signatures: None,
            },
        )
        .await
        .unwrap();
    assert_eq!(submitted.status, ExecutionStatus::Submitted);
    // The worker moves it on by itself: 3 sandbox blocks of 20 ms.
    let mut view = submitted;
    for _ in 0..200 {
        if view.terminal {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        view = client
            .execution(&plan.execution_plan_id, &token)
            .await
            .unwrap();
    }
    assert_eq!(view.status, ExecutionStatus::Done, "{view:?}");
    assert_eq!(view.outcome, Some(Outcome::Completed));
    assert_eq!(view.received_token.as_deref(), Some("USDCARB"));
    assert_eq!(
        view.received_amount.as_deref(),
        card["expectedOutputAmount"].as_str()
    );
    server.stop().await;
}

/// The SDK's typed Business calls against the real server: the order status route, sandbox
/// deposits, and webhook patches that change only what they name.
#[tokio::test]
async fn the_sdk_typed_business_calls_reach_their_routes() {
    use swapd_client::orders::OrderInput;
    use swapd_client::sandbox::DepositInput;
    use swapd_client::webhooks::{WebhookInput, WebhookPatch};

    let server = Server::start().await;
    let client = server
        .client(<swapd_types::Permission as strum::VariantArray>::VARIANTS)
        .await;
    let order = client
        .create_order(&OrderInput {
            from_ccy: Some("BTC".into()),
            to_ccy: Some("USDTTRC".into()),
            amount: Some("0.05".into()),
            to_address: "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t".into(),
            ..OrderInput::default()
        })
        .await
        .unwrap();
    assert_eq!(
        client.order_status(&order.order_id).await.unwrap(),
        client.order(&order.order_id).await.unwrap()
    );
    let deposit = client
        .sandbox_deposit(
            &order.order_id,
            &DepositInput {
                amount: "0.05".into(),
                confirmations: Some(1),
            },
        )
        .await
        .unwrap();
    assert_eq!(
        (deposit.amount.as_str(), deposit.confirmations),
        ("0.05", 1)
    );
    let missing = client
        .order_status("ord_0123456789abcdef0123456789abcdef")
        .await
        .unwrap_err();
    assert_eq!(missing.code(), Some(swapd_client::ErrorCode::OrderNotFound));

    let created = client
        .create_webhook(&WebhookInput {
            url: "http://127.0.0.1:9/hooks".into(),
            events: vec!["order.completed".into()],
            description: Some("shop".into()),
        })
        .await
        .unwrap();
    let id = &created.webhook.webhook_id;
    let disabled = client
        .update_webhook(
            id,
            &WebhookPatch {
                status: Some("disabled".into()),
                ..WebhookPatch::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(disabled.status, "disabled");
    assert_eq!(disabled.description.as_deref(), Some("shop"), "left alone");
    let cleared = client
        .update_webhook(
            id,
            &WebhookPatch {
                description: Some(None),
                ..WebhookPatch::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(cleared.description, None);
    assert_eq!(cleared.status, "disabled", "left alone");
    assert_eq!(client.webhooks().await.unwrap().count, 1);
    server.stop().await;
}

/// `x402.asset`: payments in another token (a testnet's, here) are asked for with its address,
/// EIP-712 domain and decimals.
#[tokio::test]
async fn the_x402_asset_is_configurable() {
    const TOKEN: &str = "0x5FbDB2315678afecb367f032d93F642f64180aa3";
    let server = Server::start_with(|config| {
        config.x402.network = Some("eip155:84532".parse().unwrap());
        config.x402.asset = Some(swapd::config::X402AssetConfig {
            address: Some(TOKEN.parse().unwrap()),
            name: Some("Test Dollar".into()),
            version: Some("1".into()),
            decimals: 18,
        });
    })
    .await;
    let response = reqwest::get(server.url("/api/x402/currencies"))
        .await
        .unwrap();
    assert_eq!(response.status(), 402);
    let required: swapd_x402::wire::PaymentRequired =
        swapd_x402::wire::decode_header(response.headers()["payment-required"].to_str().unwrap())
            .unwrap();
    let accepts = &required.accepts[0];
    assert_eq!(accepts.network, "eip155:84532");
    assert_eq!(accepts.asset, TOKEN);
    assert_eq!(accepts.amount, "50000000000000000", "0.05 in 18 decimals");
    assert_eq!(accepts.extra["name"], "Test Dollar");
    assert_eq!(accepts.extra["version"], "1");
    server.stop().await;

    // For a network whose USDC swapd does not know, it says what to set.
    let dir = tempfile::tempdir().unwrap();
    let mut config = crate::local_config(dir.path());
    config.x402.network = Some("eip155:10".parse().unwrap());
    let problem = match Runtime::open(config).await {
        Ok(runtime) => runtime
            .x402_surface("http://127.0.0.1:1")
            .await
            .err()
            .unwrap(),
        Err(error) => error,
    };
    assert!(
        format!("{problem:#}").contains("set x402.asset"),
        "{problem:#}"
    );
}

/// SIGTERM's stop (docs/deploy.md, "Stopping"): readiness answers not ready at once while the
/// node keeps serving for the drain time, then a request still running gets the grace time and
/// no more: the node stops on time.
#[tokio::test]
async fn a_stopping_node_says_not_ready_first_then_stops_within_its_grace() {
    let server = Server::start_with(|config| {
        config.shutdown.drain_secs = 2;
        config.shutdown.grace_secs = 1;
    })
    .await;
    let http = reqwest::Client::new();
    let ready = http
        .get(format!("{}/readyz", server.base))
        .send()
        .await
        .unwrap();
    assert_eq!(ready.status(), StatusCode::OK);

    server.shutdown.cancel();
    tokio::time::sleep(Duration::from_millis(300)).await;
    let draining = http
        .get(format!("{}/readyz", server.base))
        .send()
        .await
        .unwrap();
    assert_eq!(draining.status(), StatusCode::SERVICE_UNAVAILABLE);
    let body: serde_json::Value = draining.json().await.unwrap();
    assert_eq!(body["error"]["code"], "service_unavailable");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("shutting down"),
        "{body}"
    );
    // Still serving while it drains.
    let health = http
        .get(format!("{}/healthz", server.base))
        .send()
        .await
        .unwrap();
    assert_eq!(health.status(), StatusCode::OK);

    // Stopped after drain and grace, not hanging.
    tokio::time::timeout(Duration::from_secs(30), server.task)
        .await
        .expect("the node stopped")
        .unwrap()
        .unwrap();
}
