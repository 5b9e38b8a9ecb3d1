//! Reading a handler's OpenAPI annotation (`utoipa_axum::routes!` of one handler): the route
//! tables of both surfaces take a route's path and method from it. And adding to it what the
//! layers in front of every handler may answer, so each operation lists every status a client
//! can meet.

use axum::http::Method;
use swapd_types::ErrorCode;
use utoipa::openapi::path::{HttpMethod, Operation, ParameterBuilder, ParameterIn, Paths};
use utoipa::openapi::schema::{ObjectBuilder, Type};
use utoipa::openapi::{ContentBuilder, Ref, RefOr, Required, ResponseBuilder};

/// The one path, method and operation of `routes!(handler)`.
pub(crate) fn single_operation(paths: Paths) -> (String, Method, Operation) {
    let mut paths = paths.paths.into_iter();
    let (path, item) = paths.next().expect("the handler has a #[utoipa::path]");
    assert!(paths.next().is_none(), "one handler per route");
    let operations = [
        (Method::GET, item.get),
        (Method::POST, item.post),
        (Method::PATCH, item.patch),
        (Method::PUT, item.put),
        (Method::DELETE, item.delete),
    ];
    let mut found = operations
        .into_iter()
        .filter_map(|(method, operation)| operation.map(|operation| (method, operation)));
    let (method, operation) = found.next().expect("the annotation names a method");
    assert!(found.next().is_none(), "one method per handler: {path}");
    (path, method, operation)
}

pub(crate) fn http_method(method: &Method) -> HttpMethod {
    match *method {
        Method::GET => HttpMethod::Get,
        Method::POST => HttpMethod::Post,
        Method::PATCH => HttpMethod::Patch,
        Method::PUT => HttpMethod::Put,
        Method::DELETE => HttpMethod::Delete,
        _ => unreachable!("no route is declared with {method}"),
    }
}

/// Adds error `codes` to the operation, each under its status: appended to the handler's own
/// description of that status, or as a new response in the error envelope.
pub(crate) fn document_errors(operation: &mut Operation, codes: &[ErrorCode]) {
    for code in codes {
        let status = code.http_status().to_string();
        let mention = format!("`{code}`");
        let responses = &mut operation.responses.responses;
        match responses.get_mut(&status) {
            Some(RefOr::T(response)) if !response.description.contains(&mention) => {
                response.description = format!("{}; {mention}", response.description);
            }
            Some(_) => {}
            None => {
                let envelope = ContentBuilder::new()
                    .schema(Some(Ref::from_schema_name("ErrorEnvelope")))
                    .build();
                let response = ResponseBuilder::new()
                    .description(mention)
                    .content("application/json", envelope)
                    .build();
                responses.insert(status, RefOr::T(response));
            }
        }
    }
}

/// What any route of either surface may answer before its handler runs, from the route's
/// shape: a path that is not in canonical form, a query that is malformed or names a parameter
/// twice or one the route does not take, a request that is too large, and the service being
/// briefly unable to answer.
pub(crate) fn document_common_errors(operation: &mut Operation, method: &Method) {
    use ErrorCode::*;
    document_errors(
        operation,
        &[
            ValidationFailed,
            PathNotCanonical,
            QueryInvalidEncoding,
            DuplicateParameter,
            PayloadTooLarge,
            IpRateLimited,
            ServiceUnavailable,
        ],
    );
    if has_body(method) {
        document_errors(operation, &[InvalidJson, UnsupportedMediaType]);
    }
    constrain_ids(operation);
}

/// POST and PATCH carry a JSON body and an `Idempotency-Key`.
pub(crate) fn has_body(method: &Method) -> bool {
    matches!(*method, Method::POST | Method::PATCH)
}

/// A mutation's `Idempotency-Key` header, as docs/authentication.md defines it, and its
/// refusals.
pub(crate) fn document_idempotency_key(operation: &mut Operation) {
    use ErrorCode::*;
    document_errors(
        operation,
        &[
            IdempotencyKeyMissing,
            IdempotencyKeyInvalid,
            IdempotencyKeyInUse,
            IdempotencyKeyReused,
        ],
    );
    let parameter = ParameterBuilder::new()
        .name("Idempotency-Key")
        .parameter_in(ParameterIn::Header)
        .required(Required::True)
        .description(Some(
            "Required on every POST and PATCH: a retry with the same key and the same request \
             returns the first answer (24 hours); the same key with a different request is \
             refused.",
        ))
        .schema(Some(
            ObjectBuilder::new()
                .schema_type(Type::String)
                .pattern(Some(swapd_core::idempotency::KEY_PATTERN)),
        ))
        .build();
    operation
        .parameters
        .get_or_insert_with(Vec::new)
        .push(parameter);
}

/// The header that opens a wallet-bound read with the resource's page token instead of a
/// Sign-In-With-X proof (docs/x402.md, "Page tokens").
pub const PAGE_TOKEN: &str = "X-Page-Token";

/// A wallet-bound read of a resource with a hosted page takes its page token.
pub(crate) fn document_page_token(operation: &mut Operation) {
    let parameter = ParameterBuilder::new()
        .name(PAGE_TOKEN)
        .parameter_in(ParameterIn::Header)
        .required(Required::False)
        .description(Some(
            "Instead of a SIGN-IN-WITH-X proof: the page token of the resource, the last \
             segment of its `orderPageUrl` (or `executionPageUrl`). A wrong token answers as \
             another wallet's resource does.",
        ))
        .schema(Some(
            ObjectBuilder::new()
                .schema_type(Type::String)
                .max_length(Some(128)),
        ))
        .build();
    operation
        .parameters
        .get_or_insert_with(Vec::new)
        .push(parameter);
}

/// The prefix of each path parameter's identifiers, so the documents state the form an id
/// takes (`swapd_types::ids`).
const ID_PREFIXES: &[(&str, &str)] = &[
    ("orderId", "ord_"),
    ("webhookId", "whk_"),
    ("executionPlanId", "ocx_"),
    ("jobId", "job_"),
];

fn constrain_ids(operation: &mut Operation) {
    for parameter in operation.parameters.iter_mut().flatten() {
        if !matches!(parameter.parameter_in, ParameterIn::Path) {
            continue;
        }
        let prefix = ID_PREFIXES
            .iter()
            .find(|(name, _)| *name == parameter.name)
            .map(|(_, prefix)| *prefix)
            .unwrap_or_else(|| panic!("path parameter {} has no id prefix", parameter.name));
        parameter.schema = Some(RefOr::T(
            ObjectBuilder::new()
                .schema_type(Type::String)
                .pattern(Some(swapd_types::ids::id_pattern(prefix)))
                .into(),
        ));
    }
}
