//! The operational endpoints.

use crate::support::TestServer;

/// A background loop of this process that keeps failing takes it out of readiness, by name,
/// until one of its passes succeeds.
#[tokio::test]
async fn readiness_names_a_background_loop_that_keeps_failing() {
    let server = TestServer::start().await;
    let readyz = || async {
        let response = reqwest::get(format!("{}/readyz", server.base))
            .await
            .unwrap();
        let status = response.status().as_u16();
        (status, response.json::<serde_json::Value>().await.unwrap())
    };
    assert_eq!(readyz().await.0, 200);
    let health = &server.state.worker_health;
    for _ in 0..swapd_core::health::FAILING_AFTER {
        health.failed("orders");
    }
    let (status, body) = readyz().await;
    assert_eq!(status, 503);
    assert_eq!(body["error"]["code"], "service_unavailable");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("orders (3 failed passes in a row)"),
        "{body}"
    );
    health.passed("orders");
    assert_eq!(readyz().await.0, 200);
}
