use axum::http::{HeaderName, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use swapd_core::StoreError;
use swapd_types::{ErrorBody, ErrorCode, ErrorEnvelope, FieldProblem};

use crate::json::Json;

/// A failure answered in the error envelope, with the status its code always carries.
#[derive(Debug)]
pub struct ApiError {
    code: ErrorCode,
    message: String,
    details: Option<Vec<FieldProblem>>,
    headers: Vec<(HeaderName, HeaderValue)>,
    /// Markers for the layers the response passes through on its way out.
    extensions: axum::http::Extensions,
}

impl ApiError {
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
            details: None,
            headers: Vec::new(),
            extensions: axum::http::Extensions::new(),
        }
    }

    pub fn with_details(mut self, details: Vec<FieldProblem>) -> Self {
        self.details = Some(details);
        self
    }

    pub fn with_header(mut self, name: HeaderName, value: HeaderValue) -> Self {
        self.headers.push((name, value));
        self
    }

    /// Marks the response for a layer it passes through (see `ip_limits::NotCounted`).
    pub fn with_extension<T: Clone + Send + Sync + 'static>(mut self, marker: T) -> Self {
        self.extensions.insert(marker);
        self
    }

    pub fn code(&self) -> ErrorCode {
        self.code
    }

    pub fn message(&self) -> &str {
        &self.message
    }

    pub fn status(&self) -> StatusCode {
        StatusCode::from_u16(self.code.http_status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR)
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let status = self.status();
        let body = ErrorEnvelope {
            success: false,
            error: ErrorBody {
                code: self.code,
                message: self.message,
                details: self.details,
            },
        };
        let mut response = (status, Json(body)).into_response();
        response.extensions_mut().extend(self.extensions);
        let headers = response.headers_mut();
        for (name, value) in self.headers {
            headers.insert(name, value);
        }
        // Every 503 says when to come back: a second, unless the refusal knows better.
        if status == StatusCode::SERVICE_UNAVAILABLE
            && !headers.contains_key(axum::http::header::RETRY_AFTER)
        {
            headers.insert(
                axum::http::header::RETRY_AFTER,
                HeaderValue::from_static("1"),
            );
        }
        response
    }
}

impl ApiError {
    /// A bug or broken invariant: 500 `internal_error` for the client, and the cause with the
    /// place it came from in the log.
    #[track_caller]
    pub fn internal(cause: impl std::fmt::Display) -> Self {
        let at = std::panic::Location::caller();
        tracing::error!(%cause, %at, "internal error");
        ApiError::new(ErrorCode::InternalError, "internal error")
    }
}

/// A use case's refusal, with its stable code; a field problem names the field, a provider
/// briefly out of reach says when to retry.
impl From<swapd_app::Error> for ApiError {
    #[track_caller]
    fn from(error: swapd_app::Error) -> Self {
        use swapd_app::Error;
        match error {
            Error::Store(error) => error.into(),
            Error::Internal(cause) => ApiError::internal(cause),
            Error::ProviderUnavailable {
                message,
                retry_after,
            } => {
                let refused = ApiError::new(ErrorCode::ServiceUnavailable, message);
                match retry_after {
                    Some(wait) => refused.with_header(
                        axum::http::header::RETRY_AFTER,
                        HeaderValue::from(wait.as_secs().max(1)),
                    ),
                    None => refused,
                }
            }
            Error::RateLimited {
                message,
                retry_after,
            } => ApiError::new(ErrorCode::RateLimitExceeded, message).with_header(
                axum::http::header::RETRY_AFTER,
                HeaderValue::from(retry_after.as_secs()),
            ),
            error => {
                let refused = ApiError::new(error.code(), error.to_string());
                match error.field_problem() {
                    Some((field, problem)) => refused.with_details(vec![FieldProblem {
                        field: field.to_owned(),
                        problem,
                    }]),
                    None => refused,
                }
            }
        }
    }
}

/// Storage failures never leak their text to clients: they are logged here, with the place of
/// the `?`, and answered with a generic message.
impl From<StoreError> for ApiError {
    #[track_caller]
    fn from(error: StoreError) -> Self {
        let at = std::panic::Location::caller();
        match error {
            StoreError::Unavailable(_) => {
                tracing::warn!(%error, %at, "database unavailable");
                ApiError::new(
                    ErrorCode::ServiceUnavailable,
                    "the database is unavailable; retry in a moment",
                )
                .with_header(
                    axum::http::header::RETRY_AFTER,
                    HeaderValue::from_static("1"),
                )
            }
            StoreError::LeaseLost => {
                tracing::warn!(%error, %at, "idempotency lease lost");
                ApiError::new(
                    ErrorCode::IdempotencyKeyInUse,
                    "this request ran past its Idempotency-Key's lease and wrote nothing; retry with the same key",
                )
                .with_header(
                    axum::http::header::RETRY_AFTER,
                    HeaderValue::from_static("1"),
                )
            }
            StoreError::Conflict(_) | StoreError::Corrupt(_) | StoreError::Database(_) => {
                ApiError::internal(format_args!("storage failure: {error}"))
            }
        }
    }
}

/// A JSON answer from bytes already serialized (and, for committed writes, already stored as
/// the idempotent response).
pub(crate) fn json_response(
    status: axum::http::StatusCode,
    body: Vec<u8>,
) -> axum::response::Response {
    use axum::response::IntoResponse;
    (
        status,
        [(axum::http::header::CONTENT_TYPE, "application/json")],
        body,
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use axum::response::IntoResponse;

    use super::*;

    fn answer(error: StoreError) -> (u16, Option<String>) {
        let response = ApiError::from(error).into_response();
        let retry_after = response
            .headers()
            .get(axum::http::header::RETRY_AFTER)
            .map(|v| v.to_str().unwrap().to_owned());
        (response.status().as_u16(), retry_after)
    }

    #[test]
    fn each_kind_of_store_failure_gets_its_own_status() {
        assert_eq!(
            answer(StoreError::Unavailable("57P01".into())),
            (503, Some("1".into()))
        );
        assert_eq!(answer(StoreError::LeaseLost), (409, Some("1".into())));
        assert_eq!(answer(StoreError::Conflict("dup".into())), (500, None));
        assert_eq!(answer(StoreError::Corrupt("row".into())), (500, None));
        assert_eq!(answer(StoreError::Database("other".into())), (500, None));
    }
}
