//! `Idempotency-Key` on every mutation (POST, PATCH), as middleware placed after
//! authentication. It claims the key in the shared store before the handler runs (or, for a
//! route declared [`ClaimAt::Commit`], lets the handler's own write take it), replays the
//! stored response to retries, and stores the outcome when execution produced one worth keeping
//! (see `swapd_core::idempotency::is_storable`); anything else is released so a retry executes
//! afresh.

use axum::body::{Body, to_bytes};
use axum::extract::{OriginalUri, Request, State};
use axum::http::header::{CONTENT_TYPE, RETRY_AFTER};
use axum::http::request::Parts;
use axum::http::{HeaderValue, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use swapd_core::idempotency::{self, Begin, KeyError, StoredResponse};
use swapd_core::secrets::MasterKey;
use swapd_core::{ids, signing};
use swapd_types::ErrorCode;

use crate::principal::Caller;
use crate::{ApiError, AppState, MAX_BODY_BYTES};

/// The claimed key of the request being executed, for handlers whose domain write must commit
/// the idempotency record in its own transaction: pass it to the store use case, which marks the
/// record done with the response, then answer with [`committed`].
#[derive(Debug, Clone)]
pub struct IdempotencyClaim {
    pub scope: String,
    pub key: String,
    pub hold: Hold,
    /// The sandbox fault asked for this request: stop dead once its effect is written.
    pause_after_effect: bool,
}

/// How the executing request holds its key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Hold {
    /// Claimed before the handler ran, under this lease token.
    Lease(String),
    /// Not claimed: the write that completes it takes the key for this request.
    AtCommit { fingerprint: String, now_ms: i64 },
}

/// When a route's `Idempotency-Key` is claimed: declared with the route.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ClaimAt {
    /// Before the handler runs, in a write of its own: while it executes, a retry with the
    /// same key is answered 409 `idempotency_key_in_use`. For handlers whose effects outside
    /// the database must not be repeated.
    #[default]
    Start,
    /// As [`ClaimAt::Start`], and the execution runs to its end even when its request is
    /// dropped (see [`detached`]): for handlers that write upstream.
    StartToCompletion,
    /// By the handler's own write, in its transaction: claim, effect and stored answer are one
    /// write (docs/authentication.md, "Idempotency"). Attempts with one key that run at the
    /// same moment may each execute up to that write; the first to commit wins and the others
    /// answer its response. Only for handlers whose effects before the write are harmless to
    /// repeat.
    Commit,
    /// [`ClaimAt::Commit`] where the deployment's desks open exchanges without an upstream
    /// write, else [`ClaimAt::StartToCompletion`]: resolved when the router is built.
    CommitUnlessUpstream,
}

/// The sandbox fault header (honoured only with `AppState::sandbox_fault_header`).
const SANDBOX_FAULT: &str = "x-sandbox-fault";

/// Marks a stored response body sealed with the master key.
const SEALED_BODY: &[u8] = b"sealed:";

impl IdempotencyClaim {
    /// A claim of `key` in `scope`, held as `hold`.
    pub fn new(scope: String, key: String, hold: Hold) -> Self {
        Self {
            scope,
            key,
            hold,
            pause_after_effect: false,
        }
    }

    /// `status` and `body` as stored for replay, sealed with the master key and bound to this
    /// key: a response that carries a secret (a webhook's signing secret) never rests in clear.
    pub fn sealed(&self, master: &MasterKey, status: u16, body: &[u8]) -> StoredResponse {
        let mut sealed = SEALED_BODY.to_vec();
        sealed.extend_from_slice(
            master
                .seal(body, &sealing_context(&self.scope, &self.key))
                .as_bytes(),
        );
        StoredResponse {
            status,
            body: sealed,
        }
    }

    /// An id that is the same for every execution of this request (`prefix` + 32 hex digits):
    /// an effect outside the database, such as a test delivery, carries it, so that a repeat
    /// after a crash is the same event to its receiver.
    pub fn stable_id(&self, prefix: &str) -> String {
        use sha2::{Digest, Sha256};
        let digest = Sha256::digest(format!("{prefix}|{}|{}", self.scope, self.key));
        format!("{prefix}{}", hex::encode(&digest[..16]))
    }

    /// The record a domain write completes with `response`, in its own transaction.
    pub fn finish<'a>(
        &'a self,
        response: &'a StoredResponse,
    ) -> swapd_core::store::IdempotentFinish<'a> {
        use swapd_core::store::KeyHold;
        swapd_core::store::IdempotentFinish {
            principal: &self.scope,
            key: &self.key,
            hold: match &self.hold {
                Hold::Lease(token) => KeyHold::Lease(token),
                Hold::AtCommit {
                    fingerprint,
                    now_ms,
                } => KeyHold::AtCommit {
                    fingerprint,
                    now_ms: *now_ms,
                },
            },
            response,
        }
    }
}

impl swapd_app::IdempotencyKey for IdempotencyClaim {
    fn finish<'a>(&'a self, answer: &'a StoredResponse) -> swapd_core::store::IdempotentFinish<'a> {
        IdempotencyClaim::finish(self, answer)
    }

    fn sealed(&self, master: &MasterKey, answer: &StoredResponse) -> StoredResponse {
        IdempotencyClaim::sealed(self, master, answer.status, &answer.body)
    }

    fn stable_id(&self, prefix: &str) -> String {
        IdempotencyClaim::stable_id(self, prefix)
    }
}

/// A use case's answer: marked as already recorded when its write stored it under the
/// request's key; otherwise this layer stores it as any other answer.
pub fn respond(answer: swapd_app::Answer) -> Response {
    let status = StatusCode::from_u16(answer.status).unwrap_or(StatusCode::OK);
    let response = crate::error::json_response(status, answer.body);
    if answer.recorded {
        committed(response)
    } else {
        response
    }
}

/// Response marker: the handler already stored this response with the domain write.
#[derive(Debug, Clone, Copy)]
struct Committed;

/// Marks `response` as already recorded by the handler's own transaction.
pub fn committed(mut response: Response) -> Response {
    response.extensions_mut().insert(Committed);
    response
}

/// The middleware, with the route's [`ClaimAt`].
pub async fn idempotent(
    State((state, claim_at)): State<(AppState, ClaimAt)>,
    request: Request,
    next: Next,
) -> Response {
    let Some(scope) = request.extensions().get::<Caller>().map(Caller::scope) else {
        return ApiError::internal("idempotency middleware runs before authentication")
            .into_response();
    };
    match begin(&state, &scope, request, claim_at).await {
        Started::Unclaimed(request) => next.run(request).await,
        Started::Answer(response) => response,
        Started::Claimed(request, claim) => {
            let execution = async move {
                let unfinished = ReleaseIfDropped::new(&state, &claim);
                let response = next.run(request).await;
                unfinished.disarm();
                finish(&state, &claim, response).await
            };
            match claim_at {
                ClaimAt::StartToCompletion => detached(execution).await,
                _ => execution.await,
            }
        }
    }
}

/// Runs a claimed mutation that writes upstream to its end even when its request is dropped
/// (the client went away, or the server's request timeout fired): the write (a live desk's
/// create, an x402 settlement) must not be cut short and its key freed while it may have
/// happened. The execution stores its answer, and the retry gets it (docs/authentication.md,
/// "Idempotency"). Other mutations are simply dropped: their transaction never committed, and
/// their key is freed for the retry.
pub async fn detached(execution: impl Future<Output = Response> + Send + 'static) -> Response {
    match tokio::spawn(execution).await {
        Ok(response) => response,
        // A panic: its claim was released as the task unwound.
        Err(error) => ApiError::internal(&error).into_response(),
    }
}

/// Releases a claim whose execution never reached its end: it panicked (a bug), or was
/// dropped (the request timed out, or its client went away). Its transaction never committed,
/// or committed the idempotency record with it (then the release changes nothing), so a retry
/// executes afresh or gets the answer.
pub struct ReleaseIfDropped {
    armed: Option<(AppState, IdempotencyClaim)>,
}

impl ReleaseIfDropped {
    pub fn new(state: &AppState, claim: &IdempotencyClaim) -> Self {
        Self {
            armed: Some((state.clone(), claim.clone())),
        }
    }

    /// The execution ended: its outcome is stored or released by [`finish`].
    pub fn disarm(mut self) {
        self.armed = None;
    }
}

impl Drop for ReleaseIfDropped {
    fn drop(&mut self) {
        if let Some((state, claim)) = self.armed.take()
            && let Ok(runtime) = tokio::runtime::Handle::try_current()
        {
            runtime.spawn(async move { release(&state, &claim).await });
        }
    }
}

/// What [`begin`] decided about a request.
pub enum Started {
    /// Not a mutation: run it unclaimed.
    Unclaimed(Request),
    /// The key is claimed for this execution: run the request (it carries the
    /// [`IdempotencyClaim`]), then [`finish`] (or [`release`] if it is not run).
    Claimed(Request, IdempotencyClaim),
    /// Answer this instead: the stored response (a replay), or why the key cannot be used.
    Answer(Response),
}

/// Claims the request's `Idempotency-Key` for `scope` (POST and PATCH) as `claim_at` says, or
/// says how to answer instead.
pub async fn begin(state: &AppState, scope: &str, request: Request, claim_at: ClaimAt) -> Started {
    if !matches!(*request.method(), Method::POST | Method::PATCH) {
        return Started::Unclaimed(request);
    }
    let key = match request_key(request.headers()) {
        Ok(key) => key,
        Err(refused) => return Started::Answer(refused.into_response()),
    };
    let (parts, body) = request.into_parts();
    let Ok(body) = to_bytes(body, MAX_BODY_BYTES).await else {
        return Started::Answer(crate::json::too_large().into_response());
    };
    let fingerprint = match request_fingerprint(&parts, &body) {
        Ok(fingerprint) => fingerprint,
        Err(refused) => return Started::Answer(refused.into_response()),
    };
    let hold = match hold_key(state, scope, &key, fingerprint, claim_at).await {
        Ok(hold) => hold,
        Err(answer) => return Started::Answer(answer),
    };
    let claim = IdempotencyClaim {
        scope: scope.to_owned(),
        key,
        hold,
        pause_after_effect: state.sandbox_fault_header
            && parts.headers.get(SANDBOX_FAULT).map(HeaderValue::as_bytes)
                == Some(b"pause-after-commit"),
    };
    let mut request = Request::from_parts(parts, Body::from(body));
    request.extensions_mut().insert(claim.clone());
    Started::Claimed(request, claim)
}

/// The request's `Idempotency-Key`: present once and well formed.
fn request_key(headers: &axum::http::HeaderMap) -> Result<String, ApiError> {
    idempotency::parse_key(
        headers
            .get_all("idempotency-key")
            .iter()
            .map(HeaderValue::as_bytes),
    )
    .map_err(|error| {
        let code = match error {
            KeyError::Missing => ErrorCode::IdempotencyKeyMissing,
            KeyError::Invalid => ErrorCode::IdempotencyKeyInvalid,
        };
        ApiError::new(code, error.to_string())
    })
}

/// What makes two requests under one key the same request: method, path as sent (so
/// `/orders/A/refund` and `/orders/B/refund` differ; on a route without parameters the path is
/// its template, what earlier versions recorded), canonical query and the JSON body's value. A body that is not JSON is refused now as the handler's extractor
/// refuses it (415 or 400 `invalid_json`), with nothing claimed.
fn request_fingerprint(parts: &Parts, body: &[u8]) -> Result<String, ApiError> {
    let parsed = if body.is_empty() {
        None
    } else {
        match serde_json::from_slice::<serde_json::Value>(body) {
            Ok(value) => Some(value),
            Err(_) => {
                return Err(crate::json::require_json(&parts.headers)
                    .and_then(|()| crate::json::parse_json::<serde_json::Value>(body).map(drop))
                    .err()
                    .unwrap_or_else(|| {
                        ApiError::new(ErrorCode::InvalidJson, "the request body is not valid JSON")
                    }));
            }
        }
    };
    let path = parts
        .extensions
        .get::<OriginalUri>()
        .map_or_else(|| parts.uri.path(), |original| original.path());
    let canonical_query =
        signing::canonical_query(parts.uri.query().unwrap_or_default()).unwrap_or_default();
    Ok(idempotency::fingerprint(
        parts.method.as_str(),
        path,
        &canonical_query,
        parsed.as_ref(),
    ))
}

/// Holds `key` for this execution as `claim_at` says: a lease taken now, or the write that
/// completes the request takes it; `Err` with the answer when the key answers instead (a
/// replay, or another request holds it).
async fn hold_key(
    state: &AppState,
    scope: &str,
    key: &str,
    fingerprint: String,
    claim_at: ClaimAt,
) -> Result<Hold, Response> {
    let now = state.clock.now_ms();
    match claim_at {
        ClaimAt::Start | ClaimAt::StartToCompletion => {
            let token = ids::new_id("lease_");
            match state
                .store
                .begin_idempotent(scope, key, &fingerprint, &token, &state.node_id, now)
                .await
            {
                Ok(Begin::Execute { .. }) => Ok(Hold::Lease(token)),
                Ok(other) => Err(answer(state, scope, key, other)),
                Err(error) => Err(ApiError::from(error).into_response()),
            }
        }
        ClaimAt::Commit | ClaimAt::CommitUnlessUpstream => match state
            .store
            .idempotent_answer(scope, key, &fingerprint, now)
            .await
        {
            Ok(None) => Ok(Hold::AtCommit {
                fingerprint,
                now_ms: now,
            }),
            Ok(Some(other)) => Err(answer(state, scope, key, other)),
            Err(error) => Err(ApiError::from(error).into_response()),
        },
    }
}

/// The answer to a request that does not execute: the stored response (a replay), or why the
/// key cannot be used now.
fn answer(state: &AppState, scope: &str, key: &str, begin: Begin) -> Response {
    match begin {
        Begin::Replay(stored) => match opened(&state.master_key, scope, key, stored) {
            Ok(stored) => replay(stored),
            Err(error) => error.into_response(),
        },
        Begin::InFlight { retry_after_secs } => ApiError::new(
            ErrorCode::IdempotencyKeyInUse,
            "a request with this Idempotency-Key is still being processed; retry shortly",
        )
        .with_header(RETRY_AFTER, HeaderValue::from(retry_after_secs))
        .into_response(),
        Begin::Mismatch => ApiError::new(
            ErrorCode::IdempotencyKeyReused,
            "this Idempotency-Key was already used for a different request; use a new key",
        )
        .into_response(),
        Begin::Execute { .. } => {
            ApiError::internal("an execution is not an answer").into_response()
        }
    }
}

/// Stores the outcome of the claimed execution when it is worth keeping (unless the handler's
/// own transaction already did), and releases the key otherwise.
pub async fn finish(state: &AppState, claim: &IdempotencyClaim, response: Response) -> Response {
    let committed = response.extensions().get::<Committed>().is_some();
    // The fault stages a crash after an effect: an execution that failed (a 5xx) has none.
    if claim.pause_after_effect
        && (committed || idempotency::is_storable(response.status().as_u16()))
    {
        tracing::warn!("sandbox fault: paused after a mutation's effect, before its answer");
        std::future::pending::<()>().await;
    }
    if committed {
        return response;
    }
    let status = response.status().as_u16();
    if !idempotency::is_storable(status) {
        release(state, claim).await;
        return response;
    }
    let (parts, body) = response.into_parts();
    let body = match to_bytes(body, usize::MAX).await {
        Ok(body) => body,
        Err(error) => return ApiError::internal(&error).into_response(),
    };
    let stored = StoredResponse {
        status,
        body: body.to_vec(),
    };
    match state.store.finish_idempotent(claim.finish(&stored)).await {
        Ok(true) => {}
        Ok(false) => {
            if let Hold::AtCommit {
                fingerprint,
                now_ms,
            } = &claim.hold
            {
                // Another attempt with this key committed first: answer what it stored.
                match state
                    .store
                    .idempotent_answer(&claim.scope, &claim.key, fingerprint, *now_ms)
                    .await
                {
                    Ok(Some(begin)) => return answer(state, &claim.scope, &claim.key, begin),
                    Ok(None) => {}
                    Err(error) => return ApiError::from(error).into_response(),
                }
            } else {
                tracing::warn!("idempotency lease lost before the response was stored");
            }
        }
        Err(error) => tracing::error!(%error, "cannot store an idempotent response"),
    }
    Response::from_parts(parts, Body::from(body))
}

/// How long an answer waits for its claim's release: a healthy database releases at once, so
/// that a retry sent the moment the answer arrives executes afresh; a silent one is not waited
/// for (the answer would come a store call's bound later; docs/reliability.md).
const RELEASE_WAIT: std::time::Duration = std::time::Duration::from_secs(1);

/// Forgets a claim whose execution stored nothing, so a retry executes afresh. The release
/// goes on in the background past [`RELEASE_WAIT`] and, when the database cannot be reached
/// (the likely reason the execution failed), is retried until it can, within the claim's lease.
pub async fn release(state: &AppState, claim: &IdempotencyClaim) {
    let Hold::Lease(token) = &claim.hold else {
        // Taken at commit: there is no claim to forget.
        return;
    };
    let (store, claim, token) = (state.store.clone(), claim.clone(), token.clone());
    let releasing = tokio::spawn(async move {
        let mut wait = std::time::Duration::from_millis(250);
        let mut waited = std::time::Duration::ZERO;
        loop {
            let Err(error) = store
                .release_idempotent(&claim.scope, &claim.key, &token)
                .await
            else {
                return;
            };
            if waited >= std::time::Duration::from_millis(idempotency::LEASE_MS as u64) {
                // The lease has ended: a retry takes over anyway.
                return;
            }
            if waited.is_zero() {
                tracing::warn!(%error, "cannot release an idempotency key yet; retrying");
            }
            tokio::time::sleep(wait).await;
            waited += wait;
            wait = (wait * 2).min(std::time::Duration::from_secs(5));
        }
    });
    let _ = tokio::time::timeout(RELEASE_WAIT, releasing).await;
}

fn sealing_context(scope: &str, key: &str) -> String {
    format!("idempotent response|{scope}|{key}")
}

/// A stored response as it was answered: sealed bodies opened.
pub(crate) fn opened(
    master: &MasterKey,
    scope: &str,
    key: &str,
    stored: StoredResponse,
) -> Result<StoredResponse, ApiError> {
    let Some(sealed) = stored.body.strip_prefix(SEALED_BODY) else {
        return Ok(stored);
    };
    let sealed = std::str::from_utf8(sealed)
        .map_err(|e| ApiError::internal(format_args!("stored response: {e}")))?;
    let body = master
        .open(sealed, &sealing_context(scope, key))
        .map_err(|e| ApiError::internal(&e))?;
    Ok(StoredResponse {
        status: stored.status,
        body,
    })
}

/// The stored response again. Creation statuses (201, 202) are answered as 200 on reuse, so a
/// client can tell a replay from a new resource; `Idempotent-Replayed: true` says the same.
pub(crate) fn replay(stored: StoredResponse) -> Response {
    let status = match stored.status {
        201 | 202 => StatusCode::OK,
        other => StatusCode::from_u16(other).unwrap_or(StatusCode::OK),
    };
    let mut response = (status, stored.body).into_response();
    let headers = response.headers_mut();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    headers.insert("idempotent-replayed", HeaderValue::from_static("true"));
    response
}
