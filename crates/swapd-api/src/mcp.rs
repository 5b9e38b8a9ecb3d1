//! `/mcp`: the MCP server for agents (docs/mcp.md), MCP Streamable HTTP with rmcp. Its tools
//! are the x402 routes ([`swapd_mcp::ToolTable`] from this server's own x402 document), and a
//! tool call is sent into the HTTP application as its route's request, from the MCP request's
//! client: the same gate, prices, limits, idempotency and error codes as over HTTP, with
//! nothing restated here.

use std::net::SocketAddr;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::{ConnectInfo, Request, State};
use axum::http::{HeaderName, HeaderValue, Method, Uri};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use rmcp::RoleServer;
use rmcp::service::RequestContext;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use swapd_mcp::{Dispatch, HttpAnswer, HttpCall, Refusal, SwapdMcp, ToolTable};
use swapd_types::ErrorCode;
use tokio_util::sync::CancellationToken;
use tower::ServiceExt;

use crate::{ApiError, AppState, MAX_BODY_BYTES};

/// How `/mcp` is bounded (the `[mcp]` configuration).
#[derive(Debug, Clone)]
pub struct Settings {
    /// Sessions this node holds at once.
    pub max_sessions: usize,
    /// How long a session may stay idle before it is closed.
    pub session_idle: Duration,
    /// `Host` names answered besides the public origin's and loopback.
    pub allowed_hosts: Vec<String>,
    /// Ends every session (and its open streams) when cancelled: at shutdown.
    pub shutdown: CancellationToken,
}

/// The tools: the x402 document this server publishes, turned into tools once.
pub fn tools() -> Arc<ToolTable> {
    static TOOLS: OnceLock<Arc<ToolTable>> = OnceLock::new();
    TOOLS
        .get_or_init(|| {
            let document = serde_json::from_str(crate::openapi::x402_document())
                .expect("the x402 document is JSON");
            Arc::new(ToolTable::from_openapi(&document).expect("the x402 routes make tools"))
        })
        .clone()
}

/// `/mcp`, dispatching tool calls into `api` (the application without `/mcp`).
pub(crate) fn router(state: &AppState, api: Router) -> Router<AppState> {
    let settings = &state.mcp;
    let mut sessions = LocalSessionManager::default();
    sessions.session_config.keep_alive = Some(settings.session_idle);
    let sessions = Arc::new(sessions);
    let dispatch = Arc::new(IntoApplication { api });
    let tools = tools();
    let service = StreamableHttpService::new(
        move || Ok(SwapdMcp::new(tools.clone(), dispatch.clone())),
        sessions.clone(),
        StreamableHttpServerConfig::default()
            .with_allowed_hosts(allowed_hosts(state))
            .with_allowed_origins([state.x402.origin.clone()])
            .with_max_request_body_bytes(MAX_BODY_BYTES)
            .with_cancellation_token(settings.shutdown.child_token()),
    );
    let bound = SessionBound {
        sessions,
        max: settings.max_sessions,
    };
    Router::new()
        .route_service("/mcp", service)
        .layer(middleware::from_fn_with_state(bound, bound_sessions))
}

/// Loopback, the public origin's host and the configured ones: any other `Host` is refused.
fn allowed_hosts(state: &AppState) -> Vec<String> {
    let mut hosts: Vec<String> = ["localhost", "127.0.0.1", "::1"].map(String::from).into();
    if let Some(host) = state
        .x402
        .origin
        .parse::<Uri>()
        .ok()
        .and_then(|uri| uri.host().map(|h| h.trim_matches(['[', ']']).to_owned()))
    {
        hosts.push(host);
    }
    hosts.extend(state.mcp.allowed_hosts.iter().cloned());
    hosts
}

#[derive(Clone)]
struct SessionBound {
    sessions: Arc<LocalSessionManager>,
    max: usize,
}

/// A new session (a POST without `Mcp-Session-Id`) past the bound is refused, 503.
async fn bound_sessions(
    State(bound): State<SessionBound>,
    request: Request,
    next: Next,
) -> Response {
    let opens_session =
        request.method() == Method::POST && !request.headers().contains_key("mcp-session-id");
    if opens_session && bound.sessions.sessions.read().await.len() >= bound.max {
        return ApiError::new(
            ErrorCode::ServiceUnavailable,
            "this node holds as many MCP sessions as it may (mcp.max_sessions): retry shortly, \
             or end a session you no longer use (DELETE /mcp)",
        )
        .with_header(
            axum::http::header::RETRY_AFTER,
            HeaderValue::from_static("5"),
        )
        .into_response();
    }
    next.run(request).await
}

/// Sends a tool call's request into the HTTP application, as from the MCP request's client.
struct IntoApplication {
    api: Router,
}

/// What an answer may hold (a QR code's images are the largest).
const MAX_ANSWER_BYTES: usize = 8 * 1024 * 1024;

impl Dispatch for IntoApplication {
    async fn send(
        &self,
        call: HttpCall,
        context: &RequestContext<RoleServer>,
    ) -> Result<HttpAnswer, Refusal> {
        let mut request = Request::new(Body::from(call.body.unwrap_or_default()));
        *request.method_mut() = call.method;
        *request.uri_mut() = call.path_and_query.parse().map_err(|_| {
            Refusal::new(
                ErrorCode::ValidationFailed,
                "the arguments make no valid URL",
            )
        })?;
        *request.headers_mut() = call.headers;
        if let Some(incoming) = context.extensions.get::<axum::http::request::Parts>() {
            as_from(incoming, &mut request);
        }
        let response = self
            .api
            .clone()
            .oneshot(request)
            .await
            .unwrap_or_else(|never| match never {});
        let (parts, body) = response.into_parts();
        let body = axum::body::to_bytes(body, MAX_ANSWER_BYTES)
            .await
            .map_err(|_| Refusal::new(ErrorCode::InternalError, "the answer was too large"))?;
        Ok(HttpAnswer {
            status: parts.status,
            headers: parts.headers,
            body: body.to_vec(),
        })
    }
}

/// The request comes from the MCP request's client: its peer address and, through a trusted
/// proxy, its `X-Forwarded-For` (the limits count that client).
fn as_from(incoming: &axum::http::request::Parts, request: &mut Request) {
    if let Some(peer) = incoming.extensions.get::<ConnectInfo<SocketAddr>>() {
        request.extensions_mut().insert(*peer);
    }
    let forwarded = HeaderName::from_static("x-forwarded-for");
    for value in incoming.headers.get_all(&forwarded) {
        request
            .headers_mut()
            .append(forwarded.clone(), value.clone());
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;

    /// Every x402 route is a tool, and every tool is an x402 route with its rule.
    #[test]
    fn the_tools_are_the_x402_route_table() {
        let tools = tools();
        let routes = crate::x402::routes();
        let declared: BTreeSet<(String, String)> = routes
            .iter()
            .map(|r| (r.method.to_string(), r.path.clone()))
            .collect();
        let derived: BTreeSet<(String, String)> = tools
            .iter()
            .map(|t| (t.method.to_string(), t.path.clone()))
            .collect();
        assert_eq!(declared, derived);
        for route in routes {
            let tool = tools
                .iter()
                .find(|t| t.method == route.method && t.path == route.path)
                .unwrap();
            let access = match route.access {
                crate::x402::Access::Free => swapd_mcp::Access::Free,
                crate::x402::Access::WalletRead => swapd_mcp::Access::Wallet,
                _ => swapd_mcp::Access::Paid,
            };
            assert_eq!(tool.access, access, "{}", tool.name());
            let annotations = tool.tool.annotations.clone().unwrap();
            // A legacy quote is a POST that changes nothing (`prices:read`).
            let reads = route.method == Method::GET || tool.name() == "quotes";
            assert_eq!(annotations.read_only_hint, Some(reads), "{}", tool.name());
            assert_eq!(annotations.destructive_hint, Some(false));
            assert!(tool.tool.output_schema.is_some(), "{}", tool.name());
            if route.method == Method::POST && route.access.paid() {
                assert!(tool.argument("idempotencyKey").is_some(), "{}", tool.name());
            }
        }
        let names: BTreeSet<&str> = tools.iter().map(|t| t.name()).collect();
        for expected in [
            "currencies",
            "tokens_search",
            "tokens_by_address",
            "discover_routes",
            "quotes",
            "resolve_route",
            "create_order",
            "get_order",
            "deposit_qr",
            "emergency",
            "refund",
            "attach_email",
            "resolve_onchain_route",
            "report_onchain_execution",
            "get_onchain_execution",
            "create_job",
            "get_job",
        ] {
            assert!(names.contains(expected), "{expected}");
        }
        for read in ["get_order", "deposit_qr", "get_onchain_execution"] {
            assert!(
                tools.get(read).unwrap().argument("pageToken").is_some(),
                "{read}"
            );
        }
    }
}
