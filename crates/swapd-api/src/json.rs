use std::fmt;

use axum::body::Bytes;
use axum::extract::{FromRequest, Request};
use axum::http::header::CONTENT_TYPE;
use serde::Serialize;
use serde::de::{DeserializeOwned, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::Value;
use serde_json::error::Category;
use swapd_types::{ErrorCode, FieldProblem};

use crate::ApiError;

/// The largest request body any route accepts.
pub const MAX_BODY_BYTES: usize = 64 * 1024;
const MAX_DEPTH: usize = 32;

/// A JSON response. Unlike `axum::Json`, which serializes token by token into a 128-byte
/// buffer that grows by copying, it writes into one buffer sized for a typical document
/// (docs/benchmarks-history.md, "Business API authentication").
#[derive(Debug, Clone)]
pub struct Json<T>(pub T);

/// Most documents fit; the readiness documents (about 4 KiB) grow it once.
const RESPONSE_BUFFER_BYTES: usize = 2048;

impl<T: Serialize> axum::response::IntoResponse for Json<T> {
    fn into_response(self) -> axum::response::Response {
        let mut buffer = Vec::with_capacity(RESPONSE_BUFFER_BYTES);
        match serde_json::to_writer(&mut buffer, &self.0) {
            Ok(()) => (
                [(
                    CONTENT_TYPE,
                    axum::http::HeaderValue::from_static("application/json"),
                )],
                buffer,
            )
                .into_response(),
            Err(error) => {
                ApiError::internal(format!("a response did not serialize: {error}")).into_response()
            }
        }
    }
}

/// A JSON body parsed strictly: `Content-Type: application/json`, at most [`MAX_BODY_BYTES`],
/// no duplicate keys at any depth, and (through `#[serde(deny_unknown_fields)]` on the target
/// types) no unknown fields.
#[derive(Debug, Clone)]
pub struct ApiJson<T>(pub T);

impl<S, T> FromRequest<S> for ApiJson<T>
where
    S: Send + Sync,
    T: DeserializeOwned + Serialize,
{
    type Rejection = ApiError;

    async fn from_request(request: Request, state: &S) -> Result<Self, Self::Rejection> {
        require_json(request.headers())?;
        let bytes = Bytes::from_request(request, state)
            .await
            .map_err(|_| too_large())?;
        parse_json(&bytes).map(ApiJson)
    }
}

/// `Content-Type: application/json` (parameters allowed), or 415.
pub(crate) fn require_json(headers: &axum::http::HeaderMap) -> Result<(), ApiError> {
    let is_json = headers
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|mime| mime.trim().eq_ignore_ascii_case("application/json"));
    if is_json {
        Ok(())
    } else {
        Err(ApiError::new(
            ErrorCode::UnsupportedMediaType,
            "send the body as JSON with `Content-Type: application/json`",
        ))
    }
}

pub(crate) fn too_large() -> ApiError {
    ApiError::new(
        ErrorCode::PayloadTooLarge,
        format!("the request body exceeds {MAX_BODY_BYTES} bytes"),
    )
}

/// Parses a JSON body strictly (see [`ApiJson`]); used directly by extractors that already hold
/// the raw bytes.
pub fn parse_json<T: DeserializeOwned + Serialize>(bytes: &[u8]) -> Result<T, ApiError> {
    if bytes.len() > MAX_BODY_BYTES {
        return Err(too_large());
    }
    if too_deep(bytes) {
        return Err(ApiError::new(
            ErrorCode::InvalidJson,
            format!("the request body is not valid JSON: nesting deeper than {MAX_DEPTH} levels"),
        ));
    }
    let mut deserializer = serde_json::Deserializer::from_slice(bytes);
    let body = UniqueKeys
        .deserialize(&mut deserializer)
        .and_then(|body| deserializer.end().map(|()| body))
        .map_err(json_error)?;
    let read: T = match serde_json::from_slice(bytes) {
        Ok(read) => read,
        Err(error) => {
            // JSON has one number type: `50.0` is the integer 50 to JSON Schema (and to the
            // OpenAPI documents), as written by clients whose numbers are floats. serde refuses
            // it for an integer field, so such a document is read again with whole numbers made
            // integers; a document without one fails with the first error.
            let mut whole = body.clone();
            if !integers_from_whole_floats(&mut whole) {
                return Err(json_error(error));
            }
            serde_json::from_value(whole).map_err(json_error)?
        }
    };
    let shape = serde_json::to_value(&read).map_err(|e| ApiError::internal(&e))?;
    if !objects_where_objects(&shape, &body) {
        return Err(ApiError::new(
            ErrorCode::ValidationFailed,
            "the request body does not match the schema: an array where an object is expected",
        )
        .with_details(vec![FieldProblem {
            field: "body".into(),
            problem: "an array where an object is expected".into(),
        }]));
    }
    Ok(read)
}

/// serde reads a struct from a JSON array of its fields in order as well as from an object
/// (`[null, null]` is a patch that changes nothing); the API's bodies have objects there. True
/// when the body has an object wherever what was read from it writes one.
fn objects_where_objects(read: &Value, body: &Value) -> bool {
    match (read, body) {
        (Value::Object(read), Value::Object(body)) => read.iter().all(|(name, read)| {
            body.get(name)
                .is_none_or(|body| objects_where_objects(read, body))
        }),
        (Value::Object(_), _) => false,
        (Value::Array(read), Value::Array(body)) => read
            .iter()
            .zip(body)
            .all(|(read, body)| objects_where_objects(read, body)),
        _ => true,
    }
}

/// Rewrites every float with no fraction and less than 2^53 in size (so that it is exactly the
/// number written) as that integer; true if there was one.
fn integers_from_whole_floats(value: &mut Value) -> bool {
    match value {
        Value::Number(number) => {
            let Some(float) = number.as_f64().filter(|_| number.is_f64()) else {
                return false;
            };
            const EXACT: f64 = 9_007_199_254_740_992.0; // 2^53
            if float.fract() != 0.0 || float.abs() >= EXACT {
                return false;
            }
            *number = serde_json::Number::from(float as i64);
            true
        }
        Value::Array(items) => items.iter_mut().fold(false, |found, item| {
            integers_from_whole_floats(item) | found
        }),
        Value::Object(fields) => fields.values_mut().fold(false, |found, item| {
            integers_from_whole_floats(item) | found
        }),
        _ => false,
    }
}

fn json_error(error: serde_json::Error) -> ApiError {
    match error.classify() {
        Category::Data => ApiError::new(
            ErrorCode::ValidationFailed,
            format!("the request body does not match the schema: {error}"),
        )
        .with_details(vec![FieldProblem {
            field: "body".into(),
            problem: error.to_string(),
        }]),
        Category::Syntax | Category::Eof | Category::Io => ApiError::new(
            ErrorCode::InvalidJson,
            format!("the request body is not valid JSON: {error}"),
        ),
    }
}

/// Whether arrays and objects nest deeper than [`MAX_DEPTH`] (inside strings nothing counts),
/// checked on the bytes before any parser recurses into them. Such a body is refused as
/// malformed JSON, as a parser without our limit would eventually refuse it.
fn too_deep(bytes: &[u8]) -> bool {
    let (mut depth, mut in_string, mut escaped) = (0usize, false, false);
    for &byte in bytes {
        if in_string {
            match byte {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match byte {
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth += 1;
                if depth > MAX_DEPTH {
                    return true;
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    false
}

/// Reads a JSON document (at most [`MAX_DEPTH`] deep, see [`too_deep`]) as a [`Value`], failing
/// on the first object that repeats a key. serde's derived structs catch duplicate *fields*, but
/// not duplicates inside maps or free-form values; this catches both. The value then serves the
/// checks that compare what was read with what was sent.
struct UniqueKeys;

impl<'de> DeserializeSeed<'de> for UniqueKeys {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for UniqueKeys {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E>(self, value: bool) -> Result<Value, E> {
        Ok(Value::Bool(value))
    }
    fn visit_i64<E>(self, value: i64) -> Result<Value, E> {
        Ok(Value::from(value))
    }
    fn visit_u64<E>(self, value: u64) -> Result<Value, E> {
        Ok(Value::from(value))
    }
    fn visit_f64<E>(self, value: f64) -> Result<Value, E> {
        Ok(Value::from(value))
    }
    fn visit_str<E>(self, value: &str) -> Result<Value, E> {
        Ok(Value::String(value.to_owned()))
    }
    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element_seed(UniqueKeys)? {
            items.push(item);
        }
        Ok(Value::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut fields = serde_json::Map::new();
        while let Some(key) = map.next_key::<String>()? {
            if fields.contains_key(&key) {
                return Err(serde::de::Error::custom(format_args!(
                    "duplicate key `{key}`"
                )));
            }
            let value = map.next_value_seed(UniqueKeys)?;
            fields.insert(key, value);
        }
        Ok(Value::Object(fields))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    /// Found by the `json_body` fuzz target: a long number was read to a float one step off
    /// the nearest, so writing it back and reading it again gave another number.
    #[test]
    fn a_document_read_written_and_read_again_is_the_same() {
        let long = "2".repeat(115);
        for text in [
            long.as_str(),
            "0.1",
            "1e308",
            "123456789012345678901234567890.5",
        ] {
            let read: serde_json::Value = parse_json(text.as_bytes()).unwrap();
            let again: serde_json::Value = parse_json(&serde_json::to_vec(&read).unwrap()).unwrap();
            assert_eq!(again, read, "{text}");
        }
    }

    #[derive(Debug, Deserialize, Serialize, PartialEq)]
    #[serde(deny_unknown_fields)]
    struct Body {
        name: String,
        #[serde(default)]
        extra: Option<serde_json::Value>,
    }

    fn code(bytes: &str) -> ErrorCode {
        parse_json::<Body>(bytes.as_bytes()).unwrap_err().code()
    }

    #[test]
    fn accepts_a_well_formed_body() {
        let body: Body = parse_json(br#"{"name":"a","extra":{"x":[1,{"y":2}]}}"#).unwrap();
        assert_eq!(body.name, "a");
    }

    #[test]
    fn rejects_syntax_errors_unknown_fields_and_duplicates_at_any_depth() {
        assert_eq!(code(r#"{"name":"a""#), ErrorCode::InvalidJson);
        assert_eq!(code(r#"{"name":"a"} trailing"#), ErrorCode::InvalidJson);
        assert_eq!(code(""), ErrorCode::InvalidJson);
        assert_eq!(
            code(r#"{"name":"a","other":1}"#),
            ErrorCode::ValidationFailed
        );
        assert_eq!(
            code(r#"{"name":"a","name":"b"}"#),
            ErrorCode::ValidationFailed
        );
        assert_eq!(
            code(r#"{"name":"a","extra":{"k":1,"k":2}}"#),
            ErrorCode::ValidationFailed
        );
        assert_eq!(
            code(r#"{"name":"a","extra":[{"k":1},{"j":1,"j":1}]}"#),
            ErrorCode::ValidationFailed
        );
        assert_eq!(code(r#"{"name":7}"#), ErrorCode::ValidationFailed);
    }

    #[test]
    fn a_struct_is_read_only_from_an_object() {
        #[derive(Debug, Deserialize, Serialize)]
        #[serde(deny_unknown_fields)]
        struct Inner {
            a: Option<u32>,
        }
        #[derive(Debug, Deserialize, Serialize)]
        #[serde(deny_unknown_fields)]
        struct Outer {
            inner: Option<Inner>,
            list: Option<Vec<Inner>>,
            free: Option<Value>,
        }
        let code = |body: &str| parse_json::<Outer>(body.as_bytes()).unwrap_err().code();
        assert_eq!(code("[null, null, null]"), ErrorCode::ValidationFailed);
        assert_eq!(code(r#"{"inner": [1]}"#), ErrorCode::ValidationFailed);
        assert_eq!(
            code(r#"{"list": [{"a": 1}, [2]]}"#),
            ErrorCode::ValidationFailed
        );
        let read: Outer =
            parse_json(br#"{"inner": {"a": 1}, "list": [{}], "free": [[1], {"x": []}]}"#).unwrap();
        assert_eq!(read.inner.unwrap().a, Some(1));
        assert!(parse_json::<Outer>(br#"{"inner": null}"#).is_ok());
    }

    #[test]
    fn whole_floats_are_integers_and_fractions_are_not() {
        #[derive(Debug, Deserialize, Serialize)]
        #[serde(deny_unknown_fields)]
        struct Counts {
            bps: u32,
            since: i64,
            #[serde(default)]
            text: Option<String>,
        }
        let counts: Counts = parse_json(br#"{"bps":50.0,"since":-7e2,"text":"a"}"#).unwrap();
        assert_eq!((counts.bps, counts.since), (50, -700));
        assert_eq!(counts.text.as_deref(), Some("a"));
        let code = |body: &str| parse_json::<Counts>(body.as_bytes()).unwrap_err().code();
        assert_eq!(
            code(r#"{"bps":50.5,"since":1}"#),
            ErrorCode::ValidationFailed
        );
        assert_eq!(
            code(r#"{"bps":1e10,"since":1}"#),
            ErrorCode::ValidationFailed
        );
        assert_eq!(
            code(r#"{"bps":1,"since":1,"text":2.0}"#),
            ErrorCode::ValidationFailed
        );
        // The retry keeps the first reading's strictness.
        assert_eq!(
            code(r#"{"bps":1.0,"since":1,"other":1}"#),
            ErrorCode::ValidationFailed
        );
        assert_eq!(
            code(r#"{"bps":1.0,"since":1,"bps":2}"#),
            ErrorCode::ValidationFailed
        );
    }

    #[test]
    fn rejects_deep_nesting_and_oversized_bodies() {
        let nested = |levels: usize| format!("{}{}", "[".repeat(levels), "]".repeat(levels));
        assert_eq!(code(&nested(100)), ErrorCode::InvalidJson);
        assert_eq!(code(&nested(33)), ErrorCode::InvalidJson);
        assert!(parse_json::<serde_json::Value>(nested(32).as_bytes()).is_ok());
        // Brackets inside strings are text, not nesting.
        let in_strings = format!(r#"["{}", "\"{}"]"#, "[".repeat(40), "{".repeat(40));
        assert!(parse_json::<serde_json::Value>(in_strings.as_bytes()).is_ok());
        let big = format!(r#"{{"name":"{}"}}"#, "a".repeat(MAX_BODY_BYTES));
        assert_eq!(code(&big), ErrorCode::PayloadTooLarge);
    }
}
