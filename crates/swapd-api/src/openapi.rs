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
    ),
    components(schemas(ErrorEnvelope, ErrorBody, ErrorCode, FieldProblem)),
    modifiers(&HmacScheme, &BusinessRoutes, &InputForms),
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

/// The signed routes' operations, from their one declaration.
struct BusinessRoutes;

impl Modify for BusinessRoutes {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        add_routes(openapi, crate::business::routes::openapi());
    }
}

/// Bodies that come in several forms (the handlers refuse a mix with 400 `validation_failed`):
/// each schema is its fields and a `oneOf` of the forms, where a form's required fields are
/// non-null and the fields of the other forms that it does not name may only be left out or
/// `null`.
struct InputForms;

/// A form: its required fields and its optional ones, each with its schema.
struct Form {
    required: Vec<(&'static str, serde_json::Value)>,
    optional: Vec<(&'static str, serde_json::Value)>,
}

fn input_forms() -> Vec<(&'static str, Vec<Form>)> {
    use serde_json::json;
    let string = || json!({"type": "string"});
    let amount = || json!({"type": "string", "pattern": swapd_types::schema::amount_pattern()});
    let kind = |kind: &str| json!({"type": "string", "enum": [kind]});
    let any = |kind: &str| json!({"type": [kind, "null"]});
    let optional_range =
        |min: i64, max: i64| json!({"type": ["integer", "null"], "minimum": min, "maximum": max});
    vec![
        (
            "OrderInput",
            vec![
                Form {
                    required: vec![("createToken", string())],
                    optional: vec![],
                },
                Form {
                    required: vec![
                        ("fromCcy", string()),
                        ("toCcy", string()),
                        ("amount", amount()),
                    ],
                    optional: vec![("direction", any("string")), ("type", any("string"))],
                },
            ],
        ),
        (
            "ReplayInput",
            vec![
                Form {
                    required: vec![("eventId", string())],
                    optional: vec![],
                },
                Form {
                    required: vec![("since", json!({"type": "integer", "minimum": 0}))],
                    optional: vec![("until", any("integer")), ("limit", any("integer"))],
                },
            ],
        ),
        (
            "JobInput",
            vec![
                Form {
                    required: vec![("kind", kind("pair_depth"))],
                    optional: vec![("steps", optional_range(2, 12))],
                },
                Form {
                    required: vec![("kind", kind("route_scan")), ("amount", amount())],
                    optional: vec![],
                },
                Form {
                    required: vec![("kind", kind("rate_history"))],
                    optional: vec![
                        ("windowSecs", optional_range(60, 30 * 86_400)),
                        ("buckets", optional_range(1, 96)),
                    ],
                },
            ],
        ),
    ]
}

impl Modify for InputForms {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        use serde_json::{Map, Value, json};
        let schemas = &mut openapi
            .components
            .get_or_insert_with(Default::default)
            .schemas;
        for (name, forms) in input_forms() {
            let Some(fields) = schemas.remove(name) else {
                continue;
            };
            let named = |form: &Form| -> Vec<&'static str> {
                form.required
                    .iter()
                    .chain(&form.optional)
                    .map(|(field, _)| *field)
                    .collect()
            };
            let one_of: Vec<Value> = forms
                .iter()
                .map(|form| {
                    let own = named(form);
                    let mut properties: Map<String, Value> = form
                        .required
                        .iter()
                        .chain(&form.optional)
                        .map(|(field, schema)| ((*field).to_owned(), schema.clone()))
                        .collect();
                    for other in forms.iter().flat_map(named) {
                        if !own.contains(&other) {
                            properties.insert(other.to_owned(), json!({"type": "null"}));
                        }
                    }
                    let required: Vec<_> = form.required.iter().map(|(field, _)| field).collect();
                    json!({"type": "object", "required": required, "properties": properties})
                })
                .collect();
            let both = json!({"allOf": [fields, {"oneOf": one_of}]});
            let schema = serde_json::from_value(both).expect("a valid schema");
            schemas.insert(name.to_owned(), schema);
        }
    }
}

fn add_routes(
    openapi: &mut utoipa::openapi::OpenApi,
    (paths, schemas): (
        utoipa::openapi::path::Paths,
        Vec<(String, utoipa::openapi::RefOr<utoipa::openapi::Schema>)>,
    ),
) {
    openapi.paths.merge(paths);
    openapi
        .components
        .get_or_insert_with(Default::default)
        .schemas
        .extend(schemas);
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
    ),
    components(schemas(ErrorEnvelope, ErrorBody, ErrorCode, FieldProblem)),
    modifiers(&X402Operations, &InputForms),
    tags(
        (name = "x402", description = "Paid per call (x402 v2, `exact` on the configured network) and/or             bound to a wallet (SIGN-IN-WITH-X). Each route says which; GET /api/x402 lists them all.             The bodies, queries and answers are the Business API's for the same route."),
        (name = "meta", description = "Machine-readable descriptions of the API"),
    )
)]
pub struct X402ApiDoc;

/// The x402 routes' operations, from their one declaration (the Business API's handlers there
/// are marked with the route's charge and access rule), with the Business API's schemas.
struct X402Operations;

impl Modify for X402Operations {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
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
            "siwx",
            SecurityScheme::ApiKey(ApiKey::Header(ApiKeyValue::with_description(
                "SIGN-IN-WITH-X",
                "A Sign-In-With-X proof (CAIP-122) for the challenge in the 402 answer's \
                 PAYMENT-REQUIRED `sign-in-with-x` extension, signed by the wallet that owns \
                 the resource.",
            ))),
        );
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
        add_routes(openapi, crate::x402::openapi());
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
    responses(
        (status = 200, description = "The OpenAPI 3.1 document of the Business API", content_type = "application/json"),
        (status = 429, description = "`ip_rate_limited`", body = ErrorEnvelope),
    ))]
pub(crate) async fn business_openapi() -> impl IntoResponse {
    ([(CONTENT_TYPE, "application/json")], business_document())
}

/// This document (OpenAPI 3.1).
#[utoipa::path(get, path = "/api/x402/openapi.json", tag = "meta",
    responses(
        (status = 200, description = "The OpenAPI 3.1 document of the x402 API", content_type = "application/json"),
        (status = 429, description = "`ip_rate_limited`", body = ErrorEnvelope),
    ))]
pub(crate) async fn x402_openapi() -> impl IntoResponse {
    ([(CONTENT_TYPE, "application/json")], x402_document())
}
