use std::collections::HashSet;
use std::fmt;

use axum::body::Bytes;
use axum::extract::{FromRequest, Request};
use axum::http::header::CONTENT_TYPE;
use serde::de::{DeserializeOwned, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::error::Category;
use swapd_types::{ErrorCode, FieldProblem};

use crate::ApiError;

/// The largest request body any route accepts.
pub const MAX_BODY_BYTES: usize = 64 * 1024;
const MAX_DEPTH: usize = 32;

/// A JSON body parsed strictly: `Content-Type: application/json`, at most [`MAX_BODY_BYTES`],
/// no duplicate keys at any depth, and (through `#[serde(deny_unknown_fields)]` on the target
/// types) no unknown fields.
#[derive(Debug, Clone)]
pub struct ApiJson<T>(pub T);

impl<S, T> FromRequest<S> for ApiJson<T>
where
    S: Send + Sync,
    T: DeserializeOwned,
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
pub fn parse_json<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, ApiError> {
    if bytes.len() > MAX_BODY_BYTES {
        return Err(too_large());
    }
    let mut deserializer = serde_json::Deserializer::from_slice(bytes);
    UniqueKeys { depth: 0 }
        .deserialize(&mut deserializer)
        .and_then(|()| deserializer.end())
        .map_err(json_error)?;
    serde_json::from_slice(bytes).map_err(json_error)
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

/// Walks a JSON document and fails on the first object that repeats a key, or on nesting deeper
/// than [`MAX_DEPTH`]. serde's derived structs catch duplicate *fields*, but not duplicates inside
/// maps or free-form values; this catches both.
struct UniqueKeys {
    depth: usize,
}

impl<'de> DeserializeSeed<'de> for UniqueKeys {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for UniqueKeys {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        Ok(())
    }
    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        Ok(())
    }
    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        Ok(())
    }
    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        Ok(())
    }
    fn visit_str<E>(self, _: &str) -> Result<(), E> {
        Ok(())
    }
    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let depth = self.nested::<A::Error>()?;
        while seq.next_element_seed(UniqueKeys { depth })?.is_some() {}
        Ok(())
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let depth = self.nested::<A::Error>()?;
        let mut keys = HashSet::new();
        while let Some(key) = map.next_key::<String>()? {
            if !keys.insert(key.clone()) {
                return Err(serde::de::Error::custom(format_args!(
                    "duplicate key `{key}`"
                )));
            }
            map.next_value_seed(UniqueKeys { depth })?;
        }
        Ok(())
    }
}

impl UniqueKeys {
    fn nested<E: serde::de::Error>(&self) -> Result<usize, E> {
        if self.depth >= MAX_DEPTH {
            return Err(E::custom(format_args!(
                "nesting deeper than {MAX_DEPTH} levels"
            )));
        }
        Ok(self.depth + 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Debug, Deserialize, PartialEq)]
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
    fn rejects_deep_nesting_and_oversized_bodies() {
        let deep = format!("{}{}", "[".repeat(100), "]".repeat(100));
        assert!(parse_json::<serde_json::Value>(deep.as_bytes()).is_err());
        let big = format!(r#"{{"name":"{}"}}"#, "a".repeat(MAX_BODY_BYTES));
        assert_eq!(code(&big), ErrorCode::PayloadTooLarge);
    }
}
