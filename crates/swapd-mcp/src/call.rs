//! A tool call as the HTTP request of its route, and the route's answer as the tool's result
//! (docs/mcp.md, "What a client can rely on"). Pure: no I/O, so the server and `swapctl mcp`
//! send the same requests and read answers the same way.
//!
//! - The result of a success is the answer's `data`, in `structuredContent` and as JSON text;
//!   a paid call's settlement (`PAYMENT-RESPONSE`) is `_meta["x402/payment-response"]`.
//! - Every failure is a tool error whose `structuredContent` holds the HTTP surface's `code`
//!   and `message`; when the answer carries `PAYMENT-REQUIRED` (what to pay, or the SIWX
//!   challenge to sign), its fields are there too, as x402's MCP transport wants.

use http::{HeaderMap, HeaderName, HeaderValue, Method, StatusCode};
use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};
use rmcp::model::{CallToolResult, JsonObject, MetaObject, Tool};
use serde_json::{Map, Value, json};
use swapd_types::ErrorCode;
use swapd_x402::wire::{
    self, PAYMENT_REQUIRED, PAYMENT_RESPONSE, PAYMENT_SIGNATURE, SIGN_IN_WITH_X,
};

use crate::tools::{Place, ToolRoute};

/// Where x402's MCP transport puts a payment in a `tools/call` request.
pub const PAYMENT_META: &str = "x402/payment";
/// Where it puts the settlement in the result.
pub const PAYMENT_RESPONSE_META: &str = "x402/payment-response";
/// Where a Sign-In-With-X proof goes: the base64 payload of the HTTP header (or its JSON).
pub const SIWX_META: &str = "sign-in-with-x";

/// The HTTP request of a tool call, relative to the server's origin.
#[derive(Debug, Clone)]
pub struct HttpCall {
    pub method: Method,
    pub path_and_query: String,
    pub headers: HeaderMap,
    /// The JSON body of a POST.
    pub body: Option<Vec<u8>>,
}

/// What the route answered.
#[derive(Debug, Clone)]
pub struct HttpAnswer {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: Vec<u8>,
}

/// A call refused before it is sent (nothing was charged), with the HTTP surface's code.
#[derive(Debug, Clone)]
pub struct Refusal {
    pub code: ErrorCode,
    pub message: String,
}

impl Refusal {
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
        }
    }

    pub fn into_result(self) -> CallToolResult {
        CallToolResult::structured_error(json!({
            "code": self.code.as_str(),
            "message": self.message,
        }))
    }
}

/// Characters a path segment keeps as they are: RFC 3986's unreserved ones.
const SEGMENT: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// The request `route` sends for `arguments` and the request's `_meta`.
pub fn request(
    route: &ToolRoute,
    arguments: &JsonObject,
    meta: &JsonObject,
) -> Result<HttpCall, Refusal> {
    if let Some(unknown) = arguments.keys().find(|name| route.argument(name).is_none()) {
        return Err(Refusal::new(
            ErrorCode::ValidationFailed,
            format!("`{unknown}` is not an argument of {}", route.name()),
        ));
    }
    let mut path = route.path.clone();
    let mut query = url::form_urlencoded::Serializer::new(String::new());
    let mut headers = HeaderMap::new();
    let mut body = Map::new();
    for argument in &route.arguments {
        let value = arguments.get(&argument.name).filter(|v| !v.is_null());
        match (&argument.place, value) {
            (Place::Body, Some(value)) => {
                body.insert(argument.name.clone(), value.clone());
            }
            (Place::Path, None) => {
                return Err(Refusal::new(
                    ErrorCode::ValidationFailed,
                    format!("`{}` is required", argument.name),
                ));
            }
            (Place::Path, Some(value)) => {
                let segment = scalar(&argument.name, value)?;
                let encoded = utf8_percent_encode(&segment, SEGMENT).to_string();
                path = path.replace(&format!("{{{}}}", argument.name), &encoded);
            }
            (Place::Query, Some(value)) => {
                query.append_pair(&argument.name, &scalar(&argument.name, value)?);
            }
            (Place::Header(header), Some(value)) => {
                let text = scalar(&argument.name, value)?;
                insert(&mut headers, header, &text).map_err(|()| {
                    Refusal::new(
                        ErrorCode::ValidationFailed,
                        format!("`{}` holds characters a header cannot carry", argument.name),
                    )
                })?;
            }
            (_, None) => {}
        }
    }
    proofs(meta, &mut headers)?;
    let query = query.finish();
    let path_and_query = if query.is_empty() {
        path
    } else {
        format!("{path}?{query}")
    };
    let body = route.has_body().then(|| {
        headers.insert(
            http::header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        serde_json::to_vec(&body).expect("a JSON object serializes")
    });
    Ok(HttpCall {
        method: route.method.clone(),
        path_and_query,
        headers,
        body,
    })
}

/// A path, query or header argument as text: strings, numbers and booleans.
fn scalar(name: &str, value: &Value) -> Result<String, Refusal> {
    match value {
        Value::String(text) => Ok(text.clone()),
        Value::Number(number) => Ok(number.to_string()),
        Value::Bool(flag) => Ok(flag.to_string()),
        _ => Err(Refusal::new(
            ErrorCode::ValidationFailed,
            format!("`{name}` must be a string, a number or a boolean"),
        )),
    }
}

fn insert(headers: &mut HeaderMap, name: &str, value: &str) -> Result<(), ()> {
    let name = HeaderName::from_bytes(name.as_bytes()).map_err(drop)?;
    let value = HeaderValue::from_str(value).map_err(drop)?;
    headers.insert(name, value);
    Ok(())
}

/// The payment and the wallet proof of `_meta`, as the HTTP headers that carry them.
fn proofs(meta: &JsonObject, headers: &mut HeaderMap) -> Result<(), Refusal> {
    for (key, header, code) in [
        (
            PAYMENT_META,
            PAYMENT_SIGNATURE,
            ErrorCode::InvalidPaymentPayload,
        ),
        (SIWX_META, SIGN_IN_WITH_X, ErrorCode::InvalidSiwxPayload),
    ] {
        let encoded = match meta.get(key) {
            None | Some(Value::Null) => continue,
            Some(Value::String(encoded)) => encoded.clone(),
            Some(object @ Value::Object(_)) => wire::encode_header(object),
            Some(_) => {
                return Err(Refusal::new(
                    code,
                    format!("_meta[\"{key}\"] must be an object or its base64 header value"),
                ));
            }
        };
        insert(headers, header, &encoded)
            .map_err(|()| Refusal::new(code, format!("_meta[\"{key}\"] is not a header value")))?;
    }
    Ok(())
}

/// How a call ended, for logs and metrics: `ok` or the error code.
pub fn outcome(result: &CallToolResult) -> String {
    if result.is_error != Some(true) {
        return "ok".into();
    }
    result
        .structured_content
        .as_ref()
        .and_then(|content| content.get("code"))
        .and_then(Value::as_str)
        .unwrap_or("internal_error")
        .to_owned()
}

/// The tool's result for what `route` answered.
pub fn result(route: &ToolRoute, answer: &HttpAnswer) -> CallToolResult {
    let body: Option<Value> = serde_json::from_slice(&answer.body).ok();
    let settlement = header_json(&answer.headers, PAYMENT_RESPONSE);
    let mut result = match body {
        Some(Value::Object(mut envelope)) if answer.status.is_success() => {
            match envelope.remove("data") {
                Some(data @ Value::Object(_)) => CallToolResult::structured(data),
                _ => unexpected(answer.status),
            }
        }
        Some(Value::Object(envelope)) => failure(route, &envelope, answer),
        _ => unexpected(answer.status),
    };
    if let Some(settlement) = settlement {
        let mut meta = MetaObject::new();
        meta.0.insert(PAYMENT_RESPONSE_META.into(), settlement);
        result.meta = Some(meta);
    }
    result
}

fn failure(
    route: &ToolRoute,
    envelope: &Map<String, Value>,
    answer: &HttpAnswer,
) -> CallToolResult {
    let error = envelope.get("error").cloned().unwrap_or_default();
    let mut content = match header_json(&answer.headers, PAYMENT_REQUIRED) {
        Some(Value::Object(required)) => required,
        _ => Map::new(),
    };
    // Paid through this tool, the route is discovered as the tool (docs/mcp.md).
    if let Some(Value::Object(extensions)) = content.get_mut("extensions")
        && let Some(bazaar) = extensions.get_mut(wire::BAZAAR_EXTENSION)
    {
        *bazaar = discovery(&route.tool);
    }
    let code = error
        .get("code")
        .and_then(Value::as_str)
        .unwrap_or(ErrorCode::InternalError.as_str());
    content.insert("code".into(), json!(code));
    content.insert(
        "message".into(),
        error.get("message").cloned().unwrap_or(json!("")),
    );
    if let Some(details) = error.get("details") {
        content.insert("details".into(), details.clone());
    }
    if let Some(retry_after) = answer
        .headers
        .get(http::header::RETRY_AFTER)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok())
    {
        content.insert("retryAfterSeconds".into(), json!(retry_after));
    }
    CallToolResult::structured_error(Value::Object(content))
}

/// The `bazaar` extension describing `tool`, as `declareDiscoveryExtension` of
/// `@x402/extensions` 2.27 writes it for an MCP tool (streamable HTTP).
pub fn discovery(tool: &Tool) -> Value {
    let mut input = Map::from_iter([
        ("type".into(), json!("mcp")),
        ("toolName".into(), json!(tool.name)),
        ("transport".into(), json!("streamable-http")),
        (
            "inputSchema".into(),
            Value::Object((*tool.input_schema).clone()),
        ),
    ]);
    let mut properties = Map::from_iter([
        ("type".into(), json!({"type": "string", "const": "mcp"})),
        ("toolName".into(), json!({"type": "string"})),
        (
            "transport".into(),
            json!({"type": "string", "enum": ["streamable-http"]}),
        ),
        ("inputSchema".into(), json!({"type": "object"})),
    ]);
    if let Some(description) = &tool.description {
        input.insert("description".into(), json!(description));
        properties.insert("description".into(), json!({"type": "string"}));
    }
    json!({
        "info": {"input": input},
        "schema": {
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "properties": {
                "input": {
                    "type": "object",
                    "properties": properties,
                    "required": ["type", "toolName", "inputSchema"],
                    "additionalProperties": false,
                }
            },
            "required": ["input"],
        }
    })
}

fn unexpected(status: StatusCode) -> CallToolResult {
    Refusal::new(
        ErrorCode::InternalError,
        format!(
            "the route answered something unexpected (HTTP {})",
            status.as_u16()
        ),
    )
    .into_result()
}

fn header_json(headers: &HeaderMap, name: &str) -> Option<Value> {
    let value = headers.get(name)?.to_str().ok()?;
    wire::decode_header(value).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::{Access, Argument};

    fn route(method: Method, arguments: &[(&str, Place)]) -> ToolRoute {
        ToolRoute {
            tool: rmcp::model::Tool::new("thing", "a thing", JsonObject::new()),
            method,
            path: "/api/x402/things/{thingId}".into(),
            access: Access::Paid,
            arguments: arguments
                .iter()
                .map(|(name, place)| Argument {
                    name: (*name).into(),
                    place: place.clone(),
                })
                .collect(),
        }
    }

    fn object(value: Value) -> JsonObject {
        value.as_object().unwrap().clone()
    }

    #[test]
    fn arguments_go_where_the_route_reads_them() {
        let route = route(
            Method::POST,
            &[
                ("thingId", Place::Path),
                ("idempotencyKey", Place::Header("Idempotency-Key".into())),
                ("size", Place::Body),
                ("color", Place::Body),
            ],
        );
        let call = request(
            &route,
            &object(json!({"thingId": "a/b c", "idempotencyKey": "k-1", "size": 3})),
            &object(json!({"x402/payment": {"x402Version": 2}, "sign-in-with-x": "c2l3eA=="})),
        )
        .unwrap();
        assert_eq!(call.path_and_query, "/api/x402/things/a%2Fb%20c");
        assert_eq!(call.headers["idempotency-key"], "k-1");
        assert_eq!(call.headers["content-type"], "application/json");
        assert_eq!(call.headers[SIGN_IN_WITH_X], "c2l3eA==");
        let payment: Value =
            wire::decode_header(call.headers[PAYMENT_SIGNATURE].to_str().unwrap()).unwrap();
        assert_eq!(payment, json!({"x402Version": 2}));
        let body: Value = serde_json::from_slice(&call.body.unwrap()).unwrap();
        assert_eq!(body, json!({"size": 3}));
    }

    #[test]
    fn a_get_sends_its_query_in_declared_order_and_no_body() {
        let route = route(
            Method::GET,
            &[
                ("b", Place::Query),
                ("a", Place::Query),
                ("thingId", Place::Path),
            ],
        );
        let call = request(
            &route,
            &object(json!({"a": "x y", "b": 1, "thingId": "t"})),
            &JsonObject::new(),
        )
        .unwrap();
        assert_eq!(call.path_and_query, "/api/x402/things/t?b=1&a=x+y");
        assert!(call.body.is_none());
    }

    #[test]
    fn bad_arguments_are_refused_with_the_http_codes() {
        let route = route(
            Method::GET,
            &[("thingId", Place::Path), ("q", Place::Query)],
        );
        let refused = |arguments: Value, meta: Value| {
            request(&route, &object(arguments), &object(meta))
                .unwrap_err()
                .code
        };
        assert_eq!(
            refused(json!({"thingId": "t", "other": 1}), json!({})),
            ErrorCode::ValidationFailed
        );
        assert_eq!(refused(json!({}), json!({})), ErrorCode::ValidationFailed);
        assert_eq!(
            refused(json!({"thingId": "t", "q": [1]}), json!({})),
            ErrorCode::ValidationFailed
        );
        assert_eq!(
            refused(json!({"thingId": "t"}), json!({"x402/payment": 7})),
            ErrorCode::InvalidPaymentPayload
        );
    }

    fn answer(status: u16, headers: &[(&str, String)], body: Value) -> HttpAnswer {
        let mut map = HeaderMap::new();
        for (name, value) in headers {
            insert(&mut map, name, value).unwrap();
        }
        HttpAnswer {
            status: StatusCode::from_u16(status).unwrap(),
            headers: map,
            body: serde_json::to_vec(&body).unwrap(),
        }
    }

    #[test]
    fn a_success_is_its_data_with_the_settlement_in_meta() {
        let settlement =
            json!({"success": true, "transaction": "0xabc", "network": "eip155:84532"});
        let result = result(
            &route(Method::GET, &[]),
            &answer(
                200,
                &[(PAYMENT_RESPONSE, wire::encode_header(&settlement))],
                json!({"success": true, "data": {"count": 1}}),
            ),
        );
        assert_eq!(result.is_error, Some(false));
        assert_eq!(result.structured_content, Some(json!({"count": 1})));
        assert_eq!(result.meta.unwrap().0[PAYMENT_RESPONSE_META], settlement);
        assert_eq!(outcome(&CallToolResult::structured(json!({}))), "ok");
    }

    #[test]
    fn a_payment_required_answer_is_a_tool_error_with_the_requirements_and_the_code() {
        let required = json!({"x402Version": 2, "accepts": [{"scheme": "exact"}], "error": "Payment required"});
        let result = result(
            &route(Method::GET, &[]),
            &answer(
                402,
                &[(PAYMENT_REQUIRED, wire::encode_header(&required))],
                json!({"success": false, "error": {"code": "payment_required", "message": "pay"}}),
            ),
        );
        assert_eq!(result.is_error, Some(true));
        let content = result.structured_content.clone().unwrap();
        assert_eq!(content["accepts"], required["accepts"]);
        assert_eq!(content["x402Version"], 2);
        assert_eq!(content["code"], "payment_required");
        assert_eq!(content["message"], "pay");
        assert_eq!(outcome(&result), "payment_required");
    }

    #[test]
    fn a_payment_required_through_a_tool_is_discovered_as_the_tool() {
        let required = json!({"x402Version": 2, "accepts": [{"scheme": "exact"}],
            "extensions": {"bazaar": {"info": {"input": {"type": "http"}}}, "payment-identifier": {"info": {"required": false}}}});
        let route = route(Method::POST, &[]);
        let result = result(
            &route,
            &answer(
                402,
                &[(PAYMENT_REQUIRED, wire::encode_header(&required))],
                json!({"success": false, "error": {"code": "payment_required", "message": "pay"}}),
            ),
        );
        let extensions = &result.structured_content.unwrap()["extensions"];
        assert_eq!(extensions["bazaar"], discovery(&route.tool));
        assert_eq!(extensions["bazaar"]["info"]["input"]["toolName"], "thing");
        assert_eq!(
            extensions["bazaar"]["info"]["input"]["description"],
            "a thing"
        );
        assert_eq!(
            extensions["payment-identifier"],
            required["extensions"]["payment-identifier"]
        );
    }

    #[test]
    fn an_error_keeps_its_code_details_and_retry_after() {
        let result = result(
            &route(Method::GET, &[]),
            &answer(
                429,
                &[("retry-after", "30".into())],
                json!({"success": false, "error": {"code": "paid_attempts_exceeded", "message": "later", "details": [{"field": "x"}]}}),
            ),
        );
        let content = result.structured_content.unwrap();
        assert_eq!(content["code"], "paid_attempts_exceeded");
        assert_eq!(content["details"][0]["field"], "x");
        assert_eq!(content["retryAfterSeconds"], 30);
        let garbled = super::result(
            &route(Method::GET, &[]),
            &HttpAnswer {
                status: StatusCode::BAD_GATEWAY,
                headers: HeaderMap::new(),
                body: b"<html>".to_vec(),
            },
        );
        assert_eq!(
            garbled.structured_content.unwrap()["code"],
            "internal_error"
        );
    }
}
