//! The OpenAPI 3.1 documents of both surfaces, generated from the handlers' annotations. The
//! committed copies under `openapi/` are checked against these by a test.

use std::sync::OnceLock;

use axum::http::header::CONTENT_TYPE;
use axum::response::IntoResponse;
use swapd_types::{ErrorBody, ErrorCode, ErrorEnvelope, FieldProblem};
use utoipa::openapi::security::{ApiKey, ApiKeyValue, SecurityScheme};
use utoipa::{Modify, OpenApi};

#[derive(OpenApi)]
#[openapi(
    info(
        title = "swapd Business API",
        version = "3.0.0",
        description = "The partner surface of swapd under /api/v3: HMAC-signed requests, \
            idempotent mutations, per-key rate limits. Every response is an envelope: \
            {\"success\":true,\"data\":...} or {\"success\":false,\"error\":{\"code\",\"message\"}}; \
            every response carries X-Request-Id."
    ),
    paths(
        crate::ops::healthz,
        crate::ops::readyz,
        crate::ops::metrics,
        business_openapi,
        crate::business::readiness,
        crate::business::market::currencies,
        crate::business::market::tokens_popular,
        crate::business::market::tokens_search,
        crate::business::market::tokens_by_address,
        crate::business::market::tokens_logo,
        crate::business::market::quotes,
        crate::business::market::discover_routes,
        crate::business::market::resolve,
        crate::business::orders::create_order,
        crate::business::orders::get_order,
        crate::business::orders::get_order_status,
        crate::business::orders::emergency,
        crate::business::orders::refund,
        crate::business::orders::deposit_qr,
        crate::business::orders::attach_email,
        crate::business::onchain::resolve,
        crate::business::onchain::report,
        crate::business::onchain::status,
        crate::business::webhooks::list,
        crate::business::webhooks::create,
        crate::business::webhooks::update,
        crate::business::webhooks::rotate,
        crate::business::webhooks::replay,
        crate::business::webhooks::deliveries,
        crate::business::webhooks::test_callback,
        crate::business::sandbox::deposit,
    ),
    components(schemas(ErrorEnvelope, ErrorBody, ErrorCode, FieldProblem)),
    modifiers(&HmacScheme),
    tags(
        (name = "business", description = "Signed Business API routes. Each lists its required permission; \
            GET /api/v3 lists every route with its permission and weight (units of the weighted hourly quota)."),
        (name = "operations", description = "Unauthenticated endpoints for load balancers and monitoring"),
        (name = "meta", description = "Machine-readable descriptions of the API"),
    )
)]
pub struct BusinessApiDoc;

/// The `hmac` security scheme: four headers, described in docs/authentication.md.
struct HmacScheme;

impl Modify for HmacScheme {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "hmac",
            SecurityScheme::ApiKey(ApiKey::Header(ApiKeyValue::with_description(
                "X-API-KEY",
                "Send X-API-KEY, X-API-TIMESTAMP (epoch seconds, ±300 s), X-API-NONCE \
                 (^[A-Za-z0-9._:-]{8,200}$, once per key) and X-API-SIGN: lowercase hex \
                 HMAC-SHA256 with the key's secret of METHOD\\nPATH\\nCANONICAL_QUERY\\nTIMESTAMP\\nNONCE\\nBODY. \
                 Every authenticated response carries X-RateLimit-Limit/Remaining/Reset/Used/Resource. \
                 POST and PATCH need an Idempotency-Key.",
            ))),
        );
    }
}

#[derive(OpenApi)]
#[openapi(
    info(
        title = "swapd x402 API",
        version = "2.0.0",
        description = "The pay-per-call surface of swapd under /api/x402: x402 v2 payments \
            (PAYMENT-REQUIRED / PAYMENT-SIGNATURE / PAYMENT-RESPONSE) and SIGN-IN-WITH-X wallet \
            proofs. Errors use the same envelope as the Business API."
    ),
    paths(
        x402_openapi,
        crate::x402::readiness::readiness,
        crate::x402::market_intel::create_job,
        crate::x402::market_intel::get_job,
    ),
    components(schemas(ErrorEnvelope, ErrorBody, ErrorCode, FieldProblem)),
    modifiers(&X402Operations),
    tags(
        (name = "x402", description = "Paid per call (x402 v2, `exact` on the configured network) and/or             bound to a wallet (SIGN-IN-WITH-X). Each route says which; GET /api/x402 lists them all.             The bodies, queries and answers are the Business API's for the same route."),
        (name = "meta", description = "Machine-readable descriptions of the API"),
    )
)]
pub struct X402ApiDoc;

/// The x402 routes are the Business API's handlers behind the x402 gate: their operations are
/// taken from the Business document and marked with the route's charge and access rule.
struct X402Operations;

impl Modify for X402Operations {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        use utoipa::openapi::path::HttpMethod;
        use utoipa::openapi::security::SecurityRequirement;
        use utoipa::openapi::{RefOr, ResponseBuilder};

        use crate::x402::{Access, X402_ROUTES};

        let business = BusinessApiDoc::openapi();
        let components = openapi.components.get_or_insert_with(Default::default);
        if let Some(theirs) = &business.components {
            for (name, schema) in &theirs.schemas {
                components
                    .schemas
                    .entry(name.clone())
                    .or_insert_with(|| schema.clone());
            }
        }
        components.add_security_scheme(
            "x402",
            SecurityScheme::ApiKey(ApiKey::Header(ApiKeyValue::with_description(
                "PAYMENT-SIGNATURE",
                "x402 v2: answer the 402's PAYMENT-REQUIRED (standard base64 JSON) with the same \
                 request plus PAYMENT-SIGNATURE (an `exact` EIP-3009 payment); wallet-bound routes \
                 also take SIGN-IN-WITH-X (a Sign-In-With-X proof for the challenge in \
                 PAYMENT-REQUIRED's `sign-in-with-x` extension). Successful paid answers carry \
                 PAYMENT-RESPONSE.",
            ))),
        );
        for route in X402_ROUTES.iter().filter(|r| r.access != Access::Free) {
            let v3 = route.path.replacen("/api/x402", "/api/v3", 1);
            let Some(item) = business.paths.paths.get(&v3) else {
                continue;
            };
            let (method, operation) = match route.method.as_str() {
                "GET" => (HttpMethod::Get, item.get.clone()),
                "POST" => (HttpMethod::Post, item.post.clone()),
                _ => continue,
            };
            let Some(mut operation) = operation else {
                continue;
            };
            let rule = match route.access {
                Access::Paid => "Paid per call.",
                Access::PaidWallet => {
                    "Paid per call; acts for the wallet of the SIGN-IN-WITH-X proof, or else the payer."
                }
                Access::WalletRead => {
                    "Free; needs a SIGN-IN-WITH-X proof of the wallet that owns the resource."
                }
                Access::Free => "Free.",
            };
            let business_rule = operation.description.take().unwrap_or_default();
            let detail = business_rule
                .split_once(". ")
                .map_or(business_rule.as_str(), |(_, rest)| rest);
            operation.description = Some(format!("{rule} {detail}"));
            operation.tags = Some(vec!["x402".into()]);
            operation.security = Some(vec![SecurityRequirement::new("x402", Vec::<String>::new())]);
            operation.responses.responses.insert(
                "402".into(),
                RefOr::T(
                    ResponseBuilder::new()
                        .description(
                            "`payment_required`, `payment_invalid`, `payment_failed`: the \
                             PAYMENT-REQUIRED header holds what to pay and, for wallet-bound \
                             routes, the SIWX challenge",
                        )
                        .build(),
                ),
            );
            for (status, text) in [
                (
                    "401",
                    "`siwx_invalid`: the SIGN-IN-WITH-X proof is refused (a new challenge is in PAYMENT-REQUIRED)",
                ),
                ("409", "`payment_already_used`, `idempotency_key_in_use`"),
                (
                    "429",
                    "`paid_attempts_exceeded` (60 per hour per client and route), `wallet_reads_exceeded` (30 per minute per client, route and resource)",
                ),
            ] {
                operation
                    .responses
                    .responses
                    .entry(status.into())
                    .or_insert_with(|| RefOr::T(ResponseBuilder::new().description(text).build()));
            }
            openapi
                .paths
                .add_path_operation(route.path, vec![method], operation);
        }
    }
}

/// The Business API document as pretty JSON with a trailing newline (the committed form).
pub fn business_document() -> &'static str {
    static DOC: OnceLock<String> = OnceLock::new();
    DOC.get_or_init(|| render(BusinessApiDoc::openapi()))
}

/// The x402 API document as pretty JSON with a trailing newline (the committed form).
pub fn x402_document() -> &'static str {
    static DOC: OnceLock<String> = OnceLock::new();
    DOC.get_or_init(|| render(X402ApiDoc::openapi()))
}

fn render(doc: utoipa::openapi::OpenApi) -> String {
    let mut json = doc.to_pretty_json().expect("OpenAPI documents serialize");
    json.push('\n');
    json
}

/// This document (OpenAPI 3.1).
#[utoipa::path(get, path = "/api/v3/openapi.json", tag = "meta",
    responses((status = 200, description = "The OpenAPI 3.1 document of the Business API", content_type = "application/json")))]
pub(crate) async fn business_openapi() -> impl IntoResponse {
    ([(CONTENT_TYPE, "application/json")], business_document())
}

/// This document (OpenAPI 3.1).
#[utoipa::path(get, path = "/api/x402/openapi.json", tag = "meta",
    responses((status = 200, description = "The OpenAPI 3.1 document of the x402 API", content_type = "application/json")))]
pub(crate) async fn x402_openapi() -> impl IntoResponse {
    ([(CONTENT_TYPE, "application/json")], x402_document())
}
