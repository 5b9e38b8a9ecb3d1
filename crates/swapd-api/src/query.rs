use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use swapd_types::{ErrorCode, signing};

use crate::ApiError;

/// The query parameters decoded exactly as the signature canonicalizes them (RFC 3986
/// percent-decoding; `+` stays a plus), so a handler reads what the client signed. Use this
/// instead of axum's `Query`, which decodes `+` as a space.
#[derive(Debug, Clone, Default)]
pub struct SignedQuery(pub Vec<(String, String)>);

impl SignedQuery {
    /// The query of `uri`, decoded as the signature canonicalizes it.
    pub fn from_uri(uri: &axum::http::Uri) -> Result<Self, ApiError> {
        signing::query_pairs(uri.query().unwrap_or_default())
            .map(SignedQuery)
            .map_err(|e| ApiError::new(ErrorCode::QueryInvalidEncoding, e.to_string()))
    }

    /// The one value of a scalar parameter: `None` when absent, 400 `duplicate_parameter` when
    /// repeated.
    pub fn scalar(&self, name: &str) -> Result<Option<&str>, ApiError> {
        let mut values = self
            .0
            .iter()
            .filter(|(n, _)| n == name)
            .map(|(_, v)| v.as_str());
        let first = values.next();
        if values.next().is_some() {
            return Err(ApiError::new(
                ErrorCode::DuplicateParameter,
                format!("query parameter `{name}` may appear only once"),
            ));
        }
        Ok(first)
    }
}

impl<S: Send + Sync> FromRequestParts<S> for SignedQuery {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        Self::from_uri(&parts.uri)
    }
}
