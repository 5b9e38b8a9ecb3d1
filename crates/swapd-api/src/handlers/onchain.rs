//! Onchain execution (docs/onchain.md): an onchain route card becomes an execution
//! plan the wallet performs; the wallet's transaction hash or signatures are reported; the
//! worker tracks the execution through its provider until it ends. Report and status also need
//! the plan's `X-Onchain-Execution-Access-Token`, on top of the API key.

use axum::Extension;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};

use swapd_core::amount::Amount;
use swapd_core::idempotency::StoredResponse;
use swapd_core::ids;
use swapd_core::market::ExecutionType;
use swapd_core::market::currencies::{CurrencyDef, currency};
use swapd_core::market::routes::{RouteQuote, less_bps};
use swapd_core::onchain::{
    self, ACCESS_TOKEN_TTL_MS, Accepted, DEFAULT_SLIPPAGE_BPS, ExecutionPlan, ExecutionReport,
    MAX_SIGNATURES, MAX_SLIPPAGE_BPS, NewPlan, PLAN_TTL_MS, ReportError,
};
use swapd_core::provider::{PlanRequest, ShownTerms};
use swapd_core::{Store, StoreError};
use swapd_types::onchain::{
    ACCESS_TOKEN_HEADER, ExecutionPlanView, ExecutionReportInput, ExecutionView,
    OnchainResolveInput,
};
use swapd_types::{ErrorCode, Success};

use super::input::invalid;
use crate::error::json_response;
use crate::idempotency::{IdempotencyClaim, committed};
use crate::json::Json;
use crate::principal::Caller;
use crate::{ApiError, ApiJson, AppState};
use swapd_app::orders::Page;
use swapd_x402::siwx::Wallet;

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
    let owner = caller.scope();
    let route = swapd_app::routes::owned(state.app(), &owner, &input.route_quote_id).await?;
    if route.execution_type == ExecutionType::Offchain {
        return Err(ApiError::new(
            ErrorCode::RouteUnavailable,
            "this is an offchain route: resolve it into a createToken with POST /routes/resolve",
        ));
    }
    let (from, to) = (
        stored_currency(&route.from_code)?,
        stored_currency(&route.to_code)?,
    );
    let namespace = from
        .onchain_namespace()
        .ok_or_else(|| ApiError::internal("an onchain route's source has no chain namespace"))?;
    if let Some(given) = input.wallet_chain_namespace.as_deref()
        && given != namespace
    {
        if !matches!(given, "eip155" | "solana") {
            return Err(invalid(
                "walletChainNamespace",
                "must be `eip155` or `solana`",
            ));
        }
        return Err(ApiError::new(
            ErrorCode::WalletUnsupported,
            format!(
                "routes from {} are signed by an {namespace} wallet, not {given}",
                from.code
            ),
        ));
    }
    from.network
        .validate_address(&input.wallet_address)
        .map_err(|e| {
            ApiError::new(
                ErrorCode::AddressInvalid,
                format!("walletAddress: {e} ({namespace})"),
            )
        })?;
    check_principal(caller.wallet(), namespace, &input.wallet_address)?;
    if let Some(quoted_for) = &route.wallet_address
        && !onchain::same_wallet(namespace, quoted_for, &input.wallet_address)
    {
        return Err(ApiError::new(
            ErrorCode::WalletMismatch,
            "this route was quoted for another walletAddress; discover routes for this wallet",
        ));
    }
    let slippage_bps = input.slippage_bps.unwrap_or(DEFAULT_SLIPPAGE_BPS);
    if slippage_bps > MAX_SLIPPAGE_BPS {
        return Err(invalid(
            "slippageBps",
            "must be an integer from 0 to 5000 basis points",
        ));
    }
    let resolve_key =
        onchain::resolve_key(&route.id, namespace, &input.wallet_address, slippage_bps);
    // The same request again: the plan it made, whether or not the card has expired since.
    if let Some(plan) = state.store.execution_plan_for(&owner, &resolve_key).await? {
        return Ok(plan_response(&state, &plan));
    }
    let now_ms = state.clock.now_ms();
    if route.is_expired(now_ms) {
        return Err(ApiError::new(
            ErrorCode::QuoteExpired,
            "this route quote expired; call GET /routes again",
        ));
    }

    let plan = build_plan(
        &state,
        &owner,
        &route,
        (from, to),
        &input.wallet_address,
        slippage_bps,
        resolve_key,
        now_ms,
    )
    .await?;
    let body = serde_json::to_vec(&Success::new(plan_view(&state, &plan)))
        .map_err(|e| ApiError::internal(&e))?;
    let response = StoredResponse {
        status: 200,
        body: body.clone(),
    };
    let finish = claim.finish(&response);
    match state.store.insert_execution_plan(&plan, finish).await {
        Ok(()) => Ok(committed(json_response(StatusCode::OK, body))),
        // A concurrent request with other Idempotency-Key made the plan first: answer it.
        Err(StoreError::Conflict(reason)) => {
            match state
                .store
                .execution_plan_for(&owner, &plan.resolve_key)
                .await?
            {
                Some(existing) => Ok(plan_response(&state, &existing)),
                None => Err(StoreError::Conflict(reason).into()),
            }
        }
        Err(other) => Err(other.into()),
    }
}

#[allow(clippy::too_many_arguments)]
async fn build_plan(
    state: &AppState,
    owner: &str,
    route: &RouteQuote,
    (from, to): (&'static CurrencyDef, &'static CurrencyDef),
    wallet_address: &str,
    slippage_bps: u32,
    resolve_key: String,
    now_ms: i64,
) -> Result<ExecutionPlan, ApiError> {
    let stored_amount = |text: &str, def: &CurrencyDef| {
        Amount::parse(text, def.precision).map_err(|e| ApiError::internal(&e))
    };
    let from_amount = stored_amount(&route.from_amount, from)?;
    let expected = stored_amount(&route.to_amount, to)?;
    let min_output = less_bps(expected, slippage_bps);
    let plan_id = ids::new_id("ocx_");
    let expires_at_ms = now_ms + PLAN_TTL_MS;
    let provider = state
        .market
        .provider(&route.provider)
        .ok_or_else(|| ApiError::new(ErrorCode::ProviderError, "the route's provider is gone"))?;
    let built = tokio::time::timeout(
        swapd_core::provider::PLAN_DEADLINE,
        provider.build_plan(&PlanRequest {
            plan_id: plan_id.clone(),
            from,
            to,
            from_amount,
            min_output,
            shown: ShownTerms {
                expected_output: expected,
                min_output: stored_amount(&route.min_output, to)?,
            },
            wallet_address: wallet_address.to_owned(),
            recipient: route.recipient.clone(),
            gasless: route.gasless,
            deadline_secs: expires_at_ms / 1000,
            slippage_bps,
        }),
    )
    .await
    .map_err(|_| {
        ApiError::new(
            ErrorCode::ProviderError,
            format!(
                "{} did not answer in time; retry with the same Idempotency-Key",
                route.provider
            ),
        )
    })?
    .map_err(|e| ApiError::new(ErrorCode::ProviderError, format!("{}: {e}", route.provider)))?;
    let page_url = swapd_app::orders::new_link(state.public_url(), Page::Execution, &plan_id);
    Ok(ExecutionPlan::open(NewPlan {
        id: plan_id,
        owner: owner.to_owned(),
        route_quote_id: route.id.clone(),
        resolve_key,
        provider: route.provider.clone(),
        from,
        to,
        wallet_address: wallet_address.to_owned(),
        recipient: route.recipient.clone(),
        from_amount,
        expected_output: expected,
        // What the plan's transactions enforce: the provider's guarantee.
        min_output: built.min_output,
        slippage_bps,
        // A provider may build a plan of transactions for a gasless card (0x, for a token
        // without a gasless approval): the steps decide how the plan is reported.
        gasless: !built.steps.is_empty() && built.steps.iter().all(|step| step.signature.is_some()),
        steps: built.steps,
        provider_state: built.provider_state,
        page_url: Some(page_url),
        now_ms,
        expires_at_ms,
    }))
}

fn plan_view(state: &AppState, plan: &ExecutionPlan) -> ExecutionPlanView {
    let token_expires_at = (plan.created_at_ms + ACCESS_TOKEN_TTL_MS) / 1000;
    ExecutionPlanView {
        execution_plan_id: plan.id.clone(),
        execution_access_token: state
            .access_tokens
            .issue(&plan.id, &plan.owner, token_expires_at),
        execution_access_token_expires_at: token_expires_at,
        expires_at: plan.expires_at_ms / 1000,
        execution_provider: plan.provider.clone(),
        route_quote_id: plan.route_quote_id.clone(),
        chain_namespace: plan.chain_namespace.clone(),
        wallet_address: plan.wallet_address.clone(),
        recipient_address: plan.recipient.clone(),
        from_ccy: plan.from_code.clone(),
        to_ccy: plan.to_code.clone(),
        from_amount: plan.from_amount.clone(),
        expected_output_amount: plan.expected_output.clone(),
        min_output_amount: plan.min_output.clone(),
        slippage_bps: plan.slippage_bps,
        gasless: plan.gasless,
        steps: plan.steps.clone(),
        execution_page_url: plan.page_url.clone(),
    }
}

fn plan_response(state: &AppState, plan: &ExecutionPlan) -> Response {
    Json(Success::new(plan_view(state, plan))).into_response()
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
    let owner = caller.scope();
    let mut plan = authorized_plan(&state, &owner, &input.execution_plan_id, &headers).await?;
    check_principal(
        caller.wallet(),
        &plan.chain_namespace,
        &input.wallet_address,
    )?;
    if input.chain_namespace != plan.chain_namespace {
        return Err(invalid(
            "chainNamespace",
            &format!("this plan executes on {}", plan.chain_namespace),
        ));
    }
    if !onchain::same_wallet(
        &plan.chain_namespace,
        &plan.wallet_address,
        &input.wallet_address,
    ) {
        return Err(ApiError::new(
            ErrorCode::WalletMismatch,
            "walletAddress is not the wallet this plan was resolved for",
        ));
    }
    let now_ms = state.clock.now_ms();
    let report = parse_report(&plan, &input, now_ms)?;
    // Another writer (the tracker expiring the plan, a concurrent report) may save first: read
    // again and decide again.
    for _ in 0..3 {
        let accepted = plan.accept_report(report.clone(), now_ms).map_err(|e| {
            let code = match e {
                ReportError::PlanExpired => ErrorCode::PlanExpired,
                ReportError::AlreadyReported => ErrorCode::ExecutionAlreadyReported,
                ReportError::WrongKind(_) => ErrorCode::ValidationFailed,
            };
            ApiError::new(code, e.to_string())
        })?;
        if accepted == Accepted::Repeated {
            return Ok(Json(Success::new(plan.view(now_ms))).into_response());
        }
        let body = serde_json::to_vec(&Success::new(plan.view(now_ms)))
            .map_err(|e| ApiError::internal(&e))?;
        let response = StoredResponse {
            status: 200,
            body: body.clone(),
        };
        let finish = claim.finish(&response);
        if state
            .store
            .update_execution_plan(&plan, Some(finish))
            .await?
        {
            return Ok(committed(json_response(StatusCode::OK, body)));
        }
        plan = load_plan(state.store.as_ref(), &owner, &plan.id).await?;
    }
    Err(ApiError::new(
        ErrorCode::ServiceUnavailable,
        "the execution is changing; retry with the same Idempotency-Key",
    ))
}

/// The report in `input`, checked against `plan`: its kind, the transaction hash's form, and
/// every signature recovered to the plan's wallet.
fn parse_report(
    plan: &ExecutionPlan,
    input: &ExecutionReportInput,
    now_ms: i64,
) -> Result<ExecutionReport, ApiError> {
    let report = match (&input.tx_hash, &input.signatures) {
        (Some(_), Some(_)) | (None, None) => {
            return Err(invalid(
                "txHash",
                "give exactly one of txHash (broadcast transactions) and signatures (gasless)",
            ));
        }
        (Some(_), None) if plan.gasless => {
            return Err(invalid(
                "txHash",
                "this plan is gasless: report the signatures of its signature steps",
            ));
        }
        (None, Some(_)) if !plan.gasless => {
            return Err(invalid(
                "signatures",
                "this plan's steps are transactions: report the txHash of the last one",
            ));
        }
        (Some(tx_hash), None) => ExecutionReport::TxHash {
            tx_hash: onchain::normalize_tx_hash(&plan.chain_namespace, tx_hash)
                .map_err(|problem| invalid("txHash", problem))?,
        },
        (None, Some(signatures)) => {
            if signatures.len() > MAX_SIGNATURES {
                return Err(invalid("signatures", "at most 8 signatures"));
            }
            // A plan past its time refuses the report as expired, before any verification.
            if plan.report.is_none() && now_ms >= plan.expires_at_ms {
                return Err(ApiError::new(
                    ErrorCode::PlanExpired,
                    ReportError::PlanExpired.to_string(),
                ));
            }
            ExecutionReport::Signatures {
                signatures: onchain::verify_signatures(plan, signatures).map_err(|problem| {
                    ApiError::new(ErrorCode::ExecutionSignatureInvalid, problem.to_string())
                })?,
            }
        }
    };
    Ok(report)
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
    let owner = caller.scope();
    let plan = authorized_plan(&state, &owner, &plan_id, &headers).await?;
    Ok(Json(Success::new(plan.view(state.clock.now_ms()))))
}

/// The plan `plan_id` of `owner`, when the request carries its access token: a missing token
/// is refused first, then a plan the caller does not own (404, as if missing), then a token
/// that is not this plan's and this caller's.
async fn authorized_plan(
    state: &AppState,
    owner: &str,
    plan_id: &str,
    headers: &HeaderMap,
) -> Result<ExecutionPlan, ApiError> {
    let mut tokens = headers.get_all(ACCESS_TOKEN_HEADER).iter();
    let token = match (tokens.next(), tokens.next()) {
        (None, _) => {
            return Err(ApiError::new(
                ErrorCode::ExecutionTokenMissing,
                format!("send the plan's executionAccessToken in {ACCESS_TOKEN_HEADER}"),
            ));
        }
        (Some(_), Some(_)) => {
            return Err(ApiError::new(
                ErrorCode::ExecutionTokenInvalid,
                format!("send {ACCESS_TOKEN_HEADER} once"),
            ));
        }
        (Some(value), None) => value.to_str().map_err(|_| {
            ApiError::new(
                ErrorCode::ExecutionTokenInvalid,
                "the execution access token is malformed",
            )
        })?,
    };
    let plan = load_plan(state.store.as_ref(), owner, plan_id).await?;
    state
        .access_tokens
        .verify(token, &plan.id, owner, state.clock.now_secs())
        .map_err(|e| ApiError::new(ErrorCode::ExecutionTokenInvalid, e.to_string()))?;
    Ok(plan)
}

async fn load_plan(
    store: &dyn Store,
    owner: &str,
    plan_id: &str,
) -> Result<ExecutionPlan, ApiError> {
    let not_found = || {
        ApiError::new(
            ErrorCode::ExecutionNotFound,
            "no execution plan with this id was resolved by this key",
        )
    };
    if !swapd_types::ids::is_valid_id(plan_id, "ocx_") {
        return Err(not_found());
    }
    store
        .execution_plan(plan_id, owner)
        .await?
        .ok_or_else(not_found)
}

/// On the x402 API a plan acts for the proven wallet: another wallet address is refused.
fn check_principal(
    principal: Option<&Wallet>,
    namespace: &str,
    wallet_address: &str,
) -> Result<(), ApiError> {
    match principal {
        Some(wallet) if !onchain::same_wallet(namespace, &wallet.address(), wallet_address) => {
            Err(ApiError::new(
                ErrorCode::WalletMismatch,
                "walletAddress must be the wallet this request is signed in (or paid) with",
            ))
        }
        _ => Ok(()),
    }
}

fn stored_currency(code: &str) -> Result<&'static CurrencyDef, ApiError> {
    currency(code)
        .ok_or_else(|| ApiError::internal(format_args!("stored currency {code} is unknown")))
}
