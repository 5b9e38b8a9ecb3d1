//! Cross-cutting middleware: request ids, metrics, and turning every framework-generated error
//! (unknown route, wrong method, body too large) into the error envelope.

use std::sync::OnceLock;
use std::time::Instant;

use axum::body::Body;
use axum::extract::{MatchedPath, Request};
use axum::http::header::{CONTENT_LENGTH, CONTENT_TYPE};
use axum::http::{HeaderValue, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};
use swapd_types::ErrorCode;
use tower_http::request_id::{MakeRequestId, RequestId};

use crate::ApiError;
use crate::json::too_large;

pub(crate) const REQUEST_DURATION: &str = "http_request_duration_seconds";
pub(crate) const REQUESTS_TOTAL: &str = "http_requests_total";
/// How long the x402 facilitator took to answer, by `call` (`verify`, `settle`).
pub(crate) const FACILITATOR_DURATION: &str = "x402_facilitator_duration_seconds";

/// The longest client-chosen `X-Request-Id` that is kept.
const MAX_CLIENT_REQUEST_ID: usize = 128;

/// Drops a client's `X-Request-Id` that is too long or not made of `[A-Za-z0-9._:-]`, so a fresh
/// id replaces it: the id lands in every log line and response, and must stay harmless there.
pub(crate) async fn keep_sane_request_id(mut request: Request, next: Next) -> Response {
    let sane = |value: &HeaderValue| {
        let bytes = value.as_bytes();
        !bytes.is_empty()
            && bytes.len() <= MAX_CLIENT_REQUEST_ID
            && bytes
                .iter()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b':' | b'-'))
    };
    let headers = request.headers_mut();
    let values: Vec<&HeaderValue> = headers.get_all("x-request-id").iter().collect();
    if values.len() != 1 || !sane(values[0]) {
        headers.remove("x-request-id");
    }
    next.run(request).await
}

/// Request ids look like `req_<32 hex>`; a well-formed `X-Request-Id` sent by the client is kept.
#[derive(Clone, Copy, Default)]
pub(crate) struct MakeReqId;

impl MakeRequestId for MakeReqId {
    fn make_request_id<B>(&mut self, _request: &axum::http::Request<B>) -> Option<RequestId> {
        HeaderValue::from_str(&swapd_core::ids::new_id("req_"))
            .ok()
            .map(RequestId::new)
    }
}

/// The process-wide Prometheus recorder, installed on first use.
pub(crate) fn prometheus() -> &'static PrometheusHandle {
    static HANDLE: OnceLock<PrometheusHandle> = OnceLock::new();
    HANDLE.get_or_init(|| {
        const BUCKETS: &[f64] = &[
            0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
        ];
        let recorder = PrometheusBuilder::new()
            .set_buckets_for_metric(Matcher::Full(REQUEST_DURATION.to_owned()), BUCKETS)
            .and_then(|builder| {
                builder
                    .set_buckets_for_metric(Matcher::Full(FACILITATOR_DURATION.to_owned()), BUCKETS)
            })
            .expect("bucket list is not empty")
            .build_recorder();
        let handle = recorder.handle();
        // Another recorder may already be installed (a host embedding swapd); then this handle
        // still renders what swapd records through it only if ours won, so log the outcome.
        if metrics::set_global_recorder(recorder).is_err() {
            tracing::warn!("a metrics recorder was already installed; /metrics may be empty");
        }
        handle
    })
}

/// The methods swapd answers. Any other is refused before a layer records or logs it: the
/// method is a metric label, and a client must not mint series (or log lines) of its own.
const KNOWN_METHODS: [Method; 7] = [
    Method::GET,
    Method::HEAD,
    Method::POST,
    Method::PUT,
    Method::PATCH,
    Method::DELETE,
    Method::OPTIONS,
];

/// A method as a metric label: one of [`KNOWN_METHODS`], or `other`.
pub(crate) fn method_label(method: &Method) -> &'static str {
    KNOWN_METHODS
        .iter()
        .find(|known| *known == method)
        .map_or("other", Method::as_str)
}

/// Refuses a method outside [`KNOWN_METHODS`] (405 `method_not_allowed`).
pub(crate) async fn refuse_unknown_methods(request: Request, next: Next) -> Response {
    if method_label(request.method()) == "other" {
        return ApiError::new(
            ErrorCode::MethodNotAllowed,
            "swapd answers GET, HEAD, POST, PUT, PATCH, DELETE and OPTIONS only",
        )
        .into_response();
    }
    next.run(request).await
}

/// Counts requests by route template, method and status, and times them. Every label is from
/// a fixed set: route templates (`unmatched` for any other path), known methods, status codes.
pub(crate) async fn record_metrics(request: Request, next: Next) -> Response {
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .map_or_else(|| "unmatched".to_owned(), |p| p.as_str().to_owned());
    let method = method_label(request.method());
    let started = Instant::now();
    // The request's span (docs/deploy.md, "Traces") names the route template, never the path.
    let span = tracing::Span::current();
    span.record("http.route", route.as_str());
    let response = next.run(request).await;
    let status = response.status().as_u16().to_string();
    span.record("http.status_code", status.as_str());
    metrics::counter!(REQUESTS_TOTAL, "route" => route.clone(), "method" => method, "status" => status)
        .increment(1);
    metrics::histogram!(REQUEST_DURATION, "route" => route, "method" => method)
        .record(started.elapsed().as_secs_f64());
    response
}

/// The longest request target (path and query) and the most header bytes a request may carry.
/// Past these swapd answers itself, in the envelope with a request id; the HTTP server's own
/// harder limits (100 headers, a head of about 400 KiB) answer bare.
pub const MAX_URI_BYTES: usize = 8 * 1024;
pub const MAX_HEADER_BYTES: usize = 32 * 1024;

/// Refuses a request target or headers larger than [`MAX_URI_BYTES`] or [`MAX_HEADER_BYTES`].
pub(crate) async fn limit_request_head(request: Request, next: Next) -> Response {
    let target = request
        .uri()
        .path_and_query()
        .map_or(0, |target| target.as_str().len());
    if target > MAX_URI_BYTES {
        return ApiError::new(
            ErrorCode::UriTooLong,
            format!("the request target is longer than {MAX_URI_BYTES} bytes"),
        )
        .into_response();
    }
    let headers: usize = request
        .headers()
        .iter()
        .map(|(name, value)| name.as_str().len() + value.len())
        .sum();
    if headers > MAX_HEADER_BYTES {
        return ApiError::new(
            ErrorCode::HeadersTooLarge,
            format!("the request headers are larger than {MAX_HEADER_BYTES} bytes"),
        )
        .into_response();
    }
    next.run(request).await
}

/// Refuses any request whose path is not in the one canonical form that is signed and routed
/// (`swapd_types::signing::is_canonical_path`), before routing can interpret it.
pub(crate) async fn require_canonical_path(request: Request, next: Next) -> Response {
    if swapd_types::signing::is_canonical_path(request.uri().path()) {
        return next.run(request).await;
    }
    ApiError::new(
        ErrorCode::PathNotCanonical,
        "the request path is not in canonical form: no empty, `.` or `..` segments, no trailing \
         slash, percent-escapes only where needed and in uppercase",
    )
    .into_response()
}

/// Rewrites error responses that did not come from [`ApiError`] (axum's 404/405, tower-http's
/// 413) into the error envelope, keeping their status and headers such as `Allow`.
/// A handler that panicked (a bug) answers 500 `internal_error` in the envelope; the panic is
/// logged with its message and counted on `/metrics`.
pub(crate) fn answer_panic(panic: Box<dyn std::any::Any + Send + 'static>) -> Response {
    let reason = panic
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_default();
    tracing::error!(%reason, "a request handler panicked");
    metrics::counter!("http_handler_panics_total").increment(1);
    ApiError::new(ErrorCode::InternalError, "internal error").into_response()
}

pub(crate) async fn envelope_framework_errors(request: Request, next: Next) -> Response {
    let method = request.method().clone();
    let path = request.uri().path().to_owned();
    let response = next.run(request).await;
    let status = response.status();
    // JSON answers are ours already, and so are the order page's HTML ones.
    let is_ours = response.headers().get(CONTENT_TYPE).is_some_and(|v| {
        v.as_bytes().starts_with(b"application/json") || v.as_bytes().starts_with(b"text/html")
    });
    if !(status.is_client_error() || status.is_server_error()) || is_ours {
        return response;
    }
    let error = match status {
        StatusCode::NOT_FOUND => {
            ApiError::new(ErrorCode::NotFound, format!("no route for {method} {path}"))
        }
        StatusCode::METHOD_NOT_ALLOWED => ApiError::new(
            ErrorCode::MethodNotAllowed,
            format!("{method} is not allowed on {path}; see the Allow header"),
        ),
        StatusCode::PAYLOAD_TOO_LARGE => too_large(),
        StatusCode::UNSUPPORTED_MEDIA_TYPE => ApiError::new(
            ErrorCode::UnsupportedMediaType,
            "send the body as JSON with `Content-Type: application/json`",
        ),
        StatusCode::SERVICE_UNAVAILABLE => ApiError::new(
            ErrorCode::ServiceUnavailable,
            "the request took too long and was stopped; retry (with the same Idempotency-Key)",
        ),
        s if s.is_server_error() => ApiError::new(ErrorCode::InternalError, "internal error"),
        _ => ApiError::new(ErrorCode::ValidationFailed, "the request is malformed"),
    };
    let (mut parts, _) = response.into_parts();
    parts.headers.remove(CONTENT_LENGTH);
    parts.headers.remove(CONTENT_TYPE);
    let mut rewritten = error.into_response();
    *rewritten.status_mut() = status;
    for (name, value) in parts.headers.iter() {
        rewritten.headers_mut().insert(name.clone(), value.clone());
    }
    rewritten.map(Body::new)
}
