//! `/mcp` on the production wiring: sessions bounded in number and idle time, and open MCP
//! streams ended at shutdown (the MCP clients' own tests are tests/mcp, in Python).

use std::time::Duration;

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::http::Server;

/// What a test sends to `/mcp` of a [`Server`].
trait Mcp {
    fn post(&self, session: Option<&str>, message: Value) -> reqwest::RequestBuilder;
    async fn open_session(&self) -> Result<String, reqwest::Response>;
    async fn close_session(&self, id: &str);
}

impl Mcp for Server {
    fn post(&self, session: Option<&str>, message: Value) -> reqwest::RequestBuilder {
        let mut request = reqwest::Client::new()
            .post(format!("{}/mcp", self.base))
            .header("accept", "application/json, text/event-stream")
            .json(&message);
        if let Some(session) = session {
            request = request
                .header("mcp-session-id", session)
                .header("mcp-protocol-version", "2025-06-18");
        }
        request
    }

    /// A new session's id, or the refusal.
    async fn open_session(&self) -> Result<String, reqwest::Response> {
        let response = self
            .post(
                None,
                json!({
                    "jsonrpc": "2.0", "id": 1, "method": "initialize",
                    "params": {
                        "protocolVersion": "2025-06-18",
                        "capabilities": {},
                        "clientInfo": {"name": "it", "version": "1"}
                    }
                }),
            )
            .send()
            .await
            .unwrap();
        if response.status() != StatusCode::OK {
            return Err(response);
        }
        let id = response.headers()["mcp-session-id"]
            .to_str()
            .unwrap()
            .to_owned();
        let initialized = self
            .post(
                Some(&id),
                json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
            )
            .send()
            .await
            .unwrap();
        assert_eq!(initialized.status(), StatusCode::ACCEPTED);
        Ok(id)
    }

    async fn close_session(&self, id: &str) {
        let closed = reqwest::Client::new()
            .delete(format!("{}/mcp", self.base))
            .header("mcp-session-id", id)
            .header("mcp-protocol-version", "2025-06-18")
            .send()
            .await
            .unwrap();
        assert!(closed.status().is_success(), "{}", closed.status());
    }
}

#[tokio::test]
async fn sessions_past_the_bound_are_refused_until_one_ends() {
    let server = Server::start_with(|config| config.mcp.max_sessions = 2).await;
    let first = server.open_session().await.unwrap();
    let _second = server.open_session().await.unwrap();
    let refused = server.open_session().await.unwrap_err();
    assert_eq!(refused.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert!(refused.headers().contains_key("retry-after"));
    let body: Value = refused.json().await.unwrap();
    assert_eq!(body["error"]["code"], "service_unavailable");

    server.close_session(&first).await;
    server
        .open_session()
        .await
        .expect("a session ended: another may start");
    server.shutdown.cancel();
    server.task.await.unwrap().unwrap();
}

#[tokio::test]
async fn an_idle_session_is_closed_and_frees_its_place() {
    let server = Server::start_with(|config| {
        config.mcp.max_sessions = 1;
        config.mcp.session_idle_secs = 1;
    })
    .await;
    let idle = server.open_session().await.unwrap();
    assert!(server.open_session().await.is_err(), "one session at most");
    tokio::time::sleep(Duration::from_millis(2_500)).await;
    let gone = server
        .post(
            Some(&idle),
            json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(
        gone.status(),
        StatusCode::NOT_FOUND,
        "the idle session was closed"
    );
    server
        .open_session()
        .await
        .expect("the idle session's place is free");
    server.shutdown.cancel();
    server.task.await.unwrap().unwrap();
}

#[tokio::test]
async fn an_open_mcp_stream_does_not_hold_up_shutdown() {
    let server = Server::start_with(|_| {}).await;
    let session = server.open_session().await.unwrap();
    let stream = reqwest::Client::new()
        .get(format!("{}/mcp", server.base))
        .header("accept", "text/event-stream")
        .header("mcp-session-id", &session)
        .header("mcp-protocol-version", "2025-06-18")
        .send()
        .await
        .unwrap();
    assert_eq!(stream.status(), StatusCode::OK);
    server.shutdown.cancel();
    // Without the sessions ended at shutdown, the graceful shutdown waits on the stream forever.
    tokio::time::timeout(Duration::from_secs(60), server.task)
        .await
        .expect("the server stopped with an MCP stream open")
        .unwrap()
        .unwrap();
    drop(stream);
}
