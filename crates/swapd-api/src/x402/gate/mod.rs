//! What every `/api/x402` request goes through, in order (docs/x402.md, "Paying"):
//!
//! 1. Limits, before anything is verified or settled: 60 paid attempts per hour per client and
//!    route; 30 wallet-bound reads per minute per client, route and resource.
//! 2. Paid calls: the body (POST) or query (GET), as the handler will read it
//!    (`X402Route::input`), so a malformed request is never charged.
//! 3. The wallet: a Sign-In-With-X proof when sent (checked against our public origin; a nonce
//!    we issued, consumed by mutations), else for paid routes the payer the payment's signature
//!    proves.
//! 4. Paid routes: the `PAYMENT-SIGNATURE` is decoded (400 when malformed), matched against the
//!    way to pay it names (one of ours, exactly) and the request URL, and its payer recovered;
//!    that way's facilitator verifies and settles it. A replay of a stored
//!    Idempotency-Key answers now, without a charge. Then the payment's purchase
//!    (`swapd_core::purchases`) says what to do: a new payment is verified and settled; one
//!    whose settlement's outcome never came back is settled again (at most once on chain); one
//!    settled whose call failed runs the call without settling; a spent one is refused (409).
//!    The handler runs only after settlement; the answer carries `PAYMENT-RESPONSE`. A payment
//!    that names a `payment-identifier` already answered gets that answer again, unsettled.
//!    An `upto` payment of a metered job is only verified: the job carries it, and the worker
//!    settles what the job used when it ends.
//!
//! Without what a route needs, the answer is 402 with `PAYMENT-REQUIRED`: the requirements
//! for paid routes, and a fresh SIWX challenge for wallet-bound ones.

use axum::extract::{Request, State};
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderName, HeaderValue};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use swapd_core::market_intel::{JobPayment, JobPaymentState};
use swapd_core::purchases::{Presented, PurchaseStep};
use swapd_core::store::WindowDecision;
use swapd_types::ErrorCode;
use swapd_x402::siwx::{self, Audience, SiwxPayload, Wallet};
use swapd_x402::wire::PaymentRequirements;
use swapd_x402::wire::{
    self, PAYMENT_REQUIRED, PAYMENT_RESPONSE, PAYMENT_SIGNATURE, PaymentPayload, SIGN_IN_WITH_X,
    SettleResponse,
};
use swapd_x402::{Charge, PaymentOption, Scheme};

pub(crate) mod decide;
mod payment_id;
mod purchase;

use super::{Access, AccessTokens, InputCheck, Page, X402Route, discovery};
use crate::idempotency::{self, Started};
use crate::principal::Caller;
use crate::{ApiError, AppState};
use decide::{Limit, Settlement};
use purchase::Purchase;
use swapd_core::ids::{OrderId, PlanId};

/// How long a SIWX challenge's nonce may be used.
const CHALLENGE_TTL_MS: i64 = 5 * 60 * 1000;
/// A `SIGN-IN-WITH-X` larger than this is not decoded.
const MAX_PROOF_BYTES: usize = 8 * 1024;
/// A `PAYMENT-SIGNATURE` larger than this is not decoded. Clients echo our extensions in it,
/// discovery's schemas among them (up to about 8 KiB of base64), under the 32 KiB that all of a
/// request's headers may take.
const MAX_PAYMENT_BYTES: usize = 20 * 1024;

/// What the gate needs for one route: the route's own rule comes with it.
#[derive(Clone)]
pub struct RouteGate {
    pub state: AppState,
    /// Shared: the gate is cloned for every request.
    pub route: std::sync::Arc<X402Route>,
    pub asked: std::sync::Arc<AskedOnce>,
}

/// The `PAYMENT-REQUIRED` values of a route that asks no wallet proof, by the words and the
/// request (URL, no body) they answer: the same request is asked the same price with the same
/// discovery, so it is encoded once. Emptied when full.
#[derive(Default)]
pub struct AskedOnce(std::sync::Mutex<std::collections::HashMap<(String, String), String>>);

impl AskedOnce {
    const ENTRIES: usize = 1024;

    fn get(&self, error: &str, url: &str) -> Option<String> {
        let asked = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        asked.get(&(error.to_owned(), url.to_owned())).cloned()
    }

    fn keep(&self, error: &str, url: &str, encoded: &str) {
        let mut asked = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if asked.len() >= Self::ENTRIES {
            asked.clear();
        }
        asked.insert((error.to_owned(), url.to_owned()), encoded.to_owned());
    }
}

pub async fn gate(State(gate): State<RouteGate>, request: Request, next: Next) -> Response {
    // A paid mutation settles and may write upstream: it runs to its end even if its client
    // goes away (see `idempotency::detached`).
    if gate.route.access != Access::Free
        && matches!(
            *request.method(),
            axum::http::Method::POST | axum::http::Method::PATCH
        )
    {
        return idempotency::detached(gated(gate, request, next)).await;
    }
    gated(gate, request, next).await
}

async fn gated(gate: RouteGate, request: Request, next: Next) -> Response {
    let RouteGate {
        state,
        route,
        asked,
    } = &gate;
    if route.access == Access::Free {
        return next.run(request).await;
    }
    let (parts, body) = request.into_parts();
    let context = Context::new(state, route, asked, &parts);
    let request = Request::from_parts(parts, body);
    let mut response = match route.access {
        Access::WalletRead => context.wallet_read(request, next).await,
        _ => context.paid(request, next).await,
    };
    if let Some((decision, name)) = context.counted.get() {
        rate_limit_headers(response.headers_mut(), decision, name);
    }
    response
}

struct Context<'a> {
    state: &'a AppState,
    route: &'a X402Route,
    asked: &'a AskedOnce,
    /// Who is asking, for the limits: the client address.
    client: String,
    /// The full URL of this request on our public origin (path and query).
    resource_url: String,
    /// This request's path and query, as discovery describes it.
    path: String,
    query: Option<String>,
    /// A POST's body, once checked: what discovery describes and a payment identifier is
    /// bound to.
    body: std::sync::OnceLock<axum::body::Bytes>,
    /// The window this request was counted in, and its name.
    counted: std::sync::OnceLock<(WindowDecision, &'static str)>,
}

impl<'a> Context<'a> {
    fn new(state: &'a AppState, route: &'a X402Route, asked: &'a AskedOnce, parts: &Parts) -> Self {
        let client = crate::client_address::client_ip(parts, &state.trusted_proxies)
            .map_or_else(|| "unknown".to_owned(), |ip| ip.to_string());
        let path_and_query = parts
            .uri
            .path_and_query()
            .map_or_else(|| parts.uri.path().to_owned(), ToString::to_string);
        Self {
            state,
            route,
            asked,
            client,
            resource_url: format!("{}{path_and_query}", state.x402.origin),
            path: parts.uri.path().to_owned(),
            query: parts.uri.query().map(str::to_owned),
            body: std::sync::OnceLock::new(),
            counted: std::sync::OnceLock::new(),
        }
    }

    /// The window this request counts against.
    fn limit(&self, path: &str) -> Limit {
        Limit::of(
            self.route.access.paid(),
            &self.client,
            &self.route.path,
            path,
        )
    }

    /// Counts this request against its limit; `Err` with the 429 when it is spent.
    async fn consume_limit(&self, path: &str) -> Result<(), Response> {
        let limit = self.limit(path);
        let decision = self
            .state
            .limits
            .windows
            .consume_window(&limit.key, limit.window_ms, limit.per_window)
            .await
            .map_err(|e| ApiError::from(e).into_response())?;
        let _ = self.counted.set((decision, limit.name));
        if decision.allowed {
            return Ok(());
        }
        let (message, retry_after) = limit.refusal(&decision, self.state.clock.now_ms());
        Err(ApiError::new(limit.code, message)
            .with_header(
                axum::http::header::RETRY_AFTER,
                HeaderValue::from(retry_after),
            )
            .into_response())
    }

    fn disabled(&self) -> Option<Response> {
        let disabled = self.route.access_tokens == AccessTokens::Needed
            && !self.state.x402.wallet_routes_enabled;
        disabled.then(|| {
            ApiError::new(
                ErrorCode::ServiceUnavailable,
                "order and onchain routes of the x402 API are disabled: the operator has not set \
                 x402.access_token_secret",
            )
            .into_response()
        })
    }

    /// A free read of a resource the proven wallet owns (or whose page token is sent).
    async fn wallet_read(&self, mut request: Request, next: Next) -> Response {
        if let Err(refused) = self.consume_limit(request.uri().path()).await {
            return refused;
        }
        if let Some(disabled) = self.disabled() {
            return disabled;
        }
        match self
            .page_owner(request.headers(), request.uri().path())
            .await
        {
            Ok(Some(wallet)) => {
                tracing::Span::current().record("principal", "wallet");
                request.extensions_mut().insert(Caller::Wallet(wallet));
                return next.run(request).await;
            }
            Ok(None) => {}
            Err(refused) => return refused,
        }
        let wallet = match self.proof(request.headers(), false).await {
            Ok(Some(wallet)) => wallet,
            Ok(None) => {
                return self
                    .required(
                        ErrorCode::PaymentRequired,
                        "sign in with your wallet: send a SIGN-IN-WITH-X proof for the challenge in PAYMENT-REQUIRED",
                        "siwx_required",
                    )
                    .await;
            }
            Err(refused) => return refused,
        };
        tracing::Span::current().record("principal", "wallet");
        request.extensions_mut().insert(Caller::Wallet(wallet));
        next.run(request).await
    }

    /// The wallet owning the resource whose page token the request carries (`X-Page-Token`);
    /// `Ok(None)` without one. A token that is not the resource's answers as another wallet's
    /// resource does: not found.
    async fn page_owner(
        &self,
        headers: &HeaderMap,
        path: &str,
    ) -> Result<Option<Wallet>, Response> {
        let Some(page) = self.route.page else {
            return Ok(None);
        };
        let Some(token) = single_header(headers, crate::route_doc::PAGE_TOKEN) else {
            return Ok(None);
        };
        let token = token.to_str().unwrap_or_default();
        let id = decide::path_parameter(&self.route.path, path, page.parameter());
        let store = &self.state.store;
        let (owner, code) = match page {
            Page::Order => {
                let order = match OrderId::parse(id) {
                    Some(id) => store.order_for_page(&id).await,
                    None => Ok(None),
                };
                let order = order.map_err(|e| ApiError::from(e).into_response())?;
                let owner = order
                    .filter(|o| crate::order_page::token_matches(o.page_url.as_deref(), token))
                    .map(|o| o.owner);
                (owner, ErrorCode::OrderNotFound)
            }
            Page::Execution => {
                let plan = match PlanId::parse(id) {
                    Some(id) => store.execution_plan_for_page(&id).await,
                    None => Ok(None),
                };
                let plan = plan.map_err(|e| ApiError::from(e).into_response())?;
                let owner = plan
                    .filter(|p| crate::order_page::token_matches(p.page_url.as_deref(), token))
                    .map(|p| p.owner);
                (owner, ErrorCode::ExecutionNotFound)
            }
        };
        match owner.as_ref().and_then(decide::wallet_of_owner) {
            Some(wallet) => Ok(Some(wallet)),
            None => Err(
                ApiError::new(code, "not found: unknown, or not this page token's").into_response(),
            ),
        }
    }

    /// A paid call: see the module's order of steps.
    async fn paid(&self, request: Request, next: Next) -> Response {
        // Only a request that pays is a paid attempt (docs/x402.md): asking the price is free.
        if request.headers().contains_key(PAYMENT_SIGNATURE)
            && let Err(refused) = self.consume_limit(request.uri().path()).await
        {
            return refused;
        }
        if let Some(disabled) = self.disabled() {
            return disabled;
        }
        let (mut request, proven, payment) = match self.presented_payment(request).await {
            Ok(presented) => presented,
            Err(refused) => return refused,
        };
        let (option, requirements, payer_wallet, nonce) = match self.identify_payer(&payment).await
        {
            Ok(identified) => identified,
            Err(refused) => return refused,
        };
        // A call sent again under its payment identifier answers now, charging nothing.
        let identified = match payment_id::claim(self, &payer_wallet, &payment).await {
            payment_id::Decision::Absent => None,
            payment_id::Decision::Claimed(identified) => Some(identified),
            payment_id::Decision::Answer(answer) => return answer,
        };
        let wallet = proven.unwrap_or(payer_wallet.clone());
        let scope = wallet.scope();
        request
            .extensions_mut()
            .insert(Caller::Wallet(wallet.clone()));

        // A replay of a stored Idempotency-Key answers now, charging nothing.
        let (mut request, claim) = match idempotency::begin(
            self.state,
            &scope,
            request,
            idempotency::ClaimAt::Start,
        )
        .await
        {
            Started::Answer(answer) => return answer,
            Started::Unclaimed(request) => (request, None),
            Started::Claimed(request, claim) => (request, Some(claim)),
        };
        let purchase = Purchase {
            state: self.state,
            payer: payer_wallet.address(),
            nonce,
            claim,
        };
        let settled = match self
            .charge(&purchase, &payment, option, &requirements)
            .await
        {
            Ok(settled) => settled,
            Err(refused) => return refused,
        };
        // Paid `upto` its maximum: the job carries the authorization, settled when it ends.
        let authorized = requirements.scheme == Scheme::Upto.as_str();
        if authorized {
            request.extensions_mut().insert(JobPayment {
                network: requirements.network.clone(),
                payer: purchase.payer.clone(),
                maximum: requirements.amount.clone(),
                unit: option.pricing.amount.clone(),
                payment: serde_json::to_value(&payment).expect("a payment serializes"),
                requirements: serde_json::to_value(&requirements).expect("requirements serialize"),
                state: JobPaymentState::Authorized,
            });
        }
        let mut response = self.serve(&purchase, request, next).await;
        paid_headers(response.headers_mut(), (!authorized).then_some(&settled));
        match identified {
            Some(identified) => identified.finish(self.state, response).await,
            None => response,
        }
    }

    /// The request with its input checked, the wallet it proves (on wallet-bound routes) and
    /// the payment it carries; `Err` with the answer asking for (or refusing) a payment.
    async fn presented_payment(
        &self,
        request: Request,
    ) -> Result<(Request, Option<Wallet>, PaymentPayload), Response> {
        let request = self
            .checked_input(request)
            .await
            .map_err(IntoResponse::into_response)?;
        let mutation = request.method() != axum::http::Method::GET;
        let proven = if self.route.access.wallet_bound() {
            self.proof(request.headers(), mutation).await?
        } else {
            None
        };
        let Some(header) = single_header(request.headers(), PAYMENT_SIGNATURE) else {
            return Err(self
                .required(
                    ErrorCode::PaymentRequired,
                    "this call costs the price in PAYMENT-REQUIRED: pay it and send the same request with PAYMENT-SIGNATURE",
                    "Payment required",
                )
                .await);
        };
        match header
            .to_str()
            .ok()
            .filter(|h| h.len() <= MAX_PAYMENT_BYTES)
            .map(wire::decode_header::<PaymentPayload>)
        {
            Some(Ok(payment)) => Ok((request, proven, payment)),
            _ => Err(self
                .required(
                    ErrorCode::InvalidPaymentPayload,
                    "PAYMENT-SIGNATURE is not a base64 x402 payment payload",
                    "invalid_payload",
                )
                .await),
        }
    }

    /// The way to pay the payment names with what it asks of this call, the wallet that pays
    /// and what the payment is known by ([`decide::payer`]); `Err` with the 402 naming the
    /// reason.
    async fn identify_payer(
        &self,
        payment: &PaymentPayload,
    ) -> Result<(&'a PaymentOption, PaymentRequirements, Wallet, String), Response> {
        let offer = self.state.x402.accepts.offer(self.charged());
        match decide::payer(payment, offer.iter().map(|(_, r)| r), &self.resource_url) {
            Ok((index, payer, nonce)) => {
                let (option, requirements) = offer.into_iter().nth(index).expect("offered");
                Ok((option, requirements, payer, nonce))
            }
            Err(refused) => Err(self.invalid(&refused.reason, refused.message).await),
        }
    }

    /// What this call is charged: a metered job's maximum, from its checked body.
    fn charged(&self) -> Charge {
        match (self.route.metered, self.body.get()) {
            (Some(units), Some(body)) => Charge::Metered { units: units(body) },
            _ => Charge::Flat,
        }
    }

    /// Takes the payment for this call: once per payment, settled through the facilitator
    /// (or already settled by an earlier attempt that did not finish serving).
    async fn charge(
        &self,
        purchase: &Purchase<'_>,
        payment: &PaymentPayload,
        option: &PaymentOption,
        requirements: &PaymentRequirements,
    ) -> Result<SettleResponse, Response> {
        let presented = Presented {
            resource: &self.resource_url,
            idempotency_key: purchase.claim.as_ref().map(|claim| claim.key.as_str()),
        };
        let now_ms = self.state.clock.now_ms();
        let step = match self
            .state
            .store
            .begin_purchase(
                &purchase.payer,
                &purchase.nonce,
                presented,
                &self.state.node_id,
                now_ms,
            )
            .await
        {
            Ok(step) => step,
            Err(error) => {
                purchase.release_key().await;
                return Err(ApiError::from(error).into_response());
            }
        };
        match step {
            PurchaseStep::Used => {
                purchase.release_key().await;
                Err(ApiError::new(
                    ErrorCode::PaymentAlreadyUsed,
                    "this payment was already used: each payment buys one call (a retry with the \
                     same Idempotency-Key returns the first answer)",
                )
                .into_response())
            }
            PurchaseStep::InProgress { retry_after_secs } => {
                purchase.release_key().await;
                Err(ApiError::new(
                    ErrorCode::PaymentInProgress,
                    "another request with this payment is being settled or served; retry shortly",
                )
                .with_header(
                    axum::http::header::RETRY_AFTER,
                    HeaderValue::from(retry_after_secs),
                )
                .into_response())
            }
            PurchaseStep::Serve { transaction } => Ok(SettleResponse {
                success: true,
                error_reason: None,
                error_message: None,
                payer: Some(purchase.payer.clone()),
                transaction,
                network: requirements.network.clone(),
                amount: None,
            }),
            // `upto` settles when the job ends: now it is only verified (never settled at the
            // maximum, also when an earlier attempt did not finish).
            PurchaseStep::Settle | PurchaseStep::Resettle
                if requirements.scheme == Scheme::Upto.as_str() =>
            {
                self.verify(purchase, payment, option, requirements).await?;
                self.authorized(purchase, requirements).await
            }
            PurchaseStep::Settle => {
                self.verify(purchase, payment, option, requirements).await?;
                self.settle(purchase, payment, option, requirements, false)
                    .await
            }
            PurchaseStep::Resettle => {
                self.settle(purchase, payment, option, requirements, true)
                    .await
            }
        }
    }

    /// Runs the paid call and records what the payment bought: an answer worth keeping spends
    /// it; a failed call leaves it owed, so the same payment sent again runs the call without
    /// paying twice.
    async fn serve(&self, purchase: &Purchase<'_>, request: Request, next: Next) -> Response {
        let unfinished = purchase.release_if_dropped();
        let response = next.run(request).await;
        unfinished.disarm();
        let served = swapd_core::idempotency::is_storable(response.status().as_u16());
        let response = match &purchase.claim {
            Some(claim) => idempotency::finish(self.state, claim, response).await,
            None => response,
        };
        let recorded = if served {
            self.state
                .store
                .purchase_served(&purchase.payer, &purchase.nonce)
                .await
        } else {
            self.state
                .store
                .release_purchase(&purchase.payer, &purchase.nonce)
                .await
        };
        if let Err(error) = recorded {
            tracing::warn!(%error, served, "cannot record what a payment bought");
        }
        response
    }

    /// Asks the facilitator whether a new payment is valid; `Err` with the answer when it is
    /// not (or cannot be asked), the purchase forgotten since no money moved.
    async fn verify(
        &self,
        purchase: &Purchase<'_>,
        payment: &PaymentPayload,
        option: &PaymentOption,
        requirements: &PaymentRequirements,
    ) -> Result<(), Response> {
        let verify = option.facilitator.verify(payment, requirements);
        let verified = timed("verify", verify).await;
        match verified {
            Ok(verified) if verified.is_valid => Ok(()),
            Ok(verified) => {
                purchase.forget().await;
                let reason = decide::reason_code(verified.invalid_reason, "invalid_payload");
                Err(self
                    .invalid(&reason, &format!("the payment is not valid: {reason}"))
                    .await)
            }
            Err(error) => {
                purchase.forget().await;
                Err(facilitator_failure(&error, false))
            }
        }
    }

    /// Settles the payment; `again` when an earlier settlement's outcome never came back.
    /// `Err` with the answer when it did not settle: refused (no money moved: the purchase is
    /// forgotten) or unknown (the purchase stays, so the same payment sent again settles at
    /// most once and then runs the call).
    async fn settle(
        &self,
        purchase: &Purchase<'_>,
        payment: &PaymentPayload,
        option: &PaymentOption,
        requirements: &PaymentRequirements,
        again: bool,
    ) -> Result<SettleResponse, Response> {
        let settle = option.facilitator.settle(payment, requirements);
        let settled = match timed("settle", settle).await {
            Ok(settled) => settled,
            Err(error) => {
                purchase.release().await;
                return Err(facilitator_failure(&error, true));
            }
        };
        let settled = match decide::settlement(settled, again) {
            Settlement::Settled(settled) => settled,
            Settlement::Refused(refused) => {
                purchase.forget().await;
                let reason = refused.error_reason.clone().unwrap_or_default();
                let mut response = self
                    .required(
                        ErrorCode::PaymentFailed,
                        &format!("the payment could not be settled: {reason}"),
                        &reason,
                    )
                    .await;
                insert_header(
                    response.headers_mut(),
                    PAYMENT_RESPONSE,
                    &wire::encode_header(&refused),
                );
                return Err(response);
            }
        };
        if let Err(error) = self
            .state
            .store
            .purchase_settled(&purchase.payer, &purchase.nonce, &settled.transaction)
            .await
        {
            // Paid, not recorded: the purchase is still settling, and the same payment sent
            // again settles "again", finds it used, and runs the call.
            purchase.release().await;
            return Err(ApiError::from(error).into_response());
        }
        tracing::info!(payer = %purchase.payer, network = %settled.network, transaction = %settled.transaction, route = self.route.path, "x402 payment settled");
        Ok(settled)
    }

    /// Records an `upto` payment's verified authorization as what buys the call; what the
    /// job uses is settled when it ends.
    async fn authorized(
        &self,
        purchase: &Purchase<'_>,
        requirements: &PaymentRequirements,
    ) -> Result<SettleResponse, Response> {
        if let Err(error) = self
            .state
            .store
            .purchase_settled(&purchase.payer, &purchase.nonce, "")
            .await
        {
            purchase.release().await;
            return Err(ApiError::from(error).into_response());
        }
        Ok(SettleResponse {
            success: true,
            error_reason: None,
            error_message: None,
            payer: Some(purchase.payer.clone()),
            transaction: String::new(),
            network: requirements.network.clone(),
            amount: None,
        })
    }

    /// A paid request its handler would refuse for its body (POST) or query (GET) is refused
    /// now, before any charge.
    async fn checked_input(&self, request: Request) -> Result<Request, ApiError> {
        let check = match self.route.input {
            InputCheck::Nothing => return Ok(request),
            InputCheck::Query(check) => {
                check(self.state, &crate::SignedQuery::from_uri(request.uri())?)?;
                return Ok(request);
            }
            InputCheck::Body(check) => check,
        };
        let (parts, body) = request.into_parts();
        crate::json::require_json(&parts.headers)?;
        let bytes = axum::body::to_bytes(body, crate::MAX_BODY_BYTES)
            .await
            .map_err(|_| crate::json::too_large())?;
        check(&bytes)?;
        let _ = self.body.set(bytes.clone());
        Ok(Request::from_parts(parts, axum::body::Body::from(bytes)))
    }

    /// 402 `payment_invalid` with the reason in a fresh `PAYMENT-REQUIRED`.
    async fn invalid(&self, reason: &str, message: &str) -> Response {
        self.required(ErrorCode::PaymentInvalid, message, reason)
            .await
    }

    /// The wallet a SIGN-IN-WITH-X proof proves, if one was sent. Mutations consume its nonce.
    async fn proof(&self, headers: &HeaderMap, consume: bool) -> Result<Option<Wallet>, Response> {
        let Some(header) = single_header(headers, SIGN_IN_WITH_X) else {
            return Ok(None);
        };
        let payload: SiwxPayload = match header
            .to_str()
            .ok()
            .filter(|h| h.len() <= MAX_PROOF_BYTES)
            .map(wire::decode_header)
        {
            Some(Ok(payload)) => payload,
            _ => {
                return Err(ApiError::new(
                    ErrorCode::InvalidSiwxPayload,
                    "SIGN-IN-WITH-X is not a base64 Sign-In-With-X payload",
                )
                .into_response());
            }
        };
        let audience = Audience {
            origin: &self.state.x402.origin,
            chains: &self.state.x402.siwx_chains,
        };
        let now_ms = self.state.clock.now_ms();
        let wallet = match siwx::verify(&payload, &audience, now_ms) {
            Ok(wallet) => wallet,
            Err(problem) => return Err(self.siwx_refused(&problem.to_string()).await),
        };
        // The nonce must be one of our challenges, unexpired, and unused; a mutation uses it
        // up (the only write a proof causes).
        let Some(expires_at_ms) = self
            .state
            .x402
            .challenges
            .valid_until(&payload.nonce, now_ms)
        else {
            return Err(self.siwx_refused(&siwx::SiwxError::Nonce.to_string()).await);
        };
        let store = &self.state.store;
        let fresh = if consume {
            store
                .use_siwx_nonce(&payload.nonce, expires_at_ms, now_ms)
                .await
        } else {
            store
                .siwx_nonce_used(&payload.nonce)
                .await
                .map(|used| !used)
        };
        match fresh {
            Ok(true) => Ok(Some(wallet)),
            Ok(false) => Err(self.siwx_refused(&siwx::SiwxError::Nonce.to_string()).await),
            Err(error) => Err(ApiError::from(error).into_response()),
        }
    }

    /// 401 `siwx_invalid` naming the reason, with a fresh challenge to sign.
    async fn siwx_refused(&self, reason: &str) -> Response {
        let mut response = ApiError::new(
            ErrorCode::SiwxInvalid,
            format!("the SIGN-IN-WITH-X proof is refused: {reason}; sign the new challenge"),
        )
        .into_response();
        match self.payment_required(reason).await {
            Ok(value) => insert_header(response.headers_mut(), PAYMENT_REQUIRED, &value),
            Err(error) => return error,
        }
        response
    }

    /// An answer with `PAYMENT-REQUIRED` for this route (402 for the payment codes).
    async fn required(&self, code: ErrorCode, message: &str, error: &str) -> Response {
        let value = match self.payment_required(error).await {
            Ok(value) => value,
            Err(response) => return response,
        };
        let mut response = ApiError::new(code, message).into_response();
        let headers = response.headers_mut();
        insert_header(headers, PAYMENT_REQUIRED, &value);
        headers.insert(
            axum::http::header::CACHE_CONTROL,
            HeaderValue::from_static("no-store"),
        );
        response
    }

    /// The encoded `PAYMENT-REQUIRED` of this route: our requirements when it is paid, and a
    /// fresh SIWX challenge when it is wallet-bound (its nonce carries its own expiry under our
    /// MAC: nothing is written).
    async fn payment_required(&self, error: &str) -> Result<String, Response> {
        let once = !self.route.access.wallet_bound() && self.body.get().is_none();
        if once && let Some(encoded) = self.asked.get(error, &self.resource_url) {
            return Ok(encoded);
        }
        let x402 = &self.state.x402;
        let challenge = if self.route.access.wallet_bound() {
            let now_ms = self.state.clock.now_ms();
            let nonce = x402.challenges.issue(now_ms + CHALLENGE_TTL_MS);
            let audience = Audience {
                origin: &x402.origin,
                chains: &x402.siwx_chains,
            };
            Some(siwx::challenge(
                &audience,
                &self.resource_url,
                &nonce,
                now_ms,
            ))
        } else {
            None
        };
        let offered = self.route.access.paid().then(|| {
            let offer = x402.accepts.offer(self.charged());
            offer
                .into_iter()
                .map(|(_, requirements)| requirements)
                .collect()
        });
        let mut required = swapd_x402::payment_required(
            error,
            &self.resource_url,
            self.route.description,
            offered,
            challenge,
        );
        if self.route.access.paid()
            && let Some(schemas) = discovery::route_schemas(&self.route.method, &self.route.path)
        {
            let body = self
                .body
                .get()
                .and_then(|bytes| serde_json::from_slice(bytes).ok());
            let presented = discovery::Presented {
                template: &self.route.path,
                path: &self.path,
                query: self.query.as_deref(),
                body: body.as_ref(),
            };
            required
                .extensions
                .insert(wire::BAZAAR_EXTENSION.into(), schemas.extension(&presented));
        }
        let encoded = wire::encode_header(&required);
        if once {
            self.asked.keep(error, &self.resource_url, &encoded);
        }
        Ok(encoded)
    }
}

fn single_header<'h>(headers: &'h HeaderMap, name: &str) -> Option<&'h HeaderValue> {
    let mut values = headers.get_all(name).iter();
    match (values.next(), values.next()) {
        (Some(value), None) => Some(value),
        // Sent twice: neither is believed.
        _ => None,
    }
}

fn facilitator_failure(error: &swapd_x402::FacilitatorError, settling: bool) -> Response {
    tracing::warn!(%error, settling, "facilitator failure");
    let (code, message) = decide::facilitator_failure(error, settling);
    ApiError::new(code, message).into_response()
}

/// A paid answer's headers: `PAYMENT-RESPONSE` when the payment was `settled` (an `upto`
/// authorization is settled later, and said on the job's read).
fn paid_headers(headers: &mut HeaderMap, settled: Option<&SettleResponse>) {
    if let Some(settled) = settled {
        insert_header(headers, PAYMENT_RESPONSE, &wire::encode_header(settled));
    }
    headers.insert(
        axum::http::header::CACHE_CONTROL,
        HeaderValue::from_static("private, no-store"),
    );
}

fn insert_header(headers: &mut HeaderMap, name: &str, value: &str) {
    if let (Ok(name), Ok(value)) = (
        HeaderName::from_bytes(name.as_bytes()),
        HeaderValue::from_str(value),
    ) {
        headers.insert(name, value);
    }
}

fn rate_limit_headers(headers: &mut HeaderMap, decision: &WindowDecision, resource: &str) {
    for (name, value) in [
        ("x-ratelimit-limit", decision.limit.to_string()),
        ("x-ratelimit-remaining", decision.remaining().to_string()),
        (
            "x-ratelimit-reset",
            (decision.resets_at_ms / 1000).to_string(),
        ),
        ("x-ratelimit-used", decision.used.to_string()),
        ("x-ratelimit-resource", resource.to_owned()),
    ] {
        insert_header(headers, name, &value);
    }
}

/// `call` to the facilitator, its duration recorded on `/metrics`.
async fn timed<T>(call: &'static str, answer: impl Future<Output = T>) -> T {
    let started = std::time::Instant::now();
    let answer = answer.await;
    metrics::histogram!(crate::layers::FACILITATOR_DURATION, "call" => call)
        .record(started.elapsed().as_secs_f64());
    answer
}
