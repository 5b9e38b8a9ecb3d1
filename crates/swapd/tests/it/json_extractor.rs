//! `ApiJson` as a handler sees it: media type, size, syntax, unknown fields and duplicate keys.

use axum::Router;
use axum::body::Body;
use axum::http::{Request, StatusCode};
use axum::routing::post;
use http_body_util::BodyExt;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use swapd_api::ApiJson;
use tower::ServiceExt;

#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
struct Order {
    amount: String,
    #[serde(default)]
    constraints: Option<Value>,
}

async fn echo(ApiJson(order): ApiJson<Order>) -> String {
    format!("{}:{}", order.amount, order.constraints.is_some())
}

async fn call(content_type: Option<&str>, body: impl Into<Body>) -> (StatusCode, Value) {
    let app = Router::new().route("/orders", post(echo));
    let mut request = Request::post("/orders");
    if let Some(content_type) = content_type {
        request = request.header("content-type", content_type);
    }
    let response = app
        .oneshot(request.body(body.into()).unwrap())
        .await
        .unwrap();
    let status = response.status();
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    let body = serde_json::from_slice(&bytes)
        .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&bytes).into()));
    (status, body)
}

fn code(body: &Value) -> &str {
    body["error"]["code"].as_str().unwrap_or_default()
}

#[tokio::test]
async fn a_valid_body_reaches_the_handler() {
    let (status, body) = call(
        Some("application/json; charset=utf-8"),
        r#"{"amount":"1.5","constraints":{"a":1}}"#,
    )
    .await;
    assert_eq!((status, body), (StatusCode::OK, Value::from("1.5:true")));
}

#[tokio::test]
async fn bad_bodies_get_stable_codes() {
    let cases: [(Option<&str>, &str, StatusCode, &str); 6] = [
        (
            None,
            r#"{"amount":"1"}"#,
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "unsupported_media_type",
        ),
        (
            Some("text/plain"),
            r#"{"amount":"1"}"#,
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "unsupported_media_type",
        ),
        (
            Some("application/json"),
            r#"{"amount":"1""#,
            StatusCode::BAD_REQUEST,
            "invalid_json",
        ),
        (
            Some("application/json"),
            r#"{"amount":"1","admin":true}"#,
            StatusCode::BAD_REQUEST,
            "validation_failed",
        ),
        (
            Some("application/json"),
            r#"{"amount":"1","amount":"2"}"#,
            StatusCode::BAD_REQUEST,
            "validation_failed",
        ),
        (
            Some("application/json"),
            r#"{"amount":"1","constraints":{"x":1,"x":2}}"#,
            StatusCode::BAD_REQUEST,
            "validation_failed",
        ),
    ];
    for (content_type, body, status, expected) in cases {
        let (got_status, got) = call(content_type, body.to_owned()).await;
        assert_eq!((got_status, code(&got)), (status, expected), "{body}");
        assert_eq!(got["success"], false);
    }
}

#[tokio::test]
async fn an_oversized_body_without_content_length_is_refused() {
    let (status, got) = call(Some("application/json"), vec![b' '; 70 * 1024]).await;
    assert_eq!(
        (status, code(&got)),
        (StatusCode::PAYLOAD_TOO_LARGE, "payload_too_large")
    );
}
