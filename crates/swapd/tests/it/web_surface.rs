//! The web surfaces as an attacker sees them, black-box against a running `swapd serve`.

use crate::crash::{serve_watched, swapd};

/// The series `/metrics` holds: its lines that are not comments.
async fn series(http: &reqwest::Client, base: &str) -> (usize, usize) {
    let text = http
        .get(format!("{base}/metrics"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let count = text
        .lines()
        .filter(|line| !line.is_empty() && !line.starts_with('#'))
        .count();
    (count, text.len())
}

#[tokio::test]
async fn junk_methods_and_paths_from_anyone_add_no_metric_series() {
    let dir = tempfile::tempdir().unwrap();
    // The per-address request limit is off: the point is what is recorded, not the count.
    let (server, base, _log) = serve_watched(
        swapd(dir.path())
            .args(["serve", "--api", "--listen", "127.0.0.1:0"])
            .env("SWAPD_SECURITY__IP_REQUESTS_PER_SECOND", "0"),
    );
    let _server = KillOnDrop(server);
    let http = reqwest::Client::new();
    // One unknown path and one unknown method first: the series they may add exist now.
    let unknown = http
        .get(format!("{base}/no/such/path"))
        .send()
        .await
        .unwrap();
    assert_eq!(unknown.status(), 404);
    let junk = reqwest::Method::from_bytes(b"JUNKMETHOD").unwrap();
    let refused = http
        .request(junk, format!("{base}/healthz"))
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), 405);
    let body: serde_json::Value = refused.json().await.unwrap();
    assert_eq!(body["error"]["code"], "method_not_allowed");
    // A scrape's own request is counted after its answer: the second scrape shows the first.
    series(&http, &base).await;
    let (before, size_before) = series(&http, &base).await;

    // Thousands of distinct methods (long ones too) and paths, unauthenticated.
    for i in 0..2_000u32 {
        let method = format!("M{i}{}", "X".repeat(if i % 100 == 0 { 2_000 } else { 20 }));
        let method = reqwest::Method::from_bytes(method.as_bytes()).unwrap();
        let answer = http
            .request(method, format!("{base}/api/v3/orders"))
            .send()
            .await
            .unwrap();
        assert_eq!(answer.status(), 405);
        let answer = http
            .get(format!("{base}/junk/{i}/{}", "p".repeat(50)))
            .send()
            .await
            .unwrap();
        assert_eq!(answer.status(), 404);
    }
    let (after, size_after) = series(&http, &base).await;
    assert_eq!(
        after, before,
        "no series from client-chosen methods or paths"
    );
    assert!(
        size_after < size_before + 4_096,
        "/metrics grew from {size_before} to {size_after} bytes"
    );
}

/// Stops the server however the test ends.
struct KillOnDrop(std::process::Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}
