//! Onchain execution (docs/onchain.md): an onchain route card becomes an execution plan the
//! wallet performs; the wallet's transaction hash or signatures are reported; the worker
//! tracks the execution through its provider until it ends. Report and status also need the
//! plan's access token.

use swapd_core::StoreError;
use swapd_core::ids::PlanId;
use swapd_core::market::ExecutionType;
use swapd_core::market::currencies::CurrencyDef;
use swapd_core::market::routes::{RouteQuote, less_bps};
use swapd_core::onchain::access::ACCESS_TOKEN_TTL_MS;
use swapd_core::onchain::plan::{
    Accepted, DEFAULT_SLIPPAGE_BPS, ExecutionPlan, ExecutionReport, MAX_SIGNATURES,
    MAX_SLIPPAGE_BPS, NewPlan, PLAN_TTL_MS, ReportError,
};
use swapd_core::onchain::router::{PlanRequest, ShownTerms};
use swapd_core::owner::Owner;
use swapd_types::onchain::{ExecutionPlanView, ExecutionReportInput, OnchainResolveInput};

use crate::orders::{Page, new_link};
use crate::{Answer, Context, Error, IdempotencyKey};
use swapd_core::onchain::plan;
use swapd_core::onchain::signatures;

/// Who asks: the owner of the plans, and on the x402 API the wallet the request is signed in
/// (or paid) with, which a plan must act for.
pub struct Principal {
    pub owner: Owner,
    pub wallet: Option<String>,
}

impl Principal {
    /// Refuses another wallet address than the proven one, when there is one.
    fn check_wallet(&self, namespace: &str, wallet_address: &str) -> Result<(), Error> {
        match &self.wallet {
            Some(proven) if !plan::same_wallet(namespace, proven, wallet_address) => {
                Err(Error::WalletMismatch(
                    "walletAddress must be the wallet this request is signed in (or paid) with"
                        .into(),
                ))
            }
            _ => Ok(()),
        }
    }
}

/// Resolves the caller's onchain route card into an execution plan (200). The same request
/// (card, wallet, slippage) answers the plan it made, expired card or not.
pub async fn resolve(
    app: Context<'_>,
    principal: &Principal,
    input: &OnchainResolveInput,
    key: &dyn IdempotencyKey,
) -> Result<Answer, Error> {
    let route = crate::routes::owned(app, &principal.owner, &input.route_quote_id).await?;
    if route.execution_type == ExecutionType::Offchain {
        return Err(Error::RouteUnavailable(
            "this is an offchain route: resolve it into a createToken with POST /routes/resolve"
                .into(),
        ));
    }
    let (from, to) = (route.from, route.to);
    let namespace = from
        .onchain_namespace()
        .ok_or_else(|| Error::internal("an onchain route's source has no chain namespace"))?;
    check_wallet(principal, &route, from, namespace, input)?;
    let slippage_bps = input.slippage_bps.unwrap_or(DEFAULT_SLIPPAGE_BPS);
    if slippage_bps > MAX_SLIPPAGE_BPS {
        return Err(Error::invalid(
            "slippageBps",
            "must be an integer from 0 to 5000 basis points",
        ));
    }
    let resolve_key = plan::resolve_key(
        route.id.as_str(),
        namespace,
        &input.wallet_address,
        slippage_bps,
    );
    if let Some(plan) = app
        .store
        .execution_plan_for(&principal.owner, &resolve_key)
        .await?
    {
        return Answer::json(200, &plan_view(app, &plan));
    }
    let now_ms = app.clock.now_ms();
    if route.is_expired(now_ms) {
        return Err(Error::QuoteExpired(
            "this route quote expired; call GET /routes again".into(),
        ));
    }
    let wanted = Wanted {
        wallet_address: &input.wallet_address,
        slippage_bps,
        resolve_key,
    };
    let plan = build_plan(app, &principal.owner, &route, (from, to), wanted, now_ms).await?;
    let answer = Answer::json(200, &plan_view(app, &plan))?;
    match app
        .store
        .insert_execution_plan(&plan, key.finish(&answer.stored))
        .await
    {
        Ok(()) => Ok(answer.written(Some(key))),
        // A concurrent request with another Idempotency-Key made the plan first: answer it.
        Err(StoreError::Conflict(reason)) => {
            match app
                .store
                .execution_plan_for(&principal.owner, &plan.resolve_key)
                .await?
            {
                Some(existing) => Answer::json(200, &plan_view(app, &existing)),
                None => Err(StoreError::Conflict(reason).into()),
            }
        }
        Err(other) => Err(other.into()),
    }
}

/// The wallet of a resolve: of the route's namespace, a valid address, the proven one on the
/// x402 API, and the one the card was quoted for.
fn check_wallet(
    principal: &Principal,
    route: &RouteQuote,
    from: &CurrencyDef,
    namespace: &str,
    input: &OnchainResolveInput,
) -> Result<(), Error> {
    if let Some(given) = input.wallet_chain_namespace.as_deref()
        && given != namespace
    {
        if !matches!(given, "eip155" | "solana") {
            return Err(Error::invalid(
                "walletChainNamespace",
                "must be `eip155` or `solana`",
            ));
        }
        return Err(Error::WalletUnsupported(format!(
            "routes from {} are signed by an {namespace} wallet, not {given}",
            from.code
        )));
    }
    from.network
        .validate_address(&input.wallet_address)
        .map_err(|e| Error::AddressInvalid(format!("walletAddress: {e} ({namespace})")))?;
    principal.check_wallet(namespace, &input.wallet_address)?;
    if let Some(quoted_for) = &route.wallet_address
        && !plan::same_wallet(namespace, quoted_for, &input.wallet_address)
    {
        return Err(Error::WalletMismatch(
            "this route was quoted for another walletAddress; discover routes for this wallet"
                .into(),
        ));
    }
    Ok(())
}

/// What the caller asks of a plan besides its card.
struct Wanted<'a> {
    wallet_address: &'a str,
    slippage_bps: u32,
    resolve_key: String,
}

async fn build_plan(
    app: Context<'_>,
    owner: &Owner,
    route: &RouteQuote,
    (from, to): (&'static CurrencyDef, &'static CurrencyDef),
    wanted: Wanted<'_>,
    now_ms: i64,
) -> Result<ExecutionPlan, Error> {
    let (from_amount, expected) = (route.from_amount, route.to_amount);
    let plan_id = PlanId::generate();
    let expires_at_ms = now_ms + PLAN_TTL_MS;
    let router = app
        .market
        .router(&route.provider)
        .ok_or_else(|| Error::Provider("the route's provider is gone".into()))?;
    let built = tokio::time::timeout(
        swapd_core::onchain::router::PLAN_DEADLINE,
        router.build_plan(&PlanRequest {
            plan_id: plan_id.to_string(),
            from,
            to,
            from_amount,
            min_output: less_bps(expected, wanted.slippage_bps),
            shown: ShownTerms {
                expected_output: expected,
                min_output: route.min_output,
            },
            wallet_address: wanted.wallet_address.to_owned(),
            recipient: route.recipient.clone(),
            gasless: route.gasless,
            deadline_secs: expires_at_ms / 1000,
            slippage_bps: wanted.slippage_bps,
            onchain_fees: route.onchain_fees.clone(),
        }),
    )
    .await
    .map_err(|_| {
        Error::Provider(format!(
            "{} did not answer in time; retry with the same Idempotency-Key",
            route.provider
        ))
    })?
    .map_err(|e| Error::Provider(format!("{}: {e}", route.provider)))?;
    Ok(ExecutionPlan::open(NewPlan {
        page_url: Some(new_link(app.public_url, Page::Execution, plan_id.as_str())),
        id: plan_id,
        owner: owner.clone(),
        route_quote_id: route.id.clone(),
        resolve_key: wanted.resolve_key,
        provider: route.provider.clone(),
        from,
        to,
        wallet_address: wanted.wallet_address.to_owned(),
        recipient: route.recipient.clone(),
        from_amount,
        expected_output: expected,
        // What the plan's transactions enforce: the provider's guarantee.
        min_output: built.min_output,
        slippage_bps: wanted.slippage_bps,
        // A provider may build a plan of transactions for a gasless card (0x, for a token
        // without a gasless approval): the steps decide how the plan is reported.
        gasless: !built.steps.is_empty() && built.steps.iter().all(|step| step.signature.is_some()),
        steps: built.steps,
        provider_state: built.provider_state,
        now_ms,
        expires_at_ms,
        fees: route.fees.clone(),
        affiliate_code: route.affiliate_code.clone(),
        onchain_fees: route.onchain_fees.clone(),
    }))
}

fn plan_view(app: Context<'_>, plan: &ExecutionPlan) -> ExecutionPlanView {
    let token_expires_at = (plan.created_at_ms + ACCESS_TOKEN_TTL_MS) / 1000;
    ExecutionPlanView {
        execution_plan_id: plan.id.to_string(),
        execution_access_token: app.access_tokens.issue(
            plan.id.as_str(),
            &plan.owner.scope(),
            token_expires_at,
        ),
        execution_access_token_expires_at: token_expires_at,
        expires_at: plan.expires_at_ms / 1000,
        execution_provider: plan.provider.clone(),
        route_quote_id: plan.route_quote_id.to_string(),
        chain_namespace: plan.chain_namespace().into(),
        wallet_address: plan.wallet_address.clone(),
        recipient_address: plan.recipient.clone(),
        from_ccy: plan.from.code.into(),
        to_ccy: plan.to.code.into(),
        from_amount: plan.from_amount.to_string(),
        expected_output_amount: plan.expected_output.to_string(),
        min_output_amount: plan.min_output.to_string(),
        slippage_bps: plan.slippage_bps,
        gasless: plan.gasless,
        steps: plan.steps.clone(),
        execution_page_url: plan.page_url.clone(),
    }
}

/// Records what the wallet did with the caller's plan (200 with the execution). The same report
/// again answers the execution unchanged; a different second report is refused.
pub async fn report(
    app: Context<'_>,
    principal: &Principal,
    access_token: &str,
    input: &ExecutionReportInput,
    key: &dyn IdempotencyKey,
) -> Result<Answer, Error> {
    let mut plan = authorized_plan(
        app,
        &principal.owner,
        &input.execution_plan_id,
        access_token,
    )
    .await?;
    let namespace = plan.chain_namespace();
    principal.check_wallet(namespace, &input.wallet_address)?;
    if input.chain_namespace != namespace {
        return Err(Error::invalid(
            "chainNamespace",
            format!("this plan executes on {namespace}"),
        ));
    }
    if !plan::same_wallet(namespace, &plan.wallet_address, &input.wallet_address) {
        return Err(Error::WalletMismatch(
            "walletAddress is not the wallet this plan was resolved for".into(),
        ));
    }
    let now_ms = app.clock.now_ms();
    let report = parse_report(&plan, input, now_ms)?;
    // Another writer (the tracker expiring the plan, a concurrent report) may save first: read
    // again and decide again.
    for _ in 0..3 {
        let accepted = plan.accept_report(report.clone(), now_ms)?;
        let answer = Answer::json(200, &plan.view(now_ms))?;
        if accepted == Accepted::Repeated {
            return Ok(answer);
        }
        if app
            .store
            .update_execution_plan(&plan, Some(key.finish(&answer.stored)))
            .await?
        {
            return Ok(answer.written(Some(key)));
        }
        plan = app
            .store
            .execution_plan(&plan.id, &principal.owner)
            .await?
            .ok_or(Error::ExecutionNotFound)?;
    }
    Err(Error::Busy(
        "the execution is changing; retry with the same Idempotency-Key".into(),
    ))
}

/// The report in `input`, checked against `plan`: its kind, the transaction hash's form, and
/// every signature recovered to the plan's wallet.
fn parse_report(
    plan: &ExecutionPlan,
    input: &ExecutionReportInput,
    now_ms: i64,
) -> Result<ExecutionReport, Error> {
    match (&input.tx_hash, &input.signatures) {
        (Some(_), Some(_)) | (None, None) => Err(Error::invalid(
            "txHash",
            "give exactly one of txHash (broadcast transactions) and signatures (gasless)",
        )),
        (Some(_), None) if plan.gasless => Err(Error::invalid(
            "txHash",
            "this plan is gasless: report the signatures of its signature steps",
        )),
        (None, Some(_)) if !plan.gasless => Err(Error::invalid(
            "signatures",
            "this plan's steps are transactions: report the txHash of the last one",
        )),
        (Some(tx_hash), None) => Ok(ExecutionReport::TxHash {
            tx_hash: signatures::normalize_tx_hash(plan.chain_namespace(), tx_hash)
                .map_err(|problem| Error::invalid("txHash", problem))?,
        }),
        (None, Some(signatures)) => {
            if signatures.len() > MAX_SIGNATURES {
                return Err(Error::invalid("signatures", "at most 8 signatures"));
            }
            // A plan past its time refuses the report as expired, before any verification.
            if plan.report.is_none() && now_ms >= plan.expires_at_ms {
                return Err(ReportError::PlanExpired.into());
            }
            Ok(ExecutionReport::Signatures {
                signatures: signatures::verify_signatures(plan, signatures)
                    .map_err(|problem| Error::SignatureInvalid(problem.to_string()))?,
            })
        }
    }
}

/// The caller's plan `plan_id`, when `access_token` is its token: a plan the caller does not
/// own is not found (as if missing) before the token is looked at.
pub async fn authorized_plan(
    app: Context<'_>,
    owner: &Owner,
    plan_id: &str,
    access_token: &str,
) -> Result<ExecutionPlan, Error> {
    let plan = owned_plan(app, owner, plan_id).await?;
    app.access_tokens
        .verify(
            access_token,
            plan.id.as_str(),
            &owner.scope(),
            app.clock.now_secs(),
        )
        .map_err(|e| Error::ExecutionTokenInvalid(e.to_string()))?;
    Ok(plan)
}

async fn owned_plan(
    app: Context<'_>,
    owner: &Owner,
    plan_id: &str,
) -> Result<ExecutionPlan, Error> {
    crate::find_owned(
        plan_id,
        PlanId::parse,
        || Error::ExecutionNotFound,
        |id| async move { app.store.execution_plan(&id, owner).await },
    )
    .await
}
