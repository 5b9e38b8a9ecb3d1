//! Operational endpoints for load balancers and monitoring. Unauthenticated by design.

use std::time::Duration;

use axum::extract::State;
use axum::http::header::CONTENT_TYPE;
use axum::response::IntoResponse;
use serde::Serialize;
use swapd_types::{ErrorCode, Success};
use utoipa::ToSchema;

use crate::json::Json;
use crate::layers::prometheus;
use crate::limits::Sharing;
use crate::{ApiError, AppState};

const READINESS_TIMEOUT: Duration = Duration::from_secs(2);

#[derive(Debug, Serialize, ToSchema)]
pub struct Health {
    /// Always `"ok"` while the process serves requests.
    pub status: &'static str,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Readiness {
    /// `"ready"`: the database answered.
    pub status: &'static str,
    /// `"sqlite"` or `"postgres"`.
    pub database: &'static str,
    /// Where nonces and rate limits live: `"memory"` (one node), `"database"` or `"redis"`
    /// (shared by several nodes; Redis must answer too).
    pub shared_state: &'static str,
    /// `"sandbox"` or `"live"`.
    pub mode: &'static str,
    /// Each provider's state. A provider that is down does not make the node unready: its
    /// routes are unavailable until it answers again.
    pub providers: Vec<ProviderReadiness>,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProviderReadiness {
    pub id: &'static str,
    /// `up`; `degraded` (its last calls failed, it is still asked); `down` (it kept failing
    /// and is skipped for a while).
    pub state: &'static str,
    /// Its last failure, when it is not up: in swapd's words in sandbox mode, the stable code
    /// `provider_unavailable` in live mode.
    pub last_failure: Option<String>,
    /// What swapd lacks for it to serve every pair it trades (a chain node), when it lacks
    /// something: its route cards say `provider_not_configured` meanwhile.
    pub not_configured: Option<String>,
}

/// Liveness: the process is up. Never touches the database.
#[utoipa::path(get, path = "/healthz", tag = "operations",
    responses((status = 200, description = "The process is alive", body = inline(Success<Health>))))]
pub(crate) async fn healthz() -> Json<Success<Health>> {
    Json(Success::new(Health { status: "ok" }))
}

/// Readiness: the node is not shutting down, and the database (and Redis, when configured)
/// answers within two seconds.
#[utoipa::path(get, path = "/readyz", tag = "operations",
    responses(
        (status = 200, description = "Ready to serve", body = inline(Success<Readiness>)),
        (status = 503, description = "The node is shutting down, the database or Redis does not answer, or a background loop of this process keeps failing (`service_unavailable`, the message names it)", body = swapd_types::ErrorEnvelope),
    ))]
pub(crate) async fn readyz(
    State(state): State<AppState>,
) -> Result<Json<Success<Readiness>>, ApiError> {
    if state.stopping.is_cancelled() {
        return Err(ApiError::new(
            ErrorCode::ServiceUnavailable,
            "this node is shutting down",
        ));
    }
    let failing = state.worker_health.failing();
    if !failing.is_empty() {
        let loops: Vec<String> = failing
            .iter()
            .map(|(name, failures)| format!("{name} ({failures} failed passes in a row)"))
            .collect();
        return Err(ApiError::new(
            ErrorCode::ServiceUnavailable,
            format!("background loops keep failing: {}", loops.join(", ")),
        ));
    }
    let sharing = state.limits.sharing();
    if let Sharing::Redis(redis) = sharing
        && let Err(error) = redis.ping().await
    {
        tracing::warn!(%error, "readiness check failed");
        return Err(ApiError::new(
            ErrorCode::ServiceUnavailable,
            "redis does not answer",
        ));
    }
    match tokio::time::timeout(READINESS_TIMEOUT, state.store.ping()).await {
        Ok(Ok(())) => Ok(Json(Success::new(Readiness {
            status: "ready",
            database: state.store.backend(),
            shared_state: sharing.state().into(),
            mode: state.mode.as_str(),
            providers: state
                .market
                .health(state.clock.now_ms())
                .into_iter()
                .map(|health| ProviderReadiness {
                    id: health.id,
                    state: health.state.into(),
                    // Anyone may read readiness: in live mode only the stable code of why a
                    // provider fails (the words are in the log and the console).
                    last_failure: match state.mode {
                        swapd_core::Mode::Live => health
                            .last_failure
                            .map(|_| "provider_unavailable".to_owned()),
                        swapd_core::Mode::Sandbox => health.last_failure,
                    },
                    not_configured: health.not_configured,
                })
                .collect(),
        }))),
        Ok(Err(error)) => {
            tracing::warn!(%error, "readiness check failed");
            Err(not_ready())
        }
        Err(_) => {
            tracing::warn!("readiness check timed out");
            Err(not_ready())
        }
    }
}

fn not_ready() -> ApiError {
    ApiError::new(
        ErrorCode::ServiceUnavailable,
        "the database does not answer",
    )
}

/// Prometheus metrics in the text exposition format: `http_requests_total{route,method,status}`
/// and the `http_request_duration_seconds{route,method}` histogram.
#[utoipa::path(get, path = "/metrics", tag = "operations",
    responses((status = 200, description = "Prometheus text format", content_type = "text/plain", body = String)))]
pub(crate) async fn metrics() -> impl IntoResponse {
    (
        [(CONTENT_TYPE, "text/plain; version=0.0.4")],
        prometheus().render(),
    )
}
