use axum::Json;
use axum::http::{HeaderName, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use swapd_core::StoreError;
use swapd_types::{ErrorBody, ErrorCode, ErrorEnvelope, FieldProblem};

/// A failure answered in the error envelope, with the status its code always carries.
#[derive(Debug)]
pub struct ApiError {
    code: ErrorCode,
    message: String,
    details: Option<Vec<FieldProblem>>,
    headers: Vec<(HeaderName, HeaderValue)>,
}

impl ApiError {
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
            details: None,
            headers: Vec::new(),
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
        for (name, value) in self.headers {
            response.headers_mut().insert(name, value);
        }
        response
    }
}

/// Storage failures never leak their text to clients: they are logged here and answered with a
/// generic message.
impl From<StoreError> for ApiError {
    fn from(error: StoreError) -> Self {
        match error {
            StoreError::Unavailable(_) => {
                tracing::warn!(%error, "database unavailable");
                ApiError::new(
                    ErrorCode::ServiceUnavailable,
                    "the database is unavailable; retry later",
                )
            }
            other => {
                tracing::error!(error = %other, "storage failure");
                ApiError::new(ErrorCode::InternalError, "internal error")
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
