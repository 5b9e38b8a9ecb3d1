//! The gate every signed `/api/v3` route passes through, in the order of docs/authentication.md
//! ("The order of checks"): cheap checks first, the nonce recorded only after the signature
//! verifies, quotas spent only by authenticated, authorized requests.

use std::sync::Arc;

use axum::body::{Body, to_bytes};
use axum::extract::{Request, State};
use axum::http::header::{CONTENT_ENCODING, ORIGIN, RETRY_AFTER, VARY};
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderValue, Method};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use ipnet::IpNet;
use swapd_core::api_keys::normalize_origin;
use swapd_core::rate_limit::{Policy, Quota};
use swapd_core::signing::{self, TIMESTAMP_TOLERANCE_SECS};
use swapd_types::ErrorCode;

use super::guards::{CachedKey, Guards, NonceOutcome};
use super::spec::{Required, RouteSpec};
use crate::client_address::client_ip;
use crate::principal::{Caller, KeyPrincipal};
use crate::{ApiError, AppState, MAX_BODY_BYTES};

/// Everything the gate needs for one route: the route's own rule comes with it (shared: the
/// gate is cloned for every request).
#[derive(Clone)]
pub struct Gate {
    pub state: AppState,
    pub route: Arc<RouteSpec>,
}

/// An authentication header: its canonical name and the older alias still accepted.
struct AuthHeader {
    name: &'static str,
    alias: Option<&'static str>,
    /// How error messages spell it.
    display: &'static str,
    /// The code for a value that is not ASCII.
    malformed: ErrorCode,
}

const API_KEY: AuthHeader = AuthHeader {
    name: "x-api-key",
    alias: None,
    display: "X-API-KEY",
    malformed: ErrorCode::ApiKeyInvalid,
};
const API_SIGN: AuthHeader = AuthHeader {
    name: "x-api-sign",
    alias: Some("x-signature"),
    display: "X-API-SIGN",
    malformed: ErrorCode::SignatureMalformed,
};
const API_TIMESTAMP: AuthHeader = AuthHeader {
    name: "x-api-timestamp",
    alias: Some("x-timestamp"),
    display: "X-API-TIMESTAMP",
    malformed: ErrorCode::TimestampInvalid,
};
const API_NONCE: AuthHeader = AuthHeader {
    name: "x-api-nonce",
    alias: Some("x-nonce"),
    display: "X-API-NONCE",
    malformed: ErrorCode::NonceInvalid,
};
const EXPOSED_HEADERS: &str = "X-Request-Id, X-RateLimit-Limit, X-RateLimit-Remaining, \
     X-RateLimit-Reset, X-RateLimit-Used, X-RateLimit-Resource, Retry-After, Idempotent-Replayed";

pub async fn authenticate(State(gate): State<Gate>, request: Request, next: Next) -> Response {
    match admit(&gate, request).await {
        Ok((request, grant)) => {
            let mut response = next.run(request).await;
            grant.decorate(response.headers_mut());
            response
        }
        Err((error, grant)) => {
            let mut response = error.into_response();
            if let Some(grant) = grant {
                grant.decorate(response.headers_mut());
            }
            response
        }
    }
}

/// What an admitted (or authenticated but refused) request's response carries.
struct Grant {
    quota: Quota,
    cors_origin: Option<HeaderValue>,
}

impl Grant {
    fn decorate(&self, headers: &mut HeaderMap) {
        rate_limit_headers(headers, &self.quota);
        if let Some(origin) = &self.cors_origin {
            headers.insert("access-control-allow-origin", origin.clone());
            headers.insert(
                "access-control-expose-headers",
                HeaderValue::from_static(EXPOSED_HEADERS),
            );
            headers.append(VARY, HeaderValue::from_static("Origin"));
        }
    }
}

pub(crate) fn rate_limit_headers(headers: &mut HeaderMap, quota: &Quota) {
    let number = |n: i64| HeaderValue::from_str(&n.to_string()).expect("digits");
    headers.insert("x-ratelimit-limit", number(quota.limit.into()));
    headers.insert("x-ratelimit-remaining", number(quota.remaining.into()));
    headers.insert("x-ratelimit-reset", number(quota.reset_secs));
    headers.insert("x-ratelimit-used", number(quota.used.into()));
    headers.insert(
        "x-ratelimit-resource",
        HeaderValue::from_static(quota.policy.as_str()),
    );
}

type Refusal = (ApiError, Option<Grant>);

/// A request signed no later than when the nonces it would be checked against began (a
/// restart): refused, since its nonce may have been used before, but not held against the
/// client's address.
fn sign_again(message: String) -> ApiError {
    ApiError::new(ErrorCode::TimestampOutOfWindow, message)
        .with_extension(crate::ip_limits::NotCounted)
}

async fn admit(gate: &Gate, request: Request) -> Result<(Request, Grant), Refusal> {
    let unauthenticated = |error: ApiError| (error, None);
    let guards = gate.state.guards.as_ref();
    let (parts, body) = request.into_parts();
    let body = signed_body(&parts, body).await.map_err(unauthenticated)?;
    let signed = Signed::read(&parts.headers).map_err(unauthenticated)?;
    signed.check_time(guards).map_err(unauthenticated)?;
    let key = verified_key(guards, &parts, &signed, &body)
        .await
        .map_err(unauthenticated)?;

    // Authenticated from here on: refusals report the (unchanged) quota.
    let cors_origin = authorize(gate, &key, &parts).await?;
    let quota = spend_quota(guards, &key, gate.route.weight)
        .await
        .map_err(|(error, quota)| {
            let grant = quota.map(|quota| Grant {
                quota,
                cors_origin: cors_origin.clone(),
            });
            (error, grant)
        })?;
    let mut request = Request::from_parts(parts, Body::from(body));
    tracing::Span::current().record("principal", "key");
    request.extensions_mut().insert(Caller::Key(KeyPrincipal {
        key_id: key.key.id.clone(),
        permissions: key.key.policy.permissions().iter().copied().collect(),
        markup: key.key.policy.markup(),
    }));
    Ok((request, Grant { quota, cors_origin }))
}

/// The exact bytes that were signed: uncompressed, within the limit, none on a GET.
async fn signed_body(parts: &Parts, body: Body) -> Result<axum::body::Bytes, ApiError> {
    if parts
        .headers
        .get(CONTENT_ENCODING)
        .is_some_and(|v| !v.as_bytes().eq_ignore_ascii_case(b"identity"))
    {
        return Err(ApiError::new(
            ErrorCode::ContentEncodingUnsupported,
            "compressed request bodies are not accepted; send the body uncompressed",
        ));
    }
    let body = to_bytes(body, MAX_BODY_BYTES)
        .await
        .map_err(|_| crate::json::too_large())?;
    if parts.method == Method::GET && !body.is_empty() {
        return Err(ApiError::new(
            ErrorCode::BodyNotAllowed,
            "GET requests must not have a body",
        ));
    }
    Ok(body)
}

/// The signing headers, present once each and well-formed.
struct Signed<'a> {
    key_id: &'a str,
    signature: &'a str,
    timestamp_text: &'a str,
    timestamp: i64,
    nonce: &'a str,
}

impl<'a> Signed<'a> {
    fn read(headers: &'a HeaderMap) -> Result<Self, ApiError> {
        let key_id = header(headers, &API_KEY)?;
        let signature = header(headers, &API_SIGN)?;
        let timestamp_text = header(headers, &API_TIMESTAMP)?;
        let nonce = header(headers, &API_NONCE)?;
        let Some(timestamp) = signing::parse_timestamp(timestamp_text) else {
            return Err(ApiError::new(
                ErrorCode::TimestampInvalid,
                "X-API-TIMESTAMP must be Unix epoch seconds (digits only)",
            ));
        };
        if !signing::is_nonce(nonce) {
            return Err(ApiError::new(
                ErrorCode::NonceInvalid,
                "X-API-NONCE must match ^[A-Za-z0-9._:-]{8,200}$",
            ));
        }
        if !signing::is_signature(signature) {
            return Err(ApiError::new(
                ErrorCode::SignatureMalformed,
                "X-API-SIGN must be the HMAC-SHA256 as 64 lowercase hex digits",
            ));
        }
        if !signing::is_key_id(key_id) {
            return Err(invalid_key());
        }
        Ok(Self {
            key_id,
            signature,
            timestamp_text,
            timestamp,
            nonce,
        })
    }

    /// Signed within the tolerance of the server's time, and after its last restart.
    fn check_time(&self, guards: &Guards) -> Result<(), ApiError> {
        let (now, timestamp) = (guards.clock().now_secs(), self.timestamp);
        if (now - timestamp).abs() > TIMESTAMP_TOLERANCE_SECS {
            let hint = if timestamp > 100_000_000_000 {
                " (it looks like milliseconds: send seconds)"
            } else {
                ""
            };
            return Err(ApiError::new(
                ErrorCode::TimestampOutOfWindow,
                format!(
                    "X-API-TIMESTAMP {timestamp} is more than {TIMESTAMP_TOLERANCE_SECS} s from server time {now}{hint}; sync your clock and sign again"
                ),
            ));
        }
        if let Some(started) = guards.signed_before_start(timestamp) {
            return Err(sign_again(format!(
                "X-API-TIMESTAMP {timestamp} is not later than this server's restart at {started} (server time {now}); sign again with a later time"
            )));
        }
        Ok(())
    }
}

/// The key that signed the request: known, the signature verified over the canonical request,
/// active, and its nonce recorded only then.
async fn verified_key(
    guards: &Guards,
    parts: &Parts,
    signed: &Signed<'_>,
    body: &[u8],
) -> Result<Arc<CachedKey>, ApiError> {
    let key = guards
        .key(signed.key_id)
        .await
        .map_err(auth_unavailable)?
        .ok_or_else(invalid_key)?;
    // The path is canonical: `layers::require_canonical_path` refused any other before routing.
    let canonical_query = signing::canonical_query(parts.uri.query().unwrap_or_default())
        .map_err(|e| ApiError::new(ErrorCode::QueryInvalidEncoding, e.to_string()))?;
    let message = signing::string_to_sign(
        parts.method.as_str(),
        parts.uri.path(),
        &canonical_query,
        signed.timestamp_text,
        signed.nonce,
        body,
    );
    if !key.verifier.verify(&message, signed.signature) {
        return Err(ApiError::new(
            ErrorCode::SignatureInvalid,
            "X-API-SIGN does not match; see docs/authentication.md for the string to sign",
        ));
    }
    if !key.key.is_active() {
        return Err(ApiError::new(
            ErrorCode::ApiKeyRevoked,
            "this API key has been revoked",
        ));
    }
    let timestamp = signed.timestamp;
    match guards
        .claim_nonce(signed.key_id, signed.nonce, timestamp)
        .await
        .map_err(auth_unavailable)?
    {
        NonceOutcome::Fresh => Ok(key),
        NonceOutcome::SignedBeforeReset { since_secs } => Err(sign_again(format!(
            "X-API-TIMESTAMP {timestamp} is not later than {since_secs}, when the shared nonce set began again (server time {}); sign again with a later time",
            guards.clock().now_secs()
        ))),
        NonceOutcome::Reused => Err(ApiError::new(
            ErrorCode::NonceReused,
            "this X-API-NONCE was already used with this key; every request needs a new nonce",
        )),
    }
}

/// What the key may do here: from this address, from this origin (the CORS origin to answer,
/// when it lists it), with the route's permission. A refusal reports the (unchanged) quota and
/// the CORS origin known by then.
async fn authorize(
    gate: &Gate,
    key: &CachedKey,
    parts: &Parts,
) -> Result<Option<HeaderValue>, Refusal> {
    let guards = gate.state.guards.as_ref();
    if !ip_allowed(key, parts, &gate.state.trusted_proxies) {
        let error = ApiError::new(
            ErrorCode::IpNotAllowed,
            "this API key may not be used from this IP address",
        );
        return Err(refused(guards, key, error, None).await);
    }
    let cors_origin = match parts.headers.get(ORIGIN) {
        None => None,
        Some(origin) => match origin_check(key, origin) {
            OriginCheck::Listed => Some(origin.clone()),
            OriginCheck::Unrestricted => None,
            OriginCheck::Refused => {
                let error = ApiError::new(
                    ErrorCode::OriginNotAllowed,
                    "this API key may not be used from this origin",
                );
                return Err(refused(guards, key, error, None).await);
            }
        },
    };
    if let Required::Permission(permission) = gate.route.required
        && !key.key.policy.permissions().contains(&permission)
    {
        let error = ApiError::new(
            ErrorCode::PermissionDenied,
            format!("this API key lacks the `{permission}` permission"),
        );
        return Err(refused(guards, key, error, cors_origin).await);
    }
    Ok(cors_origin)
}

/// Spends the route's `weight` of the key's quotas: the quota after it, or the refusal with
/// the quota that refused (none when the limits cannot be reached).
async fn spend_quota(
    guards: &Guards,
    key: &CachedKey,
    weight: u32,
) -> Result<Quota, (ApiError, Option<Quota>)> {
    let decision = guards
        .consume_rate(&key.key, weight)
        .await
        .map_err(|e| (auth_unavailable(e), None))?;
    let Some(policy) = decision.refused_by else {
        return Ok(decision.report);
    };
    let code = match policy {
        Policy::KeyWeightHour => ErrorCode::QuotaExceeded,
        Policy::KeyMinute | Policy::KeyHour => ErrorCode::RateLimitExceeded,
    };
    let error = ApiError::new(
        code,
        format!(
            "the {} limit of this API key is used up; retry after {} s",
            policy.as_str(),
            decision.retry_after_secs
        ),
    )
    .with_header(RETRY_AFTER, HeaderValue::from(decision.retry_after_secs));
    Err((error, Some(decision.report)))
}

async fn refused(
    guards: &Guards,
    key: &CachedKey,
    error: ApiError,
    cors_origin: Option<HeaderValue>,
) -> Refusal {
    match guards.peek_rate(&key.key).await {
        Ok(quota) => (error, Some(Grant { quota, cors_origin })),
        Err(store) => (auth_unavailable(store), None),
    }
}

/// One header value, preferring the canonical name over its alias; missing or repeated is an
/// error naming the header.
fn header<'a>(headers: &'a HeaderMap, spec: &AuthHeader) -> Result<&'a str, ApiError> {
    let chosen = match spec.alias {
        Some(alias) if !headers.contains_key(spec.name) && headers.contains_key(alias) => alias,
        _ => spec.name,
    };
    let mut values = headers.get_all(chosen).iter();
    let Some(value) = values.next() else {
        return Err(ApiError::new(
            ErrorCode::AuthHeaderMissing,
            format!(
                "missing header {}: sign every request (see docs/authentication.md)",
                spec.display
            ),
        ));
    };
    if values.next().is_some() {
        return Err(ApiError::new(
            ErrorCode::AuthHeaderDuplicated,
            format!("header {chosen} was sent more than once"),
        ));
    }
    value
        .to_str()
        .map_err(|_| ApiError::new(spec.malformed, format!("header {chosen} is not ASCII")))
}

fn invalid_key() -> ApiError {
    ApiError::new(
        ErrorCode::ApiKeyInvalid,
        "X-API-KEY does not name an API key",
    )
}

fn auth_unavailable(error: swapd_core::StoreError) -> ApiError {
    tracing::warn!(%error, "authentication state unavailable");
    ApiError::new(
        ErrorCode::AuthUnavailable,
        "requests cannot be authenticated right now; retry shortly",
    )
}

fn ip_allowed(key: &CachedKey, parts: &Parts, trusted_proxies: &[IpNet]) -> bool {
    let allow = key.key.policy.ip_allow();
    allow.is_empty()
        || client_ip(parts, trusted_proxies)
            .is_some_and(|ip| allow.iter().any(|net| net.contains(&ip)))
}

enum OriginCheck {
    /// The key lists this origin: CORS headers go out.
    Listed,
    /// The key lists no origins: the request passes, without CORS headers.
    Unrestricted,
    Refused,
}

fn origin_check(key: &CachedKey, origin: &HeaderValue) -> OriginCheck {
    let listed = key.key.policy.origins();
    let normalized = origin.to_str().ok().and_then(|o| normalize_origin(o).ok());
    match normalized {
        Some(origin) if listed.contains(&origin) => OriginCheck::Listed,
        _ if listed.is_empty() => OriginCheck::Unrestricted,
        _ => OriginCheck::Refused,
    }
}

/// Answers CORS preflights for `/api/v3`: allowed only for origins some active key lists.
pub async fn preflight(
    State(guards): State<Arc<Guards>>,
    request: Request,
    next: Next,
) -> Response {
    let is_preflight = request.method() == Method::OPTIONS
        && request
            .headers()
            .contains_key("access-control-request-method");
    let Some(origin) = request
        .headers()
        .get(ORIGIN)
        .filter(|_| is_preflight)
        .cloned()
    else {
        return next.run(request).await;
    };
    let normalized = origin.to_str().ok().and_then(|o| normalize_origin(o).ok());
    let allowed = match guards.listed_origins().await {
        Ok(origins) => normalized.is_some_and(|o| origins.contains(&o)),
        Err(error) => return auth_unavailable(error).into_response(),
    };
    if !allowed {
        return ApiError::new(
            ErrorCode::OriginNotAllowed,
            "this origin may not call the Business API",
        )
        .into_response();
    }
    let mut response = axum::http::StatusCode::NO_CONTENT.into_response();
    let headers = response.headers_mut();
    headers.insert("access-control-allow-origin", origin);
    headers.insert(
        "access-control-allow-methods",
        HeaderValue::from_static("GET, POST, PATCH"),
    );
    headers.insert(
        "access-control-allow-headers",
        HeaderValue::from_static(
            "Content-Type, Idempotency-Key, X-API-KEY, X-API-SIGN, X-API-TIMESTAMP, X-API-NONCE, X-Onchain-Execution-Access-Token",
        ),
    );
    headers.insert("access-control-max-age", HeaderValue::from_static("600"));
    headers.append(VARY, HeaderValue::from_static("Origin"));
    response
}
