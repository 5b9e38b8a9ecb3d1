use axum::Router;
use axum::http::HeaderName;
use axum::middleware;
use axum::routing::get;
use tower::ServiceBuilder;
use tower_http::catch_panic::CatchPanicLayer;
use tower_http::limit::RequestBodyLimitLayer;
use tower_http::request_id::{PropagateRequestIdLayer, SetRequestIdLayer};
use tower_http::timeout::TimeoutLayer;
use tower_http::trace::TraceLayer;

use crate::layers::{
    MakeReqId, answer_panic, envelope_framework_errors, keep_sane_request_id, limit_request_head,
    record_metrics, refuse_unknown_methods, require_canonical_path,
};
use crate::{AppState, MAX_BODY_BYTES, openapi, ops};

const REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");

/// The whole HTTP application: both API surfaces, the hosted order page and the operational
/// endpoints.
pub fn router(state: AppState) -> Router {
    router_with(state, Router::new())
}

/// [`router`] plus `extra` routes, for embedding and tests. Signed extras are mounted with
/// [`crate::business::BusinessRoutes::into_router`].
pub fn router_with(state: AppState, extra: Router<AppState>) -> Router {
    // Install the recorder before the first request, so nothing recorded is lost.
    crate::layers::prometheus();
    // `/mcp` sends each tool call into the application as its route's request.
    let api = application(state.clone(), extra.clone(), Router::new());
    let mcp = crate::mcp::router(&state, api);
    application(state, extra, mcp)
}

/// The application, with `unthrottled` beside the operational endpoints: routes the
/// per-address limits do not count themselves (`/mcp`: the calls it sends are counted).
fn application(state: AppState, extra: Router<AppState>, unthrottled: Router<AppState>) -> Router {
    let request_timeout = state.request_timeout;
    let business = Router::new().route("/openapi.json", get(openapi::business_openapi));
    let x402 = Router::new().route("/openapi.json", get(openapi::x402_openapi));

    Router::new()
        .merge(crate::business::router(&state))
        .merge(crate::x402::router(&state))
        .merge(crate::order_page::router())
        .merge(crate::console::router())
        .merge(extra)
        .nest("/api/v3", business)
        .nest("/api/x402", x402)
        // Every API route, not the operational ones (probes must not be throttled).
        .layer(middleware::from_fn_with_state(
            state.clone(),
            crate::ip_limits::limit,
        ))
        .merge(unthrottled)
        .route("/healthz", get(ops::healthz))
        .route("/readyz", get(ops::readyz))
        .route("/metrics", get(ops::metrics))
        // Layers added with `Router::layer` run after routing, so they see `MatchedPath`.
        .layer(middleware::from_fn(record_metrics))
        .with_state(state)
        .layer(
            ServiceBuilder::new()
                .layer(middleware::from_fn(keep_sane_request_id))
                .layer(SetRequestIdLayer::new(REQUEST_ID, MakeReqId))
                .layer(PropagateRequestIdLayer::new(REQUEST_ID))
                .layer(middleware::from_fn(refuse_unknown_methods))
                .layer(TraceLayer::new_for_http().make_span_with(
                    |request: &axum::http::Request<axum::body::Body>| {
                        let request_id = request
                            .headers()
                            .get(REQUEST_ID)
                            .and_then(|v| v.to_str().ok())
                            .unwrap_or_default();
                        // The route template, status and caller's kind are recorded as they are
                        // known; the trace continues the caller's `traceparent`, and its id
                        // joins the logs to the trace.
                        let span = tracing::info_span!(
                            "request",
                            method = %request.method(),
                            request_id,
                            http.route = tracing::field::Empty,
                            http.status_code = tracing::field::Empty,
                            principal = tracing::field::Empty,
                            trace_id = tracing::field::Empty,
                            otel.kind = "server",
                        );
                        swapd_http::trace::continue_from(request.headers(), &span);
                        if let Some(trace_id) = swapd_http::trace::trace_id(&span) {
                            span.record("trace_id", trace_id.as_str());
                        }
                        span
                    },
                ))
                .layer(middleware::from_fn(envelope_framework_errors))
                .layer(CatchPanicLayer::custom(answer_panic))
                .layer(TimeoutLayer::with_status_code(
                    axum::http::StatusCode::SERVICE_UNAVAILABLE,
                    request_timeout,
                ))
                .layer(middleware::from_fn(limit_request_head))
                .layer(middleware::from_fn(require_canonical_path))
                .layer(RequestBodyLimitLayer::new(MAX_BODY_BYTES)),
        )
}
