//! Onchain execution (docs/onchain.md): an onchain route card becomes an execution
//! plan the wallet performs; the wallet's transaction hash or signatures are reported; the
//! worker tracks the execution through its provider until it ends. Report and status also need
//! the plan's `X-Onchain-Execution-Access-Token`, on top of the API key.

use axum::Extension;
use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::response::Response;

use swapd_app::onchain::{self as executions, Principal};
use swapd_types::onchain::{
    ACCESS_TOKEN_HEADER, ExecutionPlanView, ExecutionReportInput, ExecutionView,
    OnchainResolveInput,
};
use swapd_types::{ErrorCode, Success};

use crate::idempotency::{IdempotencyClaim, respond};
use crate::json::Json;
use crate::principal::Caller;
use crate::{ApiError, ApiJson, AppState};

/// Resolves an onchain route card into an execution plan.
#[utoipa::path(post, path = "/api/v3/onchain/routes/resolve", operation_id = "resolve_onchain_route", tag = "business",
    security(("hmac" = [])),
    description = "Turns an onchain card of \
        `GET /routes` into the steps the wallet performs: EVM transactions (ABI-encoded calldata, \
        value and gas in base units), EIP-712 typed data to sign for gasless routes, or an unsigned \
        Solana transaction. The same request (card, wallet, slippage) answers the same plan. \
        `executionAccessToken` scopes report and status to this key; the plan must be reported \
        before `expiresAt`.",
    request_body = OnchainResolveInput,
    responses(
        (status = 200, description = "The execution plan", body = inline(Success<ExecutionPlanView>)),
        (status = 400, description = "`address_invalid`, `validation_failed` (slippageBps)", body = swapd_types::ErrorEnvelope),
        (status = 403, description = "`wallet_mismatch`: the card was quoted for another wallet", body = swapd_types::ErrorEnvelope),
        (status = 404, description = "`route_not_found`: unknown, or received by another key", body = swapd_types::ErrorEnvelope),
        (status = 410, description = "`quote_expired`: discover routes again", body = swapd_types::ErrorEnvelope),
        (status = 422, description = "`route_unavailable` (an offchain card), `wallet_unsupported` (a wallet of another namespace)", body = swapd_types::ErrorEnvelope),
        (status = 502, description = "`provider_error`", body = swapd_types::ErrorEnvelope),
    ))]
pub(crate) async fn resolve(
    State(state): State<AppState>,
    caller: Caller,
    Extension(claim): Extension<IdempotencyClaim>,
    ApiJson(input): ApiJson<OnchainResolveInput>,
) -> Result<Response, ApiError> {
    let answer = executions::resolve(state.app(), &principal(&caller), &input, &claim).await?;
    Ok(respond(answer))
}

/// The owner of the caller's plans, and the wallet it proved on the x402 API.
fn principal(caller: &Caller) -> Principal {
    Principal {
        owner: caller.owner(),
        wallet: caller.wallet().map(|wallet| wallet.address()),
    }
}

/// Reports what the wallet did with a plan.
#[utoipa::path(post, path = "/api/v3/onchain/executions", operation_id = "report_onchain_execution", tag = "business",
    security(("hmac" = [])),
    description = "Needs `X-Onchain-Execution-Access-Token`. Exactly one of `txHash` (the last transaction step, once \
        broadcast) and `signatures` (one per signature step of a gasless plan, in order; each must \
        recover to `walletAddress` over the step's typed data). The same report again answers the \
        execution unchanged; a different second report is refused. The answer is the execution, \
        `submitted` until the chain shows it.",
    params(("X-Onchain-Execution-Access-Token" = String, Header, description = "From the plan")),
    request_body = ExecutionReportInput,
    responses(
        (status = 200, description = "The execution", body = inline(Success<ExecutionView>)),
        (status = 400, description = "`validation_failed` (txHash, signatures, chainNamespace)", body = swapd_types::ErrorEnvelope),
        (status = 401, description = "`execution_token_missing`, `execution_token_invalid`", body = swapd_types::ErrorEnvelope),
        (status = 403, description = "`wallet_mismatch`: not the plan's wallet", body = swapd_types::ErrorEnvelope),
        (status = 404, description = "`execution_not_found`: unknown, or another key's", body = swapd_types::ErrorEnvelope),
        (status = 409, description = "`execution_already_reported`", body = swapd_types::ErrorEnvelope),
        (status = 410, description = "`plan_expired`", body = swapd_types::ErrorEnvelope),
        (status = 422, description = "`execution_signature_invalid`: wrong signer, tampered or malformed signature", body = swapd_types::ErrorEnvelope),
    ))]
pub(crate) async fn report(
    State(state): State<AppState>,
    caller: Caller,
    Extension(claim): Extension<IdempotencyClaim>,
    headers: HeaderMap,
    ApiJson(input): ApiJson<ExecutionReportInput>,
) -> Result<Response, ApiError> {
    let token = access_token(&headers)?;
    let answer =
        executions::report(state.app(), &principal(&caller), token, &input, &claim).await?;
    Ok(respond(answer))
}

/// Polls an execution.
#[utoipa::path(get, path = "/api/v3/onchain/executions/{executionPlanId}", operation_id = "get_onchain_execution", tag = "business",
    security(("hmac" = [])),
    description = "Needs `X-Onchain-Execution-Access-Token`. `status` moves \
        `awaiting_user → submitted → pending → done | failed | expired` and never back; `terminal` \
        says it will not change again; on `done`, `outcome` (completed, partial, refunded), \
        `receivedAmount` and `receivedToken` say what the wallet got.",
    params(
        ("executionPlanId" = String, Path, description = "`ocx_…`"),
        ("X-Onchain-Execution-Access-Token" = String, Header, description = "From the plan"),
    ),
    responses(
        (status = 200, description = "The execution", body = inline(Success<ExecutionView>)),
        (status = 401, description = "`execution_token_missing`, `execution_token_invalid`", body = swapd_types::ErrorEnvelope),
        (status = 404, description = "`execution_not_found`: unknown, or another key's", body = swapd_types::ErrorEnvelope),
    ))]
pub(crate) async fn status(
    State(state): State<AppState>,
    caller: Caller,
    Path(plan_id): Path<String>,
    headers: HeaderMap,
) -> Result<Json<Success<ExecutionView>>, ApiError> {
    let token = access_token(&headers)?;
    let plan = executions::authorized_plan(state.app(), &caller.owner(), &plan_id, token).await?;
    Ok(Json(Success::new(plan.view(state.clock.now_ms()))))
}

/// The plan's access token, sent once: a missing token is refused before anything is read.
fn access_token(headers: &HeaderMap) -> Result<&str, ApiError> {
    let mut tokens = headers.get_all(ACCESS_TOKEN_HEADER).iter();
    match (tokens.next(), tokens.next()) {
        (None, _) => Err(ApiError::new(
            ErrorCode::ExecutionTokenMissing,
            format!("send the plan's executionAccessToken in {ACCESS_TOKEN_HEADER}"),
        )),
        (Some(_), Some(_)) => Err(ApiError::new(
            ErrorCode::ExecutionTokenInvalid,
            format!("send {ACCESS_TOKEN_HEADER} once"),
        )),
        (Some(value), None) => value.to_str().map_err(|_| {
            ApiError::new(
                ErrorCode::ExecutionTokenInvalid,
                "the execution access token is malformed",
            )
        }),
    }
}
